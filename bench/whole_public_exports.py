#!/usr/bin/env python3
"""Graph-only ONNX exports of the models of bench/data/whole_public/ (NeuSight's whole-model rows).

    python bench/whole_public_exports.py [--out DIR] [--only bert_large-inf-512-8,...]

Needs torch, transformers and onnxscript (a scratch environment: never an opcost dependency);
the committed exports were written with torch 2.13.0 (CPU build) and transformers 4.38.1, the
version NeuSight's ``setup.py`` pins (later versions run other eager attention code: 4.57's
GPT-2 adds a (B, 1, S, S) causal mask to the scores, one more pass over them per layer).
Each export is what the measured run executed, built from the model's config in
``bench/data/whole_public/configs/`` (NeuSight's ``scripts/asplos/data/DLmodel_configs``) with
``attn_implementation="eager"``, fp32, in eval mode (a training row's dropout is opcost's
``dropout=`` option, not a node of the graph), input ``input_ids`` of shape (batch, seq):

- BERT inference: ``AutoModelForSequenceClassification`` (its logits); BERT training:
  ``AutoModelForPreTraining``'s ``prediction_logits`` (the only output the measured loss reads);
- GPT-2 / OPT (``gpt2_large``, ``gpt3_xl``, ``gpt3_27``, ``opt_13``): ``AutoModelForCausalLM``'s
  logits, ``use_cache=False`` (the measured runs' key/value tuples launch no kernel).

The parameters are allocated uninitialised (``no_init_weights``: the graph does not depend on
their values; the buffers, such as position ids, keep theirs) and the exporter is the default
of ``torch.onnx.export`` (``dynamo=True``, fixed shapes at the row's batch and sequence length).
The weights go to an external data file that is deleted after the save (opcost never reads
external weight data, only the initializers' shapes), and the nodes' metadata (the exporter's
stack traces) is dropped.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "whole_public")


def export_names(rows_csv: str) -> list[str]:
    """The distinct exports the rows need: ``model-kind-seq-batch`` (kind ``inf`` or ``train``)."""
    with open(rows_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    return sorted({export_name(r) for r in rows if r["scored"] == "yes"})


def export_name(row: dict) -> str:
    """``model-kind-seq-batch``: ``train`` only for BERT's pre-training model; a causal LM's
    training row reads the same graph as its inference rows (its logits, eval mode)."""
    kind = "train" if row["mode"] == "train" and row["model"].startswith("bert") else "inf"
    return f"{row['model']}-{kind}-{row['seq']}-{row['batch']}"


def build(model: str, train: bool):
    import transformers

    cfg = transformers.AutoConfig.from_pretrained(os.path.join(DATA, "configs", model + ".json"))
    if model.startswith("bert"):
        cls = transformers.AutoModelForPreTraining if train else \
            transformers.AutoModelForSequenceClassification
    else:
        cls = transformers.AutoModelForCausalLM
    from transformers.modeling_utils import no_init_weights

    with no_init_weights():
        m = cls.from_config(cfg, attn_implementation="eager")
    return m.eval()


def export(name: str, out: str) -> float:
    import torch

    model, kind, seq, batch = name.rsplit("-", 3)
    m = build(model, kind == "train")
    bert = model.startswith("bert")

    class Wrap(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            if bert:
                o = self.inner(input_ids=input_ids)
                return o.prediction_logits if kind == "train" else o.logits
            return self.inner(input_ids=input_ids, use_cache=False).logits

    ids = torch.ones(int(batch), int(seq), dtype=torch.int64)
    t0 = time.time()
    prog = torch.onnx.export(Wrap(m), (ids,), dynamo=True, input_names=["input_ids"])
    path = os.path.join(out, name + ".onnx")
    prog.save(path, external_data=True)
    data = path + ".data"
    if os.path.exists(data):
        os.remove(data)
    strip(path)
    return time.time() - t0


def strip(path: str) -> None:
    """Drop the exporter's per-node metadata (stack traces, module names kept in ``name``) and
    record the torch and transformers versions that exported the graph in the model's
    ``metadata_props``: the graph, shapes and initializer records are unchanged."""
    import onnx
    import torch
    import transformers

    m = onnx.load(path, load_external_data=False)
    for n in m.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    onnx.helper.set_model_props(m, {"torch": torch.__version__,
                                    "transformers": transformers.__version__})
    onnx.save(m, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(DATA, "exports"))
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    names = export_names(os.path.join(DATA, "rows.csv"))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    failed = 0
    for n in names:
        try:
            s = export(n, args.out)
        except Exception as e:  # noqa: BLE001  (an export that fails is reported, the rest go on)
            failed += 1
            print(json.dumps({"export": n, "failed": f"{type(e).__name__}: {e}"[:300]}), flush=True)
            continue
        print(json.dumps({"export": n, "seconds": round(s, 1)}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
