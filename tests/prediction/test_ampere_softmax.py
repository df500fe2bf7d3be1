"""The Ampere family's two softmax sets (fitted on NeuSight's fp32 A100 PCIe rows,
bench/ampere_softmax.py): which class a softmax row of n elements takes on an A100, its kernel
time from the shipped constants in closed form, and how Hopper, Blackwell and Ada inherit them."""

from __future__ import annotations

import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency import kernel_time as eff

# a100-80gb-sxm profile: 108 SMs, 1.41 GHz, 2039 GB/s, 40 MB L2, fp32 vector peak 19.5 TFLOP/s
SMS, CLOCK, BW, L2, VPEAK = 108, 1.41e9, 2039e9, 40e6, 19.5e12


def _softmax(rows: int, n: int):
    vi = helper.make_tensor_value_info
    node = helper.make_node("Softmax", ["a"], ["y"], name="sm", axis=-1)
    g = helper.make_graph([node], "g", [vi("a", TensorProto.FLOAT, [rows, n])],
                          [vi("y", TensorProto.FLOAT, [rows, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _kernel_s(rows: int, n: int, e_bw: float, bpc: float, l2_hit: float, b_half: float) -> float:
    """floor + max(compute, memory), the memory term summed (sm_overlap 0), fp32 [rows, n]; the
    per-SM term per element (per_element = 1: bpc at 2 bytes an element, half the fp32 bytes)."""
    nbytes = 8.0 * rows * n                                  # read once, write once, 4 bytes each
    step = 1.0 / (1.0 + (nbytes / L2) ** 2)                  # the L2 step s(x)
    dram = (nbytes * (1.0 - l2_hit * step) + b_half) / (BW * e_bw)
    sm = nbytes * 2.0 / 4.0 / (SMS * CLOCK * bpc)
    compute = (4.0 * rows * n + 11.0 * rows * n) / (VPEAK * 0.5)   # 4 vector ops + 1 exp (trans_weight 11)
    floor = fc.floor_cycles()[eff.CLASS_CODE["softmax"]] / CLOCK
    return floor + max(compute, dram + sm)


@pytest.mark.parametrize("n,cls", [(128, "softmax"), (1024, "softmax"), (1025, "softmax_block"),
                                   (4096, "softmax_block")])
def test_a100_softmax_class_and_time_from_the_shipped_constants(n, cls):
    rows = 16384 * 1024 // n
    pred = analyzer.analyze(_softmax(rows, n), hw=["a100-80gb-sxm"], runtime="kernel").predictions[0]
    assert pred.explain(0).op_class == cls
    # the shipped sets (hardware_db/efficiency/nvidia-ampere.json, rounded to 4 digits):
    # softmax e_bw 0.9668, 64 bytes per SM-cycle at 2 bytes an element, l2_hit 1, b_half 100 B (the
    # warp kernel); softmax_block e_bw 0.6697, 64, l2_hit 0.001, b_half 1 MB (the block kernel)
    consts = {"softmax": (0.9668, 64.0, 1.0, 100.0), "softmax_block": (0.6697, 64.0, 0.001, 1e6)}[cls]
    assert pred.latency_s == pytest.approx(_kernel_s(rows, n, *consts), rel=1e-6)


def test_a100_softmax_closed_form_numbers():
    # [16384, 1024] fp32: 134,217,728 bytes; s = 1 / (1 + (134.2 MB / 40 MB)^2) = 0.0816;
    # DRAM (1 - 0.0816) x 134.2 MB / (2039 GB/s x 0.9668) = 62.53 us; per-SM per element: 33.55 M
    # elements x 2 B / (108 x 1.41 GHz x 64 B) = 6.886 us; compute 15 x 16.78 M / 9.75 TFLOP/s
    # = 25.81 us; floor 7,943 cycles / 1.41 GHz = 5.63 us (the pooled norm floor: NeuSight's eager
    # rows do not identify a softmax floor)
    assert fc.floor_cycles()[eff.CLASS_CODE["softmax"]] == pytest.approx(7942.8, abs=0.5)
    warp = analyzer.analyze(_softmax(16384, 1024), hw=["a100-80gb-sxm"], runtime="kernel").predictions[0]
    assert warp.latency_s == pytest.approx(5.633e-6 + 62.53e-6 + 6.886e-6, rel=2e-3)
    # [16384, 1025]: the block kernel at 0.6697 of DRAM with 1 MB of ramp, l2_hit 0.001:
    # (134.35 MB x (1 - 0.001 x 0.0814) + 1 MB) / (2039 GB/s x 0.6697) = 99.11 us, + 6.893 us per-SM
    block = analyzer.analyze(_softmax(16384, 1025), hw=["a100-80gb-sxm"], runtime="kernel").predictions[0]
    assert block.latency_s == pytest.approx(5.633e-6 + 99.11e-6 + 6.893e-6, rel=2e-3)
    # one more element per row: (5.64 + 99.11 + 6.89) / (5.64 + 62.53 + 6.89) = 1.49x the time
    assert block.latency_s / warp.latency_s == pytest.approx(111.64 / 75.05, rel=3e-3)


def test_hopper_blackwell_and_ada_inherit_the_ampere_softmax_sets():
    amp = fc.load_constants("nvidia-ampere")
    for cls in ("softmax", "softmax_block"):
        assert amp.describe(cls).startswith("architecture constants fitted on a100_pcie_40gb neusight_ops.csv.gz")
        for fam in ("nvidia-hopper", "nvidia-blackwell"):
            assert fc.load_constants(fam).describe(cls).startswith("inherited from nvidia-ampere: architecture")
        assert fc.load_constants("nvidia-ada").describe(cls).startswith(
            f"inherited from nvidia-ampere-ga10x: inherit: nvidia-ampere's {cls} set")
        i = eff.CLASS_CODE[cls]
        for fam in ("nvidia-hopper", "nvidia-blackwell", "nvidia-ada", "nvidia-ampere-ga10x"):
            arr = fc.load_constants(fam).arrays
            for p in ("e_bw", "bpc", "l2_hit", "b_half_bytes"):
                assert arr[p][i] == amp.arrays[p][i]
    # the sets are fitted apart: the block kernel reaches a lower DRAM fraction than the warp kernel
    assert amp.arrays["e_bw"][eff.CLASS_CODE["softmax_block"]] < amp.arrays["e_bw"][eff.CLASS_CODE["softmax"]]


def test_h100_softmax_takes_hoppers_row_set_with_its_sms_and_clock():
    # h100-sxm: 132 SMs, 1.98 GHz, 3350 GB/s, 50 MB L2; PyTorch's warp kernel (fp32 rows of 1024)
    # takes Hopper's softmax_row set (fitted on the H200's rows, its ramp held at Ampere's 100 B:
    # l2_hit 0.001, 15.47 B/SM-cycle, own floor 1.342 us) and the warp kernel's row term (c0 1,
    # step 193.8 cycles, max'd with the memory terms), at the H100's own SMs and clock:
    # cache share 0.001 x s, s = 1 / (1 + (33.55 MB / 50 MB)^2) = 0.690: 0.07 % of the bytes;
    # DRAM (33.55 MB x 0.9993 + 100 B) / 3350 GB/s = 10.01 us; per-SM 16.78 M elements /
    # (132 x 1.98 GHz x 15.47) = 4.15 us; rows: 4096 rows / (132 SMs x 2048 / 128 x 4 rows a block)
    # = 1 wave x (1 + 32 steps x 193.8) cycles / 1.98 GHz = 3.13 us, under the 14.16 us stream;
    # and the set's cold start (measured on the H200's calls far under its L2), 1.447 us x (1 - s)
    # = 0.449 us: 31 % of this working set is not in the L2
    pred = analyzer.analyze(_softmax(4096, 1024), hw=["h100-sxm"], runtime="kernel").predictions[0]
    nbytes = 8.0 * 4096 * 1024
    s = 1.0 / (1.0 + (nbytes / 50e6) ** 2)
    dram = (nbytes * (1 - 0.001 * s) + 100.0) / 3350e9
    per_sm = nbytes / 2 / (132 * 1.98e9 * 15.47)
    rows = (1.0 + 32 * 193.8) / 1.98e9
    assert (dram, per_sm, rows) == pytest.approx((10.01e-6, 4.15e-6, 3.13e-6), rel=3e-3)
    assert pred.latency_s == pytest.approx(1.342e-6 + 1.447e-6 * (1 - s) + max(dram + per_sm, rows), rel=1e-4)
