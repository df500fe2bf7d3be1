"""The feature changes bench/hexagon_transfer.py's candidates make to the Hexagon NPU features
(hexagon_model.features: per kernel group, FLOP-equivalent work, datasheet seconds of the bytes to
DRAM, launches, datasheet seconds of the activation bytes kept on chip, fixed precision share).
Each function takes the fitted rows and the base features and returns changed ones; the held-out
models never enter (the caller passes the fitted rows only).

Needs pandas, scipy and onnx (bench only).
"""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import hexagon_model as H  # noqa: E402

# 8 MiB in the profiles' unit (1e6 B): the VTCM's "8 MB" read as 8 x 1024 x 1024 B, as Qualcomm's
# HTP code does (ggml-org/llama.cpp ggml/src/ggml-hexagon/htp/main.c, vtcm_alloc: "8 * 1024 * 1024;
# // 8MB default")
MIB_MB = 8 * 1024 * 1024 / 1e6


def conv_extra(rows, factor) -> dict:
    """(model, device, precision) -> per-kernel extra FLOPs when each Conv's work is multiplied by
    ``factor(attrs, w)`` (its ONNX attributes, its weight shape; 1 = unchanged), on the qnn plan
    of the datasheet profile with its on-chip budget, as hexagon_model.features builds it."""
    import onnx

    from analyzer.prediction.predict import predict

    out, attrs = {}, {}
    for key in sorted(set(zip(rows.model_id, rows.opcost_profile, rows.precision))):
        if key[0] not in attrs:
            g = onnx.load(os.path.join(H.FX, H.HEX_GRAPHS[key[0]]), load_external_data=False).graph
            attrs[key[0]] = {n.name: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
                             for n in g.node if n.op_type == "Conv"}
        rep = H.report(key[0])
        (pred,) = predict(rep, [H.datasheet(key[1], True)], precision=key[2], runtime="qnn")
        kt = pred.kernel_table
        extra = np.zeros(len(kt.op_class))
        for i, k in enumerate(kt.kernel_of):
            n = rep.nodes[i]
            if k < 0 or n.op != "Conv" or len(n.in_specs) < 2 or n.in_specs[1].shape is None:
                continue
            extra[k] += n.cost.mac_flops * (factor(attrs[key[0]].get(n.name, {}), n.in_specs[1].shape) - 1.0)
        out[key] = extra
    return out


def padded(p: int):
    """The work factor of a non-depthwise Conv whose per-group channels (in and out) are rounded up
    to a multiple of ``p`` (a matrix engine's tile depth); depthwise: 1."""
    def factor(a: dict, w) -> float:
        grp = a.get("group", 1)
        cout, cin = w[0] // grp, w[1]
        if cin == 1 and grp == w[0]:   # depthwise
            return 1.0
        return float((np.ceil(cin / p) * p / cin) * (np.ceil(cout / p) * p / cout))
    return factor


def dilated(a: dict, w) -> float:
    """The work factor of a Conv computed as a dense convolution over its dilated kernel extent
    (zeros inserted between the taps): prod_i (1 + d_i (k_i - 1)) / k_i over the spatial axes
    (d_i the ``dilations``, k_i the kernel size); 1 when undilated. E.g. 3x3 at dilation 2:
    (5 / 3)^2 = 2.78; at dilation 4: (9 / 3)^2 = 9."""
    ks = list(w[2:])
    ds = list(a.get("dilations", [1] * len(ks)))
    return float(np.prod([(1 + d * (k - 1)) / k for d, k in zip(ds, ks)]))


def budget_features(rows, onchip_mb: float, hvx: bool) -> dict:
    """hexagon_model.features (qnn, on chip) with the on-chip budget ``onchip_mb`` (1e6 B) in place
    of the profiles' ``npu_onchip_mb``."""
    return H.features(rows, "qnn", True, hvx, onchip_mb=onchip_mb)


def weight_seconds(rows) -> dict:
    """(model, device, precision) -> (per-kernel datasheet seconds of its weight bytes, the model's
    weight bytes): the library's weight bytes per launch at the precision (``accelerators.qnn``)
    x launches, / the datasheet BW."""
    from analyzer.prediction.predict import predict

    out = {}
    for key in sorted(set(zip(rows.model_id, rows.opcost_profile, rows.precision))):
        (pred,) = predict(H.report(key[0]), [H.datasheet(key[1], True)], precision=key[2], runtime="qnn")
        kt = pred.kernel_table
        wb = np.asarray(kt.onchip[1], float) * np.asarray(kt.runs, float)
        out[key] = (wb / float(kt.mem_bw), float(wb.sum()))
    return out


