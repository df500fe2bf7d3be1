"""CostModel.score's kernel rows (analyzer.search.fastpath.kernel_cache): a fast-path
candidate's arrays built from learned node parts equal analyze (1e-6 relative); the partition
and saved bytes equal fusion.plan's; a mismatch switches the path off; what is not local never takes it."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
from analyzer.search.fastpath import kernel_cache, structure

from conftest import HW, reference

import search_space as ss

F32 = TensorProto.FLOAT


def _model(nodes, inits, outputs, d=16):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F32, [1, 8, d])],
                          [helper.make_tensor_value_info(o, F32, None) for o in outputs],
                          initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _wired(d=16, chain=3, tag=0, act="Sigmoid"):
    """MatMul -> a chain of elementwise ops with a square (Mul(t, t): one tensor read at two
    positions), a tensor read inside the fused chain and by a later MatMul too, -> MatMul."""
    rng = np.random.default_rng(tag)
    w = {f"w{i}": rng.standard_normal((d, d)).astype(np.float32) for i in range(2)}
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["a"], name="mm0"),
             helper.make_node("Mul", ["a", "a"], ["sq"], name="square"),
             helper.make_node(act, ["sq"], ["s0"], name="act0")]
    cur = "s0"
    for i in range(chain):
        nodes.append(helper.make_node("Add" if i % 2 else "Mul", [cur, "a"], [f"e{i}"],
                                      name=f"ew{i}"))
        cur = f"e{i}"
    nodes += [helper.make_node("MatMul", ["sq", "w1"], ["b"], name="mm1"),   # sq also leaves
              helper.make_node("Add", [cur, "b"], ["y"], name="out")]
    return _model(nodes, w, ["y"], d)


def _score_twice(cm, blobs):
    """Score (learn), then score again (rows) and check both against analyze."""
    first = cm.score(blobs)
    again = cm.score(blobs)
    for b, row in zip(blobs, again):
        np.testing.assert_allclose(row, reference(b), rtol=1e-6)
    np.testing.assert_allclose(again, first, rtol=1e-6)
    return again


def test_random_candidates_from_rows_equal_analyze():
    cm = analyzer.CostModel(HW)
    rng = np.random.default_rng(5)
    cm.score([ss.random_transformer(rng, 40).SerializeToString() for _ in range(16)])
    fresh = [ss.random_transformer(rng, 40).SerializeToString() for _ in range(8)]
    before = cm._rows.stats["lowered"]
    lat = cm.score(fresh)
    assert cm._rows.stats["lowered"] > before      # the rows answered some fresh candidates
    assert cm._rows.stats["mismatch"] == 0 and cm._rows.usable
    for b, row in zip(fresh, lat):
        np.testing.assert_allclose(row, reference(b), rtol=1e-6)


def test_wiring_repeats_and_a_large_fused_kernel_equal_analyze():
    cm = analyzer.CostModel(HW)
    # chain=3: a cached fused kernel; chain=20: more than CACHE_MEMBERS members (built each time)
    blobs = [_wired(chain=3), _wired(chain=20), _wired(d=32, chain=20, tag=1)]
    _score_twice(cm, blobs)
    assert cm._rows.stats["lowered"] >= 3 and cm._rows.usable


def _check_plans(cm, blobs) -> int:
    """Each candidate's partition and saved bytes per group equal the lowering's plan;
    returns how many xla partitions had a fused set of 8 or more members."""
    merged = 0
    for b in blobs:
        st = structure.read(b)
        counted = cm._fast.count(st)
        lowered = cm.lower(counted)
        data = cm._rows._data(counted.keys)
        for g, (_, low) in zip(cm._rows.groups, lowered):
            members, saved = cm._rows._kernels(st.nodes, data, g.policy, st.outputs)
            assert tuple(members) == low.plan.members
            assert tuple(saved) == low.plan.saved_bytes
            merged += g.policy == "xla" and max(map(len, members)) >= 8
    return merged


def test_partition_and_saved_bytes_equal_the_plan():
    cm = analyzer.CostModel(HW)
    blobs = [_wired(chain=3), _wired(chain=20)]
    cm.score(blobs)
    cm.score(blobs)
    _check_plans(cm, blobs)
    # the xla group fused the square: its tensor read at two positions is counted as
    # fusion._collect counts it (the reader listed once per position, each time both reads)
    xla = [g for g in cm._rows.groups if g.policy == "xla"][0]
    st = structure.read(blobs[0])
    data = cm._rows._data(cm._fast.keys(st))
    _, saved = cm._rows._kernels(st.nodes, data, xla.policy)
    assert any(s > 0 for s in saved)


def _random_dag(seed, n=40, d=16):
    """Random wiring: each node reads one or two earlier tensors (x included), elementwise
    ops (fusible) and MatMuls (not) mixed, so fusible sets grow, meet and merge many times
    over (a set's root reached through several merged roots)."""
    rng = np.random.default_rng(seed)
    w = {"w": rng.standard_normal((d, d)).astype(np.float32)}
    tensors, nodes = ["x"], []
    for i in range(n):
        op = str(rng.choice(["Add", "Mul", "Sub", "Sigmoid", "Tanh", "Relu", "MatMul"],
                            p=[.2, .15, .1, .15, .1, .1, .2]))
        if op == "MatMul":
            ins = [tensors[rng.integers(len(tensors))], "w"]
        elif op in ("Add", "Mul", "Sub"):
            ins = [tensors[j] for j in rng.integers(len(tensors), size=2)]
        else:
            ins = [tensors[rng.integers(len(tensors))]]
        nodes.append(helper.make_node(op, ins, [f"t{i}"], name=f"n{i}"))
        tensors.append(f"t{i}")
    read = {x for nd in nodes for x in nd.input}
    return _model(nodes, w, [t for t in tensors[1:] if t not in read] or [tensors[-1]], d)


def _merge_ladder(d=16):
    """Three fused chains (a, b, c: each after its own MatMul) merged twice, c into b then b
    into a, then c's last tensor read again: its set's root is three links away."""
    w = {"w": np.eye(d, dtype=np.float32)}
    nodes = []
    for c in "abc":
        nodes += [helper.make_node("MatMul", ["x", "w"], [f"m{c}"], name=f"mm_{c}"),
                  helper.make_node("Sigmoid", [f"m{c}"], [f"{c}1"], name=f"{c}_1"),
                  helper.make_node("Tanh", [f"{c}1"], [f"{c}2"], name=f"{c}_2")]
    nodes += [helper.make_node("Add", ["c2", "b2"], ["cb"], name="merge_cb"),
              helper.make_node("Add", ["cb", "a2"], ["abc"], name="merge_abc"),
              helper.make_node("Relu", ["c2"], ["z"], name="late_reader")]
    return _model(nodes, w, ["abc", "z"], d)


def test_partition_of_random_wiring_equals_the_plan():
    cm = analyzer.CostModel(HW)
    blobs = [_merge_ladder()] + [_random_dag(seed) for seed in range(12)]
    _score_twice(cm, blobs)
    # (large fused sets: the merging this test is for did happen)
    assert _check_plans(cm, blobs) >= 7


def test_a_mismatch_switches_the_rows_off():
    cm = analyzer.CostModel(HW)
    cm.score([_wired(chain=3)])
    cm.score([_wired(chain=3)])
    assert cm._rows.stats["harvested"] == 1
    # a wrong part for every learned node (a bug's effect): the next harvest must notice
    for k, v in list(cm._rows.nodes.items()):
        cm._rows.nodes[k] = v[:2] + ((v[2][0] + 2,) + v[2][1:],) + v[3:]
    fresh = _wired(chain=3, act="Tanh")   # a new signature: lowered in full, then harvested
    np.testing.assert_allclose(cm.score([fresh])[0], reference(fresh), rtol=1e-6)
    assert cm._rows.stats["mismatch"] == 1 and not cm._rows.usable
    for b in (fresh, _wired(chain=3)):   # from now on every candidate is lowered in full
        np.testing.assert_allclose(cm.score([b])[0], reference(b), rtol=1e-6)


def _rows_and_full():
    """[((idx, Kernels), (idx, Lowered))] per group of a candidate scored from the rows
    and lowered in full."""
    cm = analyzer.CostModel(HW)
    blobs = [_wired(chain=3), _wired(chain=20)]
    cm.score(blobs)
    st = structure.read(blobs[1])
    return list(zip(cm._rows.lowered(st, cm._fast.keys(st)), cm.lower(cm._fast.count(st))))


def test_kernels_gather_what_batch_gathers():
    for (_, k), (_, low) in _rows_and_full():
        assert isinstance(k, kernel_cache.Kernels)
        for f in kernel_cache.FEATS:
            np.testing.assert_array_equal(k.feats[f], low.feats[f])
        np.testing.assert_array_equal(k.runs, low.runs)
        np.testing.assert_array_equal(k.fixed, low.fixed)
        np.testing.assert_array_equal(k.matrix_peak, low.matrix_peak)
        np.testing.assert_array_equal(k.vector_peak, low.vector_peak)


def test_a_calibrated_profile_never_takes_the_rows(tmp_path):
    import hardware_db

    prof = hardware_db.get("a100")
    from dataclasses import replace

    cal = replace(prof, id="a100-cal", calibration={"runtime": "xla", "tables": {}})
    cm = analyzer.CostModel([cal, "tpu-v5e"])
    b = _wired(chain=3)
    cm.score([b])
    cm.score([b])
    assert cm._rows is False
    assert onnx.load_from_string(b).graph.node   # (the candidate itself is untouched)


@pytest.mark.parametrize("hw,runtime,precision,overlap", [
    (["a100", "h100", "tpu-v5e"], None, "bf16", True),     # two GPUs share one runtime group
    (["a100", "mi300x"], "kernel", None, True),             # the GPU default runtime
    (["a100", "tpu-v5e"], "xla", "fp16", False),            # compute + memory, not their max
    (["h200", "t4"], "xla", None, True),                    # XLA's TF32 default (h200) beside fp32 (t4)
])
def test_rows_equal_analyze_under_options(hw, runtime, precision, overlap):
    cm = analyzer.CostModel(hw, runtime=runtime, precision=precision, overlap=overlap)
    rng = np.random.default_rng(9)
    cm.score([ss.random_transformer(rng, 30).SerializeToString() for _ in range(12)])
    fresh = [ss.random_transformer(rng, 30).SerializeToString() for _ in range(6)]
    cm.score(fresh)   # (a new signature is counted in full, then learned: two rounds)
    cm.score(fresh)
    before = cm._rows.stats["lowered"]
    lat = cm.score(fresh)
    assert cm._rows.stats["lowered"] - before == len(fresh) and cm._rows.usable
    for b, row in zip(fresh, lat):
        np.testing.assert_allclose(row, reference(b, hw=hw, runtime=runtime, precision=precision,
                                                  overlap=overlap), rtol=1e-6)


def test_a_bucket_mixing_rows_and_full_lowerings():
    """A batch holds candidates from the rows and one lowered in full (a candidate just
    learned from): one bucket, the rows gathered and the full one filled in, same times."""
    from analyzer.search import batched_kernels as batch

    for (_, k), (_, low) in _rows_and_full():
        alone = batch.kernel_times([low])[0]
        for t in batch.kernel_times([k, low, k]) + batch.kernel_times([low, k]):
            np.testing.assert_array_equal(t, alone)
        np.testing.assert_array_equal(batch.kernel_sums([k, low]),
                                      np.stack([alone.sum(axis=1)] * 2))


def test_eager_op_scores_through_the_full_lowering():
    # the eager runtimes plan PyTorch's own kernels (prediction.eager_plan: views, copies, joined
    # Linear/GELU patterns), which the kernel-row cache does not rebuild: every candidate is
    # lowered in full, and each score equals analyze's (per-class eager host dispatch included)
    cm = analyzer.CostModel(["a100", "mi300x"], runtime="eager-op")
    rng = np.random.default_rng(9)
    fresh = [ss.random_transformer(rng, 30).SerializeToString() for _ in range(4)]
    cm.score(fresh)
    lat = cm.score(fresh)
    assert cm._rows is False or not cm._rows.usable
    for b, row in zip(fresh, lat):
        np.testing.assert_allclose(row, reference(b, hw=["a100", "mi300x"], runtime="eager-op",
                                                  precision=None, overlap=True), rtol=1e-6)


def _conv_relu(c: int, hw: int):
    """x [1, c, hw, hw] -> Conv (3x3, an initializer filter) -> Relu: under ``xla`` on a Hopper
    GPU XLA transposes x to NHWC and the result back (``xla_conv_layout``): 3 launches."""
    w = np.random.default_rng(c).standard_normal((c, c, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1] * 4, name="conv"),
             helper.make_node("Relu", ["y"], ["z"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F32, [1, c, hw, hw])],
                          [helper.make_tensor_value_info("z", F32, None)], initializer=[numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def test_a_conv_with_xla_gpu_layout_transposes_is_lowered_in_full():
    # the transposes are launches with no node of their own, which the rows do not mirror: each
    # such candidate is lowered in full (none from the rows), nothing mismatches
    cm = analyzer.CostModel(["h200"], runtime="xla")
    blobs = [_conv_relu(c, hw) for c in (8, 16) for hw in (8, 16)]
    for _ in range(2):
        got = cm.score(blobs)
    for b, row in zip(blobs, got):
        np.testing.assert_allclose(row, reference(b, hw=["h200"], runtime="xla"), rtol=1e-6)
    assert analyzer.analyze(blobs[0], hw="h200", runtime="xla").predictions[0].launches == 3
    assert cm._rows.stats["lowered"] == 0 and cm._rows.stats["mismatch"] == 0 and cm._rows.usable
