"""bench/hexagon_model.py's least squares: the robust (Cauchy) loss keeps the constants of the
rows a kernel sum represents when one model's rows are far off, where plain squares do not.

Synthetic rows, one compute-bound matrix kernel per (model, device): W_i = (i + 1) x 1e10
FLOP-equivalents on each device's int8 peak P (hardware_db: 22.73e12 on the 8 Gen 2, 45e12 on
the 8 Gen 3), e_mat = 0.5, run_fixed_int8 t0 = 100 us, so the measured time is
T_i = W_i / (P x 0.5) + 1e-4 s (8 Gen 2, i = 0: 1e10 / 11.365e12 + 1e-4 = 0.980 ms). Model 7's
rows are then recorded at 10 x that time (log residual 2.3, a row no kernel sum represents).
"""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("scipy")


import hexagon_model as H  # noqa: E402

E_MAT, T0, N_MODELS, OUTLIER = 0.5, 1e-4, 8, 7


def _rows():
    rows, feats = [], {}
    for d in H.DEVS:
        peak = H.peak_int8(d)
        for i in range(N_MODELS):
            w = (i + 1) * 1e10
            t = w / (peak * E_MAT) + T0
            rows.append({"model_id": f"m{i}", "opcost_profile": d, "precision": "int8", "runtime": "qnn_dlc",
                         "inference_time_ms": t * 1e3 * (10.0 if i == OUTLIER else 1.0)})
            # one matrix kernel (group 0), memory time 1 ns (compute-bound), one launch
            feats[(f"m{i}", d, "int8")] = (np.array([0]), np.array([w]), np.array([1e-9]), np.array([1.0]))
    return pd.DataFrame(rows), feats


def test_first_row_is_the_closed_form_time():
    rows, _ = _rows()
    assert H.peak_int8("hexagon-sd8gen2") == pytest.approx(22.73e12, rel=1e-4)
    assert rows.inference_time_ms[0] == pytest.approx(1e10 / (22.73e12 * 0.5) * 1e3 + 0.1, rel=1e-6)  # 0.980 ms


@pytest.mark.parametrize("loss,within", [("cauchy", True), ("linear", False)])
def test_cauchy_loss_keeps_the_constants_of_the_other_rows(loss, within):
    rows, feats = _rows()
    form = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss=loss, f_scale=0.2)
    P, _ = H.fit(H.Rows(rows, feats), form)
    # cauchy: e_mat within 5 % of 0.5 on both devices; plain squares pulled away by model 7
    off = np.abs(P["e_mat"] / E_MAT - 1)
    assert bool(np.all(off < 0.05)) is within, (loss, P["e_mat"], P["t0_int8"])
    good = rows[rows.model_id != f"m{OUTLIER}"].reset_index(drop=True)
    ape = np.abs(H.times(H.Rows(good, feats), *H.fit(H.Rows(rows, feats), form)) * 1e3 / good.inference_time_ms - 1)
    assert bool(ape.max() < 0.05) is within


def test_deployment_offset_closed_form_and_recovered():
    """Form.deploy = "int8": a qnn_dlc row takes + d_int8 / 2, a tflite row - d_int8 / 2 (8 Gen 2,
    model 0, W8A8: 0.980 ms + 0.05 ms = 1.030 ms and 0.930 ms for d = 100 us); rows made that way
    (every model but the outlier, both deployments) give back d = 100 us and e_mat = 0.5."""
    rows, feats = _rows()
    rows = rows[rows.model_id != f"m{OUTLIER}"]
    d = 1e-4
    both = pd.concat([rows.assign(runtime=rt, inference_time_ms=rows.inference_time_ms + s * d / 2 * 1e3)
                      for rt, s in (("qnn_dlc", 1.0), ("tflite", -1.0))], ignore_index=True)
    form = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss="cauchy", f_scale=0.2, deploy="int8")
    assert form.shared() == ["d_int8"]
    P = {k: np.zeros(2) for k in H.X0}
    P.update(e_mat=np.full(2, E_MAT), bw_mat=np.ones(2), t0_int8=np.full(2, T0), d_int8=np.full(2, d))
    got = H.times(H.Rows(both, feats), P, 1.0) * 1e3
    assert got[0] == pytest.approx(1e10 / (22.73e12 * 0.5) * 1e3 + 0.1 + 0.05, rel=1e-6)   # 1.030 ms
    assert got[len(rows)] == pytest.approx(1e10 / (22.73e12 * 0.5) * 1e3 + 0.1 - 0.05, rel=1e-6)   # 0.930 ms
    fit, _ = H.fit(H.Rows(both, feats), form)
    assert fit["d_int8"][0] == pytest.approx(d, rel=0.02)
    assert np.all(np.abs(fit["e_mat"] / E_MAT - 1) < 0.02)


