#!/usr/bin/env python3
"""Regenerate the onnxruntime-genai model-builder fixtures in tests/fixtures/genai/.

These are the graphs people actually run for LLMs: onnxruntime-genai's model builder
(``python -m onnxruntime_genai.models.builder``) turns a Hugging Face checkpoint into one
decoder ONNX file with com.microsoft fused ops (GroupQueryAttention with a KV cache,
SkipSimplifiedLayerNormalization, MatMulNBits for int4, RotaryEmbedding where the target
does not fuse RoPE into attention).

How to run (from the repository root)::

    python3.11 -m venv /tmp/genaivenv
    /tmp/genaivenv/bin/pip install onnxruntime-genai==0.18.0   # pulls onnxruntime 1.32.0
    # the builder also imports torch, transformers, onnx, onnx_ir, safetensors, tokenizers:
    /tmp/genaivenv/bin/pip install torch==2.13.0 transformers==5.23.0 onnx==1.23.2 onnx-ir
    # (the committed files were made with those packages taken from an existing torch venv:
    #  echo /tmp/torchvenv/lib/python3.11/site-packages \
    #       > /tmp/genaivenv/lib/python3.11/site-packages/zz_torchvenv.pth)
    HF_HUB_OFFLINE=1 /tmp/genaivenv/bin/python samples/genai_fixtures/make.py \
        --out tests/fixtures/genai

Re-running with the versions recorded in reference.json reproduces the three .onnx files byte
for byte (checked twice; the onnxruntime logits check of the int4 file is float output and is
the only number that could drift with another onnxruntime build).

CI never runs this script; onnxruntime-genai, torch and transformers are NOT opcost
dependencies. The tests only read the committed .onnx files and reference.json.

What it does
------------
1. Builds a tiny random-init ``LlamaForCausalLM`` (2 layers, hidden 64, 4 heads, 2 KV heads,
   head_dim 16, intermediate 128, vocab 256, max_position_embeddings 128, untied lm_head;
   ``torch.manual_seed(0)``) and ``save_pretrained``s it with a local 256-word WordLevel
   tokenizer into a temporary folder (the builder insists on loading a tokenizer; nothing is
   downloaded: HF_HUB_OFFLINE=1 and the folder path is passed with ``-i``).
2. Runs the builder three times on that folder, exactly::

       python -m onnxruntime_genai.models.builder -i <hf> -o <out> -p fp32 -e cpu  -c <cache>
       python -m onnxruntime_genai.models.builder -i <hf> -o <out> -p int4 -e cpu  -c <cache>
       python -m onnxruntime_genai.models.builder -i <hf> -o <out> -p int4 -e dml  -c <cache>

   (``--help`` of 0.18.0 crashes on a '%' in its help text; the options are read from
   builder.py's get_args.) The CPU targets pack Q/K/V into one projection and fuse RoPE into
   GroupQueryAttention (``do_rotary=1``, cos/sin caches as GQA inputs); the DML target keeps
   separate q/k/v MatMulNBits and emits com.microsoft RotaryEmbedding on Q and K (and so has
   a ``position_ids`` input). The DML file is only read, never run.
3. Re-saves each model.onnx as a fixture: initializers above 1 KB become external data,
   and the .data file is deleted (opcost never reads weight bytes).
4. Writes reference.json with numbers computed WITHOUT opcost: the HF parameter count,
   each file's initializer element counts by dtype (4-bit weights as packed uint8 elements
   and as unpacked K x N), the closed form of mac_flops for a prefill and a decode step
   (terms listed), torch FlopCounterMode of the HF forward for the prefill, and an
   onnxruntime run of the CPU files against the HF logits (max abs difference).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixture_io import save_fixture

SEED = 0
MAX_FIXTURE_BYTES = 256 * 1024
CONFIG = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
              tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
BUILDS = {  # fixture name -> (precision, execution provider)
    "llama_tiny_fp32_cpu": ("fp32", "cpu"),
    "llama_tiny_int4_cpu": ("int4", "cpu"),
    "llama_tiny_int4_dml": ("int4", "dml"),
}
PREFILL = dict(batch=1, seq=16, past=0)
DECODE = dict(batch=1, seq=1, past=15)


def make_hf(folder: Path) -> dict:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    cfg = LlamaConfig(**CONFIG)
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(cfg).eval()
    model.save_pretrained(folder)
    vocab = {f"t{i}": i for i in range(CONFIG["vocab_size"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="t3"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t3", bos_token="t1",
                            eos_token="t2", pad_token="t0").save_pretrained(folder)
    per_tensor = {n: p.numel() for n, p in model.named_parameters()}
    return {"model": model, "params": sum(per_tensor.values()), "per_tensor": per_tensor}


def run_builder(hf: Path, out: Path, cache: Path, precision: str, ep: str) -> list[str]:
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(hf), "-o", str(out),
           "-p", precision, "-e", ep, "-c", str(cache)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return ["python", "-m", "onnxruntime_genai.models.builder", "-i", "<hf folder>", "-o", "<out>",
            "-p", precision, "-e", ep, "-c", "<cache>"]


def _dims(vi) -> list:
    return [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]


def describe(model: onnx.ModelProto) -> dict:
    g = model.graph
    ops = Counter(f"{n.domain or 'ai.onnx'}::{n.op_type}" for n in g.node)
    by_dtype: Counter = Counter()
    for t in g.initializer:
        by_dtype[onnx.TensorProto.DataType.Name(t.data_type)] += int(np.prod(t.dims, dtype=np.int64))
    const_numel = Counter()
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    const_numel[onnx.TensorProto.DataType.Name(a.t.data_type)] += int(
                        np.prod(a.t.dims, dtype=np.int64))
    inits = {t.name: t for t in g.initializer}
    nbits = []
    for n in g.node:
        if n.op_type == "MatMulNBits":
            at = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            w, s = inits[n.input[1]], inits[n.input[2]]
            zp = inits.get(n.input[3]) if len(n.input) > 3 and n.input[3] else None
            nbits.append({"node": n.name, "K": at["K"], "N": at["N"], "bits": at["bits"],
                          "block_size": at["block_size"],
                          "packed_uint8_numel": int(np.prod(w.dims)),
                          "unpacked_numel": at["K"] * at["N"],
                          "scales_numel": int(np.prod(s.dims)),
                          "zero_points_numel": int(np.prod(zp.dims)) if zp is not None else 0})
    cos_sin = sum(int(np.prod(inits[k].dims)) for k in ("cos_cache", "sin_cache") if k in inits)
    return {
        "opset_import": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "producer": f"{model.producer_name} {model.producer_version}",
        "ops": dict(sorted(ops.items())),
        "inputs": {i.name: _dims(i) for i in g.input},
        "outputs": {o.name: _dims(o) for o in g.output},
        "initializer_numel_by_dtype": dict(sorted(by_dtype.items())),
        "initializer_numel": sum(by_dtype.values()),
        "constant_node_numel_by_dtype": dict(const_numel),
        "rotary_cos_sin_cache_numel": cos_sin,
        "matmulnbits": nbits,
        "matmulnbits_packed_uint8_numel": sum(x["packed_uint8_numel"] for x in nbits),
        "matmulnbits_unpacked_numel": sum(x["unpacked_numel"] for x in nbits),
        "matmulnbits_scales_numel": sum(x["scales_numel"] for x in nbits),
        "matmulnbits_zero_points_numel": sum(x["zero_points_numel"] for x in nbits),
    }


def closed_forms() -> dict:
    """mac_flops = 2 x multiply-accumulates, by hand from the HF config."""
    d, i_, v = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["vocab_size"]
    h, hkv, L = CONFIG["num_attention_heads"], CONFIG["num_key_value_heads"], CONFIG["num_hidden_layers"]
    hd = d // h
    per_token = {  # multiply-accumulates per token
        "q_proj": d * h * hd, "k_proj": d * hkv * hd, "v_proj": d * hkv * hd, "o_proj": h * hd * d,
        "gate_proj": d * i_, "up_proj": d * i_, "down_proj": i_ * d,
    }
    layer_macs = sum(per_token.values())

    def case(batch, seq, past):
        total = past + seq
        proj = 2 * batch * seq * L * layer_macs          # q/k/v/o/gate/up/down, all layers
        lm_head = 2 * batch * seq * d * v                # logits for every position
        qk = 2 * batch * h * seq * total * hd            # per layer, GQA: every query head
        pv = 2 * batch * h * seq * total * hd
        # causal kernel (GroupQueryAttention's causal=1): query i sees past + i + 1 keys
        pairs = seq * past + seq * (seq + 1) // 2
        qk_c = 2 * batch * h * pairs * hd
        dense = proj + lm_head + L * (qk + pv)
        causal = proj + lm_head + L * (2 * qk_c)
        return {"dims": {"batch_size": batch, "sequence_length": seq, "past_sequence_length": past,
                         "total_sequence_length": total, "kv_cache_dim": hd},
                "projections": proj, "lm_head": lm_head, "qk_per_layer": qk, "pv_per_layer": pv,
                "attention_dense": L * (qk + pv), "attention_causal": L * 2 * qk_c,
                "mac_flops_dense": dense, "mac_flops_causal": causal}

    return {
        "per_token_macs_per_layer": per_token, "head_dim": hd,
        "formula": "2*B*S*(L*(d*H*hd + 2*d*Hkv*hd + H*hd*d + 3*d*I) + d*V) "
                   "+ L*2*(2*B*H*S*T*hd)  [dense];  causal: S*T -> S*P + S*(S+1)/2",
        "prefill": case(**PREFILL), "decode": case(**DECODE),
    }


def flop_counter_prefill(model) -> dict:
    """FlopCounterMode of the HF forward for the prefill, with both attention implementations.

    With ``sdpa`` on CPU, torch dispatches ``_scaled_dot_product_flash_attention_for_cpu``, which
    FlopCounterMode has no formula for: only the projections (aten.mm) are counted. With
    ``eager`` attention QK^T and PV are plain matmuls over the full S x T score matrix (the
    causal mask is added, never skipped), so the total is the dense closed form."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    ids = torch.randint(0, CONFIG["vocab_size"], (PREFILL["batch"], PREFILL["seq"]),
                        generator=torch.Generator().manual_seed(1))
    result = {}
    for impl in ("sdpa", "eager"):
        model.set_attn_implementation(impl)
        with torch.no_grad(), FlopCounterMode(display=False) as fc:
            model(input_ids=ids, use_cache=False)
        result[impl] = {"total": int(fc.get_total_flops()),
                        "by_op": {str(k): int(v) for k, v in fc.get_flop_counts()["Global"].items()}}
    model.set_attn_implementation("sdpa")
    return result


