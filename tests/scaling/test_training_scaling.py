"""Training step, global batch, parallel step models and seed 002's case, in closed forms."""

import json
import os

import onnx
import pytest

import analyzer
from analyzer.errors import InputSpecError
from analyzer.scaling import parallel as P
from analyzer.scaling.collectives import Comm
from analyzer.training.batch import set_batch

ZOO = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light")
ALEXNET = os.path.join(ZOO, "light_bvlc_alexnet.onnx")
GOOGLENET = os.path.join(ZOO, "light_inception_v1.onnx")


def test_mlp_train_counts_match_jax_train_step():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import samples.jax_models as jm

    B = 32
    onnx_rep = analyzer.analyze("samples/mlp.onnx", batch=B, train=True)
    jax_rep = analyzer.analyze_jax(jm.mlp_train_step, jm.mlp_params(),
                                   jax.ShapeDtypeStruct((B, 784), jnp.float32),
                                   jax.ShapeDtypeStruct((B,), jnp.int32), params_argnums=[0])
    ours = onnx_rep.training.counts.mac_flops
    assert abs(ours - jax_rep.totals.mac_flops) <= 0.01 * jax_rep.totals.mac_flops
    # hand: forward 2B(784*256 + 256*128 + 128*10); backward dW of all three, dX of fc2, fc3 only
    fwd = 2 * B * (784 * 256 + 256 * 128 + 128 * 10)
    bwd = 2 * B * (784 * 256 + 2 * 256 * 128 + 2 * 128 * 10)
    assert (onnx_rep.training.counts.forward_mac, onnx_rep.training.counts.backward_mac) == (fwd, bwd)
    assert ours == fwd + bwd == 32227328


@pytest.mark.parametrize("opt, flops, state_words", [("sgd", 2, 0), ("momentum", 4, 1),
                                                      ("adam", 13, 2), ("adamw", 15, 2)])
def test_optimizer_update_and_memory(opt, flops, state_words):
    r = analyzer.analyze("samples/mlp.onnx", "a100", batch=8, train=True, optimizer=opt)
    c, p = r.training.counts, 235146   # 784*256+256 + 256*128+128 + 128*10+10
    assert c.params == p
    assert c.optimizer_vector + c.optimizer_transcendental == flops * p
    step = r.training.steps[0]
    assert step.memory.weights == step.memory.gradients == 4 * p
    assert step.memory.optimizer_state == 4 * state_words * p
    assert step.fits is True and step.max_batch > 8
    # activations on the gradient path scale with the batch: max batch from the per-sample share
    fixed = step.memory.total - step.memory.activations
    assert step.max_batch == int((80e9 - fixed) // (step.memory.activations / 8))


def test_memory_that_does_not_fit():
    r = analyzer.analyze(ALEXNET, "k80", batch=4096, train=True, optimizer="adam")
    s = r.training.steps[0]
    assert s.fits is False and s.max_batch < 4096


def test_batch_rewrites_alexnet_reshape():
    _, rewritten, old, _ = set_batch(ALEXNET, 256)
    assert rewritten == ["n15"] and old == 1
    r = analyzer.analyze(ALEXNET, batch=256)
    one = analyzer.analyze(ALEXNET)
    assert r.totals.mac_flops == 256 * one.totals.mac_flops
    assert r.model["batch"]["rewritten_nodes"] == ["n15"]


def test_batch_refuses_a_target_it_cannot_read():
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    shape = numpy_helper.from_array(np.array([2, 4], dtype=np.int64), "s")
    g = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], name="odd")], "g",
                          [x], [y], [shape])
    with pytest.raises(InputSpecError, match="odd"):
        set_batch(helper.make_model(g), 4)


def test_amdahl_recovered_when_overheads_are_held_constant():
    """Linear rescale with a free network: step(N) = O + R/N, so the speed-up is Amdahl's with
    the serial share s = O / (O + R) at every N."""
    from hardware_db import links

    free = links.make(1e12)   # 1 PB/s, no latency: communication ~ 0
    r = analyzer.scale("samples/mlp.onnx", "a100", [1, 2, 4, 8, 64], link=free, batch=None,
                       rescale="linear", train=True, inputs={"x": (64, 784)})
    step = r.training.steps[0]
    s = step.overhead_s / step.step_s
    for p in r.scaling.points[1:]:
        assert p.speedup == pytest.approx(P.amdahl_speedup(p.devices, s), rel=1e-3)
        assert p.serial_fraction == pytest.approx(s, rel=1e-2)