def test_depthwise_at_the_matrix_efficiency_closed_form():
    """Form.dwm: no e_dw of its own (two constants fewer: one per device), unpack sets e_dw = e_mat,
    so a compute-bound depthwise kernel (group 1) of W = 1e10 FLOP-equivalents at W8A8 on the 8 Gen 2
    takes W / (P_int8 x e_mat) = 1e10 / (22.73e12 x 0.5) = 0.880 ms, + t0 100 us = 0.980 ms."""
    base = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss="cauchy", f_scale=0.2)
    form = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss="cauchy", f_scale=0.2, dwm=True)
    assert "e_dw" in base.names() and "e_dw" not in form.names()
    assert base.n_constants() - form.n_constants() == 2
    x = np.zeros(2 * len(form.names()) + len(form.shared()) + 1)
    names = form.names()
    for d in range(2):
        x[d * len(names) + names.index("e_mat")] = np.log(E_MAT)
        x[d * len(names) + names.index("t0_int8")] = np.log(T0)
    P, _ = H.unpack(x, form)
    assert np.all(P["e_dw"] == P["e_mat"]) and np.all(P["e_dw"] == pytest.approx(E_MAT))
    rows = pd.DataFrame([{"model_id": "dw", "opcost_profile": "hexagon-sd8gen2", "precision": "int8",
                          "runtime": "qnn_dlc", "inference_time_ms": 1.0}])
    feats = {("dw", "hexagon-sd8gen2", "int8"): (np.array([1]), np.array([1e10]), np.array([1e-9]), np.array([1.0]))}
    got = H.times(H.Rows(rows, feats), P, 1.0)[0] * 1e3
    assert got == pytest.approx(1e10 / (22.73e12 * 0.5) * 1e3 + 0.1, rel=1e-6)   # 0.980 ms


def test_depthwise_at_a_shared_fraction_of_the_matrix_efficiency_closed_form():
    """Form.dwq (the shipped form's): no e_dw of its own, one q_dw for both devices (one constant
    fewer than a per-device e_dw: -2 + 1), unpack sets e_dw = q_dw x e_mat per device, q_dw at most
    1. With e_mat = 0.5 on the 8 Gen 2 and 0.4 on the 8 Gen 3 and q_dw = 0.25, e_dw = 0.125 / 0.1;
    a compute-bound depthwise kernel of W = 1e10 FLOP-equivalents at W8A8 takes
    W / (P_int8 x e_dw) = 1e10 / (22.73e12 x 0.125) = 3.520 ms on the 8 Gen 2 and
    1e10 / (45e12 x 0.1) = 2.222 ms on the 8 Gen 3, + t0 100 us each."""
    base = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss="cauchy", f_scale=0.2)
    form = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss="cauchy", f_scale=0.2, dwq=True)
    assert "e_dw" not in form.names() and form.shared() == ["q_dw"]
    assert base.n_constants() - form.n_constants() == 1
    names = form.names()
    x = np.zeros(2 * len(names) + len(form.shared()) + 1)
    for d, e in enumerate((0.5, 0.4)):
        x[d * len(names) + names.index("e_mat")] = np.log(e)
        x[d * len(names) + names.index("t0_int8")] = np.log(T0)
    x[2 * len(names)] = np.log(0.25)
    P, _ = H.unpack(x, form)
    assert P["e_dw"] == pytest.approx([0.125, 0.1])
    rows = pd.DataFrame([{"model_id": "dw", "opcost_profile": d, "precision": "int8", "runtime": "qnn_dlc",
                          "inference_time_ms": 1.0} for d in H.DEVS])
    feats = {("dw", d, "int8"): (np.array([1]), np.array([1e10]), np.array([1e-9]), np.array([1.0])) for d in H.DEVS}
    got = H.times(H.Rows(rows, feats), P, 1.0) * 1e3
    assert got == pytest.approx([1e10 / (22.73e12 * 0.125) * 1e3 + 0.1, 1e10 / (45e12 * 0.1) * 1e3 + 0.1], rel=1e-6)


def test_depthwise_fraction_fitted_within_its_bound():
    """Rows made with q_dw = 0.25 (model i: one compute-bound matrix kernel of (i + 1) x 1e10
    FLOP-equivalents and one depthwise kernel of 1e9 x (6 - i), e_mat 0.5 on both devices, t0 100 us)
    give back q_dw = 0.25 and e_mat = 0.5; q_dw stays at most 1."""
    rows, feats = [], {}
    for d in H.DEVS:
        peak = H.peak_int8(d)
        for i in range(6):
            w, wd = (i + 1) * 1e10, (6 - i) * 1e9
            t = w / (peak * E_MAT) + wd / (peak * E_MAT * 0.25) + T0
            rows.append({"model_id": f"m{i}", "opcost_profile": d, "precision": "int8", "runtime": "qnn_dlc",
                         "inference_time_ms": t * 1e3})
            feats[(f"m{i}", d, "int8")] = (np.array([0, 1]), np.array([w, wd]), np.array([1e-9, 1e-9]),
                                           np.array([1.0, 1.0]))
    rows = pd.DataFrame(rows)
    form = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss="cauchy", f_scale=0.2, dwq=True)
    P, _ = H.fit(H.Rows(rows, feats), form, r_fixed=0.25)
    assert P["q_dw"][0] == pytest.approx(0.25, rel=0.02) and P["q_dw"][0] == P["q_dw"][1] <= 1.0
    assert np.all(np.abs(P["e_mat"] / E_MAT - 1) < 0.02)


