"""The backward kernel plan (analyzer.training.backward_*): kernels, shapes and bytes in closed
form on small graphs, gradient accumulation, the fallback count, --optimizer none, and the eager
step as the stream of forward and backward kernels written out as a loop."""

import json

import numpy as np
import pytest
from onnx import helper

import analyzer
from analyzer.training import backward_time as bt
from analyzer.training.backward_plan import backward_plan
from analyzer.training.counts import gradient_plan
from onnx_builders import graph

B, D_IN, D_H, D_OUT = 4, 16, 32, 8
E = 4   # bytes per fp32 element


def _w(*shape):
    return np.ones(shape, np.float32)


def mlp():
    """x[4,16] @ W1[16,32] + b1 -> Relu -> @ W2[32,8] + b2."""
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1_bias"),
             helper.make_node("Relu", ["hb"], ["a"], name="relu"),
             helper.make_node("MatMul", ["a", "W2"], ["o"], name="fc2"),
             helper.make_node("Add", ["o", "b2"], ["y"], name="fc2_bias")]
    return graph(nodes, {"x": (B, D_IN)}, ["y"],
                 {"W1": _w(D_IN, D_H), "b1": _w(D_H), "W2": _w(D_H, D_OUT), "b2": _w(D_OUT)})


def _plan(model):
    r = analyzer.analyze(model)
    return r, backward_plan(r.nodes, gradient_plan(r.nodes))


def test_mlp_backward_kernels_closed_form():
    _, p = _plan(mlp())
    got = [(k.name, k.kind, k.gemm, k.bytes_read, k.bytes_written) for k in p.kernels]
    assert got == [
        # sum of dY [4, 8] over the rows into b2 [8]
        ("fc2_bias/reduce_1", "reduce", None, 4 * 8 * E, 8 * E),
        # dX = dY [4, 8] @ W2^T [8, 32]: M=4, N=32, K=8; reads 4*8 + 8*32, writes 4*32
        ("fc2/dX", "dX", (4, 32, 8, 1), (4 * 8 + 8 * 32) * E, 4 * 32 * E),
        # dW = a^T [32, 4] @ dY [4, 8]: M=32, N=8, K=4 (the batch); reads 32*4 + 4*8, writes 32*8
        ("fc2/dW", "dW", (32, 8, 4, 1), (32 * 4 + 4 * 8) * E, 32 * 8 * E),
        # threshold_backward: the saved output and dY read, dX written
        ("relu/grad", "grad", None, 2 * 4 * 32 * E, 4 * 32 * E),
        ("fc1_bias/reduce_1", "reduce", None, 4 * 32 * E, 32 * E),
        # the first layer: its input is data, no dX GEMM; dW: M=16, N=32, K=4
        ("fc1/dW", "dW", (16, 32, 4, 1), (16 * 4 + 4 * 32) * E, 16 * 32 * E),
    ]
    assert [k.mac_flops for k in p.kernels if k.gemm] == [2 * 4 * 32 * 8, 2 * 32 * 8 * 4, 2 * 16 * 32 * 4]
    assert p.fallback == () and p.by_kind() == {"dW": 2, "dX": 1, "grad": 1, "reduce": 2}


def attention():
    """Q = x Wq, K = x Wk as [1, 2 heads, 8, 4]; P = softmax(Q K^T); O = P V."""
    S, H, Dh = 8, 2, 4
    nodes = []
    for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [helper.make_node("MatMul", ["x", f"W{name}"], [f"{name}p"], name=f"{name}_proj"),
                  helper.make_node("Reshape", [f"{name}p", "shape"], [f"{name}r"], name=f"{name}_reshape"),
                  helper.make_node("Transpose", [f"{name}r"], [name], perm=perm, name=f"{name}_t")]
    nodes += [helper.make_node("MatMul", ["q", "k"], ["s"], name="scores"),
              helper.make_node("Softmax", ["s"], ["pr"], axis=-1, name="softmax"),
              helper.make_node("MatMul", ["pr", "v"], ["o"], name="context")]
    inits = {f"W{n}": _w(H * Dh, H * Dh) for n in "qkv"}
    inits["shape"] = np.array([1, S, H, Dh], np.int64)
    return graph(nodes, {"x": (1, S, H * Dh)}, ["o"], inits)


