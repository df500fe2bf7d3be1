"""CostModel.score's fast path (analyzer.search.fastpath.signatures): every candidate it
counts from learned node signatures equals the full path (NodeCost for NodeCost) and analyze
(latency, 1e-6 relative); what it cannot vouch for runs the full path with analyze's behaviour."""

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import analyzer
from analyzer.errors import ModelLoadError
from analyzer.search import candidate_counts
from analyzer.search.fastpath import protobuf_walk, structure

from conftest import HW, reference

import search_space as ss

F32 = TensorProto.FLOAT


def _fast_equals_full(cm, model):
    """The fast path's counts of ``model`` (None when it missed) checked against the full
    path's; returns whether the fast path answered."""
    st_ = structure.read(model)
    got = cm._fast.count(st_) if st_ is not None else None
    if got is not None:
        full = candidate_counts.count(model, cm.options)
        assert got.nodes == full.nodes
        assert got.outputs == full.outputs
    return got is not None


def test_random_candidates_fast_and_exact():
    cm = analyzer.CostModel(HW)
    rng = np.random.default_rng(11)
    teach = [ss.random_transformer(rng, 40).SerializeToString() for _ in range(24)]
    cm.score(teach)
    assert cm._fast.stats["learned"] > 0
    fresh = [ss.random_transformer(rng, 40) for _ in range(10)]
    blobs = [m.SerializeToString() for m in fresh]
    before = cm._fast.stats["fast"]
    lat = cm.score(blobs)
    assert cm._fast.stats["fast"] > before      # the fast path answered some fresh candidates
    np.testing.assert_array_equal(cm.score(fresh), lat)   # ModelProto and bytes agree
    hits = 0
    for m, b, row in zip(fresh, blobs, lat):
        np.testing.assert_allclose(row, reference(b), rtol=1e-6)
        hits += _fast_equals_full(cm, b)
        hits += _fast_equals_full(cm, m)
    assert hits >= 2


# ------------------------------------------------------------------ property: random chains
_UNARY = ("Relu", "Sigmoid", "Tanh", "Erf", "Softmax")


@st.composite
def chains(draw):
    s = draw(st.sampled_from([4, 8]))
    d = draw(st.sampled_from([8, 16]))
    steps = draw(st.lists(st.sampled_from(
        ["matmul", "shared", "bias", "unary", "reshape", "scale", "norm", "transpose"]),
        min_size=1, max_size=7))
    seed = draw(st.integers(0, 3))
    return s, d, steps, seed


