"""The search fast path (``CostModel.score``: kernel rows, ``efficiency.kernel_time`` under JAX)
takes the serial k loop (``efficiency.tiles.kloop_bound``) as analyze does (1e-6 relative)."""

import numpy as np

import analyzer
from analyzer.prediction.efficiency import constants as fc

from conftest import reference
from kloop_files import conv_1x1, write_kloop_files


def test_search_equals_analyze_with_a_k_loop(tmp_path, monkeypatch):
    write_kloop_files(str(tmp_path))
    monkeypatch.setattr(fc, "EFFICIENCY_DIR", str(tmp_path))
    hw = ["h200-sxm", "a100"]
    blobs = [conv_1x1(), conv_1x1(2048, 512, 7), conv_1x1(512, 128, 28)]
    cm = analyzer.CostModel(hw, precision="fp32")
    first = cm.score(blobs)
    again = cm.score(blobs)
    for b, row in zip(blobs, again):
        want = reference(b, hw=hw, precision="fp32")
        np.testing.assert_allclose(row, want, rtol=1e-6)
        e = analyzer.analyze(b, hw=hw[:1], precision="fp32").predictions[0].explain(0)
        assert e.kloop_s > 0   # (the k loop acts on the H200)
    np.testing.assert_allclose(again, first, rtol=1e-6)
