"""Whole models of gpu_plan (parts ``models`` and ``compile``): random weights, nothing downloaded.

- resnet50, mobilenet_v2, vit_b_16: ``torchvision.models.<name>(weights=None)``, input x[B,3,224,224].
- bert_base: ``transformers.BertModel(BertConfig())`` (12 layers, 768 wide, 12 heads, vocab 30522),
  gpt2_small: ``transformers.GPT2LMHeadModel(GPT2Config())`` (12 layers, 768, vocab 50257, tied LM
  head), both with the library's default attention implementation, input ids[B, seq], no KV cache.
  Where transformers is not importable, a minimal equivalent from ``torch.nn.TransformerEncoderLayer``
  (same widths, depths, vocabularies; GPT-2: pre-norm, causal mask, tied head) is built instead and
  ``note`` says so: its kernels differ (PyTorch's fused encoder fast path in eval, other attention
  and GELU kernels), so such rows are not HF's.
- Precision: ``bf16`` casts weights and inputs to bfloat16 (no autocast); ``fp32`` with the row's TF32
  switch. Mode ``infer``: ``eval()`` under ``torch.inference_mode()``; mode ``train``: ``train()``
  (dropout and batch-norm statistics on), one call = zero_grad(set_to_none) + forward +
  ``out.float().mean().backward()``, no optimizer.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

VISION = ("resnet50", "mobilenet_v2", "vit_b_16")
DTYPE = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _hf(name: str):
    try:
        import transformers
    except Exception:  # noqa: BLE001  (absent or broken: the torch.nn fallback)
        return None
    if name == "bert_base":
        return transformers.BertModel(transformers.BertConfig()), 30522, f"transformers {transformers.__version__}"
    cfg = transformers.GPT2Config()
    return transformers.GPT2LMHeadModel(cfg), cfg.vocab_size, f"transformers {transformers.__version__}"


class NNTransformer(nn.Module):
    """BERT-base / GPT-2-small shaped stack from torch.nn (the fallback when transformers is absent)."""

    def __init__(self, vocab: int, causal: bool, layers: int = 12, d: int = 768, heads: int = 12, positions: int = 1024):
        super().__init__()
        self.causal = causal
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(positions, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=causal)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False) if causal else None
        if self.head is not None:
            self.head.weight = self.tok.weight

    def forward(self, ids):
        s = ids.shape[1]
        h = self.tok(ids) + self.pos(torch.arange(s, device=ids.device))
        if not self.causal:
            return self.blocks(self.norm(h))
        mask = nn.Transformer.generate_square_subsequent_mask(s, device=ids.device, dtype=h.dtype)
        return self.head(self.norm(self.blocks(h, mask=mask, is_causal=True)))


def build(name: str, device, dtype: str, use_hf: bool = True):
    """(model on ``device`` in ``dtype``, vocabulary or 0 for images, note). The weights are made
    on ``device`` (fast random init); where that fails, on the CPU and then moved."""
    try:
        with torch.device(device):
            return _build(name, device, dtype, use_hf)
    except Exception:  # noqa: BLE001
        return _build(name, device, dtype, use_hf)


def _build(name: str, device, dtype: str, use_hf: bool):
    torch.manual_seed(0)
    if name in VISION:
        import torchvision

        model, vocab, note = getattr(torchvision.models, name)(weights=None), 0, f"torchvision {torchvision.__version__}"
    else:
        got = _hf(name) if use_hf else None
        if got is None:
            vocab = 30522 if name == "bert_base" else 50257
            model = NNTransformer(vocab, causal=name == "gpt2_small")
            note = ("transformers not importable: torch.nn.TransformerEncoderLayer stand-in of the same shape; "
                    "its kernels differ from HF's")
        else:
            model, vocab, note = got
    return model.to(device=device, dtype=DTYPE[dtype]), vocab, note


def _tensor(out):
    """The first tensor of a model output (tensor, HF ModelOutput or tuple)."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    return out[0]


def inputs(c: dict, vocab: int, device):
    g = torch.Generator(device=device)
    g.manual_seed(1234)
    if not vocab:
        return torch.randn(c["B"], 3, 224, 224, device=device, dtype=DTYPE[c["dtype"]], generator=g)
    return torch.randint(0, vocab, (c["B"], c["seq"]), device=device, dtype=torch.int64, generator=g)


def step_fn(model, x, mode: str, hf_kwargs: dict):
    """One call: a forward (infer) or zero_grad + forward + backward of the mean (train)."""
    if mode == "infer":
        return lambda: model(x, **hf_kwargs)

    def train_step():
        model.zero_grad(set_to_none=True)
        loss = _tensor(model(x, **hf_kwargs)).float().mean()
        loss.backward()
        return loss
    return train_step


def make(c: dict, device, use_hf: bool = True, compiled: bool = False, cache: dict | None = None):
    """(fn, context factory, info) of a whole-model case; ``compiled`` wraps the model in
    torch.compile (inductor, default mode) before the step is built. ``cache`` (a dict) keeps the
    built models by (name, dtype) for the next case."""
    k = (c["op"], c["dtype"])
    if cache is not None and k in cache:
        model, vocab, note = cache[k]
    else:
        model, vocab, note = build(c["op"], device, c["dtype"], use_hf)
        if cache is not None:
            cache[k] = (model, vocab, note)
    model.train(c["mode"] == "train")
    x = inputs(c, vocab, device)
    hf_kwargs = {"use_cache": False} if getattr(getattr(model, "config", None), "model_type", "") == "gpt2" else {}
    info = {"note": note, "params": sum(p.numel() for p in model.parameters()),
            "attn_implementation": getattr(getattr(model, "config", None), "_attn_implementation", "")}
    if compiled:
        model = torch.compile(model)
    ctx = torch.inference_mode if c["mode"] == "infer" else contextlib.nullcontext
    return step_fn(model, x, c["mode"], hf_kwargs), ctx, info
