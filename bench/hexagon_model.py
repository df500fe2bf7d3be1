"""The Hexagon NPU whole-model fit's data, model forms and least squares, shared by
bench/hexagon_forms.py (which form, by cross-validation on the fitted models) and
bench/fit_accelerators.py (the chosen form's fit, written as data, and its scores).

Per row (one model on one device at one precision):

    T = t0[precision] + sum_k runs_k * floor[g_k]
        + max(W_k / (P_int8 * s_prec * e[g_k]), (B_k + c_act * O_k) / (BW * e_bw[g_k]))
    s_prec = 1 (int8 = W8A8), r_fp16 (fp16): the fp16 MAC rate as a fraction of the int8 one
             (an ``hvx`` form's fp16 depthwise kernels: the fixed HVX_FP16_SHARE = 0.5 instead)

over the kernels ``k`` of a runtime's plan (opcost's lowering on the datasheet profile: ``W_k``
FLOP-equivalent work, ``B_k`` bytes at the row's precision to DRAM, ``O_k`` the activation bytes
kept on chip (0 but in an ``onchip`` form), ``runs_k`` launches), class groups
``g`` (matrix: GEMM, convolutions but depthwise, attention; depthwise convolutions; elementwise,
norms, pooling; data movement), ``P_int8`` and ``BW`` the profile's datasheet figures. Constants
per device, one shared ``r_fp16``. A form (``Form``) is: the runtime's plan (``kernel``: no
fusion; ``qnn``: QNN's fusion, analyzer/prediction/accelerators/qnn.py), whether ``B_k`` leaves
out the activations the NPU keeps on chip (``onchip``), ``t0`` (none, or one per device and
precision; ``t0q``: t0_int8 per device, one fp16 / W8A8 ratio for both), the floors (per group
and device, one ``kfix`` for every group and both devices, or none), the floor cap and the
largest e_bw.
One least squares on log(pred / measured) (scipy, trust region, two starts: memory- and
compute-bound; a form's ``loss``: plain squares or a robust one), deterministic.

Needs pandas and scipy (bench only).
"""

from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASUREMENTS = os.path.join(ROOT, "..", "shared", "measurements", "accelerators")   # the scripts' default folder
sys.path.insert(0, ROOT)

FX = os.path.join(ROOT, "tests", "fixtures")
# AI Hub model_id -> graph (batch 1, the row's input resolution; tests/fixtures/accel/export.py
# and export_hub.py make them)
HEX_GRAPHS = {
    "resnet18": "torch/resnet18.onnx", "resnet101": "accel/resnet101.onnx",
    "resnext50": "accel/resnext50_32x4d.onnx", "resnext101": "accel/resnext101_32x8d.onnx",
    "wideresnet50": "accel/wide_resnet50_2.onnx", "googlenet": "accel/googlenet.onnx",
    "inception_v3": "accel/inception_v3.onnx", "densenet121": "accel/densenet121.onnx",
    "mobilenet_v3_large": "accel/mobilenet_v3_large.onnx",
    "mobilenet_v3_small": "accel/mobilenet_v3_small.onnx", "mnasnet05": "accel/mnasnet0_5.onnx",
    "shufflenet_v2": "accel/shufflenet_v2_x0_5.onnx", "squeezenet1_1": "accel/squeezenet1_1.onnx",
    "regnet": "accel/regnet_x_3_2gf.onnx", "efficientnet_b4": "accel/efficientnet_b4.onnx",
    "efficientnet_v2_s": "accel/efficientnet_v2_s.onnx", "convnext_base": "accel/convnext_base.onnx",
    "swin_tiny": "accel/swin_t.onnx", "swin_small": "accel/swin_s.onnx", "swin_base": "accel/swin_b.onnx",
    # export_hub.py
    "fcn_resnet50": "accel/fcn_resnet50.onnx", "deeplabv3_resnet50": "accel/deeplabv3_resnet50.onnx",
    "resnet_2plus1d": "accel/r2plus1d_18.onnx", "resnet_3d": "accel/r3d_18.onnx",
    "resnet_mixed": "accel/mc3_18.onnx", "dla102x": "accel/dla102x.onnx", "levit": "accel/levit_128s.onnx",
    "efficientformer": "accel/efficientformer_l1.onnx", "efficientvit_b2_cls": "accel/efficientvit_b2.onnx",
    "efficientvit_l2_cls": "accel/efficientvit_l2.onnx",
    "mobile_vit": "accel/mobilevit_s.onnx", "segformer_base": "accel/segformer_b0.onnx",
    "video_mae": "accel/videomae_base.onnx", "huggingface_wavlm_base_plus": "accel/wavlm_base_plus.onnx",
    "detr_resnet50": "accel/detr_resnet50.onnx", "detr_resnet101": "accel/detr_resnet101.onnx",
    "conditional_detr_resnet50": "accel/conditional_detr_resnet50.onnx",
}
# never fitted on: one of each kind of network (residual, inception, mobile, efficientnet,
# shuffle, windowed transformer); tests/fixtures/accel/hexagon_heldout.csv holds their rows
HELD_OUT = {"resnet101", "inception_v3", "mobilenet_v3_large", "efficientnet_v2_s", "shufflenet_v2",
            "swin_small"}
