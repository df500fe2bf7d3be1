"""Fusion plans are runnable: no fused kernel lies on a cycle of the kernel graph
(``prediction.fusion_legality``), and the ``xla`` policy joins through views that launch nothing.

Hand-built nodes: every tensor N = 4,096 B (fp32 [1024]), the bias b 256 B.  A GEMM (class
``gemm``) never fuses; an elementwise op or an activation does."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper
from onnx_builders import graph

import analyzer
from analyzer.prediction import fusion

N = 4096
BIAS = 256


def _fn(op, cls, ins, outs, in_b, out_b, launches=True):
    return fusion.FusionNode(op, "", cls, "", ins, outs, in_b, out_b, launches)


# a = x + b; r = Relu(a); g = MatMul(r, w); y = g + a (a residual around the GEMM)
RESIDUAL = [
    _fn("Add", "elementwise", ("x", "b"), ("a",), (N, BIAS), (N,)),
    _fn("Relu", "activation", ("a",), ("r",), (N,), (N,)),
    _fn("MatMul", "gemm", ("r", "w"), ("g",), (N, N), (N,)),
    _fn("Add", "elementwise", ("g", "a"), ("y",), (N, N), (N,)),
]


@pytest.mark.parametrize("policy", ["xla", "coreml"])
def test_a_residual_around_a_gemm_stays_a_kernel_of_its_own(policy):
    # the connected components {Add, Relu, residual Add} would feed the MatMul and read its
    # result (a cycle): the residual Add (node 3) is refused and runs alone.  Kernels: [Add,
    # Relu] (reads x, b; writes a, read by node 3, and r, read by the MatMul: a's read by the
    # Relu saved, N), [MatMul], [Add]
    p = fusion.plan(RESIDUAL, policy)
    assert p.members == ((0, 1), (2,), (3,))
    assert p.saved_bytes == (N, 0, 0)
    # counted: Add 2 N + 256, Relu 2 N = 4 N + 256; moved: x, b read, a, r written = 3 N + 256
    assert (2 * N + BIAS + 2 * N) - p.saved_bytes[0] == 3 * N + BIAS


def test_a_path_through_nodes_that_launch_nothing_is_no_cycle():
    # a = x + b; s = Shape(a) (launches nothing); y = a * s: the path a -> s -> y passes no
    # kernel, so [Add, Mul] is one kernel: a is still written (the Shape, outside the kernel,
    # reads it; ``fusion_bytes``), its read back by the Mul is saved: N
    nodes = [_fn("Add", "elementwise", ("x", "b"), ("a",), (N, BIAS), (N,)),
             _fn("Shape", "shape", ("a",), ("s",), (N,), (8,), False),
             _fn("Mul", "elementwise", ("a", "s"), ("y",), (N, 8), (N,))]
    p = fusion.plan(nodes, "xla")
    assert p.members == ((0, 2),)
    assert p.saved_bytes == (N,)


def test_xla_joins_through_a_view_that_launches_nothing():
    # a = x + b; r = Reshape(a) (launches nothing); t = Transpose(r): one kernel [Add,
    # Transpose] reading x, b and writing t: N + 256 + N; counted Add 2 N + 256, Transpose 2 N
    nodes = [_fn("Add", "elementwise", ("x", "b"), ("a",), (N, BIAS), (N,)),
             _fn("Reshape", "view", ("a", "s"), ("r",), (N, 32), (N,), False),
             _fn("Transpose", "movement", ("r",), ("t",), (N,), (N,))]
    p = fusion.plan(nodes, "xla")
    assert p.members == ((0, 2),)
    assert (2 * N + BIAS + 2 * N) - p.saved_bytes[0] == N + BIAS + N
    # a view that launches (a record's, an eager copy) splits the kernel
    launching = [nodes[0], nodes[1]._replace(launches=True, op_class="movement"), nodes[2]]
    assert fusion.plan(launching, "xla").members == ((0, 1, 2),)   # (a launching view fuses)


def test_the_fast_path_plans_the_refused_join_as_the_lowering_does():
    # ONNX: a = x + b; r = Relu(a); g = MatMul(r, w); y = g + a, x [16, 64], w [64, 64]: the
    # search's fast path (``kernel_cache``) makes the plan ``fusion.plan`` makes: 3 kernels
    n = lambda op, ins, outs: helper.make_node(op, ins, outs, name=outs[0])  # noqa: E731
    m = graph([n("Add", ["x", "b"], ["a"]), n("Relu", ["a"], ["r"]), n("MatMul", ["r", "w"], ["g"]),
               n("Add", ["g", "a"], ["y"])], {"x": (16, 64)}, ["y"],
              {"b": np.ones(64, np.float32), "w": np.ones((64, 64), np.float32)}).SerializeToString()
    ref = analyzer.analyze(m, hw="a100", runtime="xla").predictions[0]
    assert [int(k) for k in ref.kernel_table.members] == [2, 1, 1]
    cm = analyzer.CostModel(["a100"], runtime="xla")
    np.testing.assert_allclose(cm.score([m, m])[:, 0], [ref.latency_s] * 2, rtol=1e-6)
    assert cm._rows.stats["mismatch"] == 0 and cm._rows.usable


PROGRAMS = [("mlp_infer", "mlp", 1), ("cnn_infer", "cnn", 1), ("transformer_infer", "transformer", 1),
            ("rnn_infer", "rnn", 1), ("mlp_train_step", "mlp", 3), ("transformer_train_step", "transformer", 3)]


@pytest.mark.parametrize("fn,example,nargs", PROGRAMS)
def test_jax_sample_programs_plan_no_kernel_on_a_cycle(fn, example, nargs):
    # bench/xla_gpu_plan.py's check on the ``xla`` runtime's GPU plan (the transformer block's
    # residual kernel around mlp/up .. mlp/down was one before joins were checked)
    pytest.importorskip("jax")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for sub in ("bench", "samples"):
        if os.path.join(root, sub) not in sys.path:
            sys.path.insert(0, os.path.join(root, sub))
    import jax_models
    import xla_gpu_plan

    args = jax_models.example_inputs(example)
    args = args[1:2] if nargs == 1 else args
    _, rows, cyclic = xla_gpu_plan.program_plan(getattr(jax_models, fn), args, "a100-80gb-sxm")
    assert rows and cyclic == []


# a kernel A = [Relu1, Add6] and a kernel B = [Relu4, Add7]: Relu1 -> Shape2 -> Add7 makes A feed
# B and Relu4 -> Add6 makes B feed A, although no node path runs from B back to B (a test on each
# node's own reachability lets the second join through; the plan is checked and made again)
TWO_GROUPS = [
    _fn("MatMul", "gemm", ("x",), ("t0",), (N,), (N,)),                             # 0
    _fn("Relu", "activation", ("t0",), ("t1",), (N,), (N,)),                        # 1
    _fn("Shape", "shape", ("t1",), ("t2",), (N,), (8,), False),                     # 2
    _fn("MatMul", "gemm", ("t0",), ("t3",), (N,), (N,)),                            # 3
    _fn("Relu", "activation", ("t3",), ("t4",), (N,), (N,)),                        # 4
    _fn("MatMul", "gemm", ("t4",), ("t5",), (N,), (N,)),                            # 5
    _fn("Add", "elementwise", ("t1", "t5", "t4"), ("t6",), (N, N, N), (N,)),        # 6
    _fn("Add", "elementwise", ("t3", "t2", "t4"), ("t7",), (N, 8, N), (N,)),        # 7
]


def test_two_kernels_that_would_feed_each_other_are_not_both_made():
    # Add6 takes in Relu1 (Relu4 refused: Relu4 -> MatMul5 -> Add6); Add7 takes in Relu4 only
    # when Relu4 does not already feed [Relu1, Add6], which it does (Relu4 -> Add6) while
    # [Relu1, Add6] feeds Add7 (Relu1 -> Shape2 -> Add7): Add7 stays alone
    p = fusion.plan(TWO_GROUPS, "xla")
    assert p.members == ((0,), (1, 6), (3,), (4,), (5,), (7,))
    assert not _cyclic(TWO_GROUPS, p)


def _cyclic(nodes, p) -> bool:
    """Whether a kernel of ``p`` lies on a cycle of the kernel graph (nodes outside every kernel,
    which launch nothing, looked through), by depth-first search: the test's own reading."""
    producer = {t: j for j, nd in enumerate(nodes) for t in nd.outputs}
    kernel = {m: k for k, ms in enumerate(p.members) for m in ms}
    readers: dict[int, set[int]] = {}
    for j, nd in enumerate(nodes):
        for t in nd.inputs:
            if t in producer and producer[t] != j:
                readers.setdefault(producer[t], set()).add(j)

    def kernels_after(j, seen):
        out = set()
        for r in readers.get(j, ()):
            if r in kernel:
                out.add(kernel[r])
            elif r not in seen:
                seen.add(r)
                out |= kernels_after(r, seen)
        return out
    succ: dict[int, set[int]] = {}
    for j, k in kernel.items():
        succ.setdefault(k, set()).update(x for x in kernels_after(j, set()) if x != k)
    state: dict[int, int] = {}

    def on_cycle(k) -> bool:
        state[k] = 1
        for x in succ.get(k, ()):
            if state.get(x) == 1 or (x not in state and on_cycle(x)):
                return True
        state[k] = 2
        return False
    return any(k not in state and on_cycle(k) for k in list(succ))


_CLASSES = ("elementwise", "activation", "gemm", "shape")


@st.composite
def _graphs(draw):
    """A random graph of 3-14 nodes in topological order: each node reads 1-3 earlier tensors;
    a ``shape`` node launches nothing."""
    n = draw(st.integers(3, 14))
    nodes = []
    for j in range(n):
        ins = tuple(f"t{i}" for i in draw(st.lists(st.integers(0, j - 1), min_size=1, max_size=3))) if j else ("x",)
        cls = draw(st.sampled_from(_CLASSES))
        nodes.append(_fn("Shape" if cls == "shape" else "Op", cls, ins, (f"t{j}",), (N,) * len(ins), (N,),
                         cls != "shape"))
    return nodes


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_graphs(), st.sampled_from(["xla", "coreml", "onnxruntime"]))
def test_no_plan_puts_a_kernel_on_a_cycle(nodes, policy):
    assert not _cyclic(nodes, fusion.plan(nodes, policy))