def _chain(s, d, steps, seed):
    rng = np.random.default_rng(seed)
    nodes, inits, cur = [], [], "x"
    shared = None

    def init(arr):
        name = f"c{len(inits)}"
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(op, ins, **kw):
        out = f"t{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [out], name=f"n{len(nodes)}", **kw))
        return out

    for step in steps:
        if step == "matmul":
            cur = node("MatMul", [cur, init(rng.standard_normal((d, d)).astype(np.float32))])
        elif step == "shared":   # the same weight read twice: params counted once
            if shared is None:
                shared = init(rng.standard_normal((d, d)).astype(np.float32))
            cur = node("MatMul", [cur, shared])
        elif step == "bias":
            cur = node("Add", [cur, init(rng.standard_normal((d,)).astype(np.float32))])
        elif step == "unary":
            op = _UNARY[int(rng.integers(len(_UNARY)))]
            cur = node(op, [cur], **({"axis": -1} if op == "Softmax" else {}))
        elif step == "reshape":  # a constant shape: its value decides the output shape
            tgt = [[1, s * d], [s, d], [1, s, d]][int(rng.integers(3))]
            cur = node("Reshape", [cur, init(np.array(tgt, np.int64))])
            cur = node("Reshape", [cur, init(np.array([1, s, d], np.int64))])
        elif step == "scale":
            cur = node("Mul", [cur, init(np.array([rng.standard_normal()], np.float32))])
        elif step == "norm":
            cur = node("LayerNormalization", [cur, init(np.ones(d, np.float32)),
                                              init(np.zeros(d, np.float32))], axis=-1)
        else:
            cur = node("Transpose", [cur], perm=[0, 2, 1])
            cur = node("Transpose", [cur], perm=[0, 2, 1])
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", F32, [1, s, d])],
                          [helper.make_tensor_value_info(cur, F32, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


_CM = {}


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(chains())
def test_property_chains_equal_analyze(case):
    cm = _CM.setdefault("cm", analyzer.CostModel(HW))
    m = _chain(*case)
    b = m.SerializeToString()
    for _ in range(2):   # the first may teach, the second then takes the fast path
        lat = cm.score([b, m])
        np.testing.assert_allclose(lat[0], reference(b), rtol=1e-6)
        np.testing.assert_array_equal(lat[1], lat[0])
    assert _fast_equals_full(cm, b)


# ------------------------------------------------------------------ hand-made edge cases
def _model(nodes, inits, x_shape=(1, 4, 8), outputs=None, opset=17, name_x="x"):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(name_x, F32, list(x_shape))],
                          outputs or [helper.make_tensor_value_info(nodes[-1].output[0], F32, None)],
                          initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _twice_equal(cm, m):
    """Score ``m`` twice (learn, then fast where it can) and check both against analyze."""
    for _ in range(2):
        np.testing.assert_allclose(cm.score([m])[0], reference(m), rtol=1e-6)


def test_reshape_constant_value_is_part_of_the_signature():
    cm = analyzer.CostModel(HW)
    w = np.ones((8, 8), np.float32)

    def reshaped(shape):
        return _model([helper.make_node("Reshape", ["x", "s"], ["r"], name="r"),
                       helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")],
                      {"s": np.array(shape, np.int64), "w": w})
    a, b = reshaped([1, 4, 8]), reshaped([4, 8])
    _twice_equal(cm, a)
    assert _fast_equals_full(cm, a)
    # same op, attributes and input specs; only the shape value differs: a's must not answer
    assert cm._fast.count(structure.read(b)) is None
    np.testing.assert_allclose(cm.score([b])[0], reference(b), rtol=1e-6)
    assert _fast_equals_full(cm, b)   # learned on its own, then exact
    assert candidate_counts.count(b, cm.options).nodes[0].out_specs[0].shape == (4, 8)


def test_shared_weight_params_counted_once():
    cm = analyzer.CostModel(HW)
    w = np.ones((8, 8), np.float32)
    m = _model([helper.make_node("MatMul", ["x", "w"], ["a"], name="a"),
                helper.make_node("MatMul", ["a", "w"], ["b"], name="b")], {"w": w})
    _twice_equal(cm, m)
    assert _fast_equals_full(cm, m)
    st_ = structure.read(m)
    nodes = cm._fast.count(st_).nodes
    assert [n.cost.params for n in nodes] == [64, 0]   # 8*8 at the first reader only


def test_non_ascii_names_take_the_fast_path():
    cm = analyzer.CostModel(HW)
    m = _model([helper.make_node("Relu", ["eingabe_ä"], ["größe"], name="knoten_β")], {},
               name_x="eingabe_ä")
    _twice_equal(cm, m)
    assert _fast_equals_full(cm, m)


def test_invalid_utf8_name_behaves_as_analyze():
    cm = analyzer.CostModel(HW)
    m = _model([helper.make_node("Relu", ["x"], ["yy"], name="nn")], {})
    data = m.SerializeToString().replace(b"\x1a\x02nn", b"\x1a\x02\xff\xfe")   # the node name
    assert data != m.SerializeToString()
    assert structure.read(data) is None            # not text: the full frontend decides
    np.testing.assert_allclose(cm.score([data])[0], reference(data), rtol=1e-6)


def test_constant_node_and_custom_domain_fall_back():
    cm = analyzer.CostModel(HW)
    c = helper.make_node("Constant", [], ["k"], name="k",
                         value=numpy_helper.from_array(np.ones((8,), np.float32)))
    m = _model([c, helper.make_node("Add", ["x", "k"], ["y"], name="add")], {})
    assert structure.read(m) is None
    _twice_equal(cm, m)
    m2 = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], {})
    m2.graph.node[0].domain = "my.domain"
    m2.opset_import.append(helper.make_opsetid("my.domain", 1))
    assert structure.read(m2) is None
    with pytest.raises(Exception) as ref:
        analyzer.analyze(m2, hw=HW)
    with pytest.raises(type(ref.value)) as got:
        cm.score([m2])
    assert str(got.value) == str(ref.value)


