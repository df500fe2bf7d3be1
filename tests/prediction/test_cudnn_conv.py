"""cuDNN's launches inside one eager convolution (``prediction.cudnn_conv``; rules ``cudnn-fp32`` and
``cudnn-nhwc`` of the eager plan) against closed forms: how many, their bytes, and that they pay
no host dispatch of their own."""

from __future__ import annotations

import pytest
from onnx import helper
from onnx_builders import graph, weight

import analyzer
import hardware_db
from analyzer.prediction import cudnn_conv, eager_rules, lowering, runtimes


def _conv(n: int, c: int, hw: int, *, groups: int = 1, stride: int = 1, kernel: int = 3):
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[kernel // 2] * 4, group=groups,
                            strides=[stride, stride])
    return graph([node], {"x": (n, c, hw, hw)}, ["y"], {"w": weight(c, c // groups, kernel, kernel)})


def _plan(model, precision=None, runtime="eager"):
    nodes = list(analyzer.analyze(model, hw="v100-pcie-32gb", runtime=runtime, precision=precision).nodes)
    return lowering.lower(nodes, [hardware_db.get("v100-pcie-32gb")], precision, runtimes.get(runtime))


def test_nonfused_winograd_launches_and_bytes():
    # N 4, C 128 -> 128, 20 x 20, fp32: min(C) 128 >= 96, tiles 4 * 5 * 5 = 100 >= 100: non-fused,
    # 3 launches besides the main kernel, floors only
    low = _plan(_conv(4, 128, 20))
    assert low.plan.extra_ops == (("cudnn:Transpose",) * 3,)
    assert low.plan.extra_bytes == ((0, 0, 0),)
    # the transforms' bytes (the variant not charged):
    # data:   4 (4*128*400 + 36*128*100) = 4 * 665,600 = 2,662,400
    # filter: 4 * 45 * 128 * 128 = 2,949,120
    # output: 4 (36*128*100 + 4*128*400) = 2,662,400
    assert cudnn_conv.winograd_bytes((4, 128, 20, 20), 128, (4, 128, 20, 20), 4) == (2_662_400, 2_949_120, 2_662_400)


@pytest.mark.parametrize("n, c, hw", [(4, 95, 20),     # channels below 96
                                       (3, 128, 20),    # 3 * 25 = 75 tiles < 100
                                       (1, 8, 16)])
def test_one_helper_otherwise(n, c, hw):
    low = _plan(_conv(n, c, hw))
    assert low.plan.extra_ops == (("cudnn:Transpose",),)
    assert low.plan.extra_bytes == ((0,),)


@pytest.mark.parametrize("kwargs", [{"stride": 2}, {"kernel": 1}, {"groups": 2}, {"groups": 8}])
def test_other_shapes_plan_the_main_kernel_only(kwargs):
    assert _plan(_conv(1, 8, 16, **kwargs)).plan.extra_ops == ()


def test_fp16_nchw_conversions():
    # fp16, N 1, C 8, 16 x 16: x 1*8*16*16*2 = 4,096 B, w 8*8*3*3*2 = 1,152 B, y 4,096 B; each
    # conversion reads and writes its tensor: 8,192, 2,304, 8,192
    low = _plan(_conv(1, 8, 16), precision="fp16")
    assert low.plan.extra_bytes == ((8_192, 2_304, 8_192),)
    # a depthwise convolution runs PyTorch's own kernel: no conversion
    assert _plan(_conv(1, 8, 16, groups=8), precision="fp16").plan.extra_ops == ()


def test_fp16_channels_last_input_converts_nothing():
    # x [1, 16, 16, 8] NHWC, transposed to NCHW: a channels-last view, cuDNN runs it as is
    nodes = [helper.make_node("Transpose", ["x"], ["xc"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xc", "w"], ["y"], pads=[1, 1, 1, 1])]
    m = graph(nodes, {"x": (1, 16, 16, 8)}, ["y"], {"w": weight(8, 8, 3, 3)})
    assert _plan(m, precision="fp16").plan.extra_ops == ()


def test_launch_counts_and_no_dispatch_of_their_own():
    # eager: the non-fused convolution is 4 launches; the kernel runtime keeps one per node
    m = _conv(4, 128, 20)
    assert analyzer.analyze(m, hw="v100-pcie-32gb", runtime="eager").predictions[0].launches == 4
    assert analyzer.analyze(m, hw="v100-pcie-32gb", runtime="kernel").predictions[0].launches == 1
    # eager-op: the host time of the call is the conv's one figure (65.8 us), not + 3 copies'
    low = _plan(m, runtime="eager-op")
    assert float(low.host[0, 0]) == pytest.approx(runtimes.eager_op_call_us("conv3_simt") * 1e-6)
    assert cudnn_conv.op_of("cudnn:Transpose") == "Transpose" and not cudnn_conv.inside("Transpose")


def test_explain_shows_each_inserted_launch():
    from analyzer.render.explain import render_explain

    text = render_explain(analyzer.analyze(_conv(4, 128, 20), hw="v100-pcie-32gb", runtime="eager"), 0, None)
    assert text.count("inserted launch cudnn:Transpose") == 3
    assert text.count("without a dispatch (inside the library call)") == 3


def test_rules_are_recorded():
    names = {r.name for r in eager_rules.RULES}
    assert {"cudnn-fp32", "cudnn-nhwc"} <= names


def _conv_hw(n: int, ci: int, co: int, hw: int, *, stride: int = 1, kernel: int = 3, bias: str = ""):
    ins = ["x", "w"] + ([bias] if bias else [])
    node = helper.make_node("Conv", ins, ["y"], pads=[kernel // 2] * 4, strides=[stride, stride])
    inits = {"w": weight(co, ci, kernel, kernel), **({bias: weight(co)} if bias else {})}
    return graph([node], {"x": (n, ci, hw, hw)}, ["y"], inits)


def test_fp16_pointwise_conv_is_a_gemm_without_conversions():
    # 1x1 stride 1, fp16: one GEMM on the NCHW tensors (the H200's nvjet kernels): none
    assert _plan(_conv_hw(1, 64, 256, 56, kernel=1), precision="fp16").plan.extra_ops == ()
    # 1x1 stride 2: input and output converted, not the filter (already K-R-S-C):
    # x 1*64*56*56*2 = 401,408 B -> 802,816; y 1*256*28*28*2 = 401,408 B -> 802,816
    low = _plan(_conv_hw(1, 64, 256, 56, kernel=1, stride=2), precision="fp16")
    assert low.plan.extra_bytes == ((802_816, 802_816),)


def test_unaligned_channels_run_no_tensor_core_kernel():
    # C_in 3: 3 x 2 B = 6 B, not a multiple of 16: implicit_convolve_sgemm on NCHW, no conversion
    assert _plan(_conv_hw(1, 3, 64, 32, kernel=7, stride=2), precision="fp16").plan.extra_ops == ()


def test_tf32_converts_input_and_filter_only():
    # tf32, 3x3, C 64 -> 64, 14 x 14: x 64*196*4 = 50,176 B, w 64*64*9*4 = 147,456 B; output NCHW
    low = _plan(_conv_hw(1, 64, 64, 14), precision="tf32")
    assert low.plan.extra_bytes == ((100_352, 294_912),)
    # a strided 1x1 under TF32: an NCHW FMA-unit kernel, no conversion; no Winograd helper either
    assert _plan(_conv_hw(1, 64, 128, 14, kernel=1, stride=2), precision="tf32").plan.extra_ops == ()
    assert _plan(_conv_hw(4, 128, 128, 20), precision="tf32").plan.extra_ops == ((
        "cudnn:Transpose", "cudnn:Transpose"),)


def test_fp16_folded_batchnorm_is_three_kernels():
    # a BatchNorm the exporter folded (bias 'onnx::Conv_5'), fp16, C_out 32: besides the transform,
    # a per-channel copy and invstd, each 32 x (2 + 4) = 192 B, no dispatch of their own
    m = _conv_hw(1, 32, 32, 8, kernel=1, bias="onnx::Conv_5")
    ops = _plan(m, precision="fp16").plan.extra_ops[0]
    assert ops == ("aten:Transpose", "aten:Add", "BatchNormalization")
    assert _plan(m, precision="fp16").plan.extra_bytes[0][:2] == (192, 192)
    assert cudnn_conv.inside("aten:Add") and cudnn_conv.op_of("aten:Add") == "Add"
    # fp32: cuDNN's one bn_fw_inf kernel
    assert _plan(m).plan.extra_ops[0] == ("BatchNormalization",)


def test_eager_kernel_is_eager_without_its_host():
    m = _conv_hw(2, 32, 32, 16, bias="onnx::Conv_5")
    ek = analyzer.analyze(m, hw="h200-sxm", runtime="eager-kernel", precision="bf16").predictions[0]
    eg = analyzer.analyze(m, hw="h200-sxm", runtime="eager", precision="bf16").predictions[0]
    t = eg.kernel_table
    # the conv, its 3 conversions (3x3, C 32 x 2 B aligned), the BatchNorm's copy, invstd, transform
    assert ek.launches == eg.launches == 7
    assert ek.latency_s == pytest.approx(float((t.time - t.host).sum()), rel=1e-6)


def test_hopper_plans_no_winograd_helper_for_fp32():
    # cuDNN 9 on the H200 runs an fp32 3x3 stride-1 convolution as one FFMA implicit GEMM (its
    # kernel names): one launch there; the V100's cuDNN 8.9 rule keeps the non-fused Winograd's 4
    m = _conv(4, 128, 20)
    assert analyzer.analyze(m, hw="h200-sxm", runtime="eager", precision="fp32").predictions[0].launches == 1
    assert analyzer.analyze(m, hw="v100-pcie-32gb", runtime="eager", precision="fp32").predictions[0].launches == 4
    assert not cudnn_conv.winograd_helpers([hardware_db.get("h200-sxm")])
    assert cudnn_conv.winograd_helpers([hardware_db.get("h200-sxm"), hardware_db.get("a100-80gb-pcie")])


def test_default_precision_plans_the_tf32_convolution_the_kernel_times_take():
    # an fp32 model without a precision on a GPU with a TF32 figure: PyTorch's default runs the
    # convolution in TF32 (docs/model.md, Precision): the plan converts the input and the filter,
    # as under an explicit tf32; explicit fp32 keeps the FMA-unit plan (one kernel on Hopper)
    m = _conv(4, 128, 20)

    def launches(hw, precision):
        return analyzer.analyze(m, hw=hw, runtime="eager", precision=precision).predictions[0].launches
    assert launches("h200-sxm", None) == launches("h200-sxm", "tf32") == 3
    assert launches("h200-sxm", "fp32") == 1
    assert launches("a100-80gb-pcie", None) == 3 and launches("a100-80gb-pcie", "fp32") == 4
    assert launches("v100-pcie-32gb", None) == 4     # no TF32 figure: fp32 on the FMA units