def test_bubble_and_overlap_closed_forms():
    # GPipe / 1F1B bubble: (p-1)/(m+p-1); p=4, m=8: 3/11 of the step
    comp, bub, _ = P.pipeline(1.0, 4, 8, 0.0, lambda nb: Comm(0.0, 0.0))
    assert bub / (comp + bub) == pytest.approx(P.bubble_fraction(4, 8)) == pytest.approx(3 / 11)
    # overlap: 4 buckets of 0.1 s each, backward 1 s: all but the last bucket hidden

    def comm(nb):
        return Comm(nb, 0.0)

    total, exp = P.exposed(comm, 0.4, 1.0, overlap=True, buckets=4)
    assert total.total == pytest.approx(0.4) and exp == pytest.approx(0.1)
    assert P.exposed(comm, 0.4, 1.0, overlap=False)[1] == pytest.approx(0.4)
    # communication longer than backward: exposed = comm - backward * (k-1)/k ... = 2.0 - 0.75
    assert P.exposed(comm, 2.0, 1.0, overlap=True, buckets=4)[1] == pytest.approx(1.25)


def test_seed002_alexnet_vs_googlenet_on_k80_over_fdr():
    """Keuper & Pfreundt 2016: data-parallel SGD on K80 nodes over FDR InfiniBand (binary tree)
    turns communication-bound after a few nodes; AlexNet (250 MB of weights, B=256) earlier than
    GoogLeNet (B=32, ~28 MB), and AlexNet does not scale to 64 nodes."""
    alex = analyzer.scale(ALEXNET, "k80", [1, 2, 4, 8, 16, 32, 64], link="ib-fdr", batch=256,
                          algorithm="tree").scaling
    goog = analyzer.scale(GOOGLENET, "k80", [1, 2, 4, 8, 16, 32], link="ib-fdr", batch=32,
                          algorithm="tree").scaling
    a, g = alex.crossover()["k80"], goog.crossover()["k80"]
    assert 2 <= a <= 10
    assert g is None or g >= a
    at64 = [p for p in alex.points if p.devices == 64][0]
    assert at64.efficiency < 0.5
    # the gradient all-reduce is the whole model: 60,965,224 fp32 params = 243.9 MB
    assert alex.setup["gradient_bytes"] == 4 * 60965224


def test_tensor_and_pipeline_run():
    for par in ("tensor", "pipeline"):
        r = analyzer.scale("samples/mlp.onnx", "a100", [1, 2, 4], link="nvlink3", parallel=par,
                           inputs={"x": (64, 784)})
        d = r.to_dict()
        assert [p["devices"] for p in d["scaling"]] == [1, 2, 4]
        assert d["scaling"][0]["speedup"] == 1.0
        assert set(d["crossover_devices"]) == {"a100-80gb-sxm"}


def test_cli_devices_json_and_links(tmp_path):
    from click.testing import CliRunner
    from cli.main import main

    out = CliRunner().invoke(main, ["samples/mlp.onnx", "--hw", "a100", "--batch", "64",
                                    "--devices", "1,2,4", "--link", "ib-hdr", "--format", "json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert {"hardware", "devices", "step_s", "compute_s", "communication_s", "speedup",
            "efficiency"} <= set(d["scaling"][0])
    assert "a100-80gb-sxm" in d["crossover_devices"]
    out = CliRunner().invoke(main, ["hw", "list", "--links", "--format", "json"])
    assert out.exit_code == 0 and any(l["id"] == "ib-fdr" for l in json.loads(out.output))
    bad = CliRunner().invoke(main, ["samples/mlp.onnx", "--hw", "a100", "--batch", "6",
                                    "--devices", "1,4"])
    assert bad.exit_code == 2
