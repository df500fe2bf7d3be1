"""The ``qnn`` runtime: Qualcomm AI Engine Direct (QNN) on the Hexagon NPU's HTP backend, the
default runtime of the Hexagon profiles.

Time predicted (``TIME_DEFINITION``): one inference of the compiled QNN graph on the device as
Qualcomm AI Hub's profile jobs report it (``estimated_inference_time``: the model run several
times in a tight loop; model load and graph finalization excluded).  AI Hub's TFLite rows
(TFLite + the QNN delegate, the whole graph delegated to the HTP) time the same kernels.

Fusion (policy ``qnn``, ``fusion.py``): the onnxruntime patterns (a convolution absorbs its
BatchNormalization and the activation after it; MatMul + bias Add; decomposed layer norms and
GELUs are one kernel each), and then ``join_epilogues``: a convolution or matmul kernel also
absorbs the elementwise Add or Mul that is its output's only reader and whose other input is
another layer's tensor (a residual add, a squeeze-excitation scale) with the activation after
it, and a SiLU written as ``x * Sigmoid(x)``; a Concat runs no kernel (``ELIDED``: its
producers write their outputs into its buffer at their offsets, so its copy is never made) where
a kernel produces each of its non-constant inputs; a Concat of graph inputs copies them.  Sources: QNN's op definitions carry the fused
forms (Conv2d with a fused ReLU/ReLU6 by the converter; ElementWiseAdd with a fused
activation), and onnxruntime's QNN execution provider translates ``Conv -> Relu/Clip`` into one
QNN Conv (microsoft/onnxruntime pull request 21537, ``IQnnNodeGroup``); the residual join is
the HTP graph optimizer's Conv + Add fold (QNN HTP op package optimization rules,
docs.qualcomm.com 80-63442-10 "relu example": rules that "convert, split and optimize graph
around relu").  The Concat elision is not in Qualcomm's public documentation found: it is
the usual NPU compiler practice (Huawei CANN's graph engine, "Concat No Task": the inputs are
placed contiguously and the concat runs no task), kept because the cross-validation below
chose it.  The form (these joins, the fixed costs below) was chosen by
leave-one-model-out and leave-one-family-out cross-validation on the fitted AI Hub models
(bench/hexagon_forms.py, bench/hexagon_variants.py; constants by bench/fit_accelerators.py, a least squares with a Cauchy
loss on log(predicted / measured), so that the few rows no kernel sum represents do not set
the others' constants; docs/accuracy.md).

Activations on chip (``onchip_bytes``): the HTP keeps a kernel's activations in its VTCM (the
tightly-coupled scratch memory next to its vector and matrix units) when they fit.  Per kernel,
``weight bytes`` are the bytes of its constant inputs (initializers, at the prediction's
precision) and ``activation bytes = bytes - weight bytes`` (what it reads of other kernels'
outputs and writes; the tensors passed inside a fused kernel are already out of ``bytes``).  Per
launch, a kernel keeps ``kept = min(activation bytes, budget)`` bytes on chip (``budget`` =
``npu_onchip_mb`` x 1e6 B) and its DRAM bytes are ``bytes - kept``: a kernel whose activations
fit keeps them all (only its weight bytes reach DRAM); a larger one keeps the budget's worth on
chip and streams the rest, ``activation bytes - budget``, and its weights from DRAM (a tiled
kernel whose tiles stay in the VTCM while the excess spills; chosen over streaming all of a
larger kernel's activations by the cross-validation below, bench/hexagon_transfer.py's ``int8``
rule).  Weights always come from DRAM (a whole-model weight set is larger than the VTCM, and QNN streams
weight tiles per layer).  The budget is a profile figure with its source (8 MB = 8e6 B on the
Snapdragon 8 Gen 2 and 8 Gen 3: an effective budget 4.6 % under the VTCM's 8 MiB, chosen by
cross-validation, the profiles' field source says why); a profile without one keeps nothing on
chip, and the prediction says so.

Depthwise convolutions at fp16 (``hvx_depthwise``): assumed to run on the HTP's HVX vector unit,
not on its matrix engine (HMX; not documented for QNN in the sources found), so the matrix
engine's fp16 figure (``matrix_tflops.fp16``, a fitted fraction of the int8 one) does not set
their rate: an HVX register is 1024 bits (128-byte mode, the default from HVX v66 on: the Rust
``core::arch::hexagon::v128`` documentation after Qualcomm's Hexagon HVX Programmer's Reference
Manual, 80-N2040-61), 128 int8 or 64 fp16 lanes, so an fp16 depthwise kernel computes at
``HVX_FP16_SHARE`` = 0.5 of the int8 peak (a fixed ratio from the lane widths, not fitted).
Chosen by the same cross-validation as the rest of the form.  Where the family states
``qnn_dw_output_rate`` (R, output elements per second at W8A8; ``dw_output_rate``), a depthwise
kernel's compute time is instead its output elements / (R x share), share 1 at int8,
``HVX_FP16_SHARE`` at fp16, ``qnn_w8a16_share`` at w8a16, whatever its window: a cost per output
element, fitted on the whole-model rows (one R on the 8 Gen 2, the 8 Gen 3's by the devices'
fitted matrix-rate ratio; chosen over a per-tap rate and q x the matrix efficiency by
bench/hexagon_transfer.py's rule; no HTP depthwise rate is published).

Per inference, the profile family's ``run_fixed_s`` scalar (``efficiency/constants.py``) is
added once: the graph-execute cost outside the accelerator's kernels (QNN's HTP profile
events ``GRAPH_EXECUTE_HOST_RPC_TIME`` / ``HTP_RPC_TIME`` / ``RESOURCE_POWER_UP_TIME`` /
``VTCM_ACQUIRE_TIME``, QnnHtpProfile.h, Qualcomm AI Runtime SDK API reference); its size is
fitted per device, with one fp16 / W8A8 ratio for both Hexagon devices.  Per kernel, the
family's class floor (``floor_s``, one fitted figure for every class and both Hexagon devices:
a per-layer dispatch on the NPU, the same seconds on each chip since no NPU clock is sourced)
is added to each launch, as the library's kernel time does for any fitted family.

Deployment (``DEPLOYMENTS``): AI Hub deploys a model on the NPU through two runtimes that time
the same kernels differently per inference: a QNN DLC run by QAIRT (``qnn-dlc``) and TFLite with
the QNN delegate (``qnn-tflite``).  The family's ``qnn_deploy_s`` / ``qnn_deploy_int8_s``
scalars are d, the per-inference difference qnn_dlc - tflite of an fp16 / W8A8 graph (fitted
with the family's other constants, one figure for both Hexagon devices): ``qnn-dlc`` adds d / 2
to the per-inference cost, ``qnn-tflite`` takes d / 2 off, and ``qnn`` adds nothing: it
predicts the mean of the two deployments (the constants are fitted on rows of both).

Precision (``precision_rule``): without a caller's precision, a graph that quantizes its
activations (QDQ / QOperator) is predicted at int8 (W8A8) and one with fp32 tensors at fp16:
the HTP's float path computes in fp16 (AI Hub's "float" rows, the fp16 rows the constants are
fitted on, run in FP16 on the NPU: ../shared/measurements/accelerators/README.md), and no fp32
figure of the HTP is sourced; a graph of other dtypes keeps its own.  A precision the caller
names (``--precision fp32`` included) is kept.  ``w8a16`` (int8 weights at 1 B, int16 activations
at 2 B: QNN's ``--act_bw 16 --weight_bw 8``, which the HTP runs as quantized 16-bit activations,
"A16", between A8 and FP16 in cost in Qualcomm's HTP network-design guidance; no rate is
published) runs its kernels at the family's ``qnn_w8a16_share`` x the int8 matrix peak
(``w8a16_rate``: one fraction per family, both Hexagon devices, fitted on AI Hub's W8A16 rows by
bench/hexagon_w8a16.py with every other constant as fitted on the fp16 and W8A8 rows) and takes
the fp16 graph's per-inference cost (``run_fixed_s``; the form with the W8A8 graph's cost and
offset cross-validated worse on those rows).

Placement (the CPU fallback of ops the HTP does not run, the same rules for ``qnn``, ``qnn-dlc``
and ``qnn-tflite``): ``qnn_fallback.py``.
"""

