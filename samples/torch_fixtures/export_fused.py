#!/usr/bin/env python3
"""PyTorch-exported transformers in which onnxruntime's transformer optimizer fuses attention.

How to run (from the repository root; no GPU, no network, no torchvision)::

    python3.11 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.13.0 transformers onnx==1.23.2 onnxruntime \
        onnxscript sympy
    /tmp/torchvenv/bin/python samples/torch_fixtures/export_fused.py --out tests/fixtures/torch

It writes tests/fixtures/torch/bert_fused*.onnx and reference_fused.json (the existing
export.py writes the other files of that folder and reference.json; this script imports its
helpers: graph statistics, FlopCounterMode, save_fixture, the calibration reader).  CI never
runs it; torch and transformers are NOT dependencies of opcost.  The committed files were made
with python 3.11, torch 2.13.0+cpu, transformers 5.23.0, onnx 1.23.2, onnxruntime 1.32.0,
onnxscript 0.7.2 (recorded in reference_fused.json).

What fuses (onnxruntime 1.32.0, transformers 5.23.0, TorchScript exporter, see "survey" in
reference_fused.json, which this script re-measures on every run)
--------------------------------------------------------------------------------------------
* BertModel, attn_implementation="eager", exported WITH an attention_mask input and WITH
  dynamic batch / sequence axes: the optimizer (model_type="bert") makes
  EmbedLayerNormalization, 2 x Attention, 4 x SkipLayerNormalization, 2 x BiasGelu.
  Why the dynamic axes matter: FusionAttention recognises the transformers-5 eager mask
  (Where <- Expand <- And <- Reshape <- Reshape <- Gather <- Flatten <- attention_mask).  With
  fixed shapes, onnxruntime's basic graph optimizations (which the optimizer runs first) drop
  the Expand and merge the two Reshapes, and the match fails: no Attention (the old
  bert_opt.onnx).  attn_implementation="sdpa" or no attention_mask input never fuse attention.
* GPT2Model (eager or sdpa, static or dynamic axes): never.  The gpt2 model type's
  FusionGptAttentionNoPast expects the transformers-4 GPT-2 subgraph (a Slice of the causal
  ``bias`` buffer, Div by sqrt(head_dim), Where); transformers 5 emits MatMul -> Mul(scale) ->
  Add(mask) -> Softmax over Q/K/V split from one c_attn Gemm, which no fusion matches.
  Exporting without attention_mask fails (aten::diff from masking_utils' packed-sequence check).
* LlamaModel (eager or sdpa, 4 or 2 KV heads, model_type "gpt2" or "bert"): only
  SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization; no RotaryEmbedding,
  MultiHeadAttention or GroupQueryAttention.
* Caution found on the way (not used for a fixture): BertModel(is_decoder=True) fuses into
  Attention nodes WITHOUT unidirectional=1 (the causal part of the mask is dropped), so a
  "GPT-style" BERT decoder would fuse, but to a different (bidirectional) computation.

Fixtures (all from the one BERT export, with token_type_ids as a third input; after fusion the
symbolic dims "batch" and "seq" are fixed to 1 and 16 with onnxruntime's make_dim_param_fixed)
---------------------------------------------------------------------------------------------
* bert_fused.onnx: optimize_model(model_type="bert", num_heads=4, hidden_size=64).
* bert_fused_int4.onnx: MatMulNBitsQuantizer(block_size=32, bits=4, is_symmetric=False) of it:
  the six plain MatMuls become MatMulNBits; the concatenated QKV weight stays float inside
  Attention.
* bert_fused_qdq.onnx: quantize_static(QuantFormat.QDQ, S8/S8) with 4 random batches.
* bert_fused_qop.onnx: quantize_static(QuantFormat.QOperator, U8 activations / S8 weights).
* bert_fused_qdyn.onnx: quantize_dynamic (S8 weights): QAttention + MatMulInteger.
* bert_dynamic.onnx: the same model exported the way transformers users do (input_ids and
  attention_mask only, dynamic "batch"/"seq"), not optimized and not fixed: the analyzer must
  bind --dim through the embeddings' Expand/Where and the mask's Range shape chains.
* bert_dynamo.onnx: the same model through torch's dynamo exporter (torch.onnx.export
  dynamo=True, the default since torch 2.9), dynamic "batch"/"seq".
Each is saved like export.py does: initializers above 1 KB external, the .data file deleted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np
import onnx
import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export as base  # the sibling script's helpers

SEED = 0
OPSET = 17
BATCH, SEQ = 1, 16
VOCAB = 1000
DYN_AXES_NAMES = {0: "batch", 1: "seq"}

BERT_CFG = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=256,
    vocab_size=VOCAB,
    max_position_embeddings=64,
)
GPT2_CFG = dict(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=64)
LLAMA_CFG = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    vocab_size=VOCAB,
    max_position_embeddings=64,
)


class Wrapper(torch.nn.Module):
    """Keyword call, tuple output (the tracer passes positional args); adds no parameters."""

    def __init__(self, model: torch.nn.Module, with_mask: bool, use_cache_kw: bool):
        super().__init__()
        self.model = model
        self.with_mask = with_mask
        self.use_cache_kw = use_cache_kw

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        kw = {"input_ids": input_ids, "return_dict": True}
        if token_type_ids is not None:
            kw["token_type_ids"] = token_type_ids
        if self.use_cache_kw:
            kw["use_cache"] = False
        if self.with_mask:
            kw["attention_mask"] = attention_mask
        return (self.model(**kw).last_hidden_state,)


def distinct_params(model: torch.nn.Module) -> torch.nn.Module:
    """Redraw every parameter from N(0, 0.02) so that no two tensors are equal.

    The TorchScript exporter de-duplicates initializers with equal values (transformers' init
    makes every bias zero and every LayerNorm weight one); after the optimizer the shared
    tensor is read directly, so the file would hold fewer elements than the model (1024 fewer
    for this BERT).  With distinct values the file's float initializers are exactly the
    model's parameters (the optimizer concatenates Q, K, V weights and biases: same count).
    """
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return model


def build(kind: str, attn: str, kv_heads: int | None = None):
    torch.manual_seed(SEED)
    if kind == "bert":
        cfg = transformers.BertConfig(**BERT_CFG, attn_implementation=attn)
        return distinct_params(transformers.BertModel(cfg, add_pooling_layer=False)), cfg, False
    if kind == "gpt2":
        cfg = transformers.GPT2Config(**GPT2_CFG, attn_implementation=attn)
        return transformers.GPT2Model(cfg), cfg, True
    cfg = transformers.LlamaConfig(
        **LLAMA_CFG, num_key_value_heads=kv_heads or 4, attn_implementation=attn
    )
    return transformers.LlamaModel(cfg), cfg, True


def inputs(with_mask: bool, token_types: bool = False) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(SEED)
    d = {"input_ids": torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.int64, generator=g)}
    if with_mask:
        d["attention_mask"] = torch.ones(BATCH, SEQ, dtype=torch.int64)
    if token_types:
        d["token_type_ids"] = torch.zeros(BATCH, SEQ, dtype=torch.int64)
    return d


class CalibReader(base.RandomCalibReader):
    """export.py's reader; token_type_ids (int64) are zeros, not standard normal floats."""

    def __init__(self, np_inputs: dict):
        super().__init__({k: v for k, v in np_inputs.items() if k != "token_type_ids"}, VOCAB)
        for k, v in np_inputs.items():
            if k == "token_type_ids":
                for b in self.batches:
                    b[k] = np.zeros(v.shape, dtype=np.int64)
                self.description += "; token_type_ids all zeros"
        self._it = iter(self.batches)


