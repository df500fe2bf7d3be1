"""A decoder-only transformer (transformers' OPTForCausalLM) through torch's dynamo exporter, with
dynamic batch and sequence axes and a causal mask built from the sequence length.

tests/fixtures/torch/opt_dynamo.onnx was written once by samples/torch_fixtures/export_opt_dynamo.py
(CI never runs PyTorch); reference_opt.json holds torch's own numbers for it. The graph builds its
causal mask as LessOrEqual of a (1, 1, 1, S) row and a (1, 1, S, 1) column (the pattern of a
dynamo-exported OPT-1.3B), so prediction needs the broadcast of two symbolic shapes bound.
"""

from __future__ import annotations

import json
import os

import onnx
import pytest

import analyzer

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "torch")
PATH = os.path.join(HERE, "opt_dynamo.onnx")
with open(os.path.join(HERE, "reference_opt.json"), encoding="utf-8") as _f:
    REF = json.load(_f)

# multiply-accumulates at batch 1, seq S = 128, hidden H = 64, FFN F = 256, vocab V = 1000, 2 layers:
#   per layer: Q, K, V, out projections 4*S*H*H = 2,097,152; Q.K^T and A.V 2*S*S*H = 2,097,152;
#              FFN 2*S*H*F = 4,194,304                                    -> 8,388,608
#   LM head S*H*V = 8,192,000;  total 2*8,388,608 + 8,192,000 = 24,969,216 MACs
MAC_FLOPS = 2 * (2 * (4 * 128 * 64 * 64 + 2 * 128 * 128 * 64 + 2 * 128 * 64 * 256) + 128 * 64 * 1000)


def test_the_export_has_the_causal_mask_pattern():
    m = onnx.load(PATH)
    ops = [n.op_type for n in m.graph.node]
    assert "LessOrEqual" in ops and "Where" in ops
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in m.graph.input}
    assert dims == {"input_ids": ["B", "S"], "attention_mask": ["B", "S"]}


def test_counts_match_torch():
    r = analyzer.analyze(PATH, dims={"B": 1, "S": 128})
    assert r.totals.mac_flops == MAC_FLOPS == REF["flop_counter_batch1_seq128"] == 49938432
    assert r.coverage.uncosted == ()


@pytest.mark.parametrize("hw", ["a100", "h100", "l4", "t4"])
@pytest.mark.parametrize("runtime", ["kernel", "eager"])
def test_every_gpu_and_runtime_predicts(hw, runtime):
    r = analyzer.analyze(PATH, hw=hw, runtime=runtime, dims={"B": 1, "S": 128})
    (p,) = r.predictions
    assert p.latency_s > 0


def test_batch_scales_every_count_exactly():
    one = analyzer.analyze(PATH, dims={"B": 1, "S": 128})
    eight = analyzer.analyze(PATH, batch=8, dims={"S": 128})
    assert eight.totals.mac_flops == 8 * one.totals.mac_flops == 399507456