def streamed(rows, feats0: dict) -> dict:
    """The features with ``stream`` (the form before the library's spill rule): a kernel whose
    activation bytes per launch exceed the profile's on-chip budget keeps nothing on chip and
    streams all its bytes from DRAM; the others as in ``feats0`` (the library's rule,
    ``accelerators.qnn.onchip_bytes``: kept = min(activation bytes, budget))."""
    from analyzer.prediction.predict import predict

    out = {}
    for key, f in feats0.items():
        (pred,) = predict(H.report(key[0]), [H.datasheet(key[1], True)], precision=key[2], runtime="qnn")
        kt = pred.kernel_table
        bw = float(kt.mem_bw)
        act = np.maximum(np.asarray(kt.nbytes, float) - np.asarray(kt.onchip[1], float), 0.0)
        kept = np.asarray(kt.onchip[0], float)
        over = act > float(kt.onchip[2])
        m, o = f[2].copy(), f[4].copy()
        m[over] += kept[over] / bw
        o[over] = 0.0
        out[key] = (f[0], f[1], m, f[3], o, *f[5:])
    return out


def bn_requant(rows, feats0: dict) -> dict:
    """The features with ``bnq``: at int8, each kernel that holds a BatchNormalization and is not a
    convolution or matmul kernel gets two more elementwise kernels, no work, each moving that
    kernel's activation bytes, split as that kernel's are (the library's kept bytes on chip, the
    rest from DRAM)."""
    from analyzer.prediction.predict import predict

    out = dict(feats0)
    for key, f in feats0.items():
        if key[2] != "int8":
            continue
        rep = H.report(key[0])
        (pred,) = predict(rep, [H.datasheet(key[1], True)], precision=key[2], runtime="qnn")
        kt = pred.kernel_table
        bn = sorted({int(kt.kernel_of[i]) for i, nd in enumerate(rep.nodes)
                     if nd.op == "BatchNormalization" and kt.kernel_of[i] >= 0})
        bn = [k for k in bn if H.group_of(kt.op_class[k]) in ("ew", "move")]
        if not bn:
            continue
        bw = float(kt.mem_bw)
        act = np.maximum(np.asarray(kt.nbytes, float) - np.asarray(kt.onchip[1], float), 0.0)[bn]
        kept, runs = np.asarray(kt.onchip[0], float)[bn], np.asarray(kt.runs, float)[bn]
        add = (np.full(2 * len(bn), H.GROUPS.index("ew")), np.zeros(2 * len(bn)),
               np.tile((act - kept) / bw, 2), np.tile(runs, 2), np.tile(kept * runs / bw, 2), np.zeros(2 * len(bn)))
        out[key] = tuple(np.concatenate([a, b]) for a, b in zip(f, add))
    return out


_DW_WORK: dict = {}


def dw_units(rows, feats0: dict, unit: str) -> dict:
    """The features with each depthwise kernel's (group ``dw``) work replaced by its work unit
    (hexagon_model.dw_work: ``t`` taps x output elements, ``e`` output elements), for a
    ``Form.dwt`` line; the unit per key is computed once per unit."""
    from analyzer.prediction.predict import predict

    out = {}
    for key, f in feats0.items():
        if (key, unit) not in _DW_WORK:
            (pred,) = predict(H.report(key[0]), [H.datasheet(key[1], True)], precision=key[2], runtime="qnn")
            _DW_WORK[key, unit] = H.dw_work(H.report(key[0]), pred.kernel_table, unit)
        out[key] = (f[0], np.where(f[0] == H.GROUPS.index("dw"), _DW_WORK[key, unit], f[1]), *f[2:])
    return out


def transformed(train, feats0: dict, opt: dict):
    """The features with a candidate's ``pad`` or ``dil`` (more work: ``padded``, ``dilated``), ``mib``
    (the on-chip budget ``MIB_MB``) or ``wres`` (no weight bytes) applied;
    ``wpf``: (features without the weight bytes, {key: its weight seconds}); ``stream`` and ``bnq``
    (``streamed``, ``bn_requant``)."""
    if opt.get("stream"):
        return streamed(train, feats0)
    if opt.get("bnq"):
        return bn_requant(train, feats0)
    if opt.get("mib"):   # the on-chip budget 8 MiB (8,388,608 B) in place of the profiles' 8e6 B
        feats0 = budget_features(train, MIB_MB, hvx=True)
        if not opt.get("dil"):
            return feats0
    if opt.get("pad") or opt.get("dil"):
        extra = conv_extra(train, padded(opt["pad"]) if opt.get("pad") else dilated)
        return {k: (f[0], f[1] + extra[k], *f[2:]) for k, f in feats0.items()}
    if opt.get("wpf"):   # the kernels without their weights; the weights' seconds kept per key
        ws = weight_seconds(train)
        return {k: (f[0], f[1], np.maximum(f[2] - ws[k][0], 0.0), *f[3:]) for k, f in feats0.items()}, {
            k: float(ws[k][0].sum()) for k in feats0}
    if opt.get("wres"):
        ws = weight_seconds(train)
        return {k: (f[0], f[1], np.maximum(f[2] - ws[k][0], 0.0) if ws[k][1] <= opt["wres"] * 1e6 else f[2], *f[3:])
                for k, f in feats0.items()}
    return feats0