def export(model, with_mask, use_cache_kw, dynamic, path: Path, token_types: bool = False):
    w = Wrapper(model, with_mask, use_cache_kw).eval()
    feeds = inputs(with_mask, token_types)
    names = list(feeds)
    kwargs = dict(
        dynamo=False,
        opset_version=OPSET,
        input_names=names,
        output_names=["last_hidden_state"],
        do_constant_folding=True,
    )
    if dynamic:
        kwargs["dynamic_axes"] = {n: dict(DYN_AXES_NAMES) for n in names + ["last_hidden_state"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(w, tuple(feeds[k] for k in names), str(path), **kwargs)
    return w, feeds, {k: v for k, v in kwargs.items() if k != "input_names"}


def optimize(path: Path, model_type: str, num_heads: int, hidden: int):
    from onnxruntime.transformers.optimizer import optimize_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = optimize_model(str(path), model_type=model_type, num_heads=num_heads, hidden_size=hidden)
    stats = {k: v for k, v in m.get_fused_operator_statistics().items() if v}
    ms = sorted({n.op_type for n in m.model.graph.node if n.domain == "com.microsoft"})
    return m.model, stats, ms


ATTENTION_OPS = {"Attention", "MultiHeadAttention", "GroupQueryAttention", "PackedAttention"}


def survey(tmp: Path) -> list[dict]:
    """Which export settings let the optimizer fuse attention (re-measured on each run)."""
    grid = []
    for attn in ("eager", "sdpa"):
        for dyn in (False, True):
            grid.append(("bert", attn, True, dyn, None, "bert"))
            grid.append(("bert", attn, False, dyn, None, "bert"))
            grid.append(("gpt2", attn, True, dyn, None, "gpt2"))
    grid.append(("gpt2", "eager", False, True, None, "gpt2"))
    for attn in ("eager", "sdpa"):
        for kvh in (4, 2):
            grid.append(("llama", attn, True, True, kvh, "gpt2"))
    grid.append(("bert_is_decoder", "eager", True, True, None, "bert"))
    rows = []
    for kind, attn, with_mask, dyn, kvh, mtype in grid:
        row = {"model": kind, "attn_implementation": attn, "attention_mask_input": with_mask,
               "dynamic_axes": dyn, "optimizer_model_type": mtype}
        if kvh is not None:
            row["num_key_value_heads"] = kvh
        p = tmp / "survey.onnx"
        try:
            if kind == "bert_is_decoder":
                torch.manual_seed(SEED)
                cfg = transformers.BertConfig(**BERT_CFG, is_decoder=True, attn_implementation=attn)
                model, use_cache_kw = transformers.BertModel(cfg, add_pooling_layer=False), True
            else:
                model, cfg, use_cache_kw = build(kind, attn, kvh)
            export(model.eval(), with_mask, use_cache_kw, dyn, p)
            m, stats, ms = optimize(p, mtype, 4, 64)
            row["fused_operator_statistics"] = stats
            row["attention_fused"] = bool(ATTENTION_OPS & set(ms))
            if kind == "bert_is_decoder":
                row["attention_unidirectional"] = sorted(
                    {a.i for n in m.graph.node if n.op_type == "Attention"
                     for a in n.attribute if a.name == "unidirectional"} or {0})
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        print(f"  survey {row}", flush=True)
        rows.append(row)
    return rows


def variants(fused_path: Path, np_inputs: dict, tmp: Path) -> dict:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    def int4():
        q = MatMulNBitsQuantizer(onnx.load(str(fused_path)), block_size=32, is_symmetric=False,
                                 bits=4)
        q.process()
        return q.model.model

    # onnx shape inference gives no type to a com.microsoft op's outputs: quantize_dynamic then
    # refuses the graph unless told the default tensor type (quant_pre_process's symbolic
    # shape inference stops on the symbolic dims: "Incomplete symbolic shape inference").
    untyped = {"DefaultTensorType": onnx.TensorProto.FLOAT}

    def static(fmt, act):
        def make():
            out = tmp / f"static_{fmt}.onnx"
            quantize_static(str(fused_path), str(out), CalibReader(np_inputs),
                            extra_options=untyped,
                            quant_format=fmt, activation_type=act, weight_type=QuantType.QInt8)
            return onnx.load(str(out))
        return make

    def qdyn():
        out = tmp / "qdyn.onnx"
        quantize_dynamic(str(fused_path), str(out), extra_options=untyped)
        return onnx.load(str(out))

    calib = CalibReader(np_inputs).description
    return {
        "bert_fused_int4": (int4, {
            "tool": "onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer",
            "args": {"block_size": 32, "bits": 4, "is_symmetric": False}}),
        "bert_fused_qdq": (static(QuantFormat.QDQ, QuantType.QInt8), {
            "tool": "onnxruntime.quantization.quantize_static",
            "args": {"quant_format": "QDQ", "activation_type": "QInt8", "weight_type": "QInt8"},
            "calibration": calib}),
        "bert_fused_qop": (static(QuantFormat.QOperator, QuantType.QUInt8), {
            "tool": "onnxruntime.quantization.quantize_static",
            "args": {"quant_format": "QOperator", "activation_type": "QUInt8",
                     "weight_type": "QInt8"},
            "calibration": calib,
            "extra_options": {"DefaultTensorType": "FLOAT"}}),
        "bert_fused_qdyn": (qdyn, {
            "tool": "onnxruntime.quantization.quantize_dynamic",
            "args": {"weight_type": "QInt8 (default)"},
            "extra_options": {"DefaultTensorType": "FLOAT"}}),
    }


def contrib_ops(model: onnx.ModelProto) -> dict:
    out: dict = {}
    for n in model.graph.node:
        if n.domain == "com.microsoft":
            out[n.op_type] = out.get(n.op_type, 0) + 1
    return dict(sorted(out.items()))


def nbits_weight_elements(model: onnx.ModelProto) -> dict:
    """MatMulNBits weights as K x N elements (the packed uint8 tensor holds K*N/2 bytes)."""
    kn = packed = 0
    for n in model.graph.node:
        if n.op_type == "MatMulNBits":
            a = {x.name: x.i for x in n.attribute}
            kn += a["K"] * a["N"]
            t = next(t for t in model.graph.initializer if t.name == n.input[1])
            packed += base._numel(t.dims)
    return {"unpacked_KxN": kn, "packed_uint8_elements": packed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/torch")
    ap.add_argument("--no-survey", action="store_true", help="skip the fusion survey")
    a = ap.parse_args(argv)
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    ver = base.versions()
    ver.pop("torchvision", None)
    fixtures: dict = {}
    ref_path = out_dir / "reference_fused.json"
    old = json.loads(ref_path.read_text()) if ref_path.exists() else {}

    with tempfile.TemporaryDirectory(prefix="opcost_torch_fused_") as td:
        tmp = Path(td)
        rows = old.get("survey", []) if a.no_survey else survey(tmp)

        model, _cfg, use_cache_kw = build("bert", "eager")
        model.eval()
        fp32 = tmp / "bert_dyn.onnx"
        wrapper, feeds, export_kwargs = export(model, True, use_cache_kw, True, fp32,
                                               token_types=True)
        args = tuple(feeds.values())
        np_inputs = {k: v.numpy() for k, v in feeds.items()}
        with torch.no_grad():
            ref_out = wrapper(*args)
        src = {
            "source": {"library": "transformers", "class": "BertModel",
                       "config": {**BERT_CFG, "attn_implementation": "eager"},
                       "add_pooling_layer": False},
            "inputs": [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)[6:]}
                       for k, v in feeds.items()],
            "input_values": "input_ids: torch.randint(0, vocab) with Generator seed 0; "
                            "attention_mask: all ones; token_type_ids: all zeros",
            "dims": {"batch": BATCH, "seq": SEQ},
            "exporter": base.EXPORTER,
            "export_kwargs": {**export_kwargs, "dynamic_axes": "batch, seq on every input and the output"},
            **base.torch_counts(wrapper),
            "torch_flop_counter": base.flop_count(wrapper, args),
            "unfused_export": {k: v for k, v in base.onnx_graph_stats(onnx.load(str(fp32))).items()
                               if k in ("onnx_initializer_numel", "onnx_initializer_numel_with_aliases",
                                        "identity_aliased_initializers", "op_type_counts")},
        }

        # The same model as transformers users export it (no token_type_ids input), dynamic
        # axes, not optimized: opcost must bind --dim batch=1,seq=16 through its shape chains
        plain = tmp / "bert_dynamic.full.onnx"
        export(model, True, use_cache_kw, True, plain, token_types=False)
        pm = onnx.load(str(plain))
        e = {**src, "kind": "unfused export with dynamic axes 'batch', 'seq' (no token_type_ids)",
             "inputs": [i for i in src["inputs"] if i["name"] != "token_type_ids"]}
        e.pop("unfused_export", None)
        e.update(base.onnx_graph_stats(pm))
        e.update(base.save_fixture(pm, out_dir, "bert_dynamic"))
        fixtures["bert_dynamic.onnx"] = e

        # ... and with torch's dynamo exporter (the default of torch.onnx.export since 2.9)
        dyn = tmp / "bert_dynamo.full.onnx"
        w = Wrapper(model, True, use_cache_kw).eval()
        feeds2 = inputs(True)
        dim = {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq", max=BERT_CFG["max_position_embeddings"])}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(w, tuple(feeds2.values()), str(dyn), dynamo=True,
                              dynamic_shapes={k: dim for k in feeds2})
        dm = onnx.load(str(dyn))
        e = {**src, "kind": "dynamo export (torch.onnx.export(dynamo=True)), dynamic 'batch', 'seq'",
             "inputs": [i for i in src["inputs"] if i["name"] != "token_type_ids"],
             "exporter": f"torch.onnx.export(dynamo=True), torch {torch.__version__}"}
        e.pop("unfused_export", None)
        e.pop("export_kwargs", None)
        e.update(base.onnx_graph_stats(dm))
        e.update(base.save_fixture(dm, out_dir, "bert_dynamo"))
        fixtures["bert_dynamo.onnx"] = e

        fm, stats, _ = optimize(fp32, "bert", 4, 64)
        # Fusion needs the dynamic export (see the docstring); once fused, the symbolic dims are
        # fixed to the example's values with onnxruntime's own tool (onnxruntime.tools.
        # make_dynamic_shape_fixed), so the files analyse without --dim.
        from onnxruntime.tools.onnx_model_utils import make_dim_param_fixed

        for dim, value in (("batch", BATCH), ("seq", SEQ)):
            make_dim_param_fixed(fm.graph, dim, value)
        fused = tmp / "bert_fused.full.onnx"
        onnx.save(fm, str(fused))
        todo = {"bert_fused": (lambda: fm, {
            "tool": "onnxruntime.transformers.optimizer.optimize_model",
            "args": {"model_type": "bert", "num_heads": 4, "hidden_size": 64},
            "fused_operator_statistics": stats,
            "then": f"onnxruntime.tools.onnx_model_utils.make_dim_param_fixed: batch={BATCH}, "
                    f"seq={SEQ}"})}
        todo.update(variants(fused, np_inputs, tmp))
        for name, (make, recipe) in todo.items():
            e = {"kind": "fused" if name == "bert_fused" else "derived from bert_fused",
                 "recipe": recipe, **src}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = make()
                e["contrib_ops"] = contrib_ops(m)
                e.update(base.onnx_graph_stats(m))
                if name.endswith("int4"):
                    e["matmulnbits_weights"] = nbits_weight_elements(m)
                full = tmp / f"{name}.full.onnx"
                onnx.save(m, str(full))
                try:
                    e.update(base.ort_check(full, np_inputs, ref_out))
                except Exception as ex:  # noqa: BLE001
                    e["ort_run_error"] = f"{type(ex).__name__}: {ex}".strip()
                e.update(base.save_fixture(m, out_dir, name))
            except Exception as ex:  # noqa: BLE001
                e["error"] = f"{type(ex).__name__}: {ex}"
                e["traceback"] = traceback.format_exc(limit=5)
            print(f"  {name}: {e.get('error') or e.get('contrib_ops')}", flush=True)
            fixtures[f"{name}.onnx"] = e

    doc = {
        "generated_by": "samples/torch_fixtures/export_fused.py",
        "command": "/tmp/torchvenv/bin/python samples/torch_fixtures/export_fused.py "
                   "--out tests/fixtures/torch",
        "seed": SEED,
        "versions": ver,
        "external_data": {"size_threshold_bytes": base.EXTERNAL_THRESHOLD,
                          "note": "initializers above the threshold are data_location=EXTERNAL "
                                  "in <name>.onnx.data, which is deleted"},
        "survey": rows,
        "fixtures": fixtures,
    }
    ref_path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {ref_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
