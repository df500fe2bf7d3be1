#!/usr/bin/env python3
"""Regenerate the PyTorch-exported ONNX fixtures in tests/fixtures/torch/.

How to run (from the repository root)::

    python3.11 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.13.0 torchvision==0.28.0 transformers \
        onnx onnxscript onnxruntime
    /tmp/torchvenv/bin/python samples/torch_fixtures/export.py --out tests/fixtures/torch

CI never runs this script, and torch / torchvision / transformers are
deliberately NOT dependencies of opcost (keep them out of pyproject.toml).
The tests only read the committed .onnx files and reference.json.

Torchvision's wheel must be built for the same torch: on PyPI
torchvision 0.28.0 pins torch==2.13.0 and is a CUDA build, so a
``torch==2.13.0+cpu`` wheel next to it cannot load torchvision's ops;
install the plain (CUDA) ``torch==2.13.0`` from PyPI. No GPU is used. (Where
pip is configured with a local find-links folder that holds the +cpu wheel,
bypass it for that install: ``env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null
/tmp/torchvenv/bin/pip install torch==2.13.0 torchvision==0.28.0``.)
The committed fixtures were made with python 3.11, torch 2.13.0,
torchvision 0.28.0, transformers 5.23.0, onnx 1.23.2, onnxruntime 1.31.1,
onnxscript 0.7.2 (all recorded in reference.json). Re-running with those
versions reproduces every file byte for byte.

Quirks worth knowing (all recorded in reference.json)
------------------------------------------------------
* The TorchScript exporter de-duplicates initializers with identical values.
  Random init makes many of them identical (zero biases, LayerNorm ones/zeros,
  BN-folded conv biases), so the duplicates become ``Identity`` nodes reading
  one shared initializer: ``onnx_initializer_numel`` is then below the folded
  parameter count, and ``onnx_initializer_numel_with_aliases`` adds the
  Identity-aliased copies back (it equals ``torch_params`` for the
  transformers models and ``torch_params - BN(weight,bias) + BN channels``
  for the BN-folded CNNs).
* Static QOperator quantization of resnet18 fails on the raw export (a conv
  bias is an Identity output, not an initializer); the script then retries on
  ``quant_pre_process`` output and records both.

What it does
------------
* Builds each model with random init only (``torch.manual_seed(0)`` right
  before each model is built; no pretrained weights are ever downloaded),
  puts it in eval() mode and exports it with the TorchScript-based exporter
  (``torch.onnx.export(..., dynamo=False)``) at opset 17, batch 1, fixed shapes.
  Transformers models use ``attn_implementation="eager"`` so attention is a
  plain MatMul/Softmax/MatMul chain.
* For bert and gpt2, also writes onnxruntime transformer-optimizer output
  (``*_opt``), dynamic quantization (``*_qdyn``, QOperator) and static QDQ
  quantization (``*_qdq``); for resnet18 static QDQ and static QOperator
  (``resnet18_qdq``, ``resnet18_qop``). Those are made from the fp32 export.
* Every saved .onnx keeps initializers above 1 KB as EXTERNAL data
  (``<name>.onnx.data``) and the .data file is then DELETED: the committed
  .onnx holds the graph, small tensors, and the dims/dtype of big initializers
  (``data_location=EXTERNAL``) without their bytes. The analyzer must work
  without weight bytes.
* Writes reference.json with numbers computed independently of opcost:
  torch parameter / buffer counts, initializer / Constant element counts of
  the exported graph, and torch.utils.flop_counter.FlopCounterMode FLOPs.
  A step that fails is recorded as an "error" entry and the script goes on.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import traceback
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import torch
import transformers

try:
    import torchvision
except ImportError:  # export_fused.py imports this module's helpers without torchvision
    torchvision = None
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixture_io import EXTERNAL_THRESHOLD, save_fixture

OPSET = 17
SEED = 0
SEQ_LEN = 32
PAD_TOKENS = 4  # attention_mask example: last 4 positions are padding (0)
EXPORTER = "torch.onnx.export(dynamo=False) (TorchScript-based exporter)"

FLOAT_DTYPES = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BFLOAT16,
    onnx.TensorProto.DOUBLE,
}
for _n in ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT4E2M1"):
    if hasattr(onnx.TensorProto, _n):
        FLOAT_DTYPES.add(getattr(onnx.TensorProto, _n))


# --------------------------------------------------------------------------
# model definitions
# --------------------------------------------------------------------------


class TextWrapper(torch.nn.Module):
    """Calls a transformers model with keyword args and returns a tuple.

    Needed because the TorchScript tracer passes positional args and
    transformers 5 forward() wrappers reject that; the wrapper adds no
    parameters, so parameter counts equal the wrapped model's.
    """

    def __init__(self, model: torch.nn.Module, output_keys: list[str]):
        super().__init__()
        self.model = model
        self.output_keys = output_keys

    def forward(self, input_ids, attention_mask):
        out = self.model(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=False, return_dict=True
        )
        return tuple(out[k] for k in self.output_keys)


class VisionWrapper(torch.nn.Module):
    def __init__(self, model: torch.nn.Module, output_keys: list[str]):
        super().__init__()
        self.model = model
        self.output_keys = output_keys

    def forward(self, pixel_values):
        out = self.model(pixel_values=pixel_values, return_dict=True)
        return tuple(out[k] for k in self.output_keys)


def _text_inputs(vocab: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(SEED)
    input_ids = torch.randint(0, vocab, (1, SEQ_LEN), dtype=torch.int64, generator=g)
    attention_mask = torch.ones(1, SEQ_LEN, dtype=torch.int64)
    attention_mask[:, SEQ_LEN - PAD_TOKENS :] = 0
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def _image_input(size: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(SEED)
    return {"pixel_values": torch.randn(1, 3, size, size, generator=g)}


def build_bert():
    cfg_kw = dict(
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=512,
        vocab_size=1000,
        attn_implementation="eager",
    )
    cfg = transformers.BertConfig(**cfg_kw)
    torch.manual_seed(SEED)
    inner = transformers.BertModel(cfg)
    keys = ["last_hidden_state", "pooler_output"]
    src = {"library": "transformers", "class": "BertModel", "config": cfg_kw}
    return TextWrapper(inner, keys), inner, _text_inputs(1000), keys, src, cfg


def build_gpt2():
    cfg_kw = dict(
        n_embd=128,
        n_layer=2,
        n_head=2,
        vocab_size=1000,
        bos_token_id=999,
        eos_token_id=999,
        attn_implementation="eager",
    )
    cfg = transformers.GPT2Config(**cfg_kw)
    torch.manual_seed(SEED)
    inner = transformers.GPT2Model(cfg)
    keys = ["last_hidden_state"]
    src = {"library": "transformers", "class": "GPT2Model", "config": cfg_kw}
    return TextWrapper(inner, keys), inner, _text_inputs(1000), keys, src, cfg


def build_vit():
    cfg_kw = dict(
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=512,
        image_size=32,
        patch_size=8,
        attn_implementation="eager",
    )
    cfg = transformers.ViTConfig(**cfg_kw)
    torch.manual_seed(SEED)
    inner = transformers.ViTModel(cfg)
    keys = ["last_hidden_state", "pooler_output"]
    src = {"library": "transformers", "class": "ViTModel", "config": cfg_kw}
    return VisionWrapper(inner, keys), inner, _image_input(32), keys, src, cfg


def _tv(fn_name: str):
    def build():
        torch.manual_seed(SEED)
        model = getattr(torchvision.models, fn_name)(weights=None)
        src = {
            "library": "torchvision",
            "class": f"torchvision.models.{fn_name}",
            "config": {"weights": None},
        }
        return model, model, {"input": _image_input(224)["pixel_values"]}, ["logits"], src, None

    return build


MODELS = {
    "bert": build_bert,
    "gpt2": build_gpt2,
    "vit": build_vit,
    "resnet18": _tv("resnet18"),
    "mobilenet_v2": _tv("mobilenet_v2"),
    "efficientnet_b0": _tv("efficientnet_b0"),
    "convnext_tiny": _tv("convnext_tiny"),
}


# --------------------------------------------------------------------------
# independent reference numbers
# --------------------------------------------------------------------------


def _numel(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _dtype_name(dt: int) -> str:
    return onnx.TensorProto.DataType.Name(dt)


def _walk_graphs(graph: onnx.GraphProto):
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _walk_graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _walk_graphs(g)


def onnx_graph_stats(model: onnx.ModelProto) -> dict:
    """Element counts read from TensorProto dims only (works without weight bytes)."""
    g = model.graph
    init_total = init_float = 0
    by_dtype: Counter = Counter()
    for t in g.initializer:
        n = _numel(t.dims)
        init_total += n
        by_dtype[_dtype_name(t.data_type)] += n
        if t.data_type in FLOAT_DTYPES:
            init_float += n
    for st in g.sparse_initializer:  # none expected; counted as dense size
        n = _numel(st.dims)
        init_total += n
        by_dtype[_dtype_name(st.values.data_type) + "(sparse)"] += n

    const = {"float": 0, "int": 0, "other": 0}
    n_const = 0
    for node in g.node:
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
            continue
        n_const += 1
        for a in node.attribute:
            if a.name == "value":
                n, dt = _numel(a.t.dims), a.t.data_type
                if dt in FLOAT_DTYPES:
                    const["float"] += n
                elif dt == onnx.TensorProto.STRING or dt == onnx.TensorProto.BOOL:
                    const["other"] += n
                else:
                    const["int"] += n
            elif a.name == "value_float":
                const["float"] += 1
            elif a.name == "value_floats":
                const["float"] += len(a.floats)
            elif a.name == "value_int":
                const["int"] += 1
            elif a.name == "value_ints":
                const["int"] += len(a.ints)
            else:
                const["other"] += 1

    ops = Counter(
        (n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}") for n in g.node
    )
    n_subgraphs = sum(1 for _ in _walk_graphs(g)) - 1

    # The TorchScript exporter de-duplicates initializers with identical values
    # (e.g. the all-zero biases that random init + BN folding produce) and
    # re-creates the duplicates as Identity nodes reading the one initializer.
    init_numel = {t.name: _numel(t.dims) for t in g.initializer}
    alias_count = alias_numel = 0
    for node in g.node:
        if node.op_type == "Identity" and node.domain in ("", "ai.onnx"):
            if node.input and node.input[0] in init_numel:
                alias_count += 1
                alias_numel += init_numel[node.input[0]]

    def _vi(v):
        tt = v.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in tt.shape.dim]
        return {"name": v.name, "dtype": _dtype_name(tt.elem_type), "shape": shape}

    return {
        "ir_version": model.ir_version,
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "opset_import": {(o.domain or "ai.onnx"): o.version for o in model.opset_import},
        "graph_inputs": [_vi(v) for v in g.input],
        "graph_outputs": [_vi(v) for v in g.output],
        "num_nodes": len(g.node),
        "num_subgraphs": n_subgraphs,
        "op_type_counts": dict(sorted(ops.items())),
        "num_initializers": len(g.initializer),
        "onnx_initializer_numel": init_total,
        "onnx_float_initializer_numel": init_float,
        "onnx_initializer_numel_by_dtype": dict(sorted(by_dtype.items())),
        "identity_aliased_initializers": {"count": alias_count, "numel": alias_numel},
        "onnx_initializer_numel_with_aliases": init_total + alias_numel,
        "num_constant_nodes": n_const,
        "onnx_constant_node_numel": const,
    }


def torch_counts(model: torch.nn.Module) -> dict:
    buf_float = buf_other = 0
    for b in model.buffers():
        if b.is_floating_point():
            buf_float += b.numel()
        else:
            buf_other += b.numel()
    return {
        "torch_params": sum(p.numel() for p in model.parameters()),
        "torch_buffers": buf_float,
        "torch_buffers_nonfloat": buf_other,
    }


def flop_count(model: torch.nn.Module, args: tuple) -> dict:
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(*args)
    counts = counter.get_flop_counts()
    per_op = {str(op): int(v) for op, v in counts.get("Global", {}).items()}
    # Leaf-level breakdown: modules none of whose descendants is also listed.
    names = [k for k in counts if k != "Global"]
    leaves = {}
    for k in names:
        if not any(o != k and o.startswith(k + ".") for o in names):
            leaves[k] = {str(op): int(v) for op, v in counts[k].items()}
    return {
        "total": int(counter.get_total_flops()),
        "per_op": dict(sorted(per_op.items())),
        "per_leaf_module": leaves,
        "note": "FlopCounterMode counts only matmul/conv/sdpa-family aten ops "
        "(2 FLOPs per multiply-accumulate); elementwise, norm, softmax, pooling "
        "are not counted.",
    }


# --------------------------------------------------------------------------
# saving
# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# onnxruntime optimizer / quantization
# --------------------------------------------------------------------------


class RandomCalibReader:
    """A few fixed-seed random batches for static quantization calibration."""

    def __init__(self, inputs: dict[str, np.ndarray], vocab: int | None, n_batches: int = 4):
        rng = np.random.RandomState(SEED)
        self.batches = []
        for _ in range(n_batches):
            feed = {}
            for k, v in inputs.items():
                if k == "input_ids":
                    feed[k] = rng.randint(0, vocab, size=v.shape).astype(np.int64)
                elif k == "attention_mask":
                    feed[k] = np.ones(v.shape, dtype=np.int64)
                else:
                    feed[k] = rng.standard_normal(v.shape).astype(np.float32)
            self.batches.append(feed)
        self.description = (
            f"{n_batches} batches, numpy RandomState({SEED}); input_ids uniform in [0, vocab), "
            "attention_mask all ones, float inputs standard normal"
        )
        self._it = iter(self.batches)

    def get_next(self):
        return next(self._it, None)

    def rewind(self):
        self._it = iter(self.batches)


def derived_variants(name: str, fp32_path: Path, np_inputs: dict, cfg) -> dict:
    """Returns {variant_name: (make, recipe)}; make() -> (ModelProto, extra recipe info)."""
    from onnxruntime.quantization import (
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    variants = {}
    tmp = fp32_path.parent
    vocab = getattr(cfg, "vocab_size", None)

    if name in ("bert", "gpt2"):

        def opt():
            from onnxruntime.transformers.optimizer import optimize_model

            m = optimize_model(str(fp32_path), model_type=name, num_heads=2, hidden_size=128)
            stats = {k: v for k, v in m.get_fused_operator_statistics().items() if v}
            fused_attn = any("Attention" in k for k in stats)
            extra = {"fused_operator_statistics": stats, "attention_fused": fused_attn}
            if not fused_attn:
                extra["note_attention"] = (
                    "the optimizer did not recognise the attention subgraph of this "
                    "transformers version's eager attention, so attention stays as "
                    "MatMul/Softmax/MatMul"
                )
            return m.model, extra

        variants[f"{name}_opt"] = (
            opt,
            {
                "tool": "onnxruntime.transformers.optimizer.optimize_model",
                "args": {"model_type": name, "num_heads": 2, "hidden_size": 128},
                "note": "defaults otherwise (opt_level from MODEL_TYPES, use_gpu=False)",
            },
        )

        def qdyn():
            out = tmp / f"{name}_qdyn.onnx"
            quantize_dynamic(str(fp32_path), str(out))
            return onnx.load(str(out)), {}

        variants[f"{name}_qdyn"] = (
            qdyn,
            {
                "tool": "onnxruntime.quantization.quantize_dynamic",
                "args": {"weight_type": "QInt8 (default)", "per_channel": False},
                "format": "QOperator (MatMulInteger / DynamicQuantizeLinear ...)",
            },
        )

    static_formats = []
    if name in ("bert", "gpt2", "resnet18"):
        static_formats.append(("qdq", QuantFormat.QDQ))
    if name == "resnet18":
        static_formats.append(("qop", QuantFormat.QOperator))

    for suffix, fmt in static_formats:

        def qstatic(suffix=suffix, fmt=fmt):
            out = tmp / f"{name}_{suffix}.onnx"

            def go(src: Path):
                quantize_static(
                    str(src),
                    str(out),
                    RandomCalibReader(np_inputs, vocab),
                    quant_format=fmt,
                    activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8,
                )
                return onnx.load(str(out))

            try:
                return go(fp32_path), {"pre_processed": False}
            except Exception as e:  # noqa: BLE001
                # Retry on quant_pre_process output (symbolic shape inference +
                # onnxruntime basic graph optimizations, which removes the
                # exporter's Identity-aliased initializers).
                from onnxruntime.quantization.shape_inference import quant_pre_process

                first = f"{type(e).__name__}: {e}"
                pre = tmp / f"{name}_{suffix}.pre.onnx"
                quant_pre_process(str(fp32_path), str(pre))
                return go(pre), {
                    "pre_processed": True,
                    "pre_process": "onnxruntime.quantization.shape_inference.quant_pre_process "
                    "(defaults), applied only because quantizing the raw export failed",
                    "error_without_pre_process": first,
                }

        variants[f"{name}_{suffix}"] = (
            qstatic,
            {
                "tool": "onnxruntime.quantization.quantize_static",
                "args": {
                    "quant_format": str(fmt),
                    "activation_type": "QInt8",
                    "weight_type": "QInt8",
                    "per_channel": False,
                    "calibrate_method": "MinMax (default)",
                },
                "calibration": RandomCalibReader(np_inputs, vocab).description,
                "note": "quant_pre_process only as a fallback (see pre_processed)",
            },
        )
    return variants


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def versions() -> dict:
    import onnxscript

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": getattr(torchvision, "__version__", None),
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "onnxscript": onnxscript.__version__,
        "numpy": np.__version__,
    }


def _ort_session(path: Path, disable_opt: bool):
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 4
    if disable_opt:
        so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_check(path: Path, feeds: dict[str, np.ndarray], ref: tuple) -> dict:
    """Run the full-weight model in onnxruntime (CPU) and compare with torch."""
    info: dict = {}
    try:
        sess = _ort_session(path, disable_opt=False)
    except Exception as e:  # noqa: BLE001
        info["ort_load_error_default_opt_level"] = f"{type(e).__name__}: {e}".strip()
        sess = _ort_session(path, disable_opt=True)
        info["ort_graph_optimization_level"] = "ORT_DISABLE_ALL"
    names = {i.name for i in sess.get_inputs()}
    got = sess.run(None, {k: v for k, v in feeds.items() if k in names})
    ref_np = [r.numpy() for r in ref]
    diff = max(float(np.abs(r - g).max()) for r, g in zip(ref_np, got))
    scale = max(float(np.abs(r).max()) for r in ref_np)
    info["ort_vs_torch_max_abs_diff"] = diff
    info["torch_output_max_abs"] = scale
    return info


def process_model(name: str, out_dir: Path, tmp: Path, ver: dict) -> dict:
    entries = {}
    model, inner, inputs, output_names, source, cfg = MODELS[name]()
    model.eval()
    if cfg is not None:
        source["attn_implementation"] = inner.config._attn_implementation
        source["config_full"] = json.loads(cfg.to_json_string(use_diff=False))
    input_names = list(inputs)
    args = tuple(inputs[k] for k in input_names)
    np_inputs = {k: v.numpy() for k, v in inputs.items()}

    entry: dict = {
        "kind": "export",
        "source": source,
        "inputs": [
            {"name": k, "shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
            for k, v in inputs.items()
        ],
        "input_values": (
            "input_ids: torch.randint(0, vocab) with Generator seed 0; attention_mask: "
            f"ones with the last {PAD_TOKENS} positions 0"
            if "input_ids" in inputs
            else "torch.randn with Generator seed 0"
        ),
        "output_names": output_names,
        "opset_requested": OPSET,
        "exporter": EXPORTER,
        "export_kwargs": {"dynamo": False, "opset_version": OPSET, "do_constant_folding": True},
        "model_mode": "eval()",
        "versions": ver,
    }
    entry.update(torch_counts(model))
    try:
        entry["torch_flop_counter"] = flop_count(model, args)
    except Exception as e:  # noqa: BLE001
        entry["torch_flop_counter"] = {"error": f"{type(e).__name__}: {e}"}

    fp32_path = tmp / f"{name}.onnx"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                args,
                str(fp32_path),
                dynamo=False,
                opset_version=OPSET,
                input_names=input_names,
                output_names=output_names,
                do_constant_folding=True,
            )
        full = onnx.load(str(fp32_path))
        entry.update(onnx_graph_stats(full))
        with torch.no_grad():
            ref = model(*args)
        ref = ref if isinstance(ref, tuple) else (ref,)
        entry.update(ort_check(fp32_path, np_inputs, ref))
        entry.update(save_fixture(full, out_dir, name))
    except Exception as e:  # noqa: BLE001
        entry["error"] = f"{type(e).__name__}: {e}"
        entry["traceback"] = traceback.format_exc(limit=5)
        entries[f"{name}.onnx"] = entry
        return entries
    entries[f"{name}.onnx"] = entry

    for vname, (make, recipe) in derived_variants(name, fp32_path, np_inputs, cfg).items():
        ventry: dict = {
            "kind": "derived",
            "derived_from": f"{name}.onnx",
            "inputs": entry["inputs"],
            "recipe": recipe,
            "made_by_onnxruntime": onnxruntime.__version__,
            "versions": ver,
        }
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                vm, extra = make()
            ventry["recipe"].update(extra)
            ventry.update(onnx_graph_stats(vm))
            vpath = tmp / f"{vname}.full.onnx"
            onnx.save(vm, str(vpath))
            try:
                ventry.update(ort_check(vpath, np_inputs, ref))
            except Exception as e:  # noqa: BLE001
                ventry["ort_run_error"] = f"{type(e).__name__}: {e}".strip()
            ventry.update(save_fixture(vm, out_dir, vname))
        except Exception as e:  # noqa: BLE001
            ventry["error"] = f"{type(e).__name__}: {e}"
            ventry["traceback"] = traceback.format_exc(limit=5)
        entries[f"{vname}.onnx"] = ventry
    return entries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/torch", help="output directory")
    ap.add_argument(
        "--only", nargs="*", choices=sorted(MODELS), help="export only these (default: all)"
    )
    a = ap.parse_args(argv)
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)

    ver = versions()
    ref_path = out_dir / "reference.json"
    fixtures: dict = {}
    if a.only and ref_path.exists():
        fixtures = json.loads(ref_path.read_text()).get("fixtures", {})

    with tempfile.TemporaryDirectory(prefix="opcost_torch_fixtures_") as td:
        for name in a.only or list(MODELS):
            print(f"[export] {name}", flush=True)
            for fname, e in process_model(name, out_dir, Path(td), ver).items():
                fixtures[fname] = e
                status = (
                    "ERROR " + e["error"] if "error" in e else f"{e['onnx_file_bytes']} bytes"
                )
                print(f"  {fname}: {status}", flush=True)

    ref = {
        "generated_by": "samples/torch_fixtures/export.py",
        "seed": SEED,
        "exporter": EXPORTER,
        "versions": ver,
        "external_data": {
            "size_threshold_bytes": EXTERNAL_THRESHOLD,
            "note": "initializers above the threshold are stored as data_location=EXTERNAL "
            "in <name>.onnx.data, which is deleted (gitignored): only dims/dtype remain",
        },
        "fixtures": dict(sorted(fixtures.items())),
    }
    ref_path.write_text(json.dumps(ref, indent=1, sort_keys=False) + "\n")
    print(f"wrote {ref_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
