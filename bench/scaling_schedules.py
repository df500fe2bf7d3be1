"""Data-parallel modes and pipeline schedules on a GPT-2-shaped graph (no measurement: the
model's own numbers, to read the schedules side by side).

The graph is tests/scaling/test_tensor_parallel.gpt_blocks (pre-LN GPT-2 blocks, word
embedding, LM head) at the given size, its weights external-data stubs (real shapes, no bytes):
GPT-2 Large's shape by default (36 layers, hidden 1280, 20 heads, vocabulary 50257, sequence
1024).

    PYTHONPATH=$PWD python bench/scaling_schedules.py [--hw a100] [--node dgx-a100] \
        [--batch 16] [--devices 4] [--microbatches 1,8]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from onnx import TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.join(HERE, "..", "tests", "scaling")]


def gpt(layers: int, batch: int, seq: int, hidden: int, heads: int, vocab: int):
    """gpt_blocks with every weight an external-data stub of its real shape."""
    import test_tensor_parallel as TP

    original = TP.graph

    def stub(*shape, dtype=np.float32):
        return ("stub", shape, np.zeros((1,) * len(shape), dtype))

    def build(nodes, inputs, outputs, inits):
        shapes = {k: v[1] for k, v in inits.items() if isinstance(v, tuple)}
        small = {k: (v[2] if isinstance(v, tuple) else v) for k, v in inits.items()}
        m = original(nodes, inputs, outputs, small)
        for t in m.graph.initializer:
            if t.name in shapes:
                del t.dims[:]
                t.dims.extend(shapes[t.name])
                t.ClearField("raw_data")
                t.data_location = TensorProto.EXTERNAL
                n = int(np.prod(shapes[t.name])) * 4
                for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", str(n))):
                    e = t.external_data.add()
                    e.key, e.value = k, v
        return m

    TP.weight, TP.graph = stub, build
    try:
        return TP.gpt_blocks(layers, batch, seq, hidden, heads, vocab=vocab)
    finally:
        TP.graph = original


def _row(label: str, p) -> str:
    mem = "—" if not p.memory else f"{p.memory['total'] / 1e9:.2f}"
    return (f"| {label} | {p.step_s * 1e3:.1f} | {p.compute_s * 1e3:.1f} | "
            f"{p.communication_s * 1e3:.2f} | {p.exposed_communication_s * 1e3:.2f} | "
            f"{p.bubble_s * 1e3:.1f} ({p.bubble_share:.1%}) | {p.collective_calls} | {mem} |")


def main() -> None:
    import analyzer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="a100")
    ap.add_argument("--node", default="dgx-a100")
    ap.add_argument("--layers", type=int, default=36)
    ap.add_argument("--hidden", type=int, default=1280)
    ap.add_argument("--heads", type=int, default=20)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=16, help="global batch")
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--microbatches", default="1,8")
    a = ap.parse_args()
    model = gpt(a.layers, a.batch, a.seq, a.hidden, a.heads, a.vocab)
    common = dict(node=a.node, train=True, optimizer="adam")
    print(f"GPT-2-shaped: {a.layers} layers, hidden {a.hidden}, seq {a.seq}, global batch "
          f"{a.batch}, {a.hw}, node {a.node}, fp32, Adam\n")
    print("| setup | step ms | compute ms | comm ms | exposed ms | bubble ms | calls | GB/device |")
    print("|---|---|---|---|---|---|---|---|")
    for mode in ("allreduce", "ddp", "megatron", "zero1", "zero2", "zero3"):
        for ov in (False, True):
            r = analyzer.scale(model, a.hw, [a.devices], batch=a.batch, data_parallel=mode,
                               overlap=ov, **common)
            print(_row(f"data {mode}, overlap {'on' if ov else 'off'}", r.scaling.points[-1]))
    for m in (int(x) for x in a.microbatches.split(",")):
        for sch, split in (("1f1b", "balanced"), ("gpipe", "balanced"), ("1f1b", "even")):
            r = analyzer.scale(model, a.hw, [a.devices], parallel="pipeline", microbatches=m,
                               schedule=sch, pipeline_split=split, **common)
            print(_row(f"pipeline p={a.devices} m={m} {sch} {split}", r.scaling.points[-1]))
    print(f"\none device: step {r.scaling.points[0].step_s * 1e3:.1f} ms (global batch)")


if __name__ == "__main__":
    main()