from __future__ import annotations

import numpy as np

from analyzer.ir.ops import VIEW, facts
from analyzer.prediction.accelerators import has_floating, quantizes_activations

NAME = "qnn"
# runtime name -> the share of the deployment offset d it adds once per inference (module
# docstring): qnn-dlc = a QNN DLC on QAIRT, qnn-tflite = TFLite + the QNN delegate, qnn their mean
DEPLOYMENTS = {NAME: 0.0, "qnn-dlc": 0.5, "qnn-tflite": -0.5}
DEPLOYMENT_NAMES = {NAME: "the mean of AI Hub's QNN DLC and TFLite + QNN delegate deployments",
                    "qnn-dlc": "deployed as a QNN DLC (QAIRT)", "qnn-tflite": "deployed as TFLite with the QNN delegate"}
TIME_DEFINITION = ("Qualcomm AI Hub profile job estimated_inference_time: one inference of the "
                   "compiled QNN graph on the Hexagon NPU (HTP), the model run several times in a "
                   "tight loop; load and graph finalization excluded; a fixed per-inference "
                   "graph-execute cost (RPC, power-up, VTCM acquire) added once; ops the HTP does not run "
                   "on the phone's CPU, with their switches; the mean of AI Hub's "
                   "QNN DLC and TFLite + QNN delegate deployments (qnn-dlc, qnn-tflite name one)")
