"""Liger-Kernel's multi-kernel PyTorch baselines (bench/data/liger_multi): the rows are the public
figures, each graph has one node per PyTorch kernel with the bytes its kernels move, and the bench
predicts them under their timing's definition (kernel time, L2 flushed)."""

from __future__ import annotations

import collections
import accuracy
from op_models import build

import analyzer


def test_the_rows_are_the_public_figures():
    cases = accuracy.liger_multi_cases()
    groups = collections.Counter((c.device, c.op) for c in cases)
    assert groups == {("NVIDIA B200", "cross_entropy"): 8, ("NVIDIA A100-SXM4-80GB", "cross_entropy"): 6,
                      ("NVIDIA A100-SXM4-80GB", "hf_rmsnorm"): 6, ("NVIDIA A100 80GB PCIe", "cross_entropy"): 6,
                      ("NVIDIA A100 80GB PCIe", "hf_rmsnorm"): 6}
    got = {(c.device, c.op, dict(c.dims)["M"], dict(c.dims)["N"]): c.measured_s for c in cases}
    # all_benchmark_data_cutedsl.csv: BT 8192, V 128256, 2.6470720767974854 ms
    assert abs(got[("NVIDIA B200", "cross_entropy", 8192, 128256)] - 2647.0721e-6) < 1e-12
    # all_benchmark_data.csv: rms_norm huggingface, H 32768, 1.9190720319747925 ms
    assert abs(got[("NVIDIA A100-SXM4-80GB", "hf_rmsnorm", 2048, 32768)] - 1919.0720e-6) < 1e-12


def test_the_timing_is_kernel_time_from_a_flushed_l2():
    for c in accuracy.liger_multi_cases():
        assert (c.timing, accuracy.l2_of(c)) == ("kernel", "cold")


def test_hf_rmsnorm_is_eight_kernels_with_their_bytes():
    # bf16 x[2,4], fp32 scalars: copy to fp32 16 -> 32 B; pow 32 + 4 -> 32; mean 32 -> 8; + eps 8 + 4
    # -> 8; rsqrt 8 + 4 -> 8; multiply 32 + 8 -> 32; copy to bf16 32 -> 16; weight multiply 16 -> 32
    r = analyzer.analyze(build("hf_rmsnorm", "bf16", M=2, N=4))
    assert len(r.nodes) == 8
    assert (r.totals.activation_bytes_read, r.totals.activation_bytes_written) == (196, 168)


def test_cross_entropy_is_log_softmax_and_the_nll_reduction():
    # fp32 x[2,8]: log_softmax 64 -> 64 B; nll_loss reads the 2 picked values (8) and 2 int64
    # ids (16) -> the 4 B mean: 64 + 24 read, 64 + 4 written; two kernels under runtime kernel
    r = analyzer.analyze(build("cross_entropy", "fp32", M=2, N=8), hw="a100", runtime="kernel")
    assert [n.op for n in r.nodes] == ["LogSoftmax", "NegativeLogLikelihoodLoss"]
    assert (r.totals.activation_bytes_read, r.totals.activation_bytes_written) == (88, 68)
    assert r.predictions[0].launches == 2