def test_unknown_op_raises_as_analyze_every_time():
    cm = analyzer.CostModel(HW)
    m = _model([helper.make_node("NoSuchOp", ["x"], ["y"], name="u")], {})
    with pytest.raises(Exception) as ref:
        analyzer.analyze(m, hw=HW)
    for _ in range(2):   # nothing is learned from a failure
        with pytest.raises(type(ref.value)) as got:
            cm.score([m.SerializeToString()])
        assert str(got.value) == str(ref.value)


def test_float_values_steer_resize_but_not_weights():
    cm = analyzer.CostModel(HW)

    def resize(scale):
        return _model([helper.make_node("Resize", ["x", "", "sc"], ["y"], name="rs",
                                        mode="nearest")],
                      {"sc": np.array([1, 1, scale, scale], np.float32)}, x_shape=(1, 2, 4, 4))
    a, b = resize(2.0), resize(3.0)
    _twice_equal(cm, a)
    assert cm._fast.count(structure.read(b)) is None   # a scale's value steers the shape
    np.testing.assert_allclose(cm.score([b])[0], reference(b), rtol=1e-6)
    assert not np.allclose(reference(a), reference(b), rtol=1e-9, atol=0)

    def scaled(v):
        return _model([helper.make_node("Mul", ["x", "s"], ["y"], name="mul")],
                      {"s": np.array([v], np.float32)})
    _twice_equal(cm, scaled(0.5))
    assert _fast_equals_full(cm, scaled(7.0))   # a weight's value is not in its signature


def test_declared_output_shape_is_part_of_the_signature():
    cm = analyzer.CostModel(HW)
    relu = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    a = _model(relu, {}, outputs=[helper.make_tensor_value_info("y", F32, [1, 4, 8])])
    b = _model(relu, {}, outputs=[helper.make_tensor_value_info("y", F32, None)])
    _twice_equal(cm, a)
    _twice_equal(cm, b)
    assert _fast_equals_full(cm, a) and _fast_equals_full(cm, b)


def test_wire_reads_what_protobuf_reads():
    rng = np.random.default_rng(5)
    m = ss.random_transformer(rng, 30)
    skel, node_bytes, inits = protobuf_walk.skeleton(m.SerializeToString())
    sm = onnx.ModelProto.FromString(skel)
    assert not sm.graph.node
    assert [onnx.NodeProto.FromString(b) for b in node_bytes] == list(m.graph.node)
    assert not sm.graph.initializer
    assert [(i.name, i.dtype, i.dims) for i in inits] == \
        [(t.name, t.data_type, tuple(t.dims)) for t in m.graph.initializer]
    t = m.graph.initializer[0]
    c = onnx.TensorProto()
    c.CopyFrom(t)
    c.ClearField("name")
    assert inits[0].value_key() == c.SerializeToString()
    assert protobuf_walk.skeleton(b"\x08\x07\xff") is None     # a truncated varint
    assert protobuf_walk.skeleton(b"") is None


def test_wire_reads_unusual_fields_as_protobuf_does():
    """A tensor with a field the inline reader does not take (a doc string: the general walk)
    and a graph with fields besides its nodes and initializers read as protobuf reads them."""
    rng = np.random.default_rng(6)
    m = ss.random_transformer(rng, 12)
    m.graph.initializer[0].doc_string = "a weight"
    m.graph.doc_string = "graph notes " * 20          # a field of 240 bytes (2-byte length)
    skel, node_bytes, inits = protobuf_walk.skeleton(m.SerializeToString())
    sm = onnx.ModelProto.FromString(skel)
    assert sm.graph.doc_string == m.graph.doc_string and not sm.graph.node
    assert [onnx.NodeProto.FromString(b) for b in node_bytes] == list(m.graph.node)
    assert [(i.name, i.dtype, i.dims) for i in inits] == \
        [(t.name, t.data_type, tuple(t.dims)) for t in m.graph.initializer]


def test_a_header_is_checked_by_the_full_path_first():
    # no nodes: nothing to learn, yet the IR version must be checked as analyze checks it
    cm = analyzer.CostModel(HW)
    g = helper.make_graph([], "g", [helper.make_tensor_value_info("x", F32, [2])], [])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = onnx.IR_VERSION + 1
    with pytest.raises(Exception) as ref:
        analyzer.analyze(m, hw=HW)
    for _ in range(2):
        with pytest.raises(type(ref.value)):
            cm.score([m])
    m.ir_version = 8
    for _ in range(2):
        np.testing.assert_allclose(cm.score([m])[0], reference(m), rtol=1e-6)
    assert _fast_equals_full(cm, m)


