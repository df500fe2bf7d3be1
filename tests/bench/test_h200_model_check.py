"""bench/h200_model_check.py: which H200 whole-model rows it predicts, with which graph, precision,
batch and training options, and that a few rows run through ``analyzer.analyze`` (no timing asserted)."""

from __future__ import annotations

import csv
import glob
import math
import os

import h200_model_check as H
import pytest

CSV = max(glob.glob(os.path.join(H.ROOT, "bench", "results", "h200_models_*.csv")))


def _row(**kw) -> dict:
    r = {"part": "models", "op": "resnet50", "dtype": "bf16", "tf32": "0", "mode": "infer", "B": "8",
         "note": "torchvision 0.26.0+cu130", "error_a": "", "kernel_sum_us": "100.0",
         "eager_wall_us": "400.0", "n_kernels": "10"}
    r.update(kw)
    return r


def test_select_maps_dtype_batch_mode_and_leaves_out_with_a_reason():
    rows = [_row(), _row(op="bert_base", dtype="fp32", tf32="1", mode="train", B="1"),
            _row(op="vit_b_16", dtype="fp32", mode="train"), _row(op="gpt2_small"),
            _row(part="compile"), _row(error_a="OOM", kernel_sum_us="")]
    cases, left = H.select(rows)
    got = [(c["op"], c["precision"], c["batch"], c["train"], c["dropout"]) for c in cases]
    assert got == [("resnet50", "bf16", 8, False, None), ("bert_base", "tf32", 1, True, 0.1),
                   ("vit_b_16", "fp32", 8, True, None)]
    assert [why for _, why in left] == [H.LEFT_OUT["gpt2_small"], H.COMPILE_REASON, "not measured: OOM"]
    assert cases[0]["measured"] == "resnet50 (torchvision 0.26.0+cu130)"
    stand_in = H.select([_row(op="bert_base", note="transformers not importable: torch.nn stand-in")])[0]
    assert stand_in[0]["measured"] == "bert_base (torch.nn stand-in, not HF's)"


def test_options_of_a_training_row():
    cases, _ = H.select([_row(op="bert_base", mode="train", B="1"), _row(mode="train")])
    bert, resnet = (H.options(c, "eager") for c in cases)
    assert bert == {"hw": "h200-sxm", "runtime": "eager", "precision": "bf16", "batch": 1,
                    "train": True, "optimizer": "none", "dropout": 0.1}
    assert resnet["dropout"] is None and resnet["optimizer"] == "none"
    assert "train" not in H.options(H.select([_row()])[0][0], "kernel")


def test_the_committed_rows_split_into_44_cases_and_14_left_out():
    with open(CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    cases, left = H.select(rows)
    # 56 models rows: 12 GPT-2-small rows have no graph; the 2 compile rows are inductor's
    assert (len(rows), len(cases), len(left)) == (58, 44, 14)
    assert sorted({c["op"] for c in cases}) == ["bert_base", "mobilenet_v2", "resnet50", "vit_b_16"]
    assert sum(why == H.COMPILE_REASON for _, why in left) == 2
    assert {r["op"] for r, why in left if why == H.LEFT_OUT["gpt2_small"]} == {"gpt2_small"}


def test_every_export_exists_or_is_built(tmp_path):
    paths = H.export_paths(str(tmp_path))
    assert sorted(paths) == sorted(H.EXPORTS)
    assert all(os.path.exists(p) for p in paths.values())


@pytest.mark.parametrize("op, mode", [("mobilenet_v2", "infer"), ("bert_base", "train")])
def test_a_few_rows_run(tmp_path, op, mode):
    cases, _ = H.select([_row(op=op, mode=mode, B="1")])
    paths = H.export_paths(str(tmp_path))
    res = H.run(cases, paths)
    assert [r["runtime"] for r in res] == ["eager-kernel", "kernel", "eager", "eager --host torch2.11-h200"]
    assert H.options(cases[0], "eager --host torch2.11-h200")["host"] == "torch2.11-h200"
    assert "host" not in H.options(cases[0], "eager")
    for r in res:
        assert math.isfinite(r["pred_us"]) and r["pred_us"] > 0
        assert r["err"] == pytest.approx(r["pred_us"] / r["meas_us"] - 1.0)
        assert r["kern_meas"] == 10 and r["kern_pred"] > 0
    if mode == "train":     # forward launches + one per placed dropout + the backward plan's kernels
        import analyzer

        rep = analyzer.analyze(paths[op], **H.options(cases[0], "eager-kernel"))
        st = rep.training.steps[0]
        # BERT-base: one dropout after the embedding, one on each of the 12 layers' attention
        # probabilities, two residual ones per layer: 1 + 12 + 2 x 12 = 37
        assert rep.training.dropout["placed"] == 37
        assert res[1]["pred_us"] == pytest.approx(st.step_s * 1e6)
        assert res[1]["kern_pred"] == (rep.predictions[0].launches + rep.training.dropout["placed"]
                                       + st.backward_kernels)
