"""Held-out check: public 4-GPU Megatron-LM training steps (NeuSight's Table 8,
bench/data/megatron_public/) against ``analyzer.scale``'s data, tensor and pipeline parallel
steps. A check only: nothing is fitted, tuned or chosen on these rows (A100 and H100 alike).

Each row is set up from its published config (bench/data/megatron_public/README.md), by the
mapping written before any score was computed:

- graph: Megatron-LM's GPT (``megatron_gpt``): word + position embedding, pre-LN blocks
  (LayerNorm, QKV MatMul + bias, heads, Q K^T, causal mask as ``Where`` (Megatron's
  ``masked_fill`` in fp32; its fused scale-mask-softmax kernel runs only in fp16/bf16), Softmax,
  P V, heads back, out projection + bias, residual, LayerNorm, fc1 + bias, tanh GELU, fc2 + bias,
  residual), final LayerNorm, LM head tied to the word embedding (``Transpose(wte)``),
  ``SoftmaxCrossEntropyLoss`` (mean). The 1/sqrt(head dim) scale is ``baddbmm``'s alpha in
  Megatron (no kernel), so the graph has none. FFN = 4 x hidden. The vocabulary padded as
  Megatron pads it: up to a multiple of 128 x the tensor-parallel degree;
- ``analyzer.scale(graph, profile, [4], batch=B, train=True, optimizer="adamw", dropout=0.1,
  precision="fp32", runtime="eager", per_node=4, intra_link=nvlink3 | nvlink4)``, profiles
  ``a100-40gb-sxm`` / ``h100-sxm``; data: ``data_parallel="megatron"``, no overlap (one
  all-reduce of the whole gradient after backward, Megatron core_r0.5.0's default); tensor:
  no sequence parallelism; pipeline: one micro-batch, 1F1B, Megatron's even split; on all three
  Megatron's gradient passes and its own step kernels at their defaults (``megatron_step``:
  ``analyzer.training.megatron_step``, the buffer's divide, the main-grad adds with
  gradient-accumulation fusion, the fused bias-GELU and bias-dropout-add) and, under tensor
  parallel, the vocab-parallel cross entropy's three all-reduces, from Megatron-LM's and
  accelerate's source (docs/training.md);
- predicted: the 4-device row's ``step_s`` against the row's ``measured_ms`` (CUDA events around
  Megatron's ``train_step``: forward, backward, gradient sync, clipping, Adam).

Prints each row, then per parallelism and per GPU: MAPE = mean |pred / meas - 1| and bias =
mean (pred / meas - 1), NeuSight's published figures beside. ``--out FILE`` writes the markdown.

    PYTHONPATH=$PWD python bench/megatron_check.py [--out bench/results/megatron_check.md]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
DATA = os.path.join(HERE, "data", "megatron_public", "neusight_table8.csv")

# model -> (layers, hidden, heads, seq, vocab) of scripts/asplos/data/DLmodel_configs/*.json
MODELS = {"gpt2_large": (36, 1280, 20, 1024, 50257), "gpt3_xl": (24, 3072, 24, 2048, 50257)}
PROFILE = {"A100-SXM4-40GB": "a100-40gb-sxm", "H100-80GB-HBM3": "h100-sxm"}
NVLINK = {"A100-SXM4-40GB": "nvlink3", "H100-80GB-HBM3": "nvlink4"}
SETTINGS = dict(train=True, optimizer="adamw", dropout=0.1, precision="fp32", runtime="eager",
                per_node=4)
MODE = {"data": dict(parallel="data", data_parallel="megatron", overlap=False),
        "tensor": dict(parallel="tensor", sequence_parallel=False),
        "pipeline": dict(parallel="pipeline", microbatches=1, schedule="1f1b",
                         pipeline_split="even")}


def padded_vocab(vocab: int, tp: int) -> int:
    """Megatron-LM's padded vocabulary: up to a multiple of 128 x the tensor-parallel degree
    (``--make-vocab-size-divisible-by`` 128)."""
    m = 128 * tp
    return -(-vocab // m) * m


def params_closed_form(layers: int, hidden: int, seq: int, vocab: int) -> int:
    """Megatron GPT's parameters with tied embeddings: V h + S h (embeddings) + L (12 h^2 + 13 h)
    (LN 2h, QKV 3h^2 + 3h, out h^2 + h, LN 2h, fc1 4h^2 + 4h, fc2 4h^2 + h) + 2h (final LN)."""
    h = hidden
    return vocab * h + seq * h + layers * (12 * h * h + 13 * h) + 2 * h


def _stub(name: str, shape, dtype=TensorProto.FLOAT, itemsize: int = 4) -> onnx.TensorProto:
    """An initializer of ``shape`` whose bytes are external (never read: counts need shapes)."""
    t = TensorProto(name=name, data_type=dtype, dims=list(shape), data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "weights.bin"), ("offset", "0"),
                 ("length", str(int(np.prod(shape)) * itemsize))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


class _Builder:
    """Nodes and initializers of one graph, named as a torch export names them."""

    def __init__(self):
        self.nodes, self.inits = [], []

    def node(self, op, ins, name, n_out=1, **attrs):
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def weight(self, name, *shape):
        self.inits.append(_stub(name, shape))
        return name

    def const(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def dense(self, src, where, k, n):
        mm = self.node("MatMul", [src, self.weight(f"{where}.weight", k, n)], f"{where}/MatMul")
        return self.node("Add", [mm, self.weight(f"{where}.bias", n)], f"{where}/Add")

    def norm(self, src, where, h):
        return self.node("LayerNormalization", [src, self.weight(f"{where}.weight", h),
                                                self.weight(f"{where}.bias", h)],
                         f"{where}/LayerNormalization", axis=-1)


def _attention(b: _Builder, x, p: str, h: int, heads: int):
    """Pre-LN self-attention of block ``p``: the residual stream after it."""
    a = b.norm(x, f"{p}/ln_1", h)
    qkv = b.dense(a, f"{p}/attn/c_attn", h, 3 * h)
    q, k, v = b.node("Split", [qkv, "qkv_split"], f"{p}/attn/Split", n_out=3, axis=2)
    q, k, v = (b.node("Reshape", [t, "heads_shape"], f"{p}/attn/Reshape_{j}")
               for j, t in enumerate((q, k, v)))
    q = b.node("Transpose", [q], f"{p}/attn/Transpose_q", perm=[0, 2, 1, 3])
    k = b.node("Transpose", [k], f"{p}/attn/Transpose_k", perm=[0, 2, 3, 1])
    v = b.node("Transpose", [v], f"{p}/attn/Transpose_v", perm=[0, 2, 1, 3])
    s = b.node("MatMul", [q, k], f"{p}/attn/MatMul")
    s = b.node("Where", ["causal_mask", "mask_value", s], f"{p}/attn/Where")
    s = b.node("Softmax", [s], f"{p}/attn/Softmax", axis=-1)
    c = b.node("MatMul", [s, v], f"{p}/attn/MatMul_1")
    c = b.node("Transpose", [c], f"{p}/attn/Transpose_3", perm=[0, 2, 1, 3])
    c = b.node("Reshape", [c, "hidden_shape"], f"{p}/attn/Reshape_3")
    o = b.dense(c, f"{p}/attn/c_proj", h, h)
    return b.node("Add", [x, o], f"{p}/Add")


def _mlp(b: _Builder, x, p: str, h: int):
    """Pre-LN MLP of block ``p`` (fc1, tanh GELU, fc2): the residual stream after it."""
    m = b.norm(x, f"{p}/ln_2", h)
    m = b.dense(m, f"{p}/mlp/c_fc", h, 4 * h)
    m = b.node("Gelu", [m], f"{p}/mlp/act/Gelu", approximate="tanh")
    m = b.dense(m, f"{p}/mlp/c_proj", 4 * h, h)
    return b.node("Add", [x, m], f"{p}/Add_1")


def megatron_gpt(layers: int, hidden: int, heads: int, seq: int, vocab: int, batch: int):
    """Megatron-LM's GPT training graph (module docstring) at global batch ``batch``: inputs
    ``input_ids``, ``position_ids``, ``labels`` (int64 ``[batch, seq]``) and the causal mask
    (bool ``[batch, 1, seq, seq]``: an input as Megatron's forward takes it, not a parameter;
    ``--batch`` sets every input's dim 0, so it carries the batch), output the mean loss.
    Weights are external-data stubs of their real shapes; the mask's fill value is the one
    other constant counted as a parameter (1 element)."""
    b, h = _Builder(), hidden
    b.const("heads_shape", np.array([batch, seq, heads, h // heads], np.int64))
    b.const("hidden_shape", np.array([batch, seq, h], np.int64))
    b.const("qkv_split", np.array([h, h, h], np.int64))
    b.const("logits_shape", np.array([-1, vocab], np.int64))
    b.const("labels_shape", np.array([-1], np.int64))
    b.const("mask_value", np.array(-10000.0, np.float32))
    words = b.node("Gather", [b.weight("wte.weight", vocab, h), "input_ids"], "/wte/Gather")
    pos = b.node("Gather", [b.weight("wpe.weight", seq, h), "position_ids"], "/wpe/Gather")
    x = b.node("Add", [words, pos], "/Add")
    for i in range(layers):
        x = _mlp(b, _attention(b, x, f"/h.{i}", h, heads), f"/h.{i}", h)
    x = b.norm(x, "/ln_f", h)
    b.nodes.append(helper.make_node("Transpose", ["wte.weight"], ["lm_head.weight"],
                                    name="tie/Transpose", perm=[1, 0]))
    logits = b.node("MatMul", [x, "lm_head.weight"], "/lm_head/MatMul")
    logits = b.node("Reshape", [logits, "logits_shape"], "/loss/Reshape")
    labels = b.node("Reshape", ["labels", "labels_shape"], "/loss/Reshape_1")
    loss = b.node("SoftmaxCrossEntropyLoss", [logits, labels], "/loss/SoftmaxCrossEntropyLoss",
                  reduction="mean")
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, [batch, seq])
           for n in ("input_ids", "position_ids", "labels")]
    ids.append(helper.make_tensor_value_info("causal_mask", TensorProto.BOOL, [batch, 1, seq, seq]))
    out = [helper.make_tensor_value_info(loss, TensorProto.FLOAT, [])]
    g = helper.make_graph(b.nodes, "megatron_gpt", ids, out, initializer=b.inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


def load(path: str = DATA) -> list[dict]:
    """The published rows (bench/data/megatron_public/neusight_table8.csv), numbers as floats."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("seq", "global_batch", "degree", "microbatches"):
            r[k] = int(r[k])
        for k in ("measured_ms", "table_ms", "neusight_ms", "neusight_err_pct"):
            r[k] = float(r[k])
    return rows


def structure(model: str, vocab: int) -> dict:
    """The graph's structural checks (no time): parameters against the closed form (+1: the
    mask's fill value) and, at the tensor-parallel degree 4, the column/row pairs found."""
    import analyzer

    layers, hidden, heads, seq, _ = MODELS[model]
    g = megatron_gpt(layers, hidden, heads, seq, vocab, 4)
    params = analyzer.analyze(g).totals.params
    return {"params": params, "closed_form": params_closed_form(layers, hidden, seq, vocab) + 1,
            "layers": layers}


def predict(row: dict, graph=None) -> tuple[float, dict]:
    """(predicted step in ms, the 4-device scaling point's parts) of one published row."""
    import analyzer

    layers, hidden, heads, seq, vocab = MODELS[row["model"]]
    tp = row["degree"] if row["parallel"] == "tensor" else 1
    g = graph or megatron_gpt(layers, hidden, heads, seq, padded_vocab(vocab, tp), row["global_batch"])
    r = analyzer.scale(g, PROFILE[row["gpu"]], [row["degree"]], batch=row["global_batch"],
                       intra_link=NVLINK[row["gpu"]], **SETTINGS, **MODE[row["parallel"]])
    point = [p for p in r.scaling.points if p.devices == row["degree"]][0]
    parts = {"compute_ms": point.compute_s * 1e3,
             "exposed_comm_ms": point.exposed_communication_s * 1e3,
             "bubble_ms": point.bubble_s * 1e3}
    plans = r.scaling.setup.get("tensor_plans") or []
    if plans:
        parts["pairs"] = plans[0].get("pairs")
    return point.step_s * 1e3, parts


def score(errs: list[float]) -> tuple[float, float]:
    """(MAPE, bias) of relative errors pred / meas - 1."""
    return sum(abs(e) for e in errs) / len(errs), sum(errs) / len(errs)


def _groups(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    """The rows by parallelism, by GPU, and all together."""
    out = [(p, [r for r in rows if r["parallel"] == p]) for p in ("data", "tensor", "pipeline")]
    out += [(g, [r for r in rows if r["gpu"] == g]) for g in PROFILE]
    return out + [("all", rows)]


def ratios(rows: list[dict]) -> list[str]:
    """H100 / A100 step ratio, measured and predicted, where a row has both GPUs."""
    out = []
    for r in rows:
        if r["gpu"] != "H100-80GB-HBM3":
            continue
        a = [x for x in rows if x["gpu"] == "A100-SXM4-40GB" and
             (x["model"], x["global_batch"], x["parallel"]) == (r["model"], r["global_batch"], r["parallel"])]
        if a:
            out.append(f"{r['model']} B={r['global_batch']} {r['parallel']}: measured "
                       f"{r['measured_ms'] / a[0]['measured_ms']:.3f}, opcost {r['pred_ms'] / a[0]['pred_ms']:.3f}")
    return out


HEADER = [
    "# 4-GPU Megatron-LM training steps, NeuSight's Table 8 (held out, check only)", "",
    "`PYTHONPATH=$PWD python bench/megatron_check.py --out bench/results/megatron_check.md` "
    "(about 20 s). Data and setup: bench/data/megatron_public/README.md; the row mapping: the "
    "script's docstring. Time: CUDA events around Megatron-LM's train_step (forward, backward, "
    "gradient sync, clipping, Adam), fp32, mean of the 10 fastest of 50; predicted: "
    "`analyzer.scale`'s 4-device `step_s`. Nothing is fitted, tuned or chosen on these rows; the "
    "H100 rows are held out like the A100 rows. NeuSight's own predictions of the same rows "
    "(as published) beside.", ""]


def report(rows: list[dict], checks: list[str]) -> list[str]:
    """The markdown lines: structure checks, each row, then MAPE and bias per group beside
    NeuSight's published predictions of the same rows."""
    lines = ["Structure (no time): " + "; ".join(checks), "",
             "| model | B | GPU | parallel | measured ms | opcost ms | error | compute ms | "
             "exposed comm ms | bubble ms | NeuSight ms (published) |",
             "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        p = r["parts"]
        lines.append(f"| {r['model']} | {r['global_batch']} | {r['gpu']} | {r['parallel']} | "
                     f"{r['measured_ms']:.1f} | {r['pred_ms']:.1f} | {r['err']:+.1%} | "
                     f"{p['compute_ms']:.1f} | {p['exposed_comm_ms']:.1f} | {p['bubble_ms']:.1f} | "
                     f"{r['neusight_ms']:.1f} |")
    lines += ["", "| rows | n | opcost MAPE | opcost bias | NeuSight MAPE | NeuSight bias | "
              "acceptance (MAPE <= 12 %, abs(bias) <= 8 %) |", "|---|---:|---:|---:|---:|---:|---|"]
    for name, grp in _groups(rows):
        m, b = score([r["err"] for r in grp])
        nm, nb = score([r["neusight_ms"] / r["measured_ms"] - 1 for r in grp])
        ok = "" if name not in ("data", "tensor", "pipeline") else (
            "met" if m <= 0.12 and abs(b) <= 0.08 else "not met")
        lines.append(f"| {name} | {len(grp)} | {m:.1%} | {b:+.1%} | {nm:.1%} | {nb:+.1%} | {ok} |")
    return lines + ["", "H100 / A100 step ratio: " + "; ".join(ratios(rows))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the markdown table here too")
    a = ap.parse_args(argv)
    checks = []
    for model, (*_dims, vocab) in MODELS.items():
        s = structure(model, padded_vocab(vocab, 1))
        checks.append(f"{model}: {s['params']:,} parameters, closed form + 1 {s['closed_form']:,}")
        if s["params"] != s["closed_form"]:
            raise SystemExit(f"{model}: parameter count {s['params']} != {s['closed_form']}")
    rows = load()
    for r in rows:
        r["pred_ms"], r["parts"] = predict(r)
        r["err"] = r["pred_ms"] / r["measured_ms"] - 1
        if r["parallel"] == "tensor" and r["parts"].get("pairs") != 2 * MODELS[r["model"]][0]:
            raise SystemExit(f"{r['model']}: tensor plan found {r['parts'].get('pairs')} pairs")
    lines = report(rows, checks)
    print("\n".join(lines))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(HEADER + lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