TIME_DEFINITION_DLC = ("as qnn, the model deployed as a QNN DLC run by QAIRT (AI Hub's qnn_dlc): the "
                       "per-inference cost + half the fitted difference between the two deployments")
TIME_DEFINITION_TFLITE = ("as qnn, the model deployed as TFLite with the QNN delegate (AI Hub's tflite): the "
                          "per-inference cost - half the fitted difference between the two deployments")

# ops that run no kernel of their own: a concatenation's producers write their results into its
# output buffer at their offsets (module docstring)
ELIDED = frozenset({"Concat"})
_MATRIX = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm"})
_JOIN = frozenset({"Add", "Mul"})
_ACTIVATIONS = frozenset({"Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish",
                          "Tanh", "Elu", "Gelu", "Softplus"})


def precision_rule(nodes) -> tuple[str | None, str]:
    """(precision, note) QNN's HTP runs ``nodes`` (``NodeCost``s) at when the caller names none
    (module docstring, "Precision")."""
    if quantizes_activations(nodes):
        return "int8", "qnn: the graph quantizes its activations: predicted W8A8 (int8) on the NPU"
    if has_floating(nodes, "float32"):
        return "fp16", ("qnn: fp32 tensors predicted in fp16 (the HTP computes floating point in fp16, as AI Hub's "
                        "float rows run); pass a precision to override")
    return None, ""


def run_fixed_s(runtime: str, arrays: dict, precision: str, note: list[str] | None = None) -> float:
    """Seconds a ``qnn`` runtime (``DEPLOYMENTS``) adds once per inference: the family's
    ``run_fixed_int8_s`` (an int8 graph) or ``run_fixed_s`` (any other, w8a16 included; 0 where
    the family has none), plus
    the runtime's share of the deployment offset ``qnn_deploy_int8_s`` / ``qnn_deploy_s`` (+ d / 2
    ``qnn-dlc``, - d / 2 ``qnn-tflite``, 0 ``qnn``); other runtimes 0.  A non-zero one is stated
    in ``note`` (it is in the latency, in no layer's row)."""
    if runtime not in DEPLOYMENTS:
        return 0.0
    int8 = precision == "int8"
    base = float(arrays["run_fixed_int8_s" if int8 else "run_fixed_s"])
    d = float(arrays.get("qnn_deploy_int8_s" if int8 else "qnn_deploy_s", 0.0))
    s = base + DEPLOYMENTS[runtime] * d
    if note is None:
        return max(s, 0.0)
    if base > 0:
        note.append(f"{runtime}: {s * 1e6:.3g} µs fixed per inference, in the latency, in no layer (graph "
                    f"execute: RPC, power-up, VTCM acquire; the {'int8' if int8 else 'float'} graph's figure, "
                    f"fitted with the family's constants; {DEPLOYMENT_NAMES[runtime]}"
                    + (f": {DEPLOYMENTS[runtime] * d * 1e6:+.3g} µs of the {d * 1e6:.3g} µs between them)"
                       if DEPLOYMENTS[runtime] and d else ")"))
    if DEPLOYMENTS[runtime] and not d:
        note.append(f"{runtime}: the family states no per-inference offset between deployments of a"
                    f"{'n int8' if int8 else ' float'} graph (qnn_deploy{'_int8' if int8 else ''}_s): "
                    "predicted as the qnn runtime")
    return max(s, 0.0)


