"""XLA's own GPU kernel classes under the ``xla`` runtime (``xla_gpu_classes``, ``op_classes.XLA_CLASS``):
which kernels take them, the Hopper sets fitted on the H200's XLA kernels, the fallback that keeps
a family without them where it was, and the order across GPUs."""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import pytest

import analyzer
from analyzer.prediction import xla_gpu_classes
from analyzer.prediction.efficiency import op_classes as oc
from analyzer.prediction.efficiency.constants import load_constants

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
F32 = jnp.float32


def _add(x, y):
    return x + y


def _layernorm(x):
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), -1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5)


def _dot(x, w):
    return x @ w


def _kernel(fn, *shapes, hw="h200", runtime=None):
    args = [jax.ShapeDtypeStruct(s, d) for s, d in shapes]
    p = analyzer.analyze_jax(fn, *args, hw=hw, **({"runtime": runtime} if runtime else {})).predictions[0]
    return p, next(t for t in (p.explain(i) for i in range(len(p.nodes))) if t is not None)


def _hopper_set(cls: str) -> dict:
    with open(os.path.join(ROOT, "hardware_db", "efficiency", "nvidia-hopper.json"), encoding="utf-8") as f:
        return json.load(f)["sets"][cls]["constants"]


def test_xla_kernels_take_the_xla_classes_and_the_fitted_hopper_floor():
    k = _kernel(_add, ((1, 256), F32), ((1, 256), F32))[1]
    assert k.op_class == "xla_loop"
    # the floor is the fitted one (floor_s at floor_clock_hz, the H200's 1.98 GHz: the profile's clock)
    assert k.floor_s == pytest.approx(_hopper_set("xla_loop")["floor_s"], rel=1e-3)
    # a jnp layer norm: a fusion with reduction members is XLA's reduction fusion, whatever member
    # is heaviest; a dot is XLA's dot
    assert _kernel(_layernorm, ((64, 512), F32))[1].op_class == "xla_reduce"
    assert _kernel(_dot, ((64, 256), jnp.bfloat16), ((256, 256), jnp.bfloat16))[1].op_class == "xla_gemm"


def test_the_classes_apply_to_the_xla_policy_on_gpus_only():
    assert xla_gpu_classes.applies("xla", True) and not xla_gpu_classes.applies("xla", False)
    assert not xla_gpu_classes.applies("none", True) and not xla_gpu_classes.applies("xla_cpu", True)
    # the kernel runtime on the same program keeps the framework classes
    assert _kernel(_add, ((1, 256), F32), ((1, 256), F32), runtime="kernel")[1].op_class == "elementwise"
    # and a TPU's xla plan too
    assert _kernel(_add, ((1, 256), F32), ((1, 256), F32), hw="tpu-v5e")[1].op_class == "elementwise"


@pytest.mark.parametrize("family", ["nvidia-ampere", "nvidia-ampere-ga10x", "nvidia-ada", "nvidia-turing",
                                    "nvidia-volta", "nvidia-pascal"])
def test_a_family_without_xla_sets_keeps_the_constants_its_kernels_had(family):
    consts = load_constants(family).arrays
    src = {"xla_loop": "elementwise", "xla_act": "activation", "xla_reduce": "norm", "xla_softmax": "softmax",
           "xla_softmax_block": "softmax_block", "xla_gemm": "gemm", "xla_bgemm": "bgemm"}
    for xla, before in src.items():
        for name in ("e_compute", "e_bw", "b_half_bytes", "floor_s", "bpc", "l2_hit", "tile_m"):
            assert consts[name][oc.CLASS_CODE[xla]] == consts[name][oc.CLASS_CODE[before]], (family, xla, name)
    # every class XLA_CLASS moves resolves to the same set as its XLA class on these families
    for cls, xla in oc.XLA_CLASS.items():
        assert consts["floor_s"][oc.CLASS_CODE[cls]] == consts["floor_s"][oc.CLASS_CODE[xla]], (family, cls)


def test_blackwell_carries_hopper_xla_sets_and_the_order_across_gpus_holds():
    b = load_constants("nvidia-blackwell").arrays
    h = load_constants("nvidia-hopper").arrays
    for cls in ("xla_loop", "xla_act", "xla_reduce", "xla_gemm", "xla_bgemm"):
        i = oc.CLASS_CODE[cls]
        assert b["floor_s"][i] == h["floor_s"][i] and b["floor_clock_hz"][i] == h["floor_clock_hz"][i]
    for fn, shapes in ((_add, (((1, 256), F32), ((1, 256), F32))), (_layernorm, (((64, 512), F32),)),
                       (_dot, (((64, 256), jnp.bfloat16), ((256, 256), jnp.bfloat16)))):
        t = {hw: _kernel(fn, *shapes, hw=hw)[0].latency_s for hw in ("b200", "h100", "a100")}
        assert t["b200"] <= t["h100"] * 1.0001 <= t["a100"] * 1.0001, (fn.__name__, t)


def test_explain_says_where_the_kernels_class_set_comes_from():
    # the Hopper xla_reduce set is its own fit on the H200's XLA rows; the A100's is the norm set it falls back to
    h = _kernel(_layernorm, ((64, 512), F32))[1]
    assert h.class_provenance.startswith("architecture constants fitted on h200_sxm") and "xla_ops" in h.class_provenance
    a = _kernel(_layernorm, ((64, 512), F32), hw="a100")[1]
    assert a.op_class == "xla_reduce" and a.class_provenance.startswith("as norm: ")
    from analyzer.render.explain import render_explain

    rep = analyzer.analyze_jax(_layernorm, jax.ShapeDtypeStruct((64, 512), F32), hw="h200")
    i = next(i for i in range(len(rep.nodes)) if rep.predictions[0].explain(i) is not None)
    assert "  xla_reduce set: architecture constants fitted on h200_sxm" in render_explain(rep, i, width=400)
