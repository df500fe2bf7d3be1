"""Tensor parallelism as Megatron splits a transformer (analyzer/scaling/tensor.py): which GEMMs
are column- and row-parallel, the per-node factors, the collectives and their bytes, the
parameters one device holds, and the step built from them, in closed forms."""

import os

import pytest

import analyzer
from analyzer.scaling import tensor as T
from analyzer.training.step import backward_rows, optimizer_time
import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx_builders import graph, ints, one_node, weight

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "torch")
B, S, H, HEADS, LAYERS = 2, 8, 16, 4, 2
ACT_BYTES = B * S * H * 4          # one [batch, seq, hidden] fp32 activation: 1024 B
# parameters per block: ln_1 + ln_2 (4H), c_attn W (H x 3H) + b (3H), attn c_proj W (H x H) + b
# (H), c_fc W (H x 4H) + b (4H), mlp c_proj W (4H x H) + b (H), the score scale (1 scalar)
SPLIT_PER_BLOCK = H * 3 * H + 3 * H + H * H + H * 4 * H + 4 * H + 4 * H * H   # 3184
REPL_PER_BLOCK = 4 * H + H + H + 1                                          # 97


def gpt_blocks(layers: int = 2, batch: int = 2, seq: int = 8, hidden: int = 16, heads: int = 4,
               vocab: int | None = None, prefix: str = ""):
    """A GPT-2-style pre-LN decoder of ``layers`` blocks with a torch exporter's names
    (``/h.{i}/attn/c_attn/MatMul``, ``/h.{i}/mlp/c_fc/MatMul`` ...): per block ln_1, the fused
    QKV projection (MatMul + bias Add), Split, per-head Reshape/Transpose, scores MatMul, scale
    Mul, Softmax, context MatMul, Transpose/Reshape back, the out projection c_proj (MatMul +
    bias Add), the residual Add, ln_2, c_fc (MatMul + Add), Relu, the MLP's c_proj (MatMul +
    Add) and the second residual Add. ``vocab``: int64 ids ``[batch, seq]`` into a word
    embedding ``wte`` (a Gather) and ln_f then an LM head ``[hidden, vocab]`` at the end; else
    the hidden states ``x`` are the input. Every weight its own initializer."""
    h, hd = hidden, hidden // heads
    nodes, inits = [], {}

    def init(name, arr):
        inits[name] = arr
        return name

    def node(op, ins, name, **attrs):
        out = name + "_output_0"
        nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    def dense(src, where, k, n):
        mm = node("MatMul", [src, init(f"{where}.weight", weight(k, n))], f"{where}/MatMul")
        return node("Add", [mm, init(f"{where}.bias", weight(n))], f"{where}/Add")

    def norm(src, where):
        return node("LayerNormalization", [src, init(f"{where}.weight", weight(h)),
                                           init(f"{where}.bias", weight(h))],
                    f"{where}/LayerNormalization", axis=-1)

    init("heads_shape", ints(batch, seq, heads, hd))
    init("hidden_shape", ints(batch, seq, h))
    init("qkv_split", ints(h, h, h))
    if vocab:
        inputs = {"input_ids": ((batch, seq), TensorProto.INT64)}
        x = node("Gather", [init("wte.weight", weight(vocab, h)), "input_ids"], f"{prefix}/wte/Gather")
    else:
        inputs = {"x": (batch, seq, h)}
        x = "x"
    for i in range(layers):
        p = f"{prefix}/h.{i}"
        a = norm(x, f"{p}/ln_1")
        qkv = dense(a, f"{p}/attn/c_attn", h, 3 * h)
        q, k, v = (f"{p}/attn/Split_output_{j}" for j in range(3))
        nodes.append(helper.make_node("Split", [qkv, "qkv_split"], [q, k, v], name=f"{p}/attn/Split",
                                      axis=2))
        q, k, v = (node("Reshape", [t, "heads_shape"], f"{p}/attn/Reshape_{j}")
                   for j, t in enumerate((q, k, v)))
        q = node("Transpose", [q], f"{p}/attn/Transpose_q", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"{p}/attn/Transpose_k", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"{p}/attn/Transpose_v", perm=[0, 2, 1, 3])
        s = node("MatMul", [q, k], f"{p}/attn/MatMul")
        s = node("Mul", [s, init(f"{p}.scale", np.asarray(0.5, np.float32))], f"{p}/attn/Mul")
        s = node("Softmax", [s], f"{p}/attn/Softmax", axis=-1)
        c = node("MatMul", [s, v], f"{p}/attn/MatMul_1")
        c = node("Transpose", [c], f"{p}/attn/Transpose_3", perm=[0, 2, 1, 3])
        c = node("Reshape", [c, "hidden_shape"], f"{p}/attn/Reshape_3")
        o = dense(c, f"{p}/attn/c_proj", h, h)
        x = node("Add", [x, o], f"{p}/Add")
        m = norm(x, f"{p}/ln_2")
        m = dense(m, f"{p}/mlp/c_fc", h, 4 * h)
        m = node("Relu", [m], f"{p}/mlp/act/Relu")
        m = dense(m, f"{p}/mlp/c_proj", 4 * h, h)
        x = node("Add", [x, m], f"{p}/Add_1")
    if vocab:
        x = norm(x, f"{prefix}/ln_f")
        x = node("MatMul", [x, init("lm_head.weight", weight(h, vocab))], f"{prefix}/lm_head/MatMul")
    return graph(nodes, inputs, [x], inits)


