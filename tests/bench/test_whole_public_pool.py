"""bench/whole_public_pool.py reads a result file's row table and pools issue 32's GPUs."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

import whole_public_pool as W

TABLE = """| GPU (profile) | mode | rows | failed | MAPE % | bias % |
|---|---|---:|---:|---:|---:|
| l4 | inference | 1 | 0 | 4.0 | +4.0 |

| GPU (profile) | model | mode | seq | batch | measured ms | predicted ms | error % | fw meas / pred ms | bw meas / pred ms |
|---|---|---|---:|---:|---:|---:|---:|---|---|
| l4 | bert_large | inference | 512 | 8 | 100.0 | 104.0 | +4.0 | | |
| h100-sxm | gpt2_large | train | 1024 | 1 | 184.0 | 165.9 | -9.8 | 63.7 / 57.5 | 120.3 / 108.3 |
| v100-pcie-32gb | bert_large | inference | 512 | 8 | 10.0 | 12.0 | +20.0 | | |
"""


def test_rows_and_pooled_figures(tmp_path, capsys):
    p = tmp_path / "r.md"
    p.write_text(TABLE)
    assert W.row_errors(str(p)) == [("l4", "inference", 4.0), ("h100-sxm", "train", -9.8),
                                    ("v100-pcie-32gb", "inference", 20.0)]
    W.main([str(p)])
    # the V100 is not one of the GPUs: inference is the L4 row alone
    assert capsys.readouterr().out == ("inference: 1 rows, MAPE 4.0 %, bias +4.0 %\n"
                                       "train: 1 rows, MAPE 9.8 %, bias -9.8 %\n")