# the kinds of network the leave-one-family-out cross-validation leaves out one at a time
FAMILIES = {"resnet18": "residual", "resnext50": "residual", "resnext101": "residual",
            "wideresnet50": "residual", "regnet": "residual", "dla102x": "residual",
            "fcn_resnet50": "segmentation cnn", "deeplabv3_resnet50": "segmentation cnn",
            "resnet_2plus1d": "video cnn", "resnet_3d": "video cnn", "resnet_mixed": "video cnn",
            "mnasnet05": "mobile", "mobilenet_v3_small": "mobile", "efficientnet_b4": "mobile",
            "densenet121": "concat", "googlenet": "concat", "squeezenet1_1": "concat",
            "convnext_base": "convnext",
            "swin_tiny": "transformer", "swin_base": "transformer", "video_mae": "transformer",
            "huggingface_wavlm_base_plus": "transformer",
            "levit": "hybrid", "efficientformer": "hybrid", "efficientvit_b2_cls": "hybrid",
            "efficientvit_l2_cls": "hybrid", "mobile_vit": "hybrid", "segformer_base": "hybrid",
            "detr_resnet50": "detr", "detr_resnet101": "detr", "conditional_detr_resnet50": "detr"}
# models whose network is mostly attention blocks (the transfer check fits on the others)
TRANSFORMERS = {m for m, f in FAMILIES.items() if f in ("transformer", "hybrid", "detr")} | {"swin_small"}
DEVS = ("hexagon-sd8gen2", "hexagon-sd8gen3")
# models with a graph whose rows are not fitted or scored, and why
EXCLUDED = {"deeplabv3_resnet50": "its only NPU rows (W8A8, qnn_dlc) are 253-305 s, 20000x the same backbone's "
                                  "FCN at W8A8 (11-15 ms): not a time any kernel model can give"}

MATRIX = {"gemm", "gemm_tn", "bgemm", "conv", "conv_1x1", "conv1d", "conv_grouped",
          "conv_batch_grouped", "attention"}
MOVE = {"movement", "view", "reorder", "gather", "other"}
GROUPS = ("mat", "dw", "ew", "move")
X0 = {"e_mat": 0.3, "e_dw": 0.05, "bw_mat": 0.5, "bw_ew": 0.5, "bw_move": 0.5, "floor_mat": 5e-6,
      "floor_ew": 2e-6, "floor_move": 1e-6, "t0_fp16": 1e-4, "t0_int8": 1e-4, "c_act": 0.5, "t0_q": 2.0,
      "kfix": 2e-6, "d_fp16": 0.0, "d_int8": 0.0, "q_dw": 0.5, "dwr_int8": 1e11, "dwr_fp16": 5e10}