def test_a_new_node_is_learned_on_its_own():
    cm = analyzer.CostModel(HW)

    def act(op):
        return _model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                       helper.make_node(op, ["h"], ["y"], name="act")],
                      {"w": np.ones((8, 8), np.float32)})
    cm.score([act("Relu")])
    before = cm.stats()
    m = act("Tanh")                      # MatMul known, Tanh new: learned from a one-node model
    np.testing.assert_allclose(cm.score([m])[0], reference(m), rtol=1e-6)
    after = cm.stats()
    assert (after["fast"] - before["fast"], after["full"] - before["full"],
            after["nodes"] - before["nodes"]) == (1, 0, 1)
    assert _fast_equals_full(cm, m)


def test_a_node_that_cannot_be_learned_takes_the_full_path():
    cm = analyzer.CostModel(HW)
    m = _model([helper.make_node("Relu", ["x"], ["h"], name="r"),
                helper.make_node("NonZero", ["h"], ["y"], name="nz")], {})
    try:
        ref = reference(m)
    except Exception as e:  # noqa: BLE001
        ref = e
    for _ in range(3):   # learn Relu; NonZero's output shape is data-dependent: never learned
        if isinstance(ref, Exception):
            with pytest.raises(type(ref)):
                cm.score([m])
        else:
            np.testing.assert_allclose(cm.score([m])[0], ref, rtol=1e-6)
    assert cm.stats()["fast"] == 0 and cm.stats()["full"] == 3 and cm._fast.unlearnable


def test_score_restores_the_garbage_collector():
    import gc

    cm = analyzer.CostModel(HW)
    m = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], {})
    assert gc.isenabled()
    cm.score([m])
    assert gc.isenabled()
    with pytest.raises(ModelLoadError):
        cm.score([m, b"not a model"])
    assert gc.isenabled()
    gc.disable()
    try:
        cm.score([m])
        assert not gc.isenabled()   # a caller's choice stays
    finally:
        gc.enable()


def test_keyed_lowering_equals_plain_lowering():
    """Rows memoised per fast-path key (lowering.lower's ``keys``: one node's row, and a fused
    kernel's per its members' keys) are the rows computed from the nodes, on a first and on a
    repeated lowering, under the unfused and the XLA policy."""
    from analyzer.prediction import runtimes
    from analyzer.prediction.lowering import lower

    cm = analyzer.CostModel(HW)
    rng = np.random.default_rng(5)
    cm.score([ss.random_transformer(rng, 40).SerializeToString() for _ in range(16)])
    checked = fused = 0
    for _ in range(6):
        got = cm._fast.count(structure.read(ss.random_transformer(rng, 40).SerializeToString()))
        if got is None:
            continue
        assert len(got.keys) == len(got.nodes)
        for rt in ("kernel", "xla"):
            plain = lower(got.nodes, cm.profiles, None, runtimes.get(rt))
            for _ in range(2):   # the second lowering reads every row from the memo
                keyed = lower(got.nodes, cm.profiles, None, runtimes.get(rt), memo=cm._lowering,
                              keys=got.keys)
                assert keyed.plan == plain.plan and keyed.kernel_names == plain.kernel_names
                for f in plain.feats:
                    np.testing.assert_array_equal(keyed.feats[f], plain.feats[f])
                for a in ("runs", "member_weight", "matrix_peak", "vector_peak", "fixed"):
                    np.testing.assert_array_equal(getattr(keyed, a), getattr(plain, a))
                assert (keyed.warnings, keyed.notes, keyed.precision) == \
                    (plain.warnings, plain.notes, plain.precision)
            fused += any(len(m) > 1 for m in plain.plan.members)
        checked += 1
    assert checked >= 2 and fused >= 2   # fused kernels' memo exercised too