def launches(nodes, producer) -> list[bool]:
    """Which nodes launch a kernel: as each node says, but a Concat (``ELIDED``) none where a
    kernel writes each of its non-constant inputs into its buffer: every such input is the output
    of a node that launches, or of a Concat so elided, views that launch nothing looked through.
    A Concat of a graph input copies it: a kernel of its own.  ``producer``: (level, tensor) -> the
    index of the node that writes it (``fusion.tensor_index``)."""
    out = [nd.launches for nd in nodes]
    elided = [False] * len(nodes)

    def written(level, t):
        j = producer.get((level, t))
        while j is not None and not (out[j] or elided[j]) and nodes[j].inputs \
                and facts(nodes[j].domain, nodes[j].op).io == VIEW:     # a view: look through it
            j = producer.get((level, nodes[j].inputs[0]))
        return j is not None and (out[j] or elided[j])

    for i, nd in enumerate(nodes):
        if nd.op in ELIDED and out[i] and all(written(nd.level, t) for k, t in enumerate(nd.inputs)
                                             if t and k not in nd.constant_inputs):
            out[i], elided[i] = False, True
    return out


def _users(i: int, nodes, consumers) -> list[int]:
    nd = nodes[i]
    return sorted({c for t in nd.outputs if t for c in consumers.get((nd.level, t), ())})


def _tail(i: int, nodes, sets, consumers) -> int:
    """The last node of the chain of single readers from ``i`` that ``sets`` already joined to it."""
    cur = i
    while True:
        users = _users(cur, nodes, consumers)
        if len(users) != 1 or sets.find(users[0]) != sets.find(i):
            return cur
        cur = users[0]


def join_epilogues(nodes, sets, consumers) -> None:
    """Join into each matrix node's kernel (``sets``: ``fusion._Sets``, already holding the
    onnxruntime patterns): a SiLU on its output (``x * Sigmoid(x)``), then one Add or Mul with
    another layer's tensor that is the chain's only reader, then an activation on that."""
    taken: set[int] = set()
    for i in range(len(nodes) - 1, -1, -1):   # latest first: a residual add joins its later input
        if nodes[i].op not in _MATRIX or not nodes[i].launches:
            continue
        cur = _silu(i, _tail(i, nodes, sets, consumers), nodes, sets, consumers, taken)
        users = _users(cur, nodes, consumers)
        if len(users) != 1 or users[0] in taken or sets.find(users[0]) != users[0]:
            continue
        u = users[0]
        nd = nodes[u]
        outside = [p for p, t in enumerate(nd.inputs)
                   if t and p not in nd.constant_inputs and t not in nodes[cur].outputs]
        if not (nd.op in _JOIN and nd.launches and len(outside) == 1):
            continue
        sets.union(i, u)
        taken.add(u)
        after = _users(u, nodes, consumers)
        if len(after) == 1 and nodes[after[0]].op in _ACTIVATIONS and sets.find(after[0]) == after[0]:
            sets.union(i, after[0])
            taken.add(after[0])


def _silu(i: int, cur: int, nodes, sets, consumers, taken: set) -> int:
    """Join ``Sigmoid(x)`` and ``x * Sigmoid(x)`` when they are the only readers of ``cur`` (the
    tail of matrix node ``i``'s kernel); returns the new tail."""
    users = _users(cur, nodes, consumers)
    if len(users) != 2:
        return cur
    s, m = sorted(users, key=lambda u: nodes[u].op != "Sigmoid")
    if not (nodes[s].op == "Sigmoid" and nodes[m].op == "Mul" and _users(s, nodes, consumers) == [m]
            and sets.find(s) == s and sets.find(m) == m):
        return cur
    sets.union(i, s)
    sets.union(i, m)
    taken.update((s, m))
    return m