def _dwt_constants(form, e_mats, rate):
    """P of ``form`` (a ``Form.dwt`` form) with e_mat per device, t0_int8 = t0_fp16 = T0 and dwr_int8 = rate."""
    names = form.names()
    x = np.zeros(2 * len(names) + len(form.shared()) + 1)
    for d, e in enumerate(e_mats):
        x[d * len(names) + names.index("e_mat")] = np.log(e)
        x[d * len(names) + names.index("t0_int8")] = np.log(T0)
        x[d * len(names) + names.index("t0_fp16")] = np.log(T0)
    x[2 * len(names) + form.shared().index("dwr_int8")] = np.log(rate)
    return H.unpack(x, form)[0]


def test_depthwise_output_rate_closed_form():
    """Form.dwt "ewm" (the shipped form's): no e_dw and no q_dw, one dwr_int8 for both devices (the
    8 Gen 2's W8A8 rate; fp16 at 0.5 of it; the 8 Gen 3's x e_mat[1] P_int8[1] / (e_mat[0] P_int8[0])).
    With e_mat 0.5 / 0.4 and dwr_int8 = 1e10 outputs/s, a compute-bound depthwise kernel of
    4e6 output elements (its work column, ``features``' dw_unit "e") takes at W8A8 4e6 / 1e10 =
    0.4 ms on the 8 Gen 2 and 4e6 / (1e10 x 0.4 x 45 / (0.5 x 22.73)) = 4e6 / 1.5838e10 = 0.25256 ms on
    the 8 Gen 3; at fp16 twice that; + t0 100 us each."""
    form = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss="cauchy", f_scale=0.2, dwt="ewm")
    assert "e_dw" not in form.names() and form.shared() == ["dwr_int8"]
    assert H.Form("qnn", t0=True, dwt="eps").shared() == ["dwr_int8", "dwr_fp16"]
    P = _dwt_constants(form, (0.5, 0.4), 1e10)
    assert H.dw_int8_rates(P, "ewm") == pytest.approx([1e10, 1e10 * 0.4 * 45e12 / (0.5 * 22.73e12)])
    assert H.dw_int8_rates(P, "ews") == pytest.approx([1e10, 1e10])
    rows = pd.DataFrame([{"model_id": "dw", "opcost_profile": d, "precision": p, "runtime": "qnn_dlc",
                          "inference_time_ms": 1.0} for p in ("int8", "fp16") for d in H.DEVS])
    feats = {("dw", d, p): (np.array([1]), np.array([4e6]), np.array([1e-9]), np.array([1.0]))
             for d in H.DEVS for p in ("int8", "fp16")}
    got = H.times(H.Rows(rows, feats), P, 0.3, form.dwt) * 1e3
    assert got == pytest.approx([0.4 + 0.1, 0.25256 + 0.1, 0.8 + 0.1, 2 * 0.25256 + 0.1],
                                rel=1e-4)


def test_depthwise_output_rate_fitted():
    """Rows made with dwr_int8 = 2e10 outputs/s (model i: a compute-bound matrix kernel of (i + 1) x 1e10
    FLOP-equivalents, e_mat 0.5 on both devices, and a depthwise kernel of (i^2 + 1) x 1e6 outputs, its
    8 Gen 3 rate 2e10 x 45 / 22.73) give back dwr_int8 = 2e10 and e_mat = 0.5."""
    rows, feats = [], {}
    for d in H.DEVS:
        peak = H.peak_int8(d)
        for i in range(6):
            w, u = (i + 1) * 1e10, (i * i + 1) * 1e6
            t = w / (peak * E_MAT) + u / (2e10 * peak / H.peak_int8(H.DEVS[0])) + T0
            rows.append({"model_id": f"m{i}", "opcost_profile": d, "precision": "int8", "runtime": "qnn_dlc",
                         "inference_time_ms": t * 1e3})
            feats[(f"m{i}", d, "int8")] = (np.array([0, 1]), np.array([w, u]), np.array([1e-9, 1e-9]),
                                           np.array([1.0, 1.0]))
    form = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss="cauchy", f_scale=0.2, dwt="ewm")
    P, _ = H.fit(H.Rows(pd.DataFrame(rows), feats), form, r_fixed=0.25)
    assert P["dwr_int8"][0] == pytest.approx(2e10, rel=0.02)
    assert np.all(np.abs(P["e_mat"] / E_MAT - 1) < 0.02)
