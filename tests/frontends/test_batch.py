"""batch=B on small static graphs: each shape a static export fixes at its batch, followed or
refused by name (analyzer/frontends/onnx/batch.py), with closed-form MACs."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

import analyzer
from analyzer.errors import InputSpecError, ShapeError
from analyzer.frontends.onnx.batch import set_batch

N, D = 4, 8   # tokens, width


def _const(name, value, dtype=np.int64):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def _model(nodes, inits, x_shape, y_name="y"):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, x_shape)],
                     [h.make_tensor_value_info(y_name, TP.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


def _class_token(source_nodes, inits):
    """x[1, N, D] ++ a class token [1, 1, D] along axis 1, then a D x D projection:
    MACs 2 * B * (N + 1) * D * D."""
    nodes = [*source_nodes,
             h.make_node("Concat", ["cls_b", "x"], ["c"], axis=1, name="concat"),
             h.make_node("MatMul", ["c", "w"], ["y"], name="proj")]
    inits = [*inits, numpy_helper.from_array(np.zeros((D, D), np.float32), "w")]
    return _model(nodes, inits, [1, N, D])


def _cls():
    return numpy_helper.from_array(np.zeros((1, 1, D), np.float32), "cls")


@pytest.mark.parametrize("how", ["expand", "tile", "constant_of_shape", "initializer"])
def test_class_token_is_given_the_batch(how):
    if how == "expand":   # ViT: cls.expand(batch, -1, -1) traced at batch 1
        src = [h.make_node("Expand", ["cls", "shape"], ["cls_b"], name="expand")]
        inits = [_cls(), _const("shape", [1, 1, 1])]
    elif how == "tile":
        src = [h.make_node("Tile", ["cls", "reps"], ["cls_b"], name="tile")]
        inits = [_cls(), _const("reps", [1, 1, 1])]
    elif how == "constant_of_shape":   # a zero token
        src = [h.make_node("ConstantOfShape", ["shape"], ["cls_b"], name="zeros",
                           value=numpy_helper.from_array(np.zeros(1, np.float32)))]
        inits = [_const("shape", [1, 1, D])]
    else:   # the token itself, [1, 1, D]: an Expand is inserted
        src = [h.make_node("Identity", ["cls"], ["cls_b"], name="alias")]
        inits = [_cls()]
    m = _class_token(src, inits)
    one = analyzer.analyze(m)
    r = analyzer.analyze(m, batch=6)
    assert one.node("proj").mac_flops == 2 * 1 * (N + 1) * D * D == 640
    assert r.node("proj").mac_flops == 2 * 6 * (N + 1) * D * D == 3840
    assert r.node("concat").out_specs[0].shape == (6, N + 1, D)
    expected = {"expand": ["expand"], "tile": ["tile"], "constant_of_shape": ["zeros"],
                "initializer": ["cls/batch_expand"]}[how]
    assert r.model["batch"]["rewritten_nodes"] == expected


def test_a_constant_that_cannot_be_followed_is_refused_by_name():
    # the token is sliced out of a table: Slice keeps no shape constant to rewrite
    src = [h.make_node("Slice", ["table", "s", "e"], ["cls_b"], name="pick")]
    inits = [numpy_helper.from_array(np.zeros((3, 1, D), np.float32), "table"),
             _const("s", [0]), _const("e", [1])]
    with pytest.raises(InputSpecError, match=r"Concat node 'concat' joins the batch with the "
                                             r"constant 'cls_b'.*Slice node 'pick'"):
        analyzer.analyze(_class_token(src, inits), batch=6)


def test_merged_batch_reshape_of_an_optimizer_follows():
    """onnxruntime's optimizer flattens [1, N, D] to [N, D] around a Gemm and back: the leading
    N is the batch merged with the tokens, B * N at batch B.  MACs 2 * B * N * D * D."""
    nodes = [h.make_node("Reshape", ["x", "flat"], ["f"], name="flatten"),
             h.make_node("Gemm", ["f", "w"], ["g"], name="gemm"),
             h.make_node("Reshape", ["g", "back"], ["y"], name="unflatten")]
    inits = [_const("flat", [N, D]), _const("back", [1, N, D]),
             numpy_helper.from_array(np.zeros((D, D), np.float32), "w")]
    r = analyzer.analyze(_model(nodes, inits, [1, N, D]), batch=5)
    assert r.node("gemm").mac_flops == 2 * 5 * N * D * D == 2560
    assert r.model["batch"]["rewritten_nodes"] == ["flatten", "unflatten"]


def test_a_target_that_is_no_batch_product_is_refused():
    nodes = [h.make_node("Reshape", ["x", "t"], ["y"], name="odd")]
    m = _model(nodes, [_const("t", [2, 16])], [1, N, D])   # 2 is neither 1 nor 1 * 4
    with pytest.raises(InputSpecError, match="Reshape node 'odd' has the constant target "
                                             r"\[2, 16\]"):
        set_batch(m, 4)


def test_rows_gathered_by_fixed_indices_leave_the_batch_behind():
    """Gather along axis 0 with constant indices picks fixed rows (an optimizer's folded mask
    indices): no batch axis is left, so the Reshape after it keeps its [1, ...] target."""
    nodes = [h.make_node("Gather", ["x", "rows"], ["r"], axis=0, name="first"),
             h.make_node("Reshape", ["r", "t"], ["f"], name="flat"),
             h.make_node("MatMul", ["f", "w"], ["y"], name="proj")]
    inits = [_const("rows", [0]), _const("t", [1, N * D]),
             numpy_helper.from_array(np.zeros((N * D, D), np.float32), "w")]
    r = analyzer.analyze(_model(nodes, inits, [1, N, D]), batch=7)
    assert r.node("proj").mac_flops == 2 * 1 * (N * D) * D == 512   # row 0 only, at any batch
    assert r.model["batch"]["rewritten_nodes"] == []


def test_an_export_at_batch_2_expands_to_the_new_batch():
    """Traced at batch 2: x[2, 1, D] expanded to the constant [2, N, D]; at batch 6 it must
    expand to [6, N, D] (broadcasting rejects 6 against 2). MACs 2 * B * N * D * D."""
    nodes = [h.make_node("Expand", ["x", "shape"], ["e"], name="widen"),
             h.make_node("MatMul", ["e", "w"], ["y"], name="proj")]
    inits = [_const("shape", [2, N, D]), numpy_helper.from_array(np.zeros((D, D), np.float32), "w")]
    r = analyzer.analyze(_model(nodes, inits, [2, 1, D]), batch=6)
    assert r.node("proj").mac_flops == 2 * 6 * N * D * D == 3072
    assert r.model["batch"] == {"value": 6, "was": 2, "rewritten_nodes": ["widen"]}


def test_the_callers_model_is_left_as_it_was():
    src = [h.make_node("Expand", ["cls", "shape"], ["cls_b"], name="expand")]
    m = _class_token(src, [_cls(), _const("shape", [1, 1, 1])])
    before = m.SerializeToString()
    set_batch(m, 3)
    assert m.SerializeToString() == before


def test_a_shape_error_after_the_rewrite_says_the_batch_was_set():
    """Split sizes [1] along axis 0 are the export's batch in a list no rule follows: the
    shape error that follows names the node and says the batch was set."""
    from analyzer.errors import ShapeError

    nodes = [h.make_node("Split", ["x", "sizes"], ["p"], axis=0, name="split"),
             h.make_node("MatMul", ["p", "w"], ["y"], name="proj")]
    inits = [_const("sizes", [1]), numpy_helper.from_array(np.zeros((D, D), np.float32), "w")]
    with pytest.raises(ShapeError) as e:
        analyzer.analyze(_model(nodes, inits, [1, N, D]), batch=4)
    assert "node 'split' (Split)" in str(e.value)
    assert str(e.value).endswith("batch=4 set the export's batch 1 to 4: this node may hold a "
                                 "shape the export fixed that could not be followed")
    assert "--batch 4 set the export's batch 1 to 4" in e.value.format("cli")


def test_several_batches_are_a_sweep():
    with pytest.raises(InputSpecError, match=r"analyzer\.sweep takes several"):
        analyzer.analyze(_model([h.make_node("Relu", ["x"], ["y"])], [], [1, D]), batch=[1, 2])


def test_deit_class_and_distillation_tokens_both_follow():
    """DeiT: cls and dist tokens, each expanded at batch 1, joined with the patches: 2 + N
    rows per sample. MACs 2 * B * (N + 2) * D * D."""
    nodes = [h.make_node("Expand", ["cls", "shape"], ["cls_b"], name="cls_expand"),
             h.make_node("Expand", ["dist", "shape"], ["dist_b"], name="dist_expand"),
             h.make_node("Concat", ["cls_b", "dist_b", "x"], ["c"], axis=-2, name="concat"),
             h.make_node("MatMul", ["c", "w"], ["y"], name="proj")]
    inits = [_cls(), numpy_helper.from_array(np.zeros((1, 1, D), np.float32), "dist"),
             _const("shape", [1, 1, 1]), numpy_helper.from_array(np.zeros((D, D), np.float32), "w")]
    r = analyzer.analyze(_model(nodes, inits, [1, N, D]), batch=3)
    assert r.node("proj").mac_flops == 2 * 3 * (N + 2) * D * D == 2304
    assert r.model["batch"]["rewritten_nodes"] == ["cls_expand", "dist_expand"]


def _mask_lookup(lookup_nodes, inits, n=N):
    """x[2, N] (a padding mask) looked up per batch row into m[2, 1, N] by ``lookup_nodes``,
    added to x reshaped to the constant [2, N, 1] (rewritten to [B, N, 1]), then an N x D
    projection: MACs 2 * B * N * N * D."""
    nodes = [h.make_node("Reshape", ["x", "flat_t"], ["flat"], name="flat"),
             *lookup_nodes,
             h.make_node("Reshape", ["x", "col_t"], ["col"], name="col"),
             h.make_node("Add", ["m", "col"], ["s"], name="mask_add"),
             h.make_node("MatMul", ["s", "w"], ["y"], name="proj")]
    inits = [*inits, _const("flat_t", [-1]), _const("col_t", [2, n, 1]),
             numpy_helper.from_array(np.zeros((n, D), np.float32), "w")]
    return _model(nodes, inits, [2, n])


def test_a_batch_index_of_a_mask_function_follows_the_batch():
    """transformers' mask functions index the flat padding mask with
    arange(batch)[:, None, None] * seq + kv (TorchScript export at batch 2): at batch 6 the
    index constant holds 0..5, else the lookup stays [2, 1, N] and meets [6, N, 1]."""
    lookup = [h.make_node("Shape", ["x"], ["xs"], name="shape"),
              h.make_node("Gather", ["xs", "one"], ["seq"], axis=0, name="seq"),
              h.make_node("Mul", ["rows", "seq"], ["base"], name="row_base"),
              h.make_node("Add", ["base", "kv"], ["idx"], name="idx"),
              h.make_node("Gather", ["flat", "idx"], ["m"], axis=0, name="lookup")]
    inits = [_const("one", 1), _const("rows", np.arange(2).reshape(2, 1, 1)),
             _const("kv", np.arange(N).reshape(1, 1, N))]
    r = analyzer.analyze(_mask_lookup(lookup, inits), batch=6)
    assert r.node("proj").mac_flops == 2 * 6 * N * N * D == 1536
    assert r.node("lookup").out_specs[0].shape == (6, 1, N)
    assert "row_base" in r.model["batch"]["rewritten_nodes"]


@pytest.mark.parametrize("n", [N, 1100])
def test_a_gather_nd_mask_lookup_follows_the_batch(n):
    """The dynamo exporter's form of the same lookup: GatherND of x[2, n] at constant indices
    [2, 1, n, 2] holding (b, k); at batch 6 the indices hold (b, k) for b in 0..5. n = 1100:
    4,400 indices, past what constant folding reads (the index table is read all the same)."""
    idx = np.stack(np.broadcast_arrays(np.arange(2).reshape(2, 1, 1),
                                       np.arange(n).reshape(1, 1, n)), axis=-1)
    lookup = [h.make_node("GatherND", ["x", "idx"], ["m"], name="lookup")]
    m = _mask_lookup(lookup, [_const("idx", idx)], n)
    r = analyzer.analyze(m, batch=6)
    assert r.node("proj").mac_flops == 2 * 6 * n * n * D     # 1536 at n = N
    assert r.node("lookup").out_specs[0].shape == (6, 1, n)
    assert "lookup" in r.model["batch"]["rewritten_nodes"]


def test_an_index_that_is_not_the_batch_index_is_left_alone():
    """GatherND indices whose first coordinate is not the row's batch index are not a mask
    lookup: left as they are, and the shape clash is reported with the batch hint."""
    idx = np.zeros((2, 1, N, 2), np.int64)
    lookup = [h.make_node("GatherND", ["x", "idx"], ["m"], name="lookup")]
    with pytest.raises(ShapeError, match="batch=6 set the export's batch 2 to 6"):
        analyzer.analyze(_mask_lookup(lookup, [_const("idx", idx)]), batch=6)


@pytest.mark.parametrize("width", [D, 1100])
def test_a_constant_embedded_at_the_export_batch_follows_it(width):
    """BERT's token type ids in a dynamo export at batch 2: a buffer [1, N] expanded to the
    constant [2, N], embedded ([2, N, width]) and added to x[2, N, width]; at batch 6 the ids
    are one row expanded to 6 (broadcasting rejects 6 against 2): the embedded constant
    (a lookup of a weight: not folded) is followed through the Gather to its ids.
    MACs 2 * B * N * width * D."""
    nodes = [h.make_node("Expand", ["buf", "shape"], ["ids"], name="ids"),
             h.make_node("Gather", ["table", "ids"], ["emb"], axis=0, name="embed"),
             h.make_node("Add", ["x", "emb"], ["s"], name="emb_add"),
             h.make_node("MatMul", ["s", "w"], ["y"], name="proj")]
    inits = [_const("buf", np.zeros((1, N))), _const("shape", [2, N]),
             numpy_helper.from_array(np.zeros((3, width), np.float32), "table"),
             numpy_helper.from_array(np.zeros((width, D), np.float32), "w")]
    r = analyzer.analyze(_model(nodes, inits, [2, N, width]), batch=6)
    assert r.node("proj").mac_flops == 2 * 6 * N * width * D     # 3072 at width = D
    assert r.node("emb_add").in_specs[1].shape == (6, N, width)
    assert r.model["batch"]["rewritten_nodes"] == ["ids__batch6/batch_expand"]


@pytest.mark.parametrize("rows_equal", [True, False])
def test_a_folded_mask_of_equal_rows_is_one_row_broadcast(rows_equal):
    """A decoder's causal mask the dynamo exporter folded at batch 2 (an initializer
    [2, 1, N, N] added to scores [2, 1, N, N]): its two rows are the same, so at batch 6 it is
    row 0 expanded. Rows that differ hold the export's batch: refused by name."""
    mask = np.triu(np.full((N, N), -1e9, np.float32), 1)[None, None].repeat(2, axis=0)
    if not rows_equal:
        mask[1] = 0
    nodes = [h.make_node("Reshape", ["x", "t"], ["scores"], name="scores"),
             h.make_node("Add", ["scores", "mask"], ["s"], name="mask_add"),
             h.make_node("MatMul", ["s", "w"], ["y"], name="proj")]
    inits = [_const("t", [2, 1, N, N]), numpy_helper.from_array(mask, "mask"),
             numpy_helper.from_array(np.zeros((N, D), np.float32), "w")]
    m = _model(nodes, inits, [2, N, N])
    if not rows_equal:
        with pytest.raises(InputSpecError, match=r"'mask'.*different rows"):
            analyzer.analyze(m, batch=6)
        return
    r = analyzer.analyze(m, batch=6)
    assert r.node("proj").mac_flops == 2 * 6 * N * N * D == 1536
    assert r.node("mask_add").in_specs[1].shape == (6, 1, N, N)