def test_attention_batched_gemms_and_weight_gemms():
    _, p = _plan(attention())
    k = {x.name: x for x in p.kernels}
    # context = P [2 x 8 x 8] @ V [2 x 8 x 4]: dP = dO @ V^T (8 x 8, K=4), dV = P^T @ dO (8 x 4, K=8)
    assert k["context/dX_a"].gemm == (8, 8, 4, 2) and k["context/dX_b"].gemm == (8, 4, 8, 2)
    # scores = Q [2 x 8 x 4] @ K^T [2 x 4 x 8]: dQ (8 x 4, K=8), dK^T (4 x 8, K=8)
    assert k["scores/dX_a"].gemm == (8, 4, 8, 2) and k["scores/dX_b"].gemm == (4, 8, 8, 2)
    # batched GEMM bytes: 2 x (8*8 + 8*4) read, 2 x 8*4 written
    assert (k["context/dX_a"].bytes_read, k["context/dX_a"].bytes_written) == \
        (2 * (8 * 4 + 4 * 8) * E, 2 * 8 * 8 * E)
    # the projections of a graph input: dW only (M = 8 = K_in, N = 8, K = 8 rows)
    assert {n for n in k if n.endswith("_proj/dX")} == set()
    assert [k[f"{n}_proj/dW"].gemm for n in "qkv"] == [(8, 8, 8, 1)] * 3
    # views launch nothing but one: dQ and dV come back [1, 2, 8, 4] contiguous, permuted to
    # [1, 8, 2, 4] (strides 32, 4, 32, 1): no view as [1, 8, 8], a copy of 64 elements each;
    # K's gradient is K^T's permuted twice back to a layout that views as [1, 8, 8]: no copy
    copies = {x.name: (x.bytes_read, x.bytes_written) for x in p.kernels if x.kind == "copy"}
    assert copies == {"q_reshape/copy": (64 * E, 64 * E), "v_reshape/copy": (64 * E, 64 * E)}
    # softmax one kernel; no accumulation (x needs no gradient)
    assert p.by_kind() == {"copy": 2, "dW": 3, "dX": 4, "grad": 1}


def residual():
    """h = x W1; r = h + relu(h W2) (h read by two nodes on the path); y = r W3."""
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="fc1"),
             helper.make_node("MatMul", ["h", "W2"], ["a"], name="fc2"),
             helper.make_node("Relu", ["a"], ["ra"], name="relu"),
             helper.make_node("Add", ["h", "ra"], ["r"], name="residual"),
             helper.make_node("MatMul", ["r", "W3"], ["y"], name="fc3")]
    return graph(nodes, {"x": (B, D_H)}, ["y"], {f"W{i}": _w(D_H, D_H) for i in (1, 2, 3)})


def test_residual_gradient_accumulation():
    _, p = _plan(residual())
    acc = [k for k in p.kernels if k.kind == "accumulate"]
    # h's gradient comes from fc2 (dX) and the residual Add (passed through): 2 - 1 = 1 add
    assert [(k.name, k.bytes_read, k.bytes_written) for k in acc] == \
        [("h/accumulate0", 2 * B * D_H * E, B * D_H * E)]
    names = [k.name for k in p.kernels]
    # issued after h's last contribution (fc2's dX, the earliest consumer), before fc1's dW
    assert names.index("fc2/dX") < names.index("h/accumulate0") < names.index("fc1/dW")
    # the same-shape Add passes the gradient through: no kernel of its own
    assert not [n for n in names if n.startswith("residual/")]