def profile_rows(acc, p: int, P: int, prof, arrays, matrix_peak, vector_peak, classes, dtypes, nbytes, wbytes,
                 note: list[str], dw_work=None):
    """The ``qnn`` runtime's part of profile ``p``'s lowering (of ``P``): the fp16 depthwise
    kernels' peaks (``hvx_depthwise``, in place), the depthwise kernels' rate per output element
    where the family states one (``dw_output_rate``; ``dw_work``: (the lowering's nodes, its plan,
    its per-kernel rows), else none) and the activation bytes kept on chip (``onchip_bytes``);
    returns ``acc`` ((kept [P, K], budget [P] B, onchip_cost [P], depthwise output elements [K],
    their rate [P, K] outputs/s, 0 where none), created on the first profile) with row ``p``
    filled (``arrays``: the family's constants)."""
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    dw_code = CLASS_CODE["conv_dw"]
    by_rate = dw_work is not None and float(arrays.get("qnn_dw_output_rate", 0.0)) > 0   # (its note says the rate)
    hvx_depthwise(prof, matrix_peak, vector_peak, classes, dtypes, dw_code, None if by_rate else note)
    w8a16_rate(prof, float(arrays.get("qnn_w8a16_share", 0.0)), matrix_peak, vector_peak, dtypes, note)
    if acc is None:
        outs = np.zeros(len(nbytes)) if dw_work is None else dw_outputs(dw_work[0], dw_work[1].members, classes, dw_code)
        acc = (np.zeros((P, len(nbytes))), np.zeros(P), np.zeros(P), outs, np.zeros((P, len(nbytes))))
    if dw_work is not None:
        acc[4][p] = dw_output_rate(prof, arrays, (matrix_peak, vector_peak), classes, dtypes, dw_code,
                                   (dw_work[2], acc[3]), note)
    acc[0][p] = onchip_bytes(prof, nbytes, wbytes, note)
    movement_note(classes, nbytes, acc[0][p], arrays["e_bw"], [CLASS_CODE[c] for c in MOVEMENT_CLASSES], note)
    acc[1][p], acc[2][p] = float(prof.npu_onchip_mb or 0.0) * 1e6, float(arrays["onchip_cost"])
    return acc


# the op classes the Hexagon fit gives its data-movement constants (bench/hexagon_model.py MOVE)
MOVEMENT_CLASSES = ("movement", "view", "reorder", "gather", "other")
# the most bytes per launch a data-movement kernel of the Hexagon fit's rows sends to DRAM (its weights
# and its activations over the 8e6 B budget): SegFormer-B0's decode-head Transpose and Resize at fp16,
# 16,777,216 B of activations, 8,777,216 B over the budget (docs/accuracy.md, Hexagon NPU)
FITTED_MOVE_DRAM_B = 8_777_216


def movement_note(classes, nbytes, kept, e_bw, codes, note: list[str] | None) -> None:
    """One sentence in ``note`` where a data-movement kernel (class code in ``codes``) whose class
    has a fitted DRAM fraction (``e_bw`` per class code, below 1) sends more bytes per launch to
    DRAM (``nbytes - kept``: its weights and its activations over the on-chip budget) than any of
    the Hexagon fit's rows (``FITTED_MOVE_DRAM_B``): those bytes cost 1 / e_bw of a DRAM byte's time,
    a rate the fit set on HTP layout kernels at most that size, so beyond it the time extrapolates
    that rate; e.g. a 4096 x 4096 fp32 Transpose sends 2 x 4096^2 x 4 - 8e6 = 126,217,728 B."""
    if note is None:
        return
    cls = np.asarray(classes, dtype=np.int64)
    e = np.asarray(e_bw, np.float64)[cls]
    dram = np.asarray(nbytes, np.float64) - np.asarray(kept, np.float64)
    over = np.isin(cls, codes) & (e < 1.0) & (dram > FITTED_MOVE_DRAM_B)
    if over.any():
        k = int(np.argmax(np.where(over, dram, -1.0)))
        n = int(over.sum())
        what = f"{n} data-movement kernels send" if n > 1 else "1 data-movement kernel sends"
        note.append(f"qnn: {what} up to {dram[k] / 1e6:.3g} MB per launch to DRAM at the class's fitted e_bw "
                    f"({e[k]:.3g}: {1 / e[k]:.3g}x a DRAM byte's time, a rate fitted on HTP layout kernels sending "
                    f"at most {FITTED_MOVE_DRAM_B / 1e6:.3g} MB, not a DRAM rate): beyond that the time "
                    "extrapolates it and is likely too slow")


