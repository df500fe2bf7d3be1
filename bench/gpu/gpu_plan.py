"""The cases of a one-GPU measurement (bench/gpu/measure.py): pure Python, no torch, so the plan can
be listed, counted and tested on a machine without a GPU (``measure.py --dry-run``).

A case is a flat dict whose keys are ``ID_COLS`` (what is measured) plus ``times`` (the names of
the time definitions taken for it, each defined in ``TIME_DEFS``), ``counts`` (how many calls each
definition makes, ``call_counts``) and ``est_s`` (the estimated seconds of GPU machine time the
case takes, ``estimate_s``: a planning figure, never a result).

Sizes: the memory-bound ops take one input tensor of ``2**e`` bytes for ``e`` in ``SIZE_EXPONENTS``
(12 log-spaced sizes, 1 KiB .. 1 GiB), in fp32, bf16 and fp16; the elements are ``2**e / itemsize``.
"""

from __future__ import annotations

import hashlib
import math

PARTS = ("ops", "gemm", "conv", "models", "compile")
DTYPES = ("fp32", "bf16", "fp16")
ITEMSIZE = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int64": 8}
# 10 + round(20 i / 11), i = 0..11: 1 KiB .. 1 GiB in 12 near-even steps on a log scale
SIZE_EXPONENTS = tuple(10 + round(20 * i / 11) for i in range(12))
SMOKE_EXPONENTS = (12, 24)

ID_COLS = ("part", "key", "op", "variant", "dtype", "tf32", "layout", "mode", "B", "M", "N", "K", "V",
           "cin", "cout", "ksize", "hw", "stride", "pad", "groups", "seq", "flops", "bytes_min",
           "bytes_alloc", "tier")

TIME_DEFS = {
    "eager_wall_us": "median over n_eager of time.perf_counter() around (one call from Python; "
                     "torch.cuda.synchronize()), after w_eager warm-up calls; eager_wall_min_us the minimum",
    "event_us": "CUDA events on the current stream: e0.record(); one call; e1.record(); e1.synchronize(); "
                "n_events samples after 3 warm-ups, mean of the fastest ceil(n_events/5) "
                "(NeuSight's definition: host dispatch + launch + kernels of one eager call)",
    "graph_us": "one call captured in a torch.cuda.CUDAGraph (3 warm-up calls on a side stream first); "
                "w_graph warm-up replays; n_graph replays back to back between two CUDA events, "
                "elapsed/n_graph; repeated graph_reps times, median (graph_rep_us lists them)",
    "graph_x20_us": "20 calls captured in one CUDA graph; 1 warm-up replay; 5 replays between two CUDA "
                    "events, elapsed/100: back-to-back GPU time without per-call launch gaps",
    "kernel_sum_us": "torch.profiler (kineto/CUPTI, activities=[CUDA]) over n_prof calls after w_prof "
                     "warm-ups, torch.cuda.synchronize() after each; GPU activities sorted by start, split "
                     "in n_prof equal groups; sum of durations per group = one call; median over groups. "
                     "n_kernels per call, first_kernel, main_kernel (longest); every name and median "
                     "duration in <part>_kernels.json",
    "kernel_sum_l2cold_us": "as kernel_sum_us, with a 256 MiB uint8 buffer overwritten (bitwise_not_) "
                            "before each profiled call and its kernel dropped: inputs not L2-resident",
    "compile_s": "wall seconds of the first call of torch.compile(fn) (inductor, mode='default'): "
                 "tracing + compilation + one run",
}
# every case of a part takes these (models and compile cases skip graph_x20 and the L2 flush)
PART_TIMES = {
    "ops": ("eager_wall_us", "event_us", "graph_us", "graph_x20_us", "kernel_sum_us", "kernel_sum_l2cold_us"),
    "gemm": ("eager_wall_us", "event_us", "graph_us", "graph_x20_us", "kernel_sum_us", "kernel_sum_l2cold_us"),
    "conv": ("eager_wall_us", "event_us", "graph_us", "kernel_sum_us", "kernel_sum_l2cold_us"),
    "models": ("eager_wall_us", "event_us", "graph_us", "kernel_sum_us"),
    "compile": ("compile_s", "eager_wall_us", "kernel_sum_us"),
}
# graph_x20 keeps 20 outputs alive in the graph's pool: not for cases that allocate more than this
X20_MAX_BYTES = 2**28

# planning figures for the estimate only (about an H200; never used as results)
EST_PEAK = {"fp32": 55e12, "tf32": 350e12, "bf16": 700e12, "fp16": 700e12}
EST_BW, EST_LAUNCH_S, EST_HOST_S, EST_CASE_S = 3.5e12, 3e-6, 30e-6, 0.04