def test_rank0_literal_is_not_a_weight():
    nodes = [helper.make_node("Mul", ["x", "half"], ["y"], name="scale")]
    m = graph(nodes, {"x": (B, D_H)}, ["y"], {"half": np.array(0.5, np.float32)})
    r = analyzer.analyze(m)
    assert gradient_plan(r.nodes)[0].needs == (False, False)
    assert not gradient_plan(r.nodes)[0].on_path


def test_node_without_rule_is_priced_by_ratio_and_counted():
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="fc"),
             helper.make_node("Softsign", ["h"], ["y"], name="odd")]
    m = graph(nodes, {"x": (B, D_IN)}, ["y"], {"W": _w(D_IN, D_H)})
    r = analyzer.analyze(m, "a100", train=True, runtime="kernel")
    tr = r.training
    assert tr.backward_plan.fallback == (1,)
    assert tr.to_dict()["backward_plan"]["fallback_nodes"] == ["odd"]
    s = tr.steps[0]
    assert (s.backward_method, s.backward_kernels, s.backward_fallback) == ("kernel plan", 1, 1)
    pred = r.predictions[0]
    t, _, _ = bt.kernel_terms(tr.backward_plan, bt.as_nodes(tr.backward_plan), pred, pred.target.profile)
    from analyzer.training.step import backward_rows
    ratio = {i: body + launches for i, body, launches in backward_rows(r, pred)}
    # kernel runtime: the plan's one kernel (fc's dW) + the ratio method's time of Softsign
    assert s.backward_s == pytest.approx(float(t.sum()) + ratio[1], rel=1e-12)


def test_backward_gemms_take_their_own_shape_and_fma_class(tmp_path):
    """Under eager fp32 on an A100 the GEMMs run as gemm_simt (as the forward's do), with the
    kernel-time features of their own M, N, K."""
    from dataclasses import replace

    from analyzer.prediction.efficiency.op_classes import OP_CLASSES
    from analyzer.prediction.lowering import lower

    r = analyzer.analyze(mlp(), "a100", runtime="eager")
    p = backward_plan(r.nodes, gradient_plan(r.nodes))
    pred = r.predictions[0]
    low = lower(bt.as_nodes(p), [pred.target.profile], None, replace(pred.target.runtime, fusion="none"))
    cls = [OP_CLASSES[c] for c in low.feats["op_class"]]
    assert cls == ["reduce", "gemm_simt", "gemm_simt", "elementwise", "reduce", "gemm_simt"]
    mnk = list(zip(low.feats["m"], low.feats["n"], low.feats["k"]))
    assert [mnk[j] for j in (1, 2, 5)] == [(4, 32, 8), (32, 8, 4), (16, 32, 4)]


def _stream_loop(host, device):
    """The eager stream written out: host_end += h; dev_end = max(host_end, dev_end) + k."""
    host_end = dev_end = 0.0
    ends = []
    for h, k in zip(host, device):
        host_end += h
        dev_end = max(host_end, dev_end) + k
        ends.append(dev_end)
    return ends


def test_eager_step_is_the_stream_of_forward_then_backward_kernels():
    r = analyzer.analyze(mlp(), "a100", train=True, runtime="eager")
    pred, s = r.predictions[0], r.training.steps[0]
    tab = pred.kernel_table
    f_host, f_dev = list(tab.host), list(np.asarray(tab.time) - np.asarray(tab.host))
    plan = r.training.backward_plan
    t, h, _ = bt.kernel_terms(plan, bt.as_nodes(plan), pred, pred.target.profile)
    assert len(t) == 6 and all(x > 0 for x in h)     # each backward kernel pays host dispatch
    ends = _stream_loop(f_host + list(h), f_dev + list(t - h))
    assert ends[len(f_host) - 1] == pytest.approx(pred.latency_s, rel=1e-9)
    assert s.backward_s == pytest.approx(ends[-1] - ends[len(f_host) - 1], rel=1e-9)
    assert s.forward_s + s.backward_s == pytest.approx(ends[-1], rel=1e-9)
    # the kernel runtime: the sum of the backward kernels' device times
    rk = analyzer.analyze(mlp(), "a100", train=True, runtime="kernel")
    pk = rk.predictions[0]
    tk, hk, _ = bt.kernel_terms(rk.training.backward_plan, bt.as_nodes(rk.training.backward_plan), pk,
                                pk.target.profile)
    assert not hk.any() and rk.training.steps[0].backward_s == pytest.approx(float(tk.sum()), rel=1e-12)