# an fp16 depthwise kernel on HVX: 64 fp16 lanes of a 1024-bit register against 128 int8 ones
HVX_FP16_SHARE = 0.5


def hvx_depthwise(prof, matrix_peak, vector_peak, classes, dtypes, dw_code: int, note: list[str] | None = None) -> None:
    """Set the peaks (in place; FLOP/s per kernel) of the fp16 depthwise kernels (class code
    ``dw_code``, compute dtype fp16) to ``HVX_FP16_SHARE`` x the profile's int8 matrix peak
    (module docstring); nothing where the profile states no int8 figure."""
    int8 = prof.peak_flops("matrix", "int8")
    hit = [k for k, (c, d) in enumerate(zip(classes, dtypes)) if c == dw_code and d == "fp16"]
    if not int8 or not hit:
        return
    matrix_peak[hit] = vector_peak[hit] = HVX_FP16_SHARE * int8
    if note is not None:
        note.append(f"qnn: {len(hit)} fp16 depthwise kernels on the HVX vector unit at {HVX_FP16_SHARE:g} x the "
                    f"int8 peak ({HVX_FP16_SHARE * int8 / 1e12:.3g} TFLOP/s: 64 fp16 lanes of a register against "
                    "128 int8), not the matrix engine's fp16 figure")


def dw_outputs(nodes, members, classes, dw_code: int) -> np.ndarray:
    """[K] output elements per launch of each depthwise kernel (class code ``dw_code``): the
    elements of its Conv node's first output (``members``: node indices per kernel); 0 for the
    other kernels. E.g. a 3x3 depthwise Conv writing 1 x 32 x 112 x 112: 401,408."""
    out = np.zeros(len(members))
    for k, mem in enumerate(members):
        if classes[k] != dw_code:
            continue
        conv = next((nodes[i] for i in mem if nodes[i].op == "Conv"), None)
        spec = conv.out_specs[0] if conv is not None and conv.out_specs else None
        if spec is not None and spec.shape is not None and all(isinstance(d, int) for d in spec.shape):
            out[k] = float(np.prod(spec.shape))
    return out


# a depthwise kernel's precision -> its share of the family's W8A8 output rate (module docstring,
# "Depthwise convolutions"): fp16 at the HVX lane ratio; w8a16 at the family's qnn_w8a16_share
_DW_SHARE = {"int8": 1.0, "fp16": HVX_FP16_SHARE}


