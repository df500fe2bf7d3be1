"""A view between fused nodes is no tensor in memory (``prediction.fusion_bytes``): each fused
kernel moves, in closed form, each tensor that enters it from outside read once and each tensor
that leaves it written once, whatever views (Reshape) lie between its members.

Shapes: x [B, S, E] = [32, 16, 64] fp32, N = 32 * 16 * 64 * 4 = 131,072 B; the bias b [64]:
256 B; the Reshape to heads [32, 16, 4, 16] and the Transpose (0, 2, 1, 3) keep N; the
MatMul's weight w [16, 16]: 1,024 B.  Policies: ``xla_cpu`` (the ``xla`` runtime on a CPU,
which fuses through views), ``xla`` (a GPU), ``eager`` (explicit groups, ``fusion.grouped``) and
a ``FusionRecord`` kernel that lists a view among its nodes (onnxruntime's Attention fusion)."""

from __future__ import annotations

import numpy as np
from onnx import helper
from onnx_builders import graph, ints

import analyzer
from analyzer.prediction import fusion

B, S, H, D = 32, 16, 4, 16
E = H * D
N = B * S * E * 4      # 131,072 B: x, the bias Add's result and every view or permutation of it
BIAS = E * 4           # 256 B
W = D * D * 4          # 1,024 B
CPU = "epyc-9654"


def _model(nodes, outputs, extra_inputs=None):
    inits = {"b": np.ones(E, np.float32), "heads": ints(B, S, H, D), "flat": ints(B, S, E),
             "w": np.ones((D, D), np.float32)}
    return graph(nodes, {"x": (B, S, E), **(extra_inputs or {})}, outputs, inits)


def _kernels(model, hw=CPU, runtime="xla"):
    """[(members, bytes per launch)] of the model's kernels under ``runtime`` on ``hw``."""
    t = analyzer.analyze(model, hw=hw, runtime=runtime).predictions[0].kernel_table
    return [(int(m), int(b)) for m, b in zip(t.members, t.nbytes)]


def _n(op, ins, outs, **kw):
    return helper.make_node(op, ins, outs, name=outs[0], **kw)


