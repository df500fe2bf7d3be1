"""BatchNorm in a training step's forward (rule ``bn-train``, ``prediction.bn_train``): the launches
and closed-form bytes of one training-mode BatchNorm, the forward's launch count of a Conv + BN +
ReLU block and of ResNet-50, and the inference prediction left as it was."""

import os

import pytest
from onnx import helper
from onnx_builders import graph, weight

import analyzer
from analyzer.prediction import bn_train, eager_rules
from analyzer.training.step import forward_prediction

ACCEL = os.path.join(os.path.dirname(__file__), "..", "fixtures", "accel")


def _block(n=2, c=32, hw=8, bias="onnx::Conv_5"):
    """Conv 1x1 (stride 1: one GEMM, no cuDNN conversion) with a folded BatchNorm, then ReLU."""
    conv = helper.make_node("Conv", ["x", "w", bias], ["y"])
    relu = helper.make_node("Relu", ["y"], ["z"])
    return graph([conv, relu], {"x": (n, c, hw, hw)}, ["z"], {"w": weight(c, c, 1, 1), bias: weight(c)})


def _run(model, precision, train, runtime="eager-kernel"):
    kw = {"train": True, "optimizer": "none"} if train else {}
    return analyzer.analyze(model, hw="h200-sxm", runtime=runtime, precision=precision, **kw)


def test_launches_closed_form():
    # C 32, x [2, 32, 8, 8] = 4096 elements; bf16 (e 2): x 8192 B
    got = bn_train.launches(32, 8192, 2)
    assert got == [
        ("Add", 8 + 8),                                          # num_batches_tracked += 1 (int64)
        ("aten:ReduceMean", 8192 + 2 * 32 * 4),                  # x read; mean, var written (fp32)
        ("aten:Add", 2 * 32 * 4 + 2 * 32 * 2 + 2 * 32 * 2 + 32 * 4),   # per channel: 640 B
        ("BatchNormalization", 2 * 8192 + 2 * 32 * 4 + 2 * 32 * 2)]     # x read, y written, params
    assert [b for _, b in got] == [16, 8448, 640, 16768]
    # fp32 (cuDNN bn_fw_tr): x 16384 B read, y written, 8 per-channel vectors of 4 B
    assert bn_train.launches(32, 16384, 4) == [("Add", 16), ("BatchNormalization", 2 * 16384 + 8 * 32 * 4)]
    assert bn_train.node_extras(32, 8192, 2) == got[:3]
    assert any(r.name == "bn-train" for r in eager_rules.RULES)


@pytest.mark.parametrize("precision, infer, train", [("bf16", 5, 6), ("fp32", 3, 4)])
def test_block_forward_launches(precision, infer, train):
    # inference: the GEMM, (bf16: the copy and invstd,) the BatchNorm's transform, the ReLU;
    # training: the GEMM, (bf16: counter, statistics, running stats, transform | fp32: counter,
    # cuDNN's bn_fw_tr), the ReLU
    rep = _run(_block(), precision, True)
    st, p = rep.training.steps[0], rep.predictions[0]
    assert p.launches == infer
    assert st.forward_kernels == train and st.bn_train == 1
    assert st.forward_s > p.latency_s


def test_inference_unchanged_by_training():
    m = _block()
    for precision in ("bf16", "fp32"):
        a, b = _run(m, precision, False).predictions[0], _run(m, precision, True).predictions[0]
        assert a.latency_s == b.latency_s and a.launches == b.launches


def test_runtime_without_eager_plan_keeps_the_forward():
    # runtime kernel (one kernel per node, no eager plan): no BatchNorm re-added, none trained
    rep = _run(_block(), "bf16", True, runtime="kernel")
    st = rep.training.steps[0]
    assert st.forward_s == rep.predictions[0].latency_s and st.bn_train == 0


def test_explicit_batchnorm_node_gets_the_training_launches():
    x = {"x": (2, 16, 4, 4)}
    inits = {k: weight(16) for k in ("s", "b", "m", "v")}
    bn = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
    rep = _run(graph([bn], x, ["y"], inits), "bf16", True)
    # the node's kernel (the transform) + counter, statistics, running stats
    assert rep.predictions[0].launches == 1 and rep.training.steps[0].forward_kernels == 4