def _case(part: str, op: str, dtype: str, tier: int, **kw) -> dict:
    c = {k: 0 for k in ID_COLS if k not in ("part", "key", "op", "variant", "dtype", "layout", "mode")}
    c.update(part=part, op=op, variant="", dtype=dtype, layout="", mode="", tier=tier)
    c.update(kw)
    return c


# ----------------------------------------------------------------------------- ops (memory-bound)

ELEMENTWISE = ("add", "mul", "relu", "gelu_erf", "gelu_tanh", "silu", "copy", "transpose")
NORMS = (("layer_norm", ""), ("rms_norm", "F.rms_norm"), ("rms_norm", "hf_manual"))
SOFTMAX_DIMS = (128, 1024, 4096, 32768)
NORM_HIDDEN = 4096
NORM_SWEEP_HIDDEN = (128, 768, 1024, 2048, 8192, 32768)
NORM_SWEEP_EXPONENTS = (22, 28)
EMBEDDING_TABLES = ((50257, 768), (32000, 4096))
EMBEDDING_TOKENS = (1, 4, 16, 64, 256, 1024, 4096, 16384)


def _rows_cols(numel: int, cols: int) -> tuple[int, int]:
    """[M, N] of ``numel`` elements with N = min(cols, numel)."""
    n = min(cols, numel)
    return numel // n, n


