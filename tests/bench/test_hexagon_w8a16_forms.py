"""bench/hexagon_w8a16.py's per-kernel shares of the int8 peak: form B (every kernel at r_w8a16)
and form C (``--nonmatrix int8``: elementwise and data-movement kernels at 1, as in a W8A8 graph).

One synthetic row on the 8 Gen 2 (int8 peak P = 22.73e12, hardware_db), e_mat = 0.5, no fixed
cost: a matrix kernel of W = 1e10 FLOP-equivalents and an elementwise one of W = 1e9, both
compute-bound (memory time 1 ns), one launch each, r = 0.5:
B: 1e10 / (P x 0.5 x 0.5) + 1e9 / (P x 0.5 x 0.5) = 1.936 ms; C: the elementwise term at s = 1,
1e10 / (P x 0.25) + 1e9 / (P x 0.5) = 1.848 ms.
"""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("scipy")

import hexagon_model as H  # noqa: E402
import hexagon_w8a16 as W  # noqa: E402

DEV = "hexagon-sd8gen2"


def _times(nonmatrix: str, monkeypatch) -> float:
    monkeypatch.setattr(W, "NONMATRIX", nonmatrix)
    monkeypatch.setattr(W, "FIXED", "fp16")
    rows = pd.DataFrame([{"model_id": "m", "opcost_profile": DEV, "precision": "w8a16", "runtime": "qnn_dlc",
                          "inference_time_ms": 1.0}])
    g = np.array([H.GROUPS.index("mat"), H.GROUPS.index("ew")])
    feats = {("m", DEV, "w8a16"): (g, np.array([1e10, 1e9]), np.full(2, 1e-9), np.ones(2), np.zeros(2), np.ones(2))}
    P = {k: np.zeros(2) for k in H.X0}
    P.update(e_mat=np.full(2, 0.5), e_dw=np.full(2, 0.5), bw_mat=np.ones(2), bw_ew=np.ones(2), bw_move=np.ones(2))
    return float(W.ms(rows, feats, P, 0.5)[0])


def test_form_b_every_kernel_at_r(monkeypatch):
    peak = H.peak_int8(DEV)
    assert peak == pytest.approx(22.73e12, rel=1e-4)
    assert _times("r", monkeypatch) == pytest.approx((1e10 + 1e9) / (peak * 0.25) * 1e3, rel=1e-9)   # 1.936 ms


def test_form_c_non_matrix_kernels_at_the_int8_peak(monkeypatch):
    peak = H.peak_int8(DEV)
    assert _times("int8", monkeypatch) == pytest.approx((1e10 / (peak * 0.25) + 1e9 / (peak * 0.5)) * 1e3,
                                                        rel=1e-9)   # 1.848 ms
