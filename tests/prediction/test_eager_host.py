"""The eager stream's named host tables (``runtimes.EAGER_HOSTS``, ``Options.host``) against
closed forms.

Profile tests/fixtures/hw/round-gpu.toml (2 us per launch, vector fp32 10 TFLOP/s, 1000 GB/s).
Host tables: the default "llmcompass-a100" (21 us per matrix op, 12 us other, backward kernels at
their figure); "torch2.11-h200" (42 us per convolution, 28 us per other matrix op, 10 us other,
backward kernels 2.25 x their class figure).  A chain of tiny ops is host-bound: its wall-clock
is the host sum plus the last kernel (``sum h + k_n``, docs/model.md "The eager stream").
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from onnx import helper
from onnx_builders import graph, weight

import analyzer
from analyzer.errors import InputSpecError
from analyzer.prediction import runtimes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_eager_stream import ROUND_GPU, _chain

H200 = "torch2.11-h200"


def _kernels(model):
    rep = analyzer.analyze(model, hw=ROUND_GPU, runtime="eager-kernel")
    return [r.time_s for r in rep.predictions[0].nodes]      # the eager plan's kernels, no host


def _eager(model, **kw):
    return analyzer.analyze(model, hw=ROUND_GPU, runtime="eager", **kw)


def test_the_table_figures():
    assert runtimes.eager_dispatch_us("gemm") == 21.0 and runtimes.eager_dispatch_us("relu") == 12.0
    assert runtimes.eager_dispatch_us("conv", H200) == 42.0
    assert runtimes.eager_dispatch_us("conv_dw", H200) == 42.0     # conv_dw -> conv
    assert runtimes.eager_dispatch_us("gemm_simt", H200) == 28.0   # gemm_simt -> gemm
    assert runtimes.eager_dispatch_us("norm", H200) == 10.0        # the default
    assert runtimes.eager_host().backward_ratio == 1.0
    assert runtimes.eager_host(H200).backward_ratio == 2.25


@pytest.mark.parametrize("host,h_mm,h_ew", [(None, 21e-6, 12e-6), (H200, 28e-6, 10e-6)])
def test_host_bound_chain_under_each_host(host, h_mm, h_ew):
    # MatMul 64^3: 2 us launch + 5 ns << 10 us: host-bound; wall = 2 h_mm + 2 h_ew + last k
    model = _chain(["mm", "relu", "mm", "relu"], n=64)
    k = _kernels(model)
    p = _eager(model, host=host).predictions[0]
    assert p.latency_s == pytest.approx(2 * h_mm + 2 * h_ew + k[-1], rel=1e-6)
    assert any(f"host {host or runtimes.DEFAULT_HOST}" in n for n in p.notes)


def test_a_convolution_takes_the_conv_figure():
    # Conv 1x4x8x8 by 4x4x3x3: one op, its launches (cuDNN's, in the eager plan) at their
    # floors; its host figure once: h + k = 42 us + k
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    model = graph([node], {"x": (1, 4, 8, 8)}, ["y"], {"w": weight(4, 4, 3, 3)})
    k = _kernels(model)
    assert _eager(model, host=H200).predictions[0].latency_s == pytest.approx(42e-6 + sum(k), rel=1e-6)


@pytest.mark.parametrize("host,h_bw", [(None, 21e-6), (H200, 2.25 * 28e-6)])
def test_backward_kernels_take_the_backward_ratio(host, h_bw):
    # two 64^3 MatMuls, x not a parameter: backward = dW1, dX1, dW0 (3 GEMMs, launch floors);
    # host-bound: backward time = 3 h_bw + its last kernel - the forward's last kernel (both
    # 64^3 GEMMs: the same device time)
    st = _eager(_chain(["mm", "mm"], n=64), host=host, train=True, optimizer="none").training.steps[0]
    assert st.backward_kernels == 3
    assert st.backward_s == pytest.approx(3 * h_bw, rel=1e-6)


def test_an_unknown_host_is_refused_naming_the_hosts():
    with pytest.raises(InputSpecError, match=re.escape("llmcompass-a100, torch2.11-h200")):
        _eager(_chain(["relu"], n=64), host="a-laptop")


def test_the_option_names_the_hosts_the_stream_has():
    # Options checks a host by name without importing the prediction stage: the two lists agree
    from analyzer.options import EAGER_HOST_NAMES
    from analyzer.prediction.runtimes import DEFAULT_HOST, EAGER_HOSTS

    assert tuple(EAGER_HOSTS) == EAGER_HOST_NAMES and DEFAULT_HOST == EAGER_HOST_NAMES[0]


@pytest.mark.parametrize("runtime", ["kernel", "eager-kernel"])
def test_a_host_another_runtime_does_not_charge_is_a_warning_not_a_silent_no_op(runtime):
    model = _chain(["mm", "relu"])
    plain = analyzer.analyze(model, hw=ROUND_GPU, runtime=runtime).predictions[0]
    asked = analyzer.analyze(model, hw=ROUND_GPU, runtime=runtime, host=H200).predictions[0]
    assert asked.latency_s == plain.latency_s                  # nothing charged ...
    assert not any("host table" in w for w in plain.warnings)
    assert [w for w in asked.warnings if "host table" in w] == [
        f"host table '{H200}' not charged: the {runtime} runtime has no per-op host figures of it "
        "(host tables are the eager runtime's, and eager-op's where they state per-call figures)"]  # ... said so
    eager = analyzer.analyze(model, hw=ROUND_GPU, runtime="eager", host=H200).predictions[0]
    assert not any("host table" in w for w in eager.warnings)


def test_eager_op_takes_the_hosts_per_call_table():
    # eager-op: each call its host part + its kernel. The default: NeuSight's hosts (44.0 us a
    # GEMM, 25.9 an elementwise op: the Relu's class); "torch2.11-h200": the H200 host's medians
    # (20.6 and 14.0 us), so the two-op chain is (44.0 - 20.6) + (25.9 - 14.0) = 35.3 us shorter
    model = _chain(["mm", "relu"])
    plain = analyzer.analyze(model, hw=ROUND_GPU, runtime="eager-op").predictions[0]
    asked = analyzer.analyze(model, hw=ROUND_GPU, runtime="eager-op", host=H200).predictions[0]
    assert plain.latency_s - asked.latency_s == pytest.approx((44.0 - 20.6 + 25.9 - 14.0) * 1e-6, rel=1e-6)
    assert not any("host table" in w for w in asked.warnings)
    assert any("median of eager wall-clock - kernel sum" in n for n in asked.notes)
    assert runtimes.eager_op_call_us("norm_row", H200) == 18.1       # norm_row -> norm
    assert runtimes.eager_op_call_us("conv3_simt", H200) == 18.8     # conv3_simt -> conv
    assert runtimes.eager_op_call_us("pooling", H200) == 18.1        # pooling -> reduce -> norm
    assert runtimes.eager_op_call_us("norm_row") == 39.3             # NeuSight's LayerNorm