def _square(numel: int) -> tuple[int, int]:
    n = 2 ** (int(math.log2(numel)) // 2)
    return numel // n, n


def ops_cases(smoke: bool = False) -> list[dict]:
    exps = SMOKE_EXPONENTS if smoke else SIZE_EXPONENTS
    dts = ("fp32", "bf16") if smoke else DTYPES
    out = []
    for dt in dts:
        tier = 0 if dt != "fp16" else 1
        e = ITEMSIZE[dt]
        for x in exps:
            numel = 2**x // e
            for op in ELEMENTWISE:
                m, n = _square(numel) if op == "transpose" else _rows_cols(numel, 1024)
                out.append(_case("ops", op, dt, tier, M=m, N=n))
            for variant in ("cast", "scaled"):
                m, n = _rows_cols(numel, 1024)
                out.append(_case("ops", "fp8_quantize", dt, tier, variant=variant, M=m, N=n))
            for op, variant in NORMS:
                m, n = _rows_cols(numel, NORM_HIDDEN)
                out.append(_case("ops", op, dt, tier, variant=variant, M=m, N=n))
            for n in SOFTMAX_DIMS:
                if numel >= n:
                    out.append(_case("ops", "softmax", dt, tier, M=numel // n, N=n))
        for v, n in EMBEDDING_TABLES:
            for m in (EMBEDDING_TOKENS[::4] if smoke else EMBEDDING_TOKENS):
                out.append(_case("ops", "embedding", dt, tier, M=m, N=n, V=v))
    if not smoke:
        for dt in ("fp32", "bf16"):
            for x in NORM_SWEEP_EXPONENTS:
                for n in NORM_SWEEP_HIDDEN:
                    for op, variant in NORMS[:2]:
                        out.append(_case("ops", op, dt, 1, variant=variant, M=2**x // ITEMSIZE[dt] // n, N=n))
    return out


def _ops_counts(c: dict) -> tuple[int, int, int]:
    """(flops, bytes_min, bytes_alloc): each input read once and the output written once."""
    e, m, n = ITEMSIZE[c["dtype"]], c["M"], c["N"]
    mn, op = m * n, c["op"]
    if op == "embedding":
        return 0, 8 * m + 2 * mn * e, 8 * m + (c["V"] * n + mn) * e
    if op in ("add", "mul"):
        return mn, 3 * mn * e, 3 * mn * e
    if op == "fp8_quantize":
        return mn, mn * (e + 1), mn * (2 * e + 1)
    per = {"relu": 1, "gelu_erf": 8, "gelu_tanh": 10, "silu": 4, "copy": 0, "transpose": 0,
           "softmax": 5, "layer_norm": 8, "rms_norm": 4}[op]
    w = {"layer_norm": 2 * n, "rms_norm": n}.get(op, 0)
    return per * mn, (2 * mn + w) * e, (2 * mn + w) * e


# ----------------------------------------------------------------------------- gemm, bmm

GEMM_M = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
# (N, K) of F.linear(x[M,K], W[N,K]): BERT-base/GPT-2 qkv, proj, fc1, fc2, LM head; Llama-2-7B qkv
# (fused), proj, up, down; Llama-3-8B up, down; a 32000-word LM head
GEMM_NK = ((2304, 768), (768, 768), (3072, 768), (768, 3072), (50257, 768),
           (12288, 4096), (4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096), (4096, 14336),
           (32000, 4096))
GEMM_PRECISIONS = (("fp32", 0), ("fp32", 1), ("bf16", 0))   # (dtype, TF32 on)
# attention products: bh = batch x heads, M query rows, N keys, head dim 64
BMM_BH, BMM_M, BMM_N, BMM_D = (12, 96), (1, 16, 128, 512), (128, 512, 2048), 64


def gemm_cases(smoke: bool = False) -> list[dict]:
    ms = (1, 256) if smoke else GEMM_M
    nks = GEMM_NK[5:7] if smoke else GEMM_NK
    out = []
    for dt, tf32 in GEMM_PRECISIONS:
        tier = 1 if dt == "fp32" and not tf32 else 0
        for n, k in nks:
            for m in ms:
                out.append(_case("gemm", "gemm", dt, tier, tf32=tf32, M=m, N=n, K=k, B=1))
        for bh in BMM_BH[:1] if smoke else BMM_BH:
            for m in (16,) if smoke else BMM_M:
                for n in (512,) if smoke else BMM_N:
                    # qk: [bh,M,d] x [bh,d,N] -> [bh,M,N]; pv: [bh,M,N] x [bh,N,d] -> [bh,M,d]
                    out.append(_case("gemm", "bmm", dt, tier + 1, tf32=tf32, variant="qk", B=bh, M=m, N=n, K=BMM_D))
                    out.append(_case("gemm", "bmm", dt, tier + 1, tf32=tf32, variant="pv", B=bh, M=m, N=BMM_D, K=n))
    return out


def _gemm_counts(c: dict) -> tuple[int, int, int]:
    e, b, m, n, k = ITEMSIZE[c["dtype"]], c["B"], c["M"], c["N"], c["K"]
    by = b * (m * k + n * k + m * n) * e
    return 2 * b * m * n * k, by, by


# ----------------------------------------------------------------------------- conv

# (cin, cout, k, stride, pad, hw_in, groups) of every distinct Conv2d of torchvision's resnet50
# (v1.5: the stride on the 3x3) and mobilenet_v2 at 224x224, in first-use order
RESNET50_CONVS = (
    (3, 64, 7, 2, 3, 224, 1),
    (64, 64, 1, 1, 0, 56, 1), (64, 64, 3, 1, 1, 56, 1), (64, 256, 1, 1, 0, 56, 1), (256, 64, 1, 1, 0, 56, 1),
    (256, 128, 1, 1, 0, 56, 1), (128, 128, 3, 2, 1, 56, 1), (128, 512, 1, 1, 0, 28, 1), (256, 512, 1, 2, 0, 56, 1),
    (512, 128, 1, 1, 0, 28, 1), (128, 128, 3, 1, 1, 28, 1),
    (512, 256, 1, 1, 0, 28, 1), (256, 256, 3, 2, 1, 28, 1), (256, 1024, 1, 1, 0, 14, 1), (512, 1024, 1, 2, 0, 28, 1),
    (1024, 256, 1, 1, 0, 14, 1), (256, 256, 3, 1, 1, 14, 1),
    (1024, 512, 1, 1, 0, 14, 1), (512, 512, 3, 2, 1, 14, 1), (512, 2048, 1, 1, 0, 7, 1), (1024, 2048, 1, 2, 0, 14, 1),
    (2048, 512, 1, 1, 0, 7, 1), (512, 512, 3, 1, 1, 7, 1),
)
# torchvision MobileNetV2 inverted residual settings (t expansion, c channels, n blocks, s stride)
MOBILENET_V2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                         (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet_v2_convs() -> tuple:
    """The distinct convolutions of torchvision's mobilenet_v2 (width 1.0, 224x224), first-use order."""
    convs, hw, cin = [(3, 32, 3, 2, 1, 224, 1)], 112, 32
    for t, c, n, s in MOBILENET_V2_SETTINGS:
        for i in range(n):
            stride, hidden = (s if i == 0 else 1), cin * t
            if t != 1:
                convs.append((cin, hidden, 1, 1, 0, hw, 1))
            convs.append((hidden, hidden, 3, stride, 1, hw, hidden))
            hw = (hw + 2 - 3) // stride + 1
            convs.append((hidden, c, 1, 1, 0, hw, 1))
            cin = c
    convs.append((cin, 1280, 1, 1, 0, hw, 1))
    return tuple(dict.fromkeys(convs))


CONV_BATCHES = (1, 32)
CONV_PRECISIONS = (("fp32", 0, "nchw"), ("fp32", 1, "nchw"), ("fp16", 0, "nhwc"))


def conv_cases(smoke: bool = False) -> list[dict]:
    nets = (("resnet50", RESNET50_CONVS), ("mobilenet_v2", mobilenet_v2_convs()))
    out = []
    for dt, tf32, layout in CONV_PRECISIONS:
        for b in (32,) if smoke else CONV_BATCHES:
            for net, convs in nets:
                for cin, cout, k, s, p, hw, g in convs[1:3] if smoke else convs:
                    out.append(_case("conv", "conv2d", dt, 0 if dt == "fp16" or tf32 else 1, variant=net,
                                     tf32=tf32, layout=layout, B=b, cin=cin, cout=cout, ksize=k, stride=s,
                                     pad=p, hw=hw, groups=g))
    return out


def conv_out_hw(c: dict) -> int:
    return (c["hw"] + 2 * c["pad"] - c["ksize"]) // c["stride"] + 1


def _conv_counts(c: dict) -> tuple[int, int, int]:
    e, b, o = ITEMSIZE[c["dtype"]], c["B"], conv_out_hw(c)
    w = c["cout"] * (c["cin"] // c["groups"]) * c["ksize"] ** 2
    by = (b * c["cin"] * c["hw"] ** 2 + w + b * c["cout"] * o * o) * e
    return 2 * b * c["cout"] * o * o * (c["cin"] // c["groups"]) * c["ksize"] ** 2, by, by


# ----------------------------------------------------------------------------- whole models

# name -> (input, forward GFLOP per sample (2 x MACs, planning only), eager kernels per forward)
MODELS = {
    "resnet50": ("image 3x224x224", 8.2, 170),
    "mobilenet_v2": ("image 3x224x224", 0.6, 150),
    "vit_b_16": ("image 3x224x224", 35.0, 180),
    "bert_base": ("tokens, seq 128", 22.0, 200),
    "gpt2_small": ("tokens, seq 128", 32.0, 220),
}
SEQ = 128
MODEL_BATCHES = (1, 8)
MODEL_PRECISIONS = (("bf16", 0), ("fp32", 0), ("fp32", 1))
MODES = ("infer", "train")
COMPILE_CASES = (("resnet50", 8, "bf16", "infer"), ("bert_base", 8, "bf16", "infer"),
                 ("gpt2_small", 8, "bf16", "infer"), ("vit_b_16", 8, "bf16", "infer"),
                 ("mobilenet_v2", 8, "bf16", "infer"), ("resnet50", 8, "bf16", "train"))


def model_cases(smoke: bool = False) -> list[dict]:
    out = []
    for mode in ("infer",) if smoke else MODES:
        for dt, tf32 in MODEL_PRECISIONS[:1] if smoke else MODEL_PRECISIONS:
            for name in ("resnet50", "gpt2_small") if smoke else MODELS:
                for b in (8,) if smoke else MODEL_BATCHES:
                    tier = (mode == "train") + (dt == "fp32")
                    seq = SEQ if MODELS[name][0].startswith("tokens") else 0
                    out.append(_case("models", name, dt, tier, variant="eager", tf32=tf32, mode=mode, B=b, seq=seq))
    return out


def compile_cases(smoke: bool = False) -> list[dict]:
    return [_case("compile", name, dt, i, variant="torch.compile", mode=mode, B=b,
                  seq=SEQ if MODELS[name][0].startswith("tokens") else 0)
            for i, (name, b, dt, mode) in enumerate(COMPILE_CASES[:1] if smoke else COMPILE_CASES)]


def _model_counts(c: dict) -> tuple[int, int, int]:
    """Whole models carry no counts (opcost's own are the prediction); see model_flops."""
    return 0, 0, 0


def model_flops(c: dict) -> float:
    """Planning figure of a whole-model call's FLOPs (a training step ~ 3 forwards)."""
    return MODELS[c["op"]][1] * 1e9 * c["B"] * (3 if c["mode"] == "train" else 1)


# ----------------------------------------------------------------------------- counts, estimates

_COUNTS = {"ops": _ops_counts, "gemm": _gemm_counts, "conv": _conv_counts, "models": _model_counts,
           "compile": _model_counts}
# calls per time definition by the estimated kernel time of one call: (upper bound s, counts)
CALL_COUNTS = (
    (2e-4, dict(w_eager=10, n_eager=50, n_events=25, w_graph=3, n_graph=20, graph_reps=3, w_prof=5, n_prof=20)),
    (2e-3, dict(w_eager=3, n_eager=20, n_events=10, w_graph=2, n_graph=10, graph_reps=3, w_prof=3, n_prof=10)),
    (math.inf, dict(w_eager=2, n_eager=10, n_events=5, w_graph=1, n_graph=5, graph_reps=3, w_prof=2, n_prof=5)),
)


def kernel_s(c: dict) -> float:
    """Planning estimate of one call's GPU time: max(flops / peak, bytes / bandwidth) + launches."""
    peak = EST_PEAK["tf32" if c["tf32"] else c["dtype"]]
    if c["part"] in ("models", "compile"):
        kernels = MODELS[c["op"]][2] * (3 if c["mode"] == "train" else 1)
        return model_flops(c) / (0.4 * peak) + kernels * EST_LAUNCH_S
    return max(c["flops"] / peak, c["bytes_min"] / EST_BW) + EST_LAUNCH_S


def call_counts(c: dict) -> dict:
    t = kernel_s(c)
    counts = next(n for bound, n in CALL_COUNTS if t <= bound)
    if c["part"] in ("models", "compile"):     # host-bound eager calls of hundreds of kernels
        counts = CALL_COUNTS[1][1] if t <= CALL_COUNTS[1][0] else CALL_COUNTS[2][1]
    return dict(counts)


def estimate_s(c: dict) -> float:
    """Planning estimate of the machine seconds a case takes (every time definition it names)."""
    n, t = c["counts"], kernel_s(c)
    kernels = MODELS[c["op"]][2] * (3 if c["mode"] == "train" else 1) if c["part"] in ("models", "compile") else 2
    host = kernels * EST_HOST_S
    calls = {"eager_wall_us": (n["w_eager"] + n["n_eager"], max(t, host)),
             "event_us": (n["n_events"] + 3, max(t, host)),
             "graph_us": (3 + n["w_graph"] + n["n_graph"] * n["graph_reps"], t),
             "graph_x20_us": (120, t),
             "kernel_sum_us": (n["w_prof"] + n["n_prof"], max(t, host) + 1e-5 * kernels),
             "kernel_sum_l2cold_us": (n["n_prof"] + n["w_prof"], max(t, host) + 1e-4),
             "compile_s": (1, 45.0 * (2 if c["mode"] == "train" else 1))}
    return EST_CASE_S + sum(k * s for k, s in (calls[d] for d in c["times"]))


def key(c: dict) -> str:
    """One case's identity, unique within a plan."""
    return "|".join(f"{k}={c[k]}" for k in ID_COLS if k not in ("key", "flops", "bytes_min", "bytes_alloc", "tier")
                    and c[k] not in ("", 0))


_BUILD = {"ops": ops_cases, "gemm": gemm_cases, "conv": conv_cases, "models": model_cases,
          "compile": compile_cases}


def plan(parts=PARTS, smoke: bool = False) -> list[dict]:
    """Every case of ``parts``, finished (counts, times, estimate, key), in run order: by part, then
    by tier (a budget cut drops the higher tiers first), then in an order fixed by a hash of the key
    (a cut inside a tier drops cases spread over its dtypes, ops and sizes, not its last dtype)."""
    out = []
    for part in parts:
        if part not in _BUILD:
            raise ValueError(f"unknown part {part!r}; parts: {', '.join(PARTS)}")
        cases = _BUILD[part](smoke)
        for c in cases:
            c["flops"], c["bytes_min"], c["bytes_alloc"] = _COUNTS[part](c)
            times = PART_TIMES[part]
            if c["bytes_alloc"] > X20_MAX_BYTES:
                times = tuple(t for t in times if t != "graph_x20_us")
            c["times"] = times
            c["counts"] = call_counts(c)
            c["est_s"] = estimate_s(c)
            c["key"] = key(c)
        out.extend(sorted(cases, key=lambda c: (c["tier"], hashlib.sha256(c["key"].encode()).hexdigest())))
    return out


def summary(cases: list[dict]) -> dict:
    """Per part: case count, estimated seconds, cases per tier, op counts."""
    out: dict = {}
    for c in cases:
        s = out.setdefault(c["part"], {"cases": 0, "est_s": 0.0, "tiers": {}, "ops": {}})
        s["cases"] += 1
        s["est_s"] += c["est_s"]
        s["tiers"][c["tier"]] = s["tiers"].get(c["tier"], 0) + 1
        s["ops"][c["op"]] = s["ops"].get(c["op"], 0) + 1
    for s in out.values():
        s["est_s"] = round(s["est_s"], 1)
    return out