def dw_output_rate(prof, arrays, peaks, classes, dtypes, dw_code: int, work, note: list[str] | None = None):
    """[K] the output elements per second each depthwise kernel (class ``dw_code``, at int8, fp16
    or w8a16) computes at, 0 for the others, where the family states ``qnn_dw_output_rate`` (R,
    W8A8 outputs/s; nothing else changes where it states none): R x 1 (int8), x ``HVX_FP16_SHARE``
    (fp16), x ``qnn_w8a16_share`` (w8a16).  Sets (in place) the kernel's matrix and vector peaks
    (``peaks``) so that its compute time is outputs / rate: peak = rate x (mac + vec + trans_weight
    x trans) / (outputs x e_compute) (``work``: (the lowering's per-kernel rows, [K] output
    elements)); e.g. 401,408 outputs at fp16, R = 2e11 / s: 401,408 / 1e11 = 4.01 us."""
    R = float(arrays.get("qnn_dw_output_rate", 0.0))
    rows, outs = work
    share = {**_DW_SHARE, "w8a16": float(arrays.get("qnn_w8a16_share", 0.0))}
    rate = np.zeros(len(classes))
    hit = [k for k, c in enumerate(classes) if c == dw_code and outs[k] > 0 and share.get(dtypes[k], 0.0) > 0]
    if R <= 0 or not hit:
        return rate
    e = float(np.asarray(arrays["e_compute"])[dw_code])
    tw = float(arrays["trans_weight"])
    for k in hit:
        mac, vec, trans = rows[k][:3]
        rate[k] = R * share[dtypes[k]]
        peaks[0][k] = peaks[1][k] = rate[k] * (mac + vec + tw * trans) / (outs[k] * e)
    if note is not None:
        note.append(f"qnn: {len(hit)} depthwise kernels at {R / 1e9:.4g} G output elements/s (W8A8; fp16 at "
                    f"{HVX_FP16_SHARE:g} of it) whatever their window: the family's qnn_dw_output_rate, fitted on "
                    "AI Hub's whole-model rows (no depthwise rate of the HTP is published)")
    return rate


def w8a16_rate(prof, share: float, matrix_peak, vector_peak, dtypes, note: list[str] | None = None) -> None:
    """Set the peaks (in place; FLOP/s per kernel) of the w8a16 kernels (int8 weights, int16
    activations) to ``share`` x the profile's int8 matrix peak: the family's fitted
    ``qnn_w8a16_share`` (module docstring, "Precision"); nothing where the family or the profile
    states none (the kernels keep the 16-bit rate ``engines.RATE_DTYPE`` gives them)."""
    int8 = prof.peak_flops("matrix", "int8")
    hit = [k for k, d in enumerate(dtypes) if d == "w8a16"]
    if not int8 or not hit or share <= 0:
        return
    matrix_peak[hit] = vector_peak[hit] = share * int8
    if note is not None:
        note.append(f"qnn: w8a16 kernels at {share:.4g} x the int8 peak ({share * int8 / 1e12:.3g} TOP/s; the "
                    "family's qnn_w8a16_share, fitted on AI Hub's W8A16 rows: Qualcomm publishes no int8 x int16 "
                    "rate), in place of the 16-bit rate above; expect large errors: leave one model out "
                    "88.6 % on those rows, layout-heavy graphs worst (docs/accuracy.md, Hexagon W8A16)")


def onchip_bytes(prof, nbytes, wbytes, note: list[str] | None = None):
    """[K] activation bytes per launch each kernel keeps in the NPU's scratch memory (module
    docstring): ``min(nbytes - wbytes, budget)``, ``budget`` = ``prof.npu_onchip_mb`` x 1e6 bytes
    (``nbytes``, ``wbytes``: each kernel's bytes and weight bytes per launch; the rest,
    ``nbytes - kept``, reaches DRAM).  All 0 when the profile states no budget.  ``note`` gets
    one sentence of what was kept."""
    nbytes, wbytes = np.asarray(nbytes, np.float64), np.asarray(wbytes, np.float64)
    act = np.maximum(nbytes - wbytes, 0.0)
    budget = float(prof.npu_onchip_mb or 0.0) * 1e6
    if budget <= 0:
        if note is not None:
            note.append(f"qnn: {prof.id} states no NPU on-chip memory (npu_onchip_mb): every activation "
                        "byte is charged to DRAM")
        return np.zeros_like(act)
    kept = np.minimum(act, budget)
    if note is not None:
        over = act > budget
        note.append(f"qnn: {len(act) - int(over.sum())} of {len(act)} kernels keep their activations "
                    f"({kept[~over].sum() / 1e6:.3g} MB in all) in the NPU's {budget / 1e6:g} MB on-chip memory "
                    f"(npu_onchip_mb): only their weights reach DRAM; {int(over.sum())} larger ones keep "
                    f"{budget / 1e6:g} MB each on chip and stream the rest "
                    f"({(act[over] - budget).sum() / 1e6:.3g} MB of their {act[over].sum() / 1e6:.3g} MB) "
                    "and their weights from DRAM (per launch: kept = min(activation bytes, budget))")
    return kept
