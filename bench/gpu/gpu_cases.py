"""One call of each single-op case of gpu_plan (ops, gemm, conv) as a no-argument function.

``make(case, device)`` allocates the inputs (random normal, seed 1234, never zeros) once and returns
``fn`` doing one call of the op as PyTorch eager runs it; the same buffers are reused by every call
(L2-warm when they fit). Works on any torch device, so the makers are checked on a CPU too.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

DTYPE = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
FP8 = getattr(torch, "float8_e4m3fn", None)
FP8_MAX = 448.0          # largest finite float8_e4m3fn
HAS_RMS = hasattr(F, "rms_norm")


def set_tf32(on: bool) -> dict:
    """TF32 for fp32 matmuls (cuBLAS) and convolutions (cuDNN), through the legacy switches; returns
    the states read back."""
    torch.backends.cuda.matmul.allow_tf32 = bool(on)
    torch.backends.cudnn.allow_tf32 = bool(on)
    return {"matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32}


def _gen(device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(1234)
    return g


def hf_rms_norm(x, w, eps=1e-6):
    """RMS norm as HF transformers' LlamaRMSNorm runs it: fp32 variance, rsqrt, cast back, scale."""
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def _unary(op: str):
    return {"relu": torch.relu, "gelu_erf": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
            "silu": F.silu, "copy": torch.clone, "transpose": lambda x: x.t().contiguous()}[op]


def make_op(c: dict, device):
    """Memory-bound ops of part ``ops``: x is [M, N] (embedding: ids [M] into a [V, N] table)."""
    dt, m, n, op = DTYPE[c["dtype"]], c["M"], c["N"], c["op"]
    g = _gen(device)

    def rn(*shape):
        return torch.randn(*shape, device=device, dtype=dt, generator=g)

    if op == "embedding":
        ids = torch.randint(0, c["V"], (m,), device=device, dtype=torch.int64, generator=g)
        table = rn(c["V"], n)
        return lambda: F.embedding(ids, table)
    x = rn(m, n)
    if op in ("add", "mul"):
        y = rn(m, n)
        return (lambda: x + y) if op == "add" else (lambda: x * y)
    if op == "fp8_quantize":
        if FP8 is None:
            raise RuntimeError("this torch has no float8_e4m3fn")
        if c["variant"] == "cast":
            return lambda: x.to(FP8)
        scale = torch.full((), 0.5, device=device, dtype=dt)   # static per-tensor scale (a tensor)
        return lambda: (x * scale).to(FP8)
    if op == "layer_norm":
        w, b = rn(n), rn(n)
        return lambda: F.layer_norm(x, (n,), w, b)
    if op == "rms_norm":
        w = rn(n)
        if c["variant"] == "F.rms_norm":
            if not HAS_RMS:
                raise RuntimeError("this torch has no torch.nn.functional.rms_norm")
            return lambda: F.rms_norm(x, (n,), w, 1e-6)
        return lambda: hf_rms_norm(x, w)
    if op == "softmax":
        return lambda: torch.softmax(x, dim=-1)
    f = _unary(op)
    return lambda: f(x)


def make_gemm(c: dict, device):
    """gemm: F.linear(x[M,K], W[N,K]) (no bias). bmm: torch.bmm([B,M,K], [B,K,N]); variant qk has
    K = head dim and N = keys (scores), variant pv has K = keys and N = head dim (probabilities x V)."""
    dt = DTYPE[c["dtype"]]
    g = _gen(device)
    b, m, n, k = c["B"], c["M"], c["N"], c["K"]
    scale = 1.0 / math.sqrt(k)      # keeps bf16 outputs finite

    def rn(*shape):
        return torch.randn(*shape, device=device, dtype=dt, generator=g) * scale

    if c["op"] == "gemm":
        x, w = rn(m, k), rn(n, k)
        return lambda: F.linear(x, w)
    a, bb = rn(b, m, k), rn(b, k, n)
    return lambda: torch.bmm(a, bb)


def make_conv(c: dict, device):
    """F.conv2d(x[B,Cin,H,W], w[Cout,Cin/groups,k,k], stride, padding, groups), no bias; layout
    ``nhwc`` = both tensors in torch.channels_last."""
    dt = DTYPE[c["dtype"]]
    g = _gen(device)
    x = torch.randn(c["B"], c["cin"], c["hw"], c["hw"], device=device, dtype=dt, generator=g)
    w = torch.randn(c["cout"], c["cin"] // c["groups"], c["ksize"], c["ksize"], device=device, dtype=dt,
                    generator=g) / math.sqrt(c["cin"] // c["groups"] * c["ksize"] ** 2)
    if c["layout"] == "nhwc":
        x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
    s, p, gr = c["stride"], c["pad"], c["groups"]
    return lambda: F.conv2d(x, w, None, s, p, 1, gr)


MAKERS = {"ops": make_op, "gemm": make_gemm, "conv": make_conv}


def make(c: dict, device):
    """(fn, context factory) of a single-op case: ``with ctx(): fn()`` is one call."""
    import contextlib

    return MAKERS[c["part"]](c, device), contextlib.nullcontext