def test_an_expand_of_a_constant_led_by_the_export_batch_follows():
    """A mask made from ones at batch 2 (ConstantOfShape [2, 1, 1, N]) expanded to
    [2, 1, N, N] and compared (And) with a causal pattern before meeting the scores: the
    ConstantOfShape and the Expand are both led by 6 at batch 6."""
    nodes = [h.make_node("ConstantOfShape", ["ones_shape"], ["ones"], name="ones",
                         value=h.make_tensor("v", TP.BOOL, [1], [True])),
             h.make_node("Expand", ["ones", "full"], ["wide"], name="wide"),
             h.make_node("And", ["wide", "causal"], ["keep"], name="keep"),
             h.make_node("Cast", ["keep"], ["keepf"], to=TP.FLOAT, name="cast"),
             h.make_node("Reshape", ["x", "t"], ["scores"], name="scores"),
             h.make_node("Mul", ["scores", "keepf"], ["s"], name="mask_mul"),
             h.make_node("MatMul", ["s", "w"], ["y"], name="proj")]
    causal = numpy_helper.from_array(np.tril(np.ones((N, N), bool))[None, None], "causal")
    inits = [_const("ones_shape", [2, 1, 1, N]), _const("full", [2, 1, N, N]), causal,
             _const("t", [2, 1, N, N]), numpy_helper.from_array(np.zeros((N, D), np.float32), "w")]
    r = analyzer.analyze(_model(nodes, inits, [2, N, N]), batch=6)
    assert r.node("proj").mac_flops == 2 * 6 * N * N * D == 1536
    assert r.node("mask_mul").in_specs[1].shape == (6, 1, N, N)