def test_resnet50_forward_has_four_kernels_per_batchnorm():
    path = os.path.join(ACCEL, "resnet50.onnx")
    rep = _run(path, "bf16", True)
    st, p = rep.training.steps[0], rep.predictions[0]
    # 53 BatchNorms folded into the 53 convolutions; eval: 3 launches each, training: 4
    assert st.bn_train == 53
    assert st.forward_kernels - p.launches == 53
    # the training forward's kernel table: per convolution the four BatchNorm launches
    table = forward_prediction(rep, p).kernel_table
    bn_ops = ("Add", "aten:ReduceMean", "aten:Add", "BatchNormalization")
    per_conv = [tuple(op for op, *_ in ins if op in bn_ops) for ins in table.inserted if ins]
    assert len(per_conv) == 53 and set(per_conv) == {bn_ops}
    fp32 = _run(path, "fp32", True).training.steps[0]
    # fp32: cuDNN's one kernel in both modes, plus the counter add in training
    assert fp32.forward_kernels - _run(path, "fp32", False).predictions[0].launches == 53


def test_explain_shows_the_training_launches():
    from analyzer.render.explain import render_explain

    rep = _run(_block(), "bf16", True)
    text = render_explain(rep, 0)
    assert "training forward (rule bn-train, 1 BatchNorms in training mode)" in text
    # the statistics launch: x [2, 32, 8, 8] bf16 8,192 B + mean and variance 2 x 32 x 4 B = 8,448 B
    assert "inserted launch aten:ReduceMean" in text and "8.45 KB" in text
    # inference only: no training lines
    assert "bn-train" not in render_explain(_run(_block(), "bf16", False), 0)


def test_native_backward_reads_twice_and_loops():
    """bf16: PyTorch's ``batch_norm_backward_kernel`` (``training.bn_backward``) reads x and dY in
    its reduction pass and again in its dX pass (5 n elements, not 3 n) and walks each channel
    serially twice; fp32 (cuDNN's ``bn_bw``) is left as the rule counts it."""
    from analyzer.training import bn_backward
    from analyzer.training import backward_time as bt
    from analyzer.training.backward_plan import backward_plan
    from analyzer.training.counts import gradient_plan

    # x [8, 64, 56, 56]: n = 1,605,632; S 3,136: tf 512, ty 1, 8 x 7 = 56 steps a pass
    n = 8 * 64 * 56 * 56
    rep = _run(_block(8, 64, 56), "bf16", True)
    plan = backward_plan(rep.nodes, gradient_plan(rep.nodes), rep.model["outputs"])
    bn = next(k for k in plan.kernels if k.kind == "bn")
    assert bn.bn_loop == (64, 56)
    assert bn.bn_reread == 2 * n * 4                # x and dY again, in the graph's fp32
    assert bn.bytes_read == (2 * n + 4 * 64) * 4    # the rule's count: x, dY, 4 per-channel vectors
    pred = rep.predictions[0]
    again = bn_backward.with_reread(plan, pred)
    assert next(k for k in again.kernels if k.kind == "bn").bytes_read == (4 * n + 4 * 64) * 4
    loop = bn_backward.loop_s(plan, pred, pred.target.profile)
    # one wave (64 blocks <= 132 x 2): (2950 + 2 x 56 x 515) cycles / 1.98 GHz = 30.62 us
    j = plan.kernels.index(bn)
    assert loop[j] == pytest.approx((2950 + 2 * 56 * 515) / 1.98e9, rel=1e-12)
    assert loop[j] == pytest.approx(30.62e-6, rel=1e-3) and loop.sum() == loop[j]
    t = bt.kernel_terms(plan, bt.as_nodes(plan), pred, pred.target.profile)[0]
    assert t[j] >= loop[j]
    fp32 = _run(_block(8, 64, 56), "fp32", True).predictions[0]
    assert bn_backward.with_reread(plan, fp32) is plan
    assert not bn_backward.loop_s(plan, fp32, fp32.target.profile).any()