def tie_lm_head(model):
    """``model`` (``gpt_blocks``) with its LM head tied to the word embedding, as GPT-2 ties it:
    ``lm_head.weight`` is no initializer but ``Transpose(wte.weight)`` ([vocab, hidden] ->
    [hidden, vocab])."""
    g = model.graph
    keep = [t for t in g.initializer if t.name != "lm_head.weight"]
    del g.initializer[:]
    g.initializer.extend(keep)
    g.node.insert(0, helper.make_node("Transpose", ["wte.weight"], ["lm_head.weight"],
                                      name="tie/Transpose", perm=[1, 0]))
    return model


def _report(**kw):
    return analyzer.analyze(gpt_blocks(LAYERS, B, S, H, HEADS, **kw))


def _names(r, idx):
    return [r.nodes[i].name for i in idx]


@pytest.mark.parametrize("t", [2, 4])
def test_gpt_blocks_columns_rows_factors_allreduces_params(t):
    r = _report()
    assert r.totals.params == LAYERS * (SPLIT_PER_BLOCK + REPL_PER_BLOCK) == 6562
    p = T.plan(r.nodes, t, outputs=r.model["outputs"], params=r.totals.params)
    assert p.recognised and not p.notes
    assert _names(r, p.columns) == [f"/h.{i}/{m}/MatMul" for i in range(LAYERS)
                                    for m in ("attn/c_attn", "mlp/c_fc")]
    assert _names(r, p.rows) == [f"/h.{i}/{m}/c_proj/MatMul" for i in range(LAYERS)
                                 for m in ("attn", "mlp")]
    assert [(q.kind, q.heads) for q in p.pairs] == [("attention", HEADS), ("mlp", None)] * LAYERS
    f = {n.name: x for n, x in zip(r.nodes, p.factors)}
    # heads split: everything from the QKV projection to the out projection is 1/t
    for name in ("attn/c_attn/MatMul", "attn/c_attn/Add", "attn/Split", "attn/Reshape_0",
                 "attn/Transpose_k", "attn/MatMul", "attn/Mul", "attn/Softmax", "attn/MatMul_1",
                 "attn/Transpose_3", "attn/Reshape_3", "attn/c_proj/MatMul",
                 "mlp/c_fc/MatMul", "mlp/c_fc/Add", "mlp/act/Relu", "mlp/c_proj/MatMul"):
        assert f[f"/h.1/{name}"] == 1 / t, name
    # replicated: layer norms, residual adds, the row GEMMs' bias adds (after the all-reduce)
    for name in ("ln_1/LayerNormalization", "ln_2/LayerNormalization", "Add", "Add_1",
                 "attn/c_proj/Add", "mlp/c_proj/Add"):
        assert f[f"/h.0/{name}"] == 1.0, name
    assert sum(1 for x in p.factors if x < 1) == LAYERS * (16 + 4)
    # 2 all-reduces per block forward (attn out, mlp down), 2 backward (the inputs of c_attn, c_fc)
    assert [(c.kind, c.phase, c.node, c.nbytes) for c in p.collectives] == [
        ("all_reduce", ph, f"/h.{i}/{m}/MatMul", ACT_BYTES) for i in range(LAYERS)
        for m in ("attn/c_proj", "attn/c_attn", "mlp/c_proj", "mlp/c_fc")
        for ph in (("backward",) if "c_proj" not in m else ("forward",))]
    assert sum(c.nbytes for c in p.collectives if c.phase == "forward") == 4 * 1024
    # parameters, gradients and optimizer state on one device: split / t + replicated
    assert p.split_params == LAYERS * SPLIT_PER_BLOCK == 6368
    assert p.params_per_device == LAYERS * (SPLIT_PER_BLOCK // t + REPL_PER_BLOCK)
    assert p.params_per_device == {2: 3378, 4: 1786}[t]
    # inference: the forward all-reduces only
    fwd = T.plan(r.nodes, t, outputs=r.model["outputs"], train=False)
    assert [c.phase for c in fwd.collectives] == ["forward"] * 4


@pytest.mark.parametrize("t", [2, 4])
def test_per_device_shapes_heads_and_hidden_split(t):
    """B=2, S=8, H=16, 4 heads of 4: QKV [2,8,48] -> [2,8,48/t]; per-head tensors and scores
    keep 4/t heads; the MLP's hidden 64 -> 64/t; the row GEMMs' outputs are whole."""
    r = _report()
    p = T.plan(r.nodes, t, outputs=r.model["outputs"])
    by = {r.nodes[i].name: sh for i, sh in p.shapes.items()}
    hh = HEADS // t
    assert by["/h.0/attn/c_attn/MatMul"] == ((B, S, 3 * H // t),)
    assert by["/h.0/attn/Split"] == ((B, S, H // t),) * 3
    assert by["/h.0/attn/Reshape_0"] == ((B, S, hh, H // HEADS),)
    assert by["/h.0/attn/Transpose_k"] == ((B, hh, H // HEADS, S),)
    assert by["/h.0/attn/Softmax"] == ((B, hh, S, S),)
    assert by["/h.0/attn/Reshape_3"] == ((B, S, H // t),)
    assert by["/h.0/attn/c_proj/MatMul"] == ((B, S, H),)
    assert by["/h.1/mlp/act/Relu"] == ((B, S, 4 * H // t),)
    # every split node's shape is traced
    assert set(p.shapes) == {i for i, f in enumerate(p.factors) if f < 1}
    w = {r.nodes[i].name: kn for i, kn in p.weights.items()}
    assert w["/h.0/attn/c_attn/MatMul"] == (H, 3 * H // t)
    assert w["/h.0/attn/c_proj/MatMul"] == (H // t, H)
    assert w["/h.0/mlp/c_fc/MatMul"] == (H, 4 * H // t)
    assert w["/h.0/mlp/c_proj/MatMul"] == (4 * H // t, H)


def test_vocab_parallel_embedding_and_lm_head():
    V, t = 64, 4
    r = _report(vocab=V)
    p = T.plan(r.nodes, t, outputs=r.model["outputs"], params=r.totals.params)
    pat = T.find(r.nodes, r.model["outputs"])
    assert r.nodes[pat.embedding].name == "/wte/Gather"
    assert r.nodes[pat.lm_head].name == "/lm_head/MatMul"
    assert p.factors[pat.lm_head] == 1 / t and p.factors[pat.embedding] == 1.0
    assert "/lm_head/MatMul" in _names(r, p.columns)
    # + the embedding's forward all-reduce and the LM head's input-gradient all-reduce
    extra = [(c.phase, c.node, c.nbytes) for c in p.collectives if "h." not in c.node]
    assert extra == [("forward", "/wte/Gather", ACT_BYTES), ("backward", "/lm_head/MatMul", ACT_BYTES)]
    # wte (V x H) and lm_head (H x V) split too; ln_f (2H) replicated
    assert r.totals.params == 6562 + 2 * V * H + 2 * H
    assert p.params_per_device == LAYERS * (SPLIT_PER_BLOCK // t + REPL_PER_BLOCK) \
        + 2 * V * H // t + 2 * H == 2330


def test_sequence_parallel_reduce_scatter_and_all_gather():
    t = 2
    r = _report(vocab=64)
    p = T.plan(r.nodes, t, outputs=r.model["outputs"], sequence_parallel=True)
    kinds = [(c.kind, c.phase, c.nbytes) for c in p.collectives]
    # each of the 10 all-reduces becomes a reduce-scatter + an all-gather of the same tensor
    assert len(kinds) == 20
    assert kinds[0::2] == [("reduce_scatter", ph, ACT_BYTES) for ph in
                           [c.phase for c in T.plan(r.nodes, t, outputs=r.model["outputs"]).collectives]]
    assert {k for k, _, _ in kinds[1::2]} == {"all_gather"}
    f = {n.name: x for n, x in zip(r.nodes, p.factors)}
    # the layer norms and residual adds split by the sequence; the word embedding's lookup not
    for name in ("/h.0/ln_1/LayerNormalization", "/h.1/Add", "/h.1/mlp/c_proj/Add",
                 "/ln_f/LayerNormalization"):
        assert f[name] == 1 / t, name
    assert f["/wte/Gather"] == 1.0


def test_tensor_parallel_step_closed_form():
    """Per device: each node's body x its factor + its launches (forward; backward: the ratio
    method's rows scaled to the step's backward), Adam
    over one device's parameters; communication: 8 ring all-reduces of 1024 B on a 100 GB/s
    link without latency: 8 * 2(t-1)/t * 1024 / 1e11 s."""
    from hardware_db import links

    free = links.make(100.0)
    model = gpt_blocks(LAYERS, B, S, H, HEADS)
    r = analyzer.scale(model, "a100", [1, 2, 4], link=free, algorithm="ring", parallel="tensor",
                       train=True, optimizer="adam", clip_grad=None, zero_grad=False,
                       megatron_step=False)
    pts = {q.devices: q for q in r.scaling.points}
    step = r.training.steps[0]
    assert pts[1].compute_s == pytest.approx(step.step_s, rel=1e-12)
    assert pts[1].communication_s == 0.0
    pred = r.predictions[0]
    prof = pred.target.profile
    for t in (2, 4):
        assert pts[t].communication_s == pytest.approx(8 * 2 * (t - 1) / t * 1024 / 1e11, rel=1e-12)
        assert pts[t].communication_s == pytest.approx({2: 8.192e-8, 4: 1.2288e-7}[t], rel=1e-12)
        plan = T.plan(r.nodes, t, outputs=r.model["outputs"], params=r.totals.params)
        fwd_split = sum((x.time_s - x.overhead_s) for x in pred.nodes if plan.factors[x.index] < 1)
        # the ratio method's rows scaled to the step's backward (the kernel plan's on a100)
        rows = backward_rows(r, pred)
        k = step.backward_s / sum(body + launches for _, body, launches in rows)
        bwd_split = k * sum(body for i, body, _ in rows if plan.factors[i] < 1)
        opt_saved = step.optimizer_s - optimizer_time(prof, plan.params_per_device, "adam",
                                                      pred.overlap)
        assert opt_saved > 0
        want = step.step_s - (fwd_split + bwd_split) * (1 - 1 / t) - opt_saved
        assert pts[t].compute_s == pytest.approx(want, rel=1e-12)
    setup = r.scaling.setup
    assert [d["devices"] for d in setup["tensor_plans"]] == [2, 4]
    assert setup["tensor_plans"][0]["collectives"] == {
        "all_reduce_forward": {"count": 4, "bytes": 4096},
        "all_reduce_backward": {"count": 4, "bytes": 4096}}
    assert setup["tensor_plans"][1]["params_per_device"] == 1786


def test_unrecognised_graph_says_so_and_keeps_the_rule_of_thumb():
    model = one_node("MatMul", (64, 32), weight(32, 16))
    pat = T.find(analyzer.analyze(model).nodes, ["y"])
    assert not pat.recognised
    assert pat.notes == ("no Megatron column/row pattern recognised (weight GEMMs did not pair: "
                         "a region reaches a graph output)",)
    r = analyzer.scale(model, "a100", [1, 2], link="nvlink3", parallel="tensor", train=True)
    assert any(x.startswith("no Megatron column/row pattern recognised") for x in r.scaling.notes)
    assert r.scaling.setup["tensor_plans"] == [{"devices": 2, "recognised": False}]
    # the rule: the MAC share of the step divides by N; no second weight GEMM: no all-reduce
    p1, p2 = r.scaling.points
    pred = r.predictions[0]
    frac = sum(x.time_s for x in pred.nodes if r.nodes[x.index].cost.mac_flops) / pred.latency_s
    assert p2.compute_s == pytest.approx(p1.step_s * (1 - frac / 2), rel=1e-12)
    assert p2.communication_s == 0.0


def test_no_weight_gemms_at_all():
    pat = T.find(analyzer.analyze(one_node("Relu", (4, 5))).nodes, ["y"])
    assert pat.notes == ("no Megatron column/row pattern recognised (weight GEMMs none)",)


@pytest.mark.parametrize("fixture, attn_cols, attn_row, mlp_col, mlp_row, emb", [
    ("gpt2", ["attn/c_attn/Gemm"], "attn/c_proj/Gemm", "mlp/c_fc/Gemm", "mlp/c_proj/Gemm",
     "/model/wte/Gather"),
    ("bert", ["attention/self/query/MatMul", "attention/self/key/MatMul",
              "attention/self/value/MatMul"], "attention/output/dense/MatMul",
     "intermediate/dense/MatMul", "output/dense/MatMul",
     "/model/embeddings/word_embeddings/Gather"),
])
def test_torch_exports_recognised(fixture, attn_cols, attn_row, mlp_col, mlp_row, emb):
    """The repo's torch exports (2 blocks, hidden 128, 2 heads, batch 1, seq 32): every block's
    attention and MLP pair, the word embedding; all-reduces of 1 x 32 x 128 x 4 B = 16384 B."""
    r = analyzer.analyze(os.path.join(FIX, f"{fixture}.onnx"))
    pat = T.find(r.nodes, r.model["outputs"])
    # every split node's per-device shape traced; the scores keep 1 of the 2 heads at t = 2
    p2 = T.plan(r.nodes, 2, pattern=pat)
    assert set(p2.shapes) == {i for i, f in enumerate(p2.factors) if f < 1}
    scores = [sh for i, sh in p2.shapes.items() if r.nodes[i].op == "Softmax"]
    assert scores == [((1, 1, 32, 32),)] * 2
    blk = "/model/h." if fixture == "gpt2" else "/model/encoder/layer."
    assert [(q.kind, q.heads, _names(r, q.columns), _names(r, q.rows)) for q in pat.pairs] == [
        x for i in range(2) for x in (
            ("attention", 2, [f"{blk}{i}/{c}" for c in attn_cols], [f"{blk}{i}/{attn_row}"]),
            ("mlp", None, [f"{blk}{i}/{mlp_col}"], [f"{blk}{i}/{mlp_row}"]))]
    assert r.nodes[pat.embedding].name == emb and pat.lm_head is None
    p = T.plan(r.nodes, 2, pattern=pat, params=r.totals.params)
    fwd = [c for c in p.collectives if c.phase == "forward"]
    assert len(fwd) == 5 and {c.nbytes for c in p.collectives} == {1 * 32 * 128 * 4}
    assert sum(1 for c in p.collectives if c.phase == "backward") == 4
    # t = 4 exceeds the 2 heads: said, not hidden
    p4 = T.plan(r.nodes, 4, pattern=pat)
    assert p4.notes == ("2 of 4 column/row pairs do not divide by 4 (heads 2): charged as if padded",)


def test_sequence_parallel_step_ring_closed_form():
    """Ring reduce-scatter + all-gather of the same tensor move what one ring all-reduce moves:
    (t-1)/t + (t-1)/t = 2(t-1)/t of 1024 B each, 8 of them on 100 GB/s: the all-reduce figure;
    the layer norms and residual adds now split too, so the compute is smaller."""
    from hardware_db import links

    from analyzer.scaling import collectives as C
    from analyzer.scaling import fabric as FB

    free = links.make(100.0)
    model = gpt_blocks(LAYERS, B, S, H, HEADS)
    kw = dict(link=free, algorithm="ring", parallel="tensor", train=True, optimizer="adam",
              clip_grad=None, zero_grad=False, megatron_step=False)
    sp = {q.devices: q for q in analyzer.scale(model, "a100", [1, 2], sequence_parallel=True,
                                               **kw).scaling.points}
    ar = {q.devices: q for q in analyzer.scale(model, "a100", [1, 2], **kw).scaling.points}
    assert sp[2].communication_s == pytest.approx(8.192e-8, rel=1e-12)
    assert sp[2].communication_s == pytest.approx(ar[2].communication_s, rel=1e-12)
    assert sp[1].compute_s == pytest.approx(ar[1].compute_s, rel=1e-12)
    assert sp[2].compute_s < ar[2].compute_s
    fab = FB.Fabric(FB.Level(1e11, 0.0))
    assert fab.reduce_scatter(1024, 4) == C.ring_reduce_scatter(1024, 4, 1e11)
    assert fab.collective("all_gather", 1024, 4) == C.ring_allgather(1024, 4, 1e11)


def test_sequence_parallel_on_the_command_line(run_cli):
    import os

    gpt2 = os.path.join(os.path.dirname(__file__), "..", "fixtures", "torch", "gpt2.onnx")
    import json

    runs = [run_cli(gpt2, "--hw", "a100", "--devices", "1,2", "--parallel", "tensor", *sp,
                    "--format", "json") for sp in ((), ("--sequence-parallel",))]
    assert all(r.exit_code == 0 for r in runs), runs[1].output
    plain, seq = (json.loads(r.stdout) for r in runs)
    assert seq["scaling_setup"]["sequence_parallel"] and not plain["scaling_setup"]["sequence_parallel"]
    # the layer norms between the pairs are split too: less compute per device at 2 devices
    assert seq["scaling"][1]["compute_s"] < plain["scaling"][1]["compute_s"]
    bad = run_cli(gpt2, "--hw", "a100", "--devices", "1,2", "--sequence-parallel")
    assert bad.exit_code == 2 and "--parallel tensor" in bad.output


def test_tensor_parallel_step_with_dropout_keeps_the_dropout_kernels():
    """With dropout the step's forward carries the dropout kernels (``dropout_forward_s``); a
    tensor-parallel device runs each at its node's share: on one device the whole step, and at
    t = 2 the split dropouts (the attention probabilities', heads split) at half."""
    from hardware_db import links

    from analyzer.training.step import dropout_forward_rows

    model = gpt_blocks(LAYERS, B, S, H, HEADS)
    kw = dict(link=links.make(100.0), algorithm="ring", parallel="tensor", train=True,
              optimizer="adam", clip_grad=None, zero_grad=False, megatron_step=False)
    r = analyzer.scale(model, "a100", [1, 2], dropout=0.1, **kw)
    plain = analyzer.scale(model, "a100", [1, 2], **kw)
    step = r.training.steps[0]
    assert step.dropout_forward_s > 0
    pts = {q.devices: q for q in r.scaling.points}
    assert pts[1].compute_s == pytest.approx(step.step_s, rel=1e-12)
    pred = r.predictions[0]
    rows = dropout_forward_rows(r, pred, pred.target.profile)
    assert sum(rows.values()) == pytest.approx(step.dropout_forward_s, rel=1e-12)
    plan = T.plan(r.nodes, 2, outputs=r.model["outputs"], params=r.totals.params)
    split = [i for i in rows if plan.factors[i] < 1]
    assert split and len(split) < len(rows)     # attention dropouts split, residual ones not
    drop_t2 = sum(s * plan.factors[i] for i, s in rows.items())
    assert drop_t2 < step.dropout_forward_s
    # dropout adds its forward kernels at their shares, its backward through the step's
    # backward (the ratio rows scaled to it), and nothing to the collectives
    grew = pts[2].compute_s - {q.devices: q for q in plain.scaling.points}[2].compute_s
    assert grew > drop_t2
    assert pts[2].communication_s == {q.devices: q for q in plain.scaling.points}[2].communication_s


def _with_batch_norm(model):
    """``model`` (``gpt_blocks`` on hidden states ``x`` [B, S, H]) with a BatchNormalization over
    its S channels first (no weight a tensor-parallel plan splits: replicated, factor 1)."""
    g = model.graph
    for name in ("bn.scale", "bn.bias", "bn.mean", "bn.var"):
        g.initializer.append(onnx.numpy_helper.from_array(weight(S), name))
    for n in g.node:
        n.input[:] = ["x_bn" if i == "x" else i for i in n.input]
    g.node.insert(0, helper.make_node("BatchNormalization", ["x", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                                      ["x_bn"], name="/bn/BatchNormalization"))
    return model


def test_tensor_parallel_step_runs_the_training_forward():
    """A tensor-parallel device runs the training step's forward (its BatchNorm in training mode:
    rule bn-train's counter, statistics and running-statistics launches beside the transform),
    as the one-device step does: per device ``step - (split forward + backward bodies) x (1 -
    1/t) - the update's saved part``, with the forward rows those of ``forward_prediction``."""
    from hardware_db import links

    from analyzer.training.step import forward_prediction

    model = _with_batch_norm(gpt_blocks(LAYERS, B, S, H, HEADS))
    r = analyzer.scale(model, "h200-sxm", [1, 2], link=links.make(100.0), algorithm="ring",
                       parallel="tensor", train=True, optimizer="adam", clip_grad=None,
                       zero_grad=False, megatron_step=False, runtime="eager-kernel", precision="bf16")
    step, pred = r.training.steps[0], r.predictions[0]
    fp = forward_prediction(r, pred)
    assert step.bn_train == 1 and fp.launches - pred.launches == 3   # counter, statistics, running
    assert fp.latency_s > pred.latency_s
    pts = {q.devices: q for q in r.scaling.points}
    assert pts[1].compute_s == pytest.approx(step.step_s, rel=1e-12)
    plan = T.plan(r.nodes, 2, outputs=r.model["outputs"], params=r.totals.params)
    bn = next(i for i, n in enumerate(r.nodes) if n.op == "BatchNormalization")
    assert plan.factors[bn] == 1.0
    fwd_split = sum((x.time_s - x.overhead_s) for x in fp.nodes if plan.factors[x.index] < 1)
    rows = backward_rows(r, pred)
    k = step.backward_s / sum(body + launches for _, body, launches in rows)
    bwd_split = k * sum(body for i, body, _ in rows if plan.factors[i] < 1)
    opt_saved = step.optimizer_s - optimizer_time(pred.target.profile, plan.params_per_device, "adam",
                                                  pred.overlap)
    want = step.step_s - (fwd_split + bwd_split) * (1 - 1 / 2) - opt_saved
    assert pts[2].compute_s == pytest.approx(want, rel=1e-12)


def test_hybrid_and_data_parallel_rows_run_the_training_forward():
    """Megatron's hybrid step (``hybrid.node_times``) and data parallel's per-layer rows
    (``data_parallel.layers``) sum to the step's forward: the training forward's rows (its
    BatchNorm's bn-train launches), not the inference prediction's."""
    from analyzer.scaling import data_parallel as DP
    from analyzer.scaling import hybrid as HG
    from analyzer.training.step import forward_prediction

    model = _with_batch_norm(gpt_blocks(LAYERS, B, S, H, HEADS))
    r = analyzer.analyze(model, hw="h200-sxm", runtime="eager-kernel", precision="bf16", train=True,
                         optimizer="none")
    step, pred = r.training.steps[0], r.predictions[0]
    fp = forward_prediction(r, pred)
    assert step.forward_s == fp.latency_s > pred.latency_s      # (no dropout placed)
    fwd, bwd = HG.node_times(r, pred, True)
    assert sum(fwd) == pytest.approx(step.forward_s, rel=1e-12)
    assert sum(bwd) == pytest.approx(step.backward_s, rel=1e-12)
    assert sum(DP.layers(r, pred).fwd) == pytest.approx(fp.latency_s, rel=1e-12)
    assert sum(HG.node_times(r, pred, False)[0]) == pytest.approx(pred.latency_s, rel=1e-12)