# the signed constants (``Form.deploy``'s offsets) -> the seconds one unit of their fitted
# coordinate stands for: they are fitted linearly from 0, not in log space
SIGNED = {"d_fp16": 1e-4, "d_int8": 1e-4}
# AI Hub's deployment runtime of a row -> the sign of its half of ``Form.deploy``'s offset
DEPLOY_SIGN = {"qnn_dlc": 1.0, "tflite": -1.0}
# the per-inference fixed cost is at least 1 us, a shared per-kernel one at least 10 ns (bounds that
# keep them in log space)
T0_MIN = 1e-6
KFIX_MIN = 1e-8


@dataclasses.dataclass(frozen=True)
class Form:
    """A model form: ``runtime`` (kernel or qnn), ``t0`` (a per-inference cost per device and
    precision), ``floors`` (per-kernel floors per group), ``fcap`` (their cap, s), ``bwmax``
    (the largest e_bw: 1 = at most the datasheet bandwidth; inf = unbounded, an e_bw above 1
    standing in for traffic kept on chip), ``loss`` and ``f_scale`` (scipy least_squares' loss
    on the log residual z = log(pred / measured): ``linear`` is z^2; ``cauchy`` is
    f^2 log(1 + (z / f)^2), which weighs a row |z| >> f like log|z| rather than z^2, so that a
    few rows no kernel sum of this kind represents (SegFormer-B0 fp16 at 10x its W8A8 time,
    VideoMAE's QNN rows at 3x its TFLite ones, FCN-ResNet50 at 4x its FLOPs' share) do not set
    the constants of all the others; ``f_scale`` = f in log units, not fitted); ``onchip``: the
    profile's NPU on-chip budget (``npu_onchip_mb``) splits the bytes: a kernel whose activation
    bytes fit keeps them on chip (``O_k``, at ``c_act`` per device of a DRAM byte's time, at most
    1), only its weights reach DRAM (analyzer/prediction/accelerators/qnn.py); else every byte
    from DRAM; ``hvx``: fp16 depthwise kernels compute at the HVX vector unit's fixed share of the
    int8 rate (``qnn.HVX_FP16_SHARE``), not at the fitted r_fp16; ``t0q``: the fixed cost's device
    factor shared by both precisions (t0_int8 per device, t0_fp16 = t0_q x t0_int8 with one t0_q
    for both devices); ``kfix``: one per-kernel fixed cost (``kfix``, the floor of every group)
    shared by both devices (with ``floors`` False); ``deploy``: a per-inference offset d between
    AI Hub's deployment runtimes, shared by both devices: a row deployed as a QNN DLC
    (``qnn_dlc``) takes + d / 2, one as TFLite with the QNN delegate (``tflite``) - d / 2, so
    that the time without it is their mean (``int8``: d_int8 on W8A8 rows only; ``both``: d_fp16
    and d_int8; signed seconds); ``dwm``: depthwise kernels compute at their device's e_mat (no
    e_dw of their own: the whole-model rows do not identify it, a depthwise kernel being mostly
    memory-bound); ``dwq``: depthwise kernels at q_dw x their device's e_mat, one q_dw (at most 1)
    shared by both devices (no e_dw of their own; ``dwm`` is its q_dw = 1); ``dwt``: a depthwise
    kernel's compute time is its work unit over a rate of its own (``dw_seconds``; no e_dw, no
    q_dw), three letters: the unit (``t``: kernel-window taps x output elements, the depthwise
    Conv's MACs; ``e``: its output elements), the precision (``p``: a fitted rate per precision,
    ``dwr_int8`` and ``dwr_fp16``; ``w``: ``dwr_int8``, fp16 at ``qnn.HVX_FP16_SHARE`` of it, the
    HVX lane widths) and the device (``s``: the same rate on both devices; ``m``: the fitted rate
    is the 8 Gen 2's, the 8 Gen 3's that x the ratio of the devices' fitted matrix rates
    e_mat x P_int8); the features' work column then holds the unit (``features``' ``dw_unit``)."""
    runtime: str
    t0: bool
    floors: bool = True
    fcap: float = np.inf
    bwmax: float = np.inf
    loss: str = "linear"
    f_scale: float = 1.0
    onchip: bool = False
    hvx: bool = False
    t0q: bool = False
    kfix: bool = False
    deploy: str = ""
    dwm: bool = False
    dwq: bool = False
    dwt: str = ""

    def names(self) -> list[str]:
        """The constants fitted per device."""
        out = ["e_mat", *([] if self.dwm or self.dwq or self.dwt else ["e_dw"]), "bw_mat", "bw_ew", "bw_move"]
        t0 = (["t0_int8"] if self.t0q else ["t0_fp16", "t0_int8"]) if self.t0 else []
        return out + (["floor_mat", "floor_ew", "floor_move"] if self.floors else []) + t0 + (
            ["c_act"] if self.onchip else [])

    def shared(self) -> list[str]:
        """The constants shared by both devices (r_fp16 aside)."""
        return (["t0_q"] if self.t0 and self.t0q else []) + (["kfix"] if self.kfix else []) + (
            {"": [], "int8": ["d_int8"], "both": ["d_fp16", "d_int8"]}[self.deploy]) + (
            ["q_dw"] if self.dwq else []) + (
            (["dwr_int8"] + (["dwr_fp16"] if self.dwt[1] == "p" else [])) if self.dwt else [])

    def n_constants(self) -> int:
        return 2 * len(self.names()) + len(self.shared()) + 1