BIAS_HEADS = [_n("Add", ["x", "b"], ["a"]), _n("Reshape", ["a", "heads"], ["r"]),
              _n("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3])]


def test_bias_reshape_transpose_is_one_pass_on_xla_cpu():
    # XLA CPU fuses Add -> Reshape -> Transpose into one loop fusion (the transpose is a root: a
    # dot reads it): x and b read, t written = 131,072 + 256 + 131,072 = 262,400 B (the
    # intermediate a and its view r never reach memory; the bug charged 4 N + 256 = 524,544 B).
    # The MatMul: t and w read, y [32, 4, 16, 16] written: 131,072 + 1,024 + 131,072 = 263,168 B
    m = _model(BIAS_HEADS + [_n("MatMul", ["t", "w"], ["y"])], ["y"])
    assert _kernels(m) == [(2, N + BIAS + N), (1, N + W + N)]
    assert N + BIAS + N == 262_400


def test_a_view_of_an_outside_tensor_is_read_once():
    # a = x + b; y = Reshape(a) * Reshape(x): one kernel that reads x once (directly by the Add,
    # through a view by the Mul), b once, and writes y: 131,072 + 256 + 131,072 = 262,400 B
    # (counted per node: Add 2 N + 256, Mul 3 N; a's write and read back and x's second read saved)
    m = _model([_n("Add", ["x", "b"], ["a"]), _n("Reshape", ["a", "heads"], ["ar"]),
                _n("Reshape", ["x", "heads"], ["xr"]), _n("Mul", ["ar", "xr"], ["y"])], ["y"])
    assert _kernels(m) == [(2, N + BIAS + N)]
    # the GPU's xla joins through the views too (``fusion_xla.joins``): the same one kernel
    assert _kernels(m, hw="a100") == [(2, N + BIAS + N)]


def test_a_view_at_the_kernels_output_is_the_written_tensor():
    # Relu(x + b) -> Reshape -> MatMul: the kernel writes the Relu's result once (its view is what
    # the MatMul reads): 131,072 + 256 + 131,072 = 262,400 B, as without the view
    m = _model([_n("Add", ["x", "b"], ["a"]), _n("Relu", ["a"], ["p"]),
                _n("Reshape", ["p", "heads"], ["r"]), _n("MatMul", ["r", "w"], ["y"])], ["y"])
    assert _kernels(m) == [(2, N + BIAS + N), (1, N + W + N)]


def test_a_view_feeding_two_fused_readers():
    # r = Reshape(x + b) read by Relu and Neg, then their sum: one kernel (the Add, a cheap
    # producer of two readers, joins them): x and b read, y written = 262,400 B; counted per
    # node 2 N + 256 + 2 N + 2 N + 3 N, the intermediates a (= r), p, q never written nor read
    m = _model([_n("Add", ["x", "b"], ["a"]), _n("Reshape", ["a", "heads"], ["r"]),
                _n("Relu", ["r"], ["p"]), _n("Neg", ["r"], ["q"]), _n("Add", ["p", "q"], ["y"])], ["y"])
    assert _kernels(m) == [(4, N + BIAS + N)]


def test_a_view_that_is_a_graph_output_is_written():
    # r = Reshape(x + b) is a model output and the Transpose's input: the kernel writes r (a's
    # buffer) and t: 131,072 + 256 + 2 x 131,072 = 393,472 B
    m = _model(BIAS_HEADS, ["r", "t"])
    assert _kernels(m) == [(2, N + BIAS + 2 * N)]
    assert N + BIAS + 2 * N == 393_472


def test_eager_keeps_its_contiguous_copy():
    # eager PyTorch: the bias Add is a kernel (262,400 B), the Reshape and Transpose are views,
    # and the MatMul's operand (a permuted view) is first copied by a kernel of its own that
    # reads and writes t: 2 x 131,072 = 262,144 B; then the MatMul 263,168 B
    m = _model(BIAS_HEADS + [_n("MatMul", ["t", "w"], ["y"])], ["y"])
    assert _kernels(m, hw="a100", runtime="eager") == [(1, N + BIAS + N), (1, 2 * N), (1, N + W + N)]


# ------------------------------------------------------------------ plans over hand-built nodes
# node i of ``_NODES``: (op, domain, class, inputs, outputs, input bytes, output bytes, launches):
# a = x + b; r = Reshape(a); p = Relu(a); y = r * p; z = Reshape(x) * y (x, b from outside)

def _fn(op, cls, ins, outs, in_b, out_b, launches=True):
    return fusion.FusionNode(op, "", cls, "", ins, outs, in_b, out_b, launches)


_NODES = [
    _fn("Add", "elementwise", ("x", "b"), ("a",), (N, BIAS), (N,)),
    _fn("Reshape", "view", ("a", "s"), ("r",), (N, 32), (N,), False),
    _fn("Relu", "activation", ("a",), ("p",), (N,), (N,)),
    _fn("Mul", "elementwise", ("r", "p"), ("y",), (N, N), (N,)),
    _fn("Reshape", "view", ("x", "s"), ("xr",), (N, 32), (N,), False),
    _fn("Mul", "elementwise", ("xr", "y"), ("z",), (N, N), (N,)),
]
# counted per node: Add 2 N + 256, Relu 2 N, each Mul 3 N, views 0: 10 N + 256 in all; the
# kernel of all four reads x and b once and writes z: 2 N + 256, so it saves 8 N (a, p, y never
# written: 3 N; a read by Relu and through r by the Mul, p, y read back: 4 N; x's second read: N)
_CLOSED = N + BIAS + N
_COUNTED = (2 * N + BIAS) + 2 * N + 3 * N + 3 * N


def test_xla_policy_plans_the_closed_form():
    p = fusion.plan(_NODES, "xla")
    assert p.members == ((0, 2, 3, 5),)
    assert _COUNTED - p.saved_bytes[0] == _CLOSED
    # z a graph output (written all the same), y too: y's write is not saved, its read is
    p = fusion.plan(_NODES, "xla", frozenset({"y", "z"}))
    assert _COUNTED - p.saved_bytes[0] == _CLOSED + N


def test_explicit_groups_plan_the_closed_form():
    # the eager plan's planner (``fusion.grouped``): the same four nodes as one group
    p = fusion.grouped(_NODES, [[0, 2, 3, 5]], [nd.launches for nd in _NODES], policy="eager")
    assert _COUNTED - p.saved_bytes[0] == _CLOSED
    # two groups [Add, Relu], [Mul, Mul]: a and p leave the first (p read outside; a through r),
    # so it reads x, b and writes a, p: 3 N + 256; the second reads r (= a), p, x once, writes z
    p = fusion.grouped(_NODES, [[0, 2], [3, 5]], [nd.launches for nd in _NODES], policy="eager")
    assert (2 * N + BIAS + 2 * N) - p.saved_bytes[0] == N + BIAS + 2 * N
    assert (3 * N + 3 * N) - p.saved_bytes[1] == 3 * N + N


def test_a_record_kernel_with_a_view_member_counts_no_view_bytes():
    # onnxruntime's record lists the Reshape in the kernel (it runs it): the view's own reads and
    # writes are not counted (0 B), so none are saved: [Add, Reshape, Relu, Mul] reads x, b and
    # writes y: counted 2 N + 256 + 2 N + 3 N = 7 N + 256, closed form 2 N + 256
    rec = fusion.FusionRecord("test", (("k", "Fused", ("n0", "n1", "n2", "n3")),))
    nodes = [nd._replace(name=f"n{i}") for i, nd in enumerate(_NODES[:4])]
    p = fusion.plan(nodes, "none", frozenset({"y"}), rec)
    assert p.members == ((0, 1, 2, 3),)
    assert (2 * N + BIAS + 2 * N + 3 * N) - p.saved_bytes[0] == N + BIAS + N


def test_search_fast_path_saves_what_the_plan_saves():
    # the GPU xla kernel [Add, Mul] of y = (x + b) * Reshape(x) (a same-shape view of x): reads
    # x once, b, writes y: 262,400 B; the search's fast path (``kernel_cache``) saves the same
    from analyzer.search.fastpath import structure

    m = _model([_n("Add", ["x", "b"], ["a"]), _n("Reshape", ["x", "flat"], ["xr"]),
                _n("Mul", ["a", "xr"], ["y"])], ["y"]).SerializeToString()
    assert _kernels(m, hw="a100") == [(2, N + BIAS + N)]
    cm = analyzer.CostModel(["a100"], runtime="xla")
    ref = analyzer.analyze(m, hw="a100", runtime="xla").predictions[0].latency_s
    np.testing.assert_allclose(cm.score([m, m])[:, 0], [ref, ref], rtol=1e-6)
    assert cm._rows.stats["mismatch"] == 0 and cm._rows.usable
    st = structure.read(m)
    counted = cm._fast.count(st)
    data = cm._rows._data(counted.keys)
    (g, (_, low)), = zip(cm._rows.groups, cm.lower(counted))
    _, s = cm._rows._kernels(st.nodes, data, g.policy, st.outputs)
    assert tuple(s) == low.plan.saved_bytes == ((2 * N + BIAS) + 3 * N - (2 * N + BIAS),)


def test_partial_reads_of_an_outside_tensor_are_not_merged():
    # x read by a Slice (its counted read: the half it keeps, N / 2) and by an Add (all of x) in
    # one kernel: the part the Slice reads is not known to the plan, so both reads stand and only
    # the intermediates are saved (the slice's result s: written N / 2, read N / 2)
    nodes = [_fn("Slice", "movement", ("x",), ("s",), (N,), (N // 2,)),
             _fn("Add", "elementwise", ("s", "x2"), ("y",), (N // 2, N // 2), (N // 2,)),
             _fn("Add", "elementwise", ("x", "c"), ("z",), (N, N), (N,)),
             _fn("Concat", "movement", ("y", "z"), ("o",), (N // 2, N), (3 * N // 2,))]
    p = fusion.plan(nodes, "xla")
    assert p.members == ((0, 1, 2, 3),)
    # saved: s written and read (N), y and z written and read (3 N); x's second read kept
    assert p.saved_bytes[0] == N // 2 + N // 2 + 2 * (N // 2) + 2 * N
    # the same with a whole reader in place of the Slice (a Neg): x's second read merged (+ N)
    whole = [nodes[0]._replace(op="Neg", op_class="elementwise")] + nodes[1:]
    assert fusion.plan(whole, "xla").saved_bytes[0] == p.saved_bytes[0] + N
