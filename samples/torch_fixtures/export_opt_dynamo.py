#!/usr/bin/env python3
"""A decoder-only transformer (OPT) through torch's dynamo exporter, with a causal mask built from
the sequence length: the export pattern of a real OPT/LLM export, small enough to commit.

How to run (from the repository root; no GPU, no network)::

    python3.11 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch transformers onnx onnxscript
    /tmp/torchvenv/bin/python samples/torch_fixtures/export_opt_dynamo.py --out tests/fixtures/torch

It writes ``opt_dynamo.onnx`` and ``reference_opt.json`` (numbers computed here without opcost:
torch's parameter count and FlopCounterMode's FLOPs of the eager model at batch 1, seq 128, and
the versions used). CI never runs it; torch and transformers are NOT dependencies of opcost.

The model: ``transformers.OPTForCausalLM`` (2 layers, hidden 64, 4 heads, FFN 256, vocabulary
1000, eager attention, weights from seed 0), called with ``input_ids`` and ``attention_mask``
and ``use_cache=False``, exported with ``torch.onnx.export(dynamo=True)`` with batch and
sequence dynamic (``B``, ``S``). The exported graph builds the causal mask from ``S``
(Range -> Unsqueeze -> LessOrEqual of a (1, 1, 1, S) row and a (1, 1, S, 1) column, And with the
padding mask, Where), the pattern a dynamo-exported OPT-1.3B failed to predict on
(``UnboundDimError``) before its broadcast was bound.
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import transformers
from torch.export import Dim
from torch.utils.flop_counter import FlopCounterMode

CONFIG = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, ffn_dim=256, num_attention_heads=4,
              max_position_embeddings=256, word_embed_proj_dim=64)


class LogitsOnly(torch.nn.Module):
    """The causal LM returning only its logits (no KV cache object in the outputs)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for opt_dynamo.onnx and reference_opt.json")
    out = ap.parse_args().out
    torch.manual_seed(0)
    cfg = transformers.OPTConfig(**CONFIG)
    model = LogitsOnly(transformers.OPTForCausalLM._from_config(cfg, attn_implementation="eager").eval())
    ids = torch.randint(0, CONFIG["vocab_size"], (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    b, s = Dim("B", min=1, max=64), Dim("S", min=2, max=200)
    path = os.path.join(out, "opt_dynamo.onnx")
    torch.onnx.export(model, (ids, mask), path, dynamo=True, external_data=False,
                      dynamic_shapes={"input_ids": {0: b, 1: s}, "attention_mask": {0: b, 1: s}})
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        model(torch.zeros(1, 128, dtype=torch.int64), torch.ones(1, 128, dtype=torch.int64))
    ref = {"generated_by": "samples/torch_fixtures/export_opt_dynamo.py", "config": CONFIG,
           "torch_params": sum(p.numel() for p in model.parameters()),
           "flop_counter_batch1_seq128": fc.get_total_flops(),
           "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
    with open(os.path.join(out, "reference_opt.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