def group_of(cls: str) -> str:
    return "mat" if cls in MATRIX else "dw" if cls == "conv_dw" else "move" if cls in MOVE else "ew"


# ----------------------------------------------------------------------------- data

_REPORTS: dict = {}


def report(model_id: str):
    import analyzer

    path = os.path.join(FX, HEX_GRAPHS[model_id])
    if path not in _REPORTS:
        _REPORTS[path] = analyzer.analyze(path)
    return _REPORTS[path]


def datasheet(pid: str, onchip: bool = False, onchip_mb: float | None = None):
    """The profile with the datasheet constants (e_compute = e_bw = 1, no floors); ``onchip``:
    with its NPU on-chip budget (``npu_onchip_mb``: the qnn runtime keeps the activations that
    fit on chip; ``onchip_mb``: this budget instead), else without (every byte charged to DRAM)."""
    import hardware_db

    prof = hardware_db.get(pid)
    budget = (onchip_mb or prof.npu_onchip_mb) if onchip else None
    return dataclasses.replace(prof, family="datasheet", npu_onchip_mb=budget)


def peak_int8(pid: str) -> float:
    import hardware_db

    return hardware_db.get(pid).peak_flops("matrix", "int8")


def fitted_rows(rows):
    """The rows of ``hexagon_rows`` the fit may use: every model but the ``HELD_OUT`` ones,
    re-indexed from 0."""
    return rows[~rows.model_id.isin(HELD_OUT)].reset_index(drop=True)


def hexagon_rows(mdir: str, precisions: tuple[str, ...] = ("fp16", "int8")):
    """AI Hub's NPU rows (runtimes tflite and qnn_dlc, ``precisions``: fp16 and W8A8 unless named;
    ``w8a16`` the W8A16 rows) of the models with a graph,
    where every layer ran on the NPU (``layers_npu == layers_total``: the video networks' TFLite
    fp16 rows put 4-7 layers on the CPU and are 2-12x their QNN rows), EXCLUDED left out."""
    import pandas as pd

    hx = pd.read_csv(os.path.join(mdir, "aihub_hexagon.csv"))
    hx = hx[(hx.primary_compute_unit == "NPU") & hx.runtime.isin(["tflite", "qnn_dlc"])
            & hx.precision.isin(list(precisions)) & hx.model_id.isin(list(HEX_GRAPHS))
            & (hx.layers_npu == hx.layers_total) & ~hx.model_id.isin(list(EXCLUDED))]
    hx = hx[[os.path.exists(os.path.join(FX, HEX_GRAPHS[m])) for m in hx.model_id]]
    return hx[["model_id", "opcost_profile", "precision", "runtime", "inference_time_ms"]].reset_index(drop=True)