def test_optimizer_none_is_forward_plus_backward(run_cli, save):
    r = analyzer.analyze(mlp(), "a100", train=True, optimizer="none")
    s, c = r.training.steps[0], r.training.counts
    assert s.optimizer_s == 0.0 and s.step_s == s.forward_s + s.backward_s
    assert c.optimizer_vector == c.optimizer_bytes == 0 and s.memory.optimizer_state == 0
    sgd = analyzer.analyze(mlp(), "a100", train=True).training.steps[0]
    assert sgd.optimizer_s > 0 and sgd.backward_s == s.backward_s
    res = run_cli(save(mlp()), "--hw", "a100", "--train", "--optimizer", "none", "--format", "json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)["training"]
    assert d["optimizer"] == "none" and d["steps"][0]["optimizer_s"] == 0.0
    assert d["steps"][0]["backward"]["method"] == "kernel plan"
    assert d["backward_plan"]["kernels"] == 6


def test_non_pytorch_runtime_keeps_the_ratio_method():
    r = analyzer.analyze(mlp(), "a100", train=True, runtime="onnxruntime")
    s = r.training.steps[0]
    assert s.backward_method == "ratio" and s.backward_kernels == 0
    assert s.backward_s == s.backward_ratio_s


def test_seeded_output_read_again_and_bias_sum_at_batch_1():
    """An output also read by a node on the path gets its seed plus that node's gradient (one
    add); a [N] bias of a [1, N] Gemm output is summed (aten's sum_to sums the leading dim)."""
    nodes = [helper.make_node("Gemm", ["x", "W", "b"], ["h"], name="fc"),
             helper.make_node("Tanh", ["h"], ["t"], name="act")]
    m = graph(nodes, {"x": (1, D_IN)}, ["h", "t"], {"W": _w(D_IN, D_H), "b": _w(D_H)})
    r = analyzer.analyze(m)
    p = backward_plan(r.nodes, gradient_plan(r.nodes), r.model["outputs"])
    names = [k.name for k in p.kernels]
    assert names == ["act/grad", "h/accumulate0", "fc/dW", "fc/dbias"]
    assert p.kernels[3].bytes_read == D_H * E and p.kernels[3].bytes_written == D_H * E
    # without the seed of h: no accumulation
    assert "h/accumulate0" not in [k.name for k in backward_plan(r.nodes, gradient_plan(r.nodes)).kernels]


def test_folded_position_lookup_is_an_embedding_backward():
    """A lookup with constant ids folds into a constant; its weight still gets
    embedding_dense_backward: a zero fill of [V, D] and the scatter of n rows."""
    V, P, S, D = 50, 16, 8, 4
    nodes = [helper.make_node("Gather", ["wte", "ids"], ["tok"], name="word"),
             helper.make_node("Gather", ["wpe", "pos_ids"], ["pos"], name="position"),
             helper.make_node("Add", ["tok", "pos"], ["y"], name="sum")]
    from onnx import TensorProto
    m = graph(nodes, {"ids": ((1, S), TensorProto.INT64)}, ["y"],
              {"wte": _w(V, D), "wpe": _w(P, D), "pos_ids": np.arange(S, dtype=np.int64).reshape(1, S)})
    r = analyzer.analyze(m)
    p = backward_plan(r.nodes, gradient_plan(r.nodes), r.model["outputs"])
    got = [(k.name, k.bytes_read, k.bytes_written) for k in p.kernels]
    ib = S * 8   # the int64 ids, bytes
    assert got == [("position/zero", 0, P * D * E), ("position/dW", S * D * E + ib, S * D * E),
                   ("word/zero", 0, V * D * E), ("word/dW", S * D * E + ib, S * D * E)]