def test_a_key_stands_for_a_node_content():
    """Keys that lie (every node the same key) give other rows: the memo trusts its keys, so
    the fast path's keys must differ wherever nodes do (the test above relies on this)."""
    from analyzer.prediction import runtimes
    from analyzer.prediction.lowering import lower

    cm = analyzer.CostModel(HW)
    rng = np.random.default_rng(6)
    model = ss.random_transformer(rng, 40).SerializeToString()
    cm.score([model, model])
    got = cm._fast.count(structure.read(model))
    assert got is not None and len(set(got.keys)) > 1
    plain = lower(got.nodes, cm.profiles, None, runtimes.get("kernel"))
    lying = lower(got.nodes, cm.profiles, None, runtimes.get("kernel"), memo={},
                  keys=[0] * len(got.nodes))
    assert not np.array_equal(lying.feats["mac_flops"], plain.feats["mac_flops"])


def test_order_is_checked_by_the_signature_walk():
    """``score`` reads candidates without lean's per-node order check: the signature walk
    (``FastCounter.keys``) must refuse a node that reads a tensor defined later and a node
    whose inputs are all constants, and the candidate then behaves as analyze."""
    cm = analyzer.CostModel(HW)
    w = np.ones((8, 8), np.float32)
    n1 = helper.make_node("Relu", ["x"], ["a"], name="n1")
    n2 = helper.make_node("Sigmoid", ["a"], ["b"], name="n2")
    n3 = helper.make_node("MatMul", ["b", "w"], ["y"], name="n3")
    ok = _model([n1, n2, n3], {"w": w})
    _twice_equal(cm, ok)
    assert cm._fast.keys(structure.read(ok, ordered=False)) is not None   # every signature known
    # the same nodes (byte for byte), n2 first: it reads 'a' before n1 defines it
    swapped = _model([n2, n1, n3], {"w": w})
    st_ = structure.read(swapped, ordered=False)
    assert st_ is not None and not st_.ordered
    assert structure.read(swapped) is None and structure.ordered(st_) is None
    assert cm._fast.keys(st_) is None
    with pytest.raises(ValueError):
        cm._fast.count(st_)            # counting needs the order checked
    try:
        ref = reference(swapped)
    except Exception as e:  # noqa: BLE001  (then score must raise the same)
        with pytest.raises(type(e)):
            cm.score([swapped])
    else:
        np.testing.assert_allclose(cm.score([swapped])[0], ref, rtol=1e-6)
    # a node of constant inputs only (the frontend folds it): no learned signature has one
    folded = _model([helper.make_node("Add", ["w", "w2"], ["c"], name="fold"),
                     helper.make_node("MatMul", ["x", "c"], ["y"], name="mm")],
                    {"w": w, "w2": w})
    assert structure.read(folded) is None
    st_ = structure.read(folded, ordered=False)
    assert st_ is not None and cm._fast.keys(st_) is None
    _twice_equal(cm, folded)
    assert cm._fast.keys(structure.read(folded, ordered=False)) is None   # nothing was learned