def features(rows, runtime: str, onchip: bool = False, hvx: bool = False, onchip_mb: float | None = None,
             dw_unit: str = "") -> dict:
    """(model, device, precision) -> per-kernel arrays (group index, FLOP-equivalent work,
    datasheet memory seconds of the bytes to DRAM, launches, datasheet seconds of the activation
    bytes kept on chip) of ``runtime``'s plan on the datasheet profile (``onchip``: with its NPU
    on-chip budget, ``Form.onchip``, or ``onchip_mb`` (1e6 B) in its place; else nothing kept) and
    the fixed precision share of each
    kernel's rate (``Form.hvx``: the fp16 depthwise kernels'; 0: the fitted r_fp16 or 1);
    ``dw_unit`` (``Form.dwt``'s first letter): the depthwise kernels' work is ``dw_work``'s unit."""
    from analyzer.prediction.accelerators import qnn
    from analyzer.prediction.predict import predict

    out = {}
    for key in sorted(set(zip(rows.model_id, rows.opcost_profile, rows.precision))):
        (pred,) = predict(report(key[0]), [datasheet(key[1], onchip, onchip_mb)], precision=key[2], runtime=runtime)
        kt = pred.kernel_table
        kept = np.zeros(len(kt.op_class)) if kt.onchip is None else np.asarray(kt.onchip[0], float)
        fix = [qnn.HVX_FP16_SHARE if hvx and c == "conv_dw" and key[2] == "fp16" else 0.0 for c in kt.op_class]
        work = np.asarray(kt.compute) * np.asarray(kt.matrix_peak)
        if dw_unit:
            work = np.where(np.array(kt.op_class) == "conv_dw", dw_work(report(key[0]), kt, dw_unit), work)
        out[key] = (np.array([GROUPS.index(group_of(c)) for c in kt.op_class]),
                    work, np.asarray(kt.memory, float),
                    np.asarray(kt.runs, float), kept * np.asarray(kt.runs, float) / float(kt.mem_bw), np.array(fix))
    return out


def dw_work(rep, kt, unit: str) -> np.ndarray:
    """[K] per kernel of ``kt`` (a prediction's kernel table of report ``rep``), over its launches:
    the work units of the Conv nodes it holds, ``t``: taps x output elements (the Conv's MACs,
    mac_flops / 2: for a depthwise Conv k_h x k_w per output element), ``e``: output elements;
    e.g. a 3x3 depthwise Conv writing 1 x 32 x 112 x 112: t = 9 x 401,408 = 3,612,672, e = 401,408."""
    out = np.zeros(len(kt.op_class))
    for i, k in enumerate(kt.kernel_of):
        nd = rep.nodes[i]
        if k < 0 or nd.op != "Conv":
            continue
        out[k] += nd.cost.mac_flops / 2 if unit == "t" else float(np.prod(nd.out_specs[0].shape))
    return out * np.asarray(kt.runs, float)


def largest_move_dram(feats: dict) -> int:
    """The most bytes per launch a data-movement kernel (group ``move``) of ``features`` sends to
    DRAM (its weights and its activations over the on-chip budget): its datasheet memory seconds x
    the profile's bandwidth, rounded to a byte (the library's ``qnn.FITTED_MOVE_DRAM_B``)."""
    import hardware_db

    mv = GROUPS.index("move")
    return max((int(round(float(f[2][f[0] == mv].max()) * hardware_db.get(k[1]).mem_bw_gbs * 1e9))
                for k, f in feats.items() if (f[0] == mv).any()), default=0)


