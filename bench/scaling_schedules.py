"""Data-parallel modes and pipeline schedules on a GPT-2-shaped graph (no measurement: the
model's own numbers, to read the schedules side by side).

The graph is tests/scaling/test_tensor_parallel.gpt_blocks (pre-LN GPT-2 blocks, word
embedding, LM head) at the given size, its weights external-data stubs (real shapes, no bytes):
GPT-2 Large's shape by default (36 layers, hidden 1280, 20 heads, vocabulary 50257, sequence
1024), the LM head tied to the word embedding as GPT-2's is (``Transpose(wte)``; ``--untied``:
its own weight). Rows: each data-parallel mode with and without overlap; per micro-batch count
the pipeline schedules (interleaved with ``--virtual-stages`` where Megatron-LM allows it:
blocks divisible by p x v, m a multiple of p); Megatron's hybrids of the devices (tensor x
pipeline x data). ``--out FILE`` writes the table there too.

    PYTHONPATH=$PWD python bench/scaling_schedules.py [--hw a100] [--node dgx-a100] \
        [--batch 16] [--devices 4] [--microbatches 1,8] [--virtual-stages 3] [--out FILE]
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


def tie(model):
    """The LM head's weight replaced by ``Transpose(wte.weight)`` (GPT-2's tied head)."""
    import test_tensor_parallel as TP

    return TP.tie_lm_head(model)


def _row(label: str, p) -> str:
    mem = "—" if not p.memory else f"{p.memory['total'] / 1e9:.2f}"
    parts = "—" if not p.parts else " / ".join(
        f"{p.parts[k] * 1e3:.2f}" for k in ("tensor_comm", "p2p", "data_parallel_exposed",
                                            "embedding_allreduce"))
    return (f"| {label} | {p.step_s * 1e3:.1f} | {p.compute_s * 1e3:.1f} | "
            f"{p.communication_s * 1e3:.2f} | {p.exposed_communication_s * 1e3:.2f} | "
            f"{p.bubble_s * 1e3:.1f} ({p.bubble_share:.1%}) | {parts} | {p.collective_calls} | "
            f"{mem} |")


def rows(model, a) -> list[str]:
    """The table's rows (module docstring)."""
    import analyzer

    common = dict(node=a.node, train=True, optimizer="adam")
    out = []
    for mode in ("allreduce", "ddp", "megatron", "zero1", "zero2", "zero3"):
        for ov in (False, True):
            r = analyzer.scale(model, a.hw, [a.devices], batch=a.batch, data_parallel=mode,
                               overlap=ov, **common)
            out.append(_row(f"data {mode}, overlap {'on' if ov else 'off'}", r.scaling.points[-1]))
    p, v = a.devices, a.virtual_stages
    for m in (int(x) for x in a.microbatches.split(",")):
        runs = [("1f1b", "balanced", 1), ("gpipe", "balanced", 1), ("1f1b", "even", 1)]
        if v > 1 and m % p == 0 and a.layers % (p * v) == 0:
            runs.append(("interleaved", "even", v))
        for sch, split, vs in runs:
            r = analyzer.scale(model, a.hw, [p], parallel="pipeline", microbatches=m,
                               schedule=sch, pipeline_split=split, virtual_stages=vs, **common)
            label = f"pipeline p={p} m={m} {sch}{f' v={vs}' if vs > 1 else ''} {split}"
            out.append(_row(label, r.scaling.points[-1]))
    for t, pp in ((1, 2), (2, 2), (2, 1)):
        if p % (t * pp) == 0 and a.batch % (p // (t * pp)) == 0:
            r = analyzer.scale(model, a.hw, [p], parallel="hybrid", tensor_size=t,
                               pipeline_size=pp, batch=a.batch, microbatches=8 if pp > 1 else 1,
                               data_parallel="megatron", overlap=True, pipeline_split="even",
                               **common)
            out.append(_row(f"hybrid t={t} p={pp} d={p // (t * pp)} m={8 if pp > 1 else 1} 1f1b "
                            "even, megatron overlap on", r.scaling.points[-1]))
    out.append(f"\none device: step {r.scaling.points[0].step_s * 1e3:.1f} ms (global batch)")
    return out


def main() -> None:
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
    ap.add_argument("--virtual-stages", type=int, default=3)
    ap.add_argument("--untied", action="store_true", help="the LM head its own weight")
    ap.add_argument("--out", default=None, help="also write the table to this file")
    a = ap.parse_args()
    model = gpt(a.layers, a.batch, a.seq, a.hidden, a.heads, a.vocab)
    if not a.untied:
        model = tie(model)
    lines = [f"GPT-2-shaped: {a.layers} layers, hidden {a.hidden}, seq {a.seq}, global batch "
             f"{a.batch}, {'untied' if a.untied else 'tied'} LM head, {a.hw}, node {a.node}, "
             "fp32, Adam", "",
             "| setup | step ms | compute ms | comm ms | exposed ms | bubble ms | TP / p2p / DP "
             "exposed / embedding ms | calls | GB/device |", "|---|---|---|---|---|---|---|---|---|"]
    lines += rows(model, a)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        with open(a.out, "w") as f:
            f.write(f"`PYTHONPATH=$PWD python bench/{os.path.basename(__file__)} "
                    f"{' '.join(sys.argv[1:])}`\n\n" + text)


if __name__ == "__main__":
    main()