# ------------------------------------------------------------------ names and reasons
def _mlp(names, seed=0):
    """x [2, 8] -> MatMul(w 8x8) -> Add(b) -> Relu -> MatMul(v 8x4); node names ``names``
    ("" leaves a node unnamed, as ``helper.make_node`` does by default)."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name=names[0]),
             helper.make_node("Add", ["m", "b"], ["a"], name=names[1]),
             helper.make_node("Relu", ["a"], ["h"], name=names[2]),
             helper.make_node("MatMul", ["h", "v"], ["y"], name=names[3])]
    inits = {"w": rng.standard_normal((8, 8)).astype(np.float32),
             "b": rng.standard_normal(8).astype(np.float32),
             "v": rng.standard_normal((8, 4)).astype(np.float32)}
    return _model(nodes, inits, x_shape=(2, 8))


def _scored_fast(cm, m) -> bool:
    """Score ``m`` (bytes and ModelProto) and check it against analyze; whether both took the
    fast path and no candidate left it."""
    before = cm.stats()
    for c in (m.SerializeToString(), m):
        np.testing.assert_allclose(cm.score([c])[0], reference(m), rtol=1e-6)
    after = cm.stats()
    return after["fast"] - before["fast"] == 2 and after["slow"] == before["slow"]


def test_unnamed_nodes_take_the_fast_path_with_the_frontends_names():
    cm = analyzer.CostModel(HW)
    m = _mlp(["", "", "", ""])
    assert helper.make_node("Relu", ["x"], ["y"]).name == ""   # onnx.helper's default
    cm.score([m])                                      # learns (a new opset header)
    fresh = _mlp(["", "", "", ""], seed=1)             # other weights, same structure
    assert _scored_fast(cm, fresh)
    assert _fast_equals_full(cm, fresh)                # NodeCost for NodeCost, names included
    got = cm._fast.count(structure.read(fresh))
    # read_nodes' names: <op>_<index in the file>
    assert [n.name for n in got.nodes] == ["MatMul_0", "Add_1", "Relu_2", "MatMul_3"]
    _, details = cm.score([fresh], detail=True)
    assert [n.name for n in details[0].nodes] == ["MatMul_0", "Add_1", "Relu_2", "MatMul_3"]


def test_duplicate_names_take_the_fast_path_with_the_frontends_names_and_notes():
    cm = analyzer.CostModel(HW)
    cm.score([_mlp(["", "", "", ""])])
    # "fc" twice; an explicit "Relu_2" before the unnamed Relu at index 2 takes its name
    dup = _mlp(["fc", "Relu_2", "", "fc"], seed=2)
    assert _scored_fast(cm, dup)
    assert _fast_equals_full(cm, dup)
    got = cm._fast.count(structure.read(dup))
    assert [n.name for n in got.nodes] == ["fc", "Relu_2", "Relu_2~2", "fc~2"]
    assert [n.note for n in got.nodes][2:] == ["renamed: node #2 named '' in the file",
                                               "renamed: node #2 named 'fc' in the file"]
    assert structure.read(dup).renamed == {"Relu_2~2": "", "fc~2": "fc"}


def test_stats_count_the_candidates_that_left_the_fast_path_per_reason(tmp_path):
    cm = analyzer.CostModel(HW)
    ok = _mlp(["", "", "", ""])
    cm.score([ok])
    assert cm.stats()["slow"] == {"a new opset header (learning)": 1}
    cm.score([ok, _mlp(["", "", "", ""], seed=3)])
    assert cm.stats()["fast"] == 2
    vi = _mlp(["", "", "", ""])
    vi.graph.value_info.append(helper.make_tensor_value_info("m", F32, [2, 8]))
    const = _model([helper.make_node("Constant", [], ["k"],
                                     value=numpy_helper.from_array(np.ones(8, np.float32))),
                    helper.make_node("Add", ["x", "k"], ["y"])], {}, x_shape=(2, 8))
    path = tmp_path / "m.onnx"
    onnx.save(ok, str(path))
    for c in (vi, const, str(path)):
        np.testing.assert_allclose(cm.score([c])[0], reference(c), rtol=1e-6)
    cm.count(vi)       # count (no options) is scored the same way
    s = cm.stats()
    assert s["slow"] == {"a new opset header (learning)": 1, "value_info": 2,
                         "a node of constant inputs only (Constant, or folded)": 1,
                         "a file path (read by the full frontend)": 1}
    assert s["fast"] == 2 and s["full"] == 4           # the path never reaches the fast counter
    assert sum(s["slow"].values()) == s["full"] + 1

    off = analyzer.CostModel(HW, runtime="onnxruntime")
    off.score([ok, ok])
    assert off.stats() == {"fast": 0, "full": 0, "learned": 0, "nodes": 0,
                           "slow": {"fast path off: a profile runs under onnxruntime": 2}}


def test_a_new_node_with_a_large_weight_is_learned_on_its_own():
    # a weight over structure.VALUE_ELEMENTS (4096) elements: the one-node model marks it
    # external (specs only), as the frontend marks inline weights
    cm = analyzer.CostModel(HW)

    def mm(n_out):
        return _model([helper.make_node("MatMul", ["x", "w"], ["h"]),
                       helper.make_node("Relu", ["h"], ["y"])],
                      {"w": np.ones((128, n_out), np.float32)}, x_shape=(1, 4, 128))
    cm.score([mm(128)])
    before = cm.stats()
    m = mm(64)          # 128 x 64 = 8192 elements: a new MatMul signature (and Relu's, 64 wide)
    np.testing.assert_allclose(cm.score([m])[0], reference(m), rtol=1e-6)
    after = cm.stats()
    assert (after["fast"] - before["fast"], after["full"] - before["full"],
            after["nodes"] - before["nodes"]) == (1, 0, 2)
    assert after["slow"] == before["slow"]
    assert _fast_equals_full(cm, m)