class Rows:
    """The rows' kernels concatenated, for vectorised model times: one copy per distinct
    (model, device, precision) key (``K`` = key of each kernel; rows of two runtimes share it),
    identical kernels of a key merged (``N`` = how many)."""

    def __init__(self, rows, feats):
        keys = list(zip(rows.model_id, rows.opcost_profile, rows.precision))
        uniq = sorted(set(keys))
        self.row_key = np.array([uniq.index(k) for k in keys])
        G, W, M, R, O, S, K, N = [], [], [], [], [], [], [], []
        for i, k in enumerate(uniq):
            n = len(feats[k][0])   # (columns an older caller leaves out: 0)
            f = (*feats[k], *[np.zeros(n)] * (6 - len(feats[k])))
            tab = np.unique(np.stack([*f, np.full(n, i)], axis=1), axis=0, return_counts=True)
            G.append(tab[0][:, 0]), W.append(tab[0][:, 1]), M.append(tab[0][:, 2])
            R.append(tab[0][:, 3] * tab[1]), O.append(tab[0][:, 4]), S.append(tab[0][:, 5])
            K.append(tab[0][:, 6]), N.append(tab[1])
        self.G = np.concatenate(G).astype(int)
        self.W, self.M, self.R = np.concatenate(W), np.concatenate(M), np.concatenate(R)
        self.O, self.S = np.concatenate(O), np.concatenate(S)
        self.N = np.concatenate(N).astype(float)
        self.K = np.concatenate(K).astype(int)
        self.n_keys = len(uniq)
        self.key_dev = np.array([DEVS.index(k[1]) for k in uniq])
        self.key_fp16 = np.array([k[2] == "fp16" for k in uniq])
        self.dev = self.key_dev[self.row_key]
        self.fp16 = self.key_fp16[self.row_key]
        self.meas = rows.inference_time_ms.values * 1e-3
        # +1 / -1: the row's half of a deployment offset (DEPLOY_SIGN); 0: none (the mean)
        self.sign = (np.array([DEPLOY_SIGN.get(rt, 0.0) for rt in rows.runtime]) if "runtime" in rows
                     else np.zeros(len(rows)))
        self.peak = np.array([peak_int8(d) for d in DEVS])[self.key_dev[self.K]]


# ----------------------------------------------------------------------------- model and fit


def unpack(x, form: Form) -> tuple[dict, float]:
    """({constant: [8 Gen 2, 8 Gen 3]}, r_fp16) of a parameter vector (log space: the per-device
    constants of each device, the shared ones, r_fp16); constants a form leaves out are 0, those
    it derives are filled in (``t0q``: t0_fp16; ``kfix``: every group's floor; ``dwm``, ``dwq``, ``dwt``: e_dw)."""
    names = form.names()
    P = {k: np.zeros(2) for k in X0}
    for d in range(2):
        for j, k in enumerate(names):
            P[k][d] = np.exp(x[d * len(names) + j])
    for j, k in enumerate(form.shared()):
        P[k][:] = x[2 * len(names) + j] * SIGNED[k] if k in SIGNED else np.exp(x[2 * len(names) + j])
    if form.t0q:
        P["t0_fp16"] = P["t0_q"] * P["t0_int8"]
    if form.kfix:
        P.update({f: P["kfix"].copy() for f in ("floor_mat", "floor_ew", "floor_move")})
    if form.dwm or form.dwt:   # (``dwt``: e_dw unused, its kernels' compute is ``dw_seconds``)
        P["e_dw"] = P["e_mat"].copy()
    if form.dwq:
        P["e_dw"] = P["q_dw"] * P["e_mat"]
    return P, float(np.exp(x[-1]))


