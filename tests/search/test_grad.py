"""latency_fn differentiates (grad = finite differences, vmap); sensitivities have the right sign."""

import numpy as np
import pytest

import analyzer

from conftest import HW

import search_space as ss


def _two_layer_model():
    """A compute-bound MatMul (4096^3) and a memory-bound Add (2^22 elements)."""
    from onnx import TensorProto, helper, numpy_helper

    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [4096, 4096])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4096, 4096])
    w = numpy_helper.from_array(np.zeros((4096, 4096), np.float32), "w")
    big = helper.make_tensor_value_info("b", TensorProto.FLOAT, [4096, 1024])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [4096, 1024])
    g = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["y"], name="mm"),
                           helper.make_node("Add", ["b", "b"], ["z"], name="add")],
                          "g", [a, big], [y, z], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_latency_fn_is_the_prediction_and_grad_matches_fd():
    import jax
    import jax.numpy as jnp

    cm = analyzer.CostModel(HW)
    m = ss.random_transformer(np.random.default_rng(1), 60)
    f = cm.latency_fn(m)
    # every evaluation below is jitted: one compilation per function, where eager dispatch
    # compiles each primitive (the values are the same; jit traces the same jnp code)
    fj = jax.jit(f)
    # the prediction less its per-run fixed cost (xla on a TPU: the call launch), which callers
    # add (search.whatif)
    preds = analyzer.analyze(m, hw=HW).predictions        # reference(m)'s own analysis
    call = np.array([p.run_overhead_s for p in preds])
    np.testing.assert_allclose(np.asarray(fj(f.node_scale, f.hw)) + call,
                               np.array([p.latency_s for p in preds]), rtol=1e-5)
    # one reverse-mode Jacobian per argument, both profiles at once (a row per profile)
    jac, jhw = jax.jit(jax.jacrev(f, argnums=(0, 1)))(f.node_scale, f.hw)
    jbw = jhw["mem_bw"]
    base = np.asarray(fj(f.node_scale, f.hw))
    for p in range(2):
        checked = 0
        for key in ("flops", "bytes"):
            gi = np.asarray(jac[key])[p]
            i = int(np.argmax(np.abs(gi)))
            if gi[i] == 0:      # nothing of this kind bounds a kernel on this profile
                continue
            checked += 1
            eps = 0.05
            s2 = {k: v for k, v in f.node_scale.items()}
            s2[key] = s2[key].at[i].add(eps)
            fd = (float(np.asarray(fj(s2, f.hw))[p]) - float(base[p])) / eps
            assert fd == pytest.approx(float(gi[i]), rel=2e-2)
        assert checked
        assert any(float(np.asarray(x)[p].sum()) < 0 for x in jax.tree_util.tree_leaves(jbw))
    batch = jax.jit(jax.vmap(lambda s: f({"flops": s, "bytes": f.node_scale["bytes"]}, f.hw)))(
        jnp.ones((3, len(f.names))) * jnp.array([[1.0], [2.0], [0.5]]))
    assert batch.shape == (3, 2)
    assert float(batch[1, 0]) > float(batch[0, 0]) > float(batch[2, 0])


def test_sensitivity_signs():
    cm = analyzer.CostModel(HW, runtime="kernel")
    m = _two_layer_model()
    rep = analyzer.analyze(m, hw=HW, runtime="kernel")
    sens = cm.sensitivity(rep)
    mm, add = sens.names.index("mm"), sens.names.index("add")
    for p in range(2):
        pred = rep.predictions[p]
        assert pred.node("mm").bound == "compute" and pred.node("add").bound == "memory"
        assert sens.dlat_dflops[p, mm] > 0 and sens.dlat_dbytes[p, mm] == 0
        assert sens.dlat_dbytes[p, add] > 0 and sens.dlat_dflops[p, add] == 0
        assert sens.dlat_dpeak[p] < 0 and sens.dlat_dbw[p] < 0 and sens.dlat_dbw_abs[p] < 0
    np.testing.assert_allclose(sens.latency_s, [p.latency_s for p in rep.predictions], rtol=1e-5)
