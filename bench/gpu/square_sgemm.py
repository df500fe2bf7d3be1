"""Square fp32 GEMMs on the FMA units (TF32 off) and on the tensor cores, with the SM clock read
beside each size: the measurement bench/fit_sustained_gemm.py's method needs on a lent GPU.

    python3 bench/gpu/square_sgemm.py OUT.csv

Per N in 4096, 8192, 12288, 16384 and dtype fp32 (torch.backends.cuda.matmul.allow_tf32 False),
tf32 (True), bf16: ``torch.mm(a, b)`` of two N x N matrices, 5 warm-up calls, then 20 calls each
timed between CUDA events; the median is written with its TFLOP/s (2 N^3 / time) and the SM clock
and power nvidia-smi reads right after the timed calls.
"""

import csv
import statistics
import subprocess
import sys

import torch


def smi() -> tuple[str, str]:
    q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True).stdout.strip().split(", ")
    return (q + ["", ""])[0], (q + ["", ""])[1]


def time_mm(n: int, dtype: str) -> float:
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    t = torch.bfloat16 if dtype == "bf16" else torch.float32
    a = torch.randn(n, n, device="cuda", dtype=t)
    b = torch.randn(n, n, device="cuda", dtype=t)
    for _ in range(5):
        torch.mm(a, b)
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.mm(a, b)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def main() -> int:
    rows = []
    with open(sys.argv[1], "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "torch", "dtype", "N", "median_us", "tflops", "sm_clock_mhz", "power_w"])
        for dtype in ("fp32", "tf32", "bf16"):
            for n in (4096, 8192, 12288, 16384):
                us = time_mm(n, dtype)
                clk, pw = smi()
                row = [torch.cuda.get_device_name(), torch.__version__, dtype, n, f"{us:.2f}",
                       f"{2 * n ** 3 / us / 1e6:.2f}", clk, pw]
                w.writerow(row)
                f.flush()
                rows.append(row)
                print(*row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