def compute_seconds(D: Rows, P: dict, r: float, dwt: str = "", e_scale=1.0) -> np.ndarray:
    """Per kernel of ``D``, its compute seconds per launch: W / (P_int8 x s_prec x e x ``e_scale``)
    (e: e_dw for a depthwise kernel, else e_mat), a ``Form.dwt`` form's depthwise kernels
    ``dw_seconds``."""
    d, G = D.key_dev[D.K], D.G
    e = np.where(G == 1, P["e_dw"][d], P["e_mat"][d]) * e_scale
    s_prec = np.where(D.S > 0, D.S, np.where(D.key_fp16[D.K], r, 1.0))
    t = D.W / (D.peak * s_prec * e)
    return np.where(G == 1, dw_seconds(D, P, dwt), t) if dwt else t


def dw_seconds(D: Rows, P: dict, dwt: str) -> np.ndarray:
    """Per kernel of ``D`` (a ``Form.dwt`` form; its work column the depthwise unit, ``features``'
    ``dw_unit``): unit / rate, rate = dwr_int8 at W8A8, dwr_fp16 (``p``) or HVX_FP16_SHARE x
    dwr_int8 (``w``) at fp16 (a ``D.dw_share`` per kernel, where set: that x dwr_int8), on the
    8 Gen 3 x e_mat[1] P_int8[1] / (e_mat[0] P_int8[0]) (``m``);
    e.g. ``tws``: a 3x3 depthwise Conv of 32 x 112 x 112 outputs (3,612,672 taps) at fp16 with
    dwr_int8 = 2e11 taps/s takes 3,612,672 / (0.5 x 2e11) = 36.1 us on either device."""
    from analyzer.prediction.accelerators.qnn import HVX_FP16_SHARE

    d, fp = D.key_dev[D.K], D.key_fp16[D.K]
    fp16_rate = P["dwr_fp16"][0] if dwt[1] == "p" else HVX_FP16_SHARE * P["dwr_int8"][0]
    rate = np.where(fp, fp16_rate, P["dwr_int8"][0])
    if getattr(D, "dw_share", None) is not None:   # W8A16 rows (bench/hexagon_w8a16.py): share x the W8A8 rate
        rate = D.dw_share * P["dwr_int8"][0]
    if dwt[2] == "m":
        rate = rate * P["e_mat"][d] * D.peak / (P["e_mat"][0] * peak_int8(DEVS[0]))
    return np.divide(D.W, rate, out=np.full(len(D.W), np.inf), where=rate > 0)   # (no rate: unbounded time)


def dw_int8_rates(P: dict, dwt: str) -> np.ndarray:
    """[8 Gen 2, 8 Gen 3] a ``Form.dwt`` form's W8A8 depthwise rate per device (units/s, as
    ``dw_seconds`` prices an int8 kernel): dwr_int8 on both (``s``), or on the 8 Gen 3 x
    e_mat[1] P_int8[1] / (e_mat[0] P_int8[0]) (``m``)."""
    peak = np.array([peak_int8(dv) for dv in DEVS])
    r = np.full(2, float(P["dwr_int8"][0]))
    return r * P["e_mat"] * peak / (P["e_mat"][0] * peak[0]) if dwt[2] == "m" else r


def times(D: Rows, P: dict, r: float, dwt: str = "") -> np.ndarray:
    """Predicted seconds of each row of ``D`` with constants ``P`` and ``r_fp16`` (a deployment
    offset ``Form.deploy``: + sign x d_prec / 2; at least 0.1 us, the log residual needs a
    positive time; ``dwt``: the form's ``Form.dwt``)."""
    d, G = D.key_dev[D.K], D.G
    bw = np.choose(G, [P["bw_mat"][d], P["bw_mat"][d], P["bw_ew"][d], P["bw_move"][d]])
    floor = np.choose(G, [P["floor_mat"][d], P["floor_mat"][d], P["floor_ew"][d], P["floor_move"][d]])
    t = D.R * floor + D.N * np.maximum(compute_seconds(D, P, r, dwt), (D.M + P["c_act"][d] * D.O) / bw)
    per_key = (np.bincount(D.K, weights=t, minlength=D.n_keys)
               + np.where(D.key_fp16, P["t0_fp16"][D.key_dev], P["t0_int8"][D.key_dev]))
    off = D.sign * np.where(D.fp16, P["d_fp16"][D.dev], P["d_int8"][D.dev]) / 2
    return np.maximum(per_key[D.row_key] + off, 1e-7)


