"""A model output read inside the fused kernel that makes it is written all the same: the
lowering takes the model's outputs (``report.model["outputs"]``, ``Counted.outputs``) as
``graph_outputs``, and a fused kernel saves only the read back of such a tensor.

The graph: x [1, 8, 16] fp32 -> Sigmoid -> s -> Tanh -> y, under the ``xla`` policy (tpu-v5e),
which joins the two elementwise ops into one kernel.  Each tensor is 1*8*16 elements * 4 B =
512 B; the two nodes alone move 512 + 512 (Sigmoid: read x, write s) + 512 + 512 (Tanh: read s,
write y) = 2048 B.  s only an intermediate: the kernel saves its write and its read back,
2048 - 1024 = 1024 B.  s also a model output: the kernel writes it and saves only its read
back, 2048 - 512 = 1536 B."""

import numpy as np
from onnx import TensorProto, helper

import analyzer

TENSOR = 1 * 8 * 16 * 4   # bytes of x, s and y (fp32)


def _model(outputs):
    g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
                           helper.make_node("Tanh", ["s"], ["y"], name="tanh")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [1, 8, 16])
                           for o in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _fused_bytes(report) -> float:
    t = report.predictions[0].kernel_table
    assert list(t.members) == [2]   # one kernel of two members: Sigmoid and Tanh joined
    return float(t.nbytes[0] * t.runs[0])


def test_an_output_read_inside_its_kernel_is_still_written():
    both = analyzer.analyze(_model(["s", "y"]), hw="tpu-v5e")
    # the output names are the names the top-level nodes write
    assert both.model["outputs"] == ["s", "y"]
    assert {t for n in both.nodes if n.level == "" for t in n.out_names} >= {"s", "y"}
    assert _fused_bytes(both) == 3 * TENSOR       # x read, s and y written: 1536 B
    only_y = analyzer.analyze(_model(["y"]), hw="tpu-v5e")
    assert _fused_bytes(only_y) == 2 * TENSOR     # x read, y written: 1024 B


def test_a_jax_program_returning_an_intermediate_writes_it():
    import jax
    import jax.numpy as jnp

    def f(x):
        s = jax.nn.sigmoid(x)
        return s, jnp.tanh(s)

    r = analyzer.analyze_jax(f, jax.ShapeDtypeStruct((1, 8, 16), jnp.float32), hw="tpu-v5e")
    outs = r.model["outputs"]
    assert len(outs) == 2
    top = {t for n in r.nodes if n.level == "" for t in n.out_names}
    assert set(outs) <= top
    assert _fused_bytes(r) == 3 * TENSOR          # 1536 B, as the ONNX graph's


def test_search_scores_equal_analyze_with_an_output_inside_a_kernel():
    from analyzer.search.fastpath import structure

    hw = ["a100", "tpu-v5e"]
    blobs = [_model(["s", "y"]), _model(["y"])]
    ref = np.array([[p.latency_s for p in analyzer.analyze(b, hw=hw).predictions] for b in blobs])
    cm = analyzer.CostModel(hw)
    first = cm.score(blobs)
    again = cm.score(blobs)   # (the second time from the fast path's learned rows)
    np.testing.assert_allclose(first, ref, rtol=1e-6)
    np.testing.assert_allclose(again, ref, rtol=1e-6)
    assert ref[0, 1] > ref[1, 1]   # writing s costs the xla group time
    assert cm._rows.stats["mismatch"] == 0 and cm._rows.usable
    # the fast path's saved bytes equal the plan's: 512 B with s an output, 1024 B without
    saved = []
    for b in blobs:
        st = structure.read(b)
        counted = cm._fast.count(st)
        data = cm._rows._data(counted.keys)
        for g, (_, low) in zip(cm._rows.groups, cm.lower(counted)):
            _, s = cm._rows._kernels(st.nodes, data, g.policy, st.outputs)
            assert tuple(s) == low.plan.saved_bytes
            if g.policy == "xla":
                saved.append(s)
    assert saved == [[TENSOR], [2 * TENSOR]]


def test_a_report_scored_by_the_cost_model_keeps_its_outputs():
    r = analyzer.analyze(_model(["s", "y"]))
    cm = analyzer.CostModel(["tpu-v5e"])
    ref = analyzer.analyze(_model(["s", "y"]), hw="tpu-v5e").predictions[0].latency_s
    np.testing.assert_allclose(cm.score([r])[0, 0], ref, rtol=1e-6)
