"""PyTorch's batch-statistics kernel of a training BatchNorm (``prediction.bn_stats``): its block
geometry and serial steps from ``Normalization.cuh``, the loop's seconds in closed form, the
launch priced as the longer of its bytes and its loop, and ``--explain`` showing the loop."""

import numpy as np
import pytest
from onnx import helper
from onnx_builders import graph, weight

import analyzer
from analyzer.prediction import bn_stats, bn_train

H200_CLOCK = 1.98e9    # h200-sxm [power] clock_ghz
H200_SMS = 132         # h200-sxm compute.units


@pytest.mark.parametrize("s, tf, ty", [(49, 64, 8), (196, 256, 2), (784, 512, 1), (12544, 512, 1), (20, 32, 16)])
def test_threads(s, tf, ty):
    # getNumThreads(S): the first of 32, 64, 128, 256, 512 holding S; ty = max(1, 512 / tf)
    assert bn_stats.threads(s) == (tf, ty)


def test_loop_closed_form():
    # [8, 64, 112, 112]: S 12,544, tf 512, ty 1: ceil(8 / 1) x ceil(12544 / 512) = 8 x 25 = 200
    assert bn_stats.loop((8, 64, 112, 112)) == (64, 8 * 25)
    # [8, 2048, 7, 7]: S 49, tf 64, ty 8: ceil(8 / 8) x ceil(49 / 64) = 1 step; 2,048 blocks
    assert bn_stats.loop((8, 2048, 7, 7)) == (2048, 1)
    # [8, 1024, 14, 14]: S 196, tf 256, ty 2: 4 x 1 = 4
    assert bn_stats.loop((8, 1024, 14, 14)) == (1024, 4)
    # bf16 only (fp32: cuDNN's kernel); position 1 of the launches (after the counter)
    assert bn_train.stats_loop(2, (8, 64, 112, 112)) == (1, (64, 200))
    assert bn_train.stats_loop(4, (8, 64, 112, 112)) is None


def test_loop_seconds():
    cyc = 1 / H200_CLOCK
    # one wave (64 <= 132 x 2): (2950 + 200 x 515) cycles / 1.98 GHz = 53.51 us
    got = bn_stats.loop_s(np, np.array([64.0]), np.array([200.0]), H200_SMS, cyc)
    assert got[0] == pytest.approx((2950 + 200 * 515) / 1.98e9, rel=1e-12)
    assert got[0] == pytest.approx(53.51e-6, rel=1e-3)
    # 2,048 blocks over 264 a wave: ceil(2048 / 264) = 8 waves of (2950 + 515) cycles = 14.0 us
    got = bn_stats.loop_s(np, np.array([2048.0, 0.0]), np.array([1.0, 5.0]), H200_SMS, cyc)
    assert got[0] == pytest.approx(8 * (2950 + 515) / 1.98e9, rel=1e-12) and got[1] == 0.0


def test_profile_term():
    import hardware_db

    assert bn_stats.profile_term(hardware_db.get("h200-sxm"), H200_CLOCK) == 1 / H200_CLOCK
    assert bn_stats.profile_term(hardware_db.get("h200-sxm"), 0.0) == 0.0


def _block(n, c, hw):
    conv = helper.make_node("Conv", ["x", "w", "onnx::Conv_5"], ["y"])
    return graph([conv], {"x": (n, c, hw, hw)}, ["y"], {"w": weight(c, c, 1, 1), "onnx::Conv_5": weight(c)})


def test_training_forward_prices_the_loop():
    from analyzer.render.explain import render_explain
    from analyzer.training.step import forward_prediction

    rep = analyzer.analyze(_block(8, 64, 112), hw="h200-sxm", runtime="eager-kernel", precision="bf16",
                           train=True, optimizer="none")
    f = forward_prediction(rep, rep.predictions[0])
    ins = [x for row in f.kernel_table.inserted for x in row if x[0] == "aten:ReduceMean"]
    # x 8 x 64 x 112 x 112 bf16 = 12,845,056 B + mean, var 2 x 64 x 4 B; loop 53.51 us
    assert len(ins) == 1 and ins[0][1] == 8 * 64 * 112 * 112 * 2 + 2 * 64 * 4
    assert ins[0][2] == pytest.approx((2950 + 200 * 515) / 1.98e9, rel=1e-9)
    assert "its serial loop 53.5" in render_explain(rep, 0)
    # fp32: cuDNN's bn_fw_tr, no loop
    rep = analyzer.analyze(_block(8, 64, 112), hw="h200-sxm", runtime="eager-kernel", precision="fp32",
                           train=True, optimizer="none")
    f = forward_prediction(rep, rep.predictions[0])
    assert all(len(x) == 2 for row in f.kernel_table.inserted for x in row)
