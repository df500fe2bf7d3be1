"""Check opcost's XLA runtime on the public TPU single-op timings (nothing fitted).

    PYTHONPATH=$PWD python bench/check_tpu.py [MEASUREMENTS_DIR]

MEASUREMENTS_DIR defaults to ../shared/measurements/accelerators (tpu_ops.csv: the jax Pallas TPU
matmul notebook's stored outputs, a TPU v5e, bf16 ``jnp.ones`` operands; a mean of 100 host-timed
calls, host dispatch included).  Each row's product is built as a one-node ONNX MatMul
(bf16 [m,k] x [k,n]) and predicted on the row's profile under the ``xla`` runtime (device time).
The XLA rows (``jnp.matmul``) are the check; the Pallas rows time hand-written kernels with fixed
block sizes (not what XLA runs) and are listed for reference only.  Rows whose measured time is
under 0.2 ms are dominated by host dispatch (tens of us) and are reported apart.
Writes bench/results/check_tpu.md.  Needs pandas.
"""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
RESULT = os.path.join(ROOT, "bench", "results", "check_tpu.md")
COMMAND = "PYTHONPATH=$PWD python bench/check_tpu.py ../shared/measurements/accelerators"
DISPATCH_BOUND_MS = 0.2


def matmul_ms(pid: str, m: int, k: int, n: int) -> float:
    from onnx import TensorProto, helper

    import analyzer
    from analyzer.prediction.predict import predict

    g = helper.make_graph([helper.make_node("MatMul", ["x", "y"], ["z"], name="matmul")], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [m, k]),
                           helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [k, n])],
                          [helper.make_tensor_value_info("z", TensorProto.BFLOAT16, [m, n])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    (pred,) = predict(analyzer.analyze(model.SerializeToString()),
                      [pid], runtime="xla")
    return pred.latency_s * 1e3


def main() -> None:
    import pandas as pd

    mdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "measurements", "accelerators")
    d = pd.read_csv(os.path.join(mdir, "tpu_ops.csv"))
    d["pred_ms"] = [matmul_ms(r.device_profile, int(r.m), int(r.k), int(r.n)) for r in d.itertuples()]
    d["err"] = (d.pred_ms / d.measured_ms - 1) * 100
    out = ["# TPU single ops: opcost's xla runtime against public timings (a check, nothing fitted)", "",
           f"Command: `{COMMAND}`", "",
           f"Devices with rows: {', '.join(sorted(set(d.device_profile)))} (ops: {', '.join(sorted(set(d.op)))}); "
           "no tpu-v6e or tpu7x row exists in the shared measurements.", "",
           "| device | implementation | variant | m=k=n | measured ms | predicted ms | error % | |",
           "|---|---|---|---:|---:|---:|---:|---|"]
    for r in d.itertuples():
        tag = "dispatch-bound" if r.measured_ms < DISPATCH_BOUND_MS else ""
        out.append(f"| {r.device_profile} | {r.implementation} | {r.variant} | {r.m} | {r.measured_ms:.4f} | "
                   f"{r.pred_ms:.4f} | {r.err:+.1f} | {tag} |")
    out.append("")
    for label, sel in (("XLA rows above the dispatch bound", (d.implementation == "xla jnp.matmul")
                        & (d.measured_ms >= DISPATCH_BOUND_MS)),
                       ("XLA rows, all", d.implementation == "xla jnp.matmul")):
        s = d[sel]
        for dev, g in s.groupby("device_profile"):
            out.append(f"- {label}, {dev}, matmul: {len(g)} rows, MAPE {np.mean(np.abs(g.err)):.1f} %, "
                       f"max {np.max(np.abs(g.err)):.1f} %")
    out.append("")
    with open(RESULT, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
