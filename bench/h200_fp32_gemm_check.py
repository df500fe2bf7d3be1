"""opcost's shipped H200 profile against this repository's own H200 fp32 (TF32 off) GEMM rows: a check.

    PYTHONPATH=$PWD python bench/h200_fp32_gemm_check.py [bench/results/h200_gemm_2026-12-04.csv]

Each ``gemm`` row of dtype fp32 with ``tf32 = 0`` (``F.linear(x[M, K], W[N, K])``, kernel sum of one
call from the profiler, L2-warm) is predicted as a one-node MatMul [M, K] x [K, N] on ``h200-sxm``
with ``runtime="kernel"``; error = predicted / measured - 1. Prints MAPE and bias over all rows and
over the rows above 10 GFLOP. Nothing is fitted here.
"""

from __future__ import annotations

import sys

import numpy as np


def matmul(m: int, n: int, k: int):
    """A one-node fp32 ONNX MatMul [m, k] x [k, n] with both operands as graph inputs."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [k, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "gemm", [x, w], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main(argv=None) -> int:
    import pandas as pd

    import analyzer

    args = sys.argv[1:] if argv is None else argv
    d = pd.read_csv(args[0] if args else "bench/results/h200_gemm_2026-12-04.csv")
    rows = d[(d.op == "gemm") & (d.dtype == "fp32") & (d.tf32 == 0) & d.kernel_sum_us.notna()]
    err = np.array([analyzer.analyze(matmul(int(r.M), int(r.N), int(r.K)), hw="h200-sxm", runtime="kernel",
                                     precision="fp32").predictions[0].latency_s * 1e6 / r.kernel_sum_us - 1
                    for r in rows.itertuples()])
    big = rows.flops.to_numpy() > 1e10
    for name, e in (("all fp32 GEMM rows", err), ("rows above 10 GFLOP", err[big])):
        print(f"{name}: {len(e)} rows, MAPE {100 * np.mean(np.abs(e)):.1f} %, bias {100 * np.mean(e):+.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