def ort_check(path: Path, model) -> dict:
    """Run the builder's CPU file (with its weights) on a prefill; compare with HF logits."""
    import onnxruntime as ort
    import torch

    b, s = PREFILL["batch"], PREFILL["seq"]
    hd = CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
    ids = np.random.default_rng(2).integers(0, CONFIG["vocab_size"], (b, s), dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones((b, s), np.int64)}
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for i in sess.get_inputs():
        if i.name.startswith("past_key_values"):
            feeds[i.name] = np.zeros((b, CONFIG["num_key_value_heads"], 0, hd), np.float32)
    logits = sess.run(["logits"], feeds)[0]
    with torch.no_grad():
        ref = model(input_ids=torch.from_numpy(ids), use_cache=False).logits.numpy()
    return {"max_abs_diff_vs_hf_logits": float(np.abs(logits - ref).max())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/genai")
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    import onnxruntime
    import onnxruntime_genai
    import torch
    import transformers

    ref = {
        "generator": "samples/genai_fixtures/make.py",
        "versions": {"python": platform.python_version(), "onnxruntime_genai": onnxruntime_genai.__version__,
                     "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__,
                     "torch": torch.__version__, "transformers": transformers.__version__},
        "seed": SEED, "hf_config": CONFIG, "closed_form": closed_forms(), "fixtures": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        hf = make_hf(tmp / "hf")
        ref["hf_params"] = hf["params"]
        ref["hf_params_per_tensor"] = hf["per_tensor"]
        ref["torch_flop_counter_prefill"] = flop_counter_prefill(hf["model"])
        for name, (precision, ep) in BUILDS.items():
            out = tmp / name
            cmd = run_builder(tmp / "hf", out, tmp / f"cache_{name}", precision, ep)
            entry = {"builder_command": " ".join(cmd)}
            if ep == "cpu":
                entry["onnxruntime_prefill"] = ort_check(out / "model.onnx", hf["model"])
            model = onnx.load(str(out / "model.onnx"), load_external_data=True)
            entry.update(describe(model))
            entry.update(save_fixture(model, out_dir, name, MAX_FIXTURE_BYTES))
            ref["fixtures"][f"{name}.onnx"] = entry
            print(name, entry["ops"], entry["initializer_numel_by_dtype"])
    (out_dir / "reference.json").write_text(json.dumps(ref, indent=1, sort_keys=False) + "\n")
    print("wrote", out_dir / "reference.json")


if __name__ == "__main__":
    main()