def fit(D: Rows, form: Form, r_fixed: float | None = None) -> tuple[dict, float]:
    """Least squares (``form.loss``) on log(pred / measured) over ``D`` (a weak prior, 0.01 per
    log unit, keeps constants the rows do not identify near their starts); ``r_fixed``: r_fp16
    not fitted."""
    names = [k for _ in range(2) for k in form.names()] + form.shared()
    x0 = np.array([0.0 if k in SIGNED else np.log(X0[k]) for k in names] + [np.log(r_fixed or 0.25)])
    cap = {"e_": 0.0, "bw": np.log(form.bwmax), "fl": np.log(form.fcap), "t0": np.inf, "c_": 0.0, "kf": np.inf,
           "d_": np.inf, "q_": 0.0, "dw": np.inf}
    up = np.array([cap[k[:2]] for k in names] + [0.0])
    lo = np.array([np.log(T0_MIN) if k.startswith("t0") else np.log(KFIX_MIN) if k == "kfix" else -np.inf
                   for k in names] + [-np.inf])
    if r_fixed is not None:   # pinned: a bound of width 1e-9 around it
        lo[-1], up[-1] = np.log(r_fixed) - 1e-9, np.log(r_fixed) + 1e-9

    def res(x):
        P, r = unpack(x, form)
        return np.concatenate([np.log(times(D, P, r, form.dwt) / D.meas), 0.01 * (x - x0)])

    return unpack(solve(res, x0, lo, up, names, form), form)


def solve(res, x0, lo, up, names, form: Form) -> np.ndarray:
    """The least-squares (``form.loss``, ``form.f_scale``) solution of residuals ``res`` within
    ``lo``..``up``: the better of two starts, ``x0`` and ``x0`` with every bandwidth (``bw_*``)
    10x (the bandwidths' valley is flat at small sizes)."""
    from scipy.optimize import least_squares

    best = None
    for bw_scale in (1.0, 10.0):
        start = x0 + np.array([np.log(bw_scale) if k.startswith("bw_") else 0.0 for k in names] + [0.0])
        sol = least_squares(res, np.clip(start, lo + 1e-10, up - 1e-10), bounds=(lo, up), method="trf",
                            loss=form.loss, f_scale=form.f_scale)
        best = sol if best is None or sol.cost < best.cost else best
    return best.x


def cv(rows, feats, form: Form, key) -> np.ndarray:
    """Each row of ``rows`` predicted (seconds) by a fit on the rows whose ``key(model_id)``
    differs from its own (key = the model: leave one model out; FAMILIES.get: one family)."""
    keys = np.array([key(m) for m in rows.model_id])
    pred = np.zeros(len(rows))
    for k in sorted(set(keys)):
        out = keys == k
        P, r = fit(Rows(rows[~out], feats), form)
        pred[out] = times(Rows(rows[out], feats), P, r, form.dwt)
    return pred


def stats(pred, meas) -> dict:
    """rows, MAPE %, largest APE %, geometric-mean bias % of predictions against measurements."""
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    if len(pred) == 0:
        return {"rows": 0}
    ape = np.abs(pred / meas - 1) * 100
    return {"rows": int(len(pred)), "mape": round(float(ape.mean()), 1),
            "max_ape": round(float(ape.max()), 1),
            "bias": round(float((np.exp(np.mean(np.log(pred / meas))) - 1) * 100), 1)}
