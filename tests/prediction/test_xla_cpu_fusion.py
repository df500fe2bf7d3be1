"""The kernels the ``xla`` runtime plans on a CPU (``xla_cpu_fusion``) against the thunks XLA's CPU
backend compiles for the same programs, read from their optimized HLO with
``PYTHONPATH=$PWD python bench/xla_diagnose.py counts`` (JAX/jaxlib 0.10.2): closed-form launch
counts, each written beside XLA's own.  A GPU profile keeps the ``xla`` policy's plan."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

import analyzer
from analyzer.prediction import runtimes

ROOT = Path(__file__).resolve().parents[2]
ROUND_GPU = ROOT / "tests" / "fixtures" / "hw" / "round-gpu.toml"
CPU = "epyc-9654"
sys.path.insert(0, str(ROOT / "samples"))

import jax_models as jm  # noqa: E402


def _launches(fn, *shapes, hw=CPU):
    p = analyzer.analyze_jax(fn, *shapes, hw=hw, runtime="xla").predictions[0]
    return p.launches, p


def test_mlp_inference_plans_the_kernels_xla_cpu_compiles():
    # XLA (batch 8): 3 YNNPACK dots + 6 loop fusions = 9 thunks: bias+relu twice, then the
    # softmax of the last layer: [bias + reduce_max], [subtract, exp], [reduce_sum], [divide]
    # (the max and the exp are read by broadcasting readers, the exp by two: each is written)
    n, p = _launches(jm.mlp_infer, jax.ShapeDtypeStruct((8, 784), jnp.float32))
    assert n == 3 + 2 + 4 == 9
    assert p.runtime == "xla"
    # the GPU plan joins every connected elementwise/reduction node: 3 dots + 2 + 1 softmax
    g, _ = _launches(jm.mlp_infer, jax.ShapeDtypeStruct((8, 784), jnp.float32), hw=str(ROUND_GPU))
    assert g == 3 + 2 + 1


def test_scan_launches_its_slices_and_counter_every_trip():
    # the scan RNN at batch 8 (12 trips; xs [12, 8, 32]): XLA runs 89 thunks: per trip 2 dots,
    # [add, add bias, tanh], a dynamic-slice of xs (a dot reads it), the counter's copy and
    # add, the condition's compare (6 x 12 + 12); besides: the compare that ends the loop, the
    # counter's first copy, h0's broadcast, the head's dot and bias add (5).  opcost plans them
    # all: 12 x (3 + 1 + 3) + 3 + 2 = 89 (the once-a-loop compare and copy on the first kernel
    # beside the scan)
    n, p = _launches(jm.rnn_infer, jax.ShapeDtypeStruct((12, 8, 32), jnp.float32))
    assert n == 12 * (3 + 1 + 3) + 3 + 2 == 89
    extra = [ops for ops in _plan_extras(p) if ops]
    assert sorted(extra) == sorted([("dynamic_slice", "copy", "add", "lt"), ("lt", "copy")])


def _plan_extras(p):
    from analyzer.prediction import lowering

    rep = analyzer.analyze_jax(jm.rnn_infer, jax.ShapeDtypeStruct((12, 8, 32), jnp.float32))
    low = lowering.lower(list(rep.nodes), [p.target.profile], None, runtimes.XLA_CPU)
    return low.plan.extra_ops


def test_stacked_outputs_update_a_slice_each_trip():
    # a scan that stacks two outputs and reads its xs only elementwise: the slice fuses into
    # the body's kernel. XLA runs 35 thunks: per trip [slice, x * 2 + c], an update-slice of
    # each stacked output ([-y] fused into its own), the counter's copy and add, the compare
    # (6 x 5); besides: the last compare, the counter's first copy, the zero carry and the two
    # stacked buffers' zero fill and copy (5)
    def fn(xs):
        def body(c, x):
            y = x * 2.0 + c
            return y, (y, -y)
        return jax.lax.scan(body, jnp.zeros((4,), jnp.float32), xs)
    n, _ = _launches(fn, jax.ShapeDtypeStruct((5, 4), jnp.float32))
    # opcost, per trip: [mul, add] (the carry and the first ys), [neg] (the second ys), 2
    # updates, 3 counter launches; besides: the carry's zero init, the last compare and the
    # counter's first copy
    assert n == 5 * (2 + 2 + 3) + 1 + 2 == 38


def test_xla_on_a_cpu_is_the_cpu_policy_and_lowered_apart_from_a_gpu():
    import hardware_db
    from analyzer.prediction.targets import groups, resolve

    cpu, gpu = hardware_db.get(CPU), hardware_db.get(str(ROUND_GPU))
    assert runtimes.runtime_for(runtimes.RUNTIMES["xla"], cpu) is runtimes.XLA_CPU
    assert runtimes.runtime_for(runtimes.RUNTIMES["xla"], gpu) is runtimes.RUNTIMES["xla"]
    assert runtimes.runtime_for(runtimes.RUNTIMES["onnxruntime"], cpu) is runtimes.RUNTIMES["onnxruntime"]
    ts = resolve([cpu, gpu], "xla", "jaxpr")
    assert [(rt.fusion, idx) for rt, idx in groups(ts)] == [("xla_cpu", [0]), ("xla", [1])]
