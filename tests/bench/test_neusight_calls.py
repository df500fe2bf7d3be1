"""bench/neusight_calls.py: NeuSight's per-class host medians become ``eager-op``'s per-call table
(``runtimes.EAGER_OP_CALL_US``) by its class map, and the product hook patches the table only
while it predicts."""

from __future__ import annotations

import neusight_calls as nc
from fit_neusight import Fit

from analyzer.prediction import runtimes

# the five hosts' per-class medians of bench/fit_neusight.py's report (seconds), "Host dispatch
# per eager call": the figures runtimes.EAGER_OP_CALL_US ships
MEDIANS = {"gemm_simt": 44.0e-6, "bgemm_simt": 21.8e-6, "conv3_simt": 65.8e-6, "norm": 39.3e-6,
           "softmax": 27.2e-6, "activation": 25.3e-6, "elementwise": 25.9e-6}


def test_the_shipped_table_is_the_class_map_of_the_medians():
    table, default = nc.call_table(MEDIANS)
    # gemm <- nn.Linear 44.0; bgemm and attention <- torch.bmm 21.8; conv <- nn.Conv2d 65.8;
    # reduce and the default <- elementwise 25.9
    assert table == runtimes.EAGER_OP_CALL_US
    assert table["attention"] == table["bgemm"] == 21.8 and table["reduce"] == default == 25.9
    assert default == runtimes.EAGER_OP_CALL_DEFAULT_US


def test_the_product_hook_restores_the_table():
    fit = Fit({}, {}, {("a", c): v for c, v in MEDIANS.items()})
    seen = []

    def fake_times(rows, held, eff_dir, runtime):
        seen.append((runtime, dict(runtimes.EAGER_OP_CALL_US)))
        return [len(seen)]

    before = dict(runtimes.EAGER_OP_CALL_US)
    out = nc.product_columns(fit, None, fake_times, fit, "")
    assert out == {"p_call_a": [1], "p_call_b": [2]}
    assert seen[0] == ("eager-op", before)   # A: the one host's medians (= MEDIANS: the shipped table)
    assert seen[1] == ("eager-op", runtimes.EAGER_DISPATCH_US)   # B: LLMCompass's figures
    assert runtimes.EAGER_OP_CALL_US == before
