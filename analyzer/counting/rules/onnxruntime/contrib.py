"""com.microsoft fusions that onnxruntime's graph optimizers emit (quantized ones: quantized.py,
attention ones: attention.py).

A fused op is counted as the sum of the standard ops it replaces, each by the convention of its
own module (elementwise.py, normalization.py, linear.py); the fusion saves only the bytes of the
intermediates, which is why these are rules and not decompositions.  Per element:

- Gelu (erf form): 4 vector + 1 erf (elementwise.py Gelu); BiasGelu adds the bias first (+1).
- FastGelu (tanh form): 8 vector + 1 tanh, + 1 for its optional bias.
- QuickGelu ``x*sigmoid(alpha*x)``: alpha*x (1) + sigmoid (2 + 1 exp) + multiply (1): 4 + 1 T.
- BiasAdd ``X + bias + skip``: 2.  BiasSplitGelu: the bias add on every input element, then per
  output element Gelu of the right half (4 + 1 erf) and the multiply by the left half (1).
  BiasSoftmax: add (1) + Softmax (4 + 1 exp).  BiasDropout (inference): bias add (1) and the
  optional residual add (1).
- SkipLayerNormalization: input + skip (1), + bias (1, when present), then LayerNormalization over
  the last axis (its beta is the LayerNorm bias).  SkipSimplifiedLayerNormalization: the adds
  and RMS normalization; SimplifiedLayerNormalization (emitted in the default domain, also
  accepted in com.microsoft) is RMSNormalization.
- EmbedLayerNormalization: the word, position (and segment) embedding rows are gathered (only
  those rows are read), summed (1 add per element per extra table) and layer-normalized with
  bias; a mask input is reduced to mask_index (1 op per mask element).
- FusedMatMul/TransposeMatMul: MatMul of the (transposed) operands (transBatch reads dim 0 as
  the row axis behind the batch dims, as onnxruntime does), alpha != 1 one multiply per output
  element.  FusedConv/NhwcConv/NhwcFusedConv: Conv (the layout does not change the
  counts), the fused activation (elementwise.py's per-element cost, Clip 2) and the optional Z
  add (1).  FusedGemm: Gemm plus the activation.  GemmFastGelu: MatMul + bias + FastGelu.
- GroupNorm/SkipGroupNorm: GroupNormalization (normalization.py) plus the skip and bias adds and
  the optional SiLU (3 + 1 T).
- com.microsoft copies of standard ops (GatherND, Trilu, Unique, GridSample, Range, Pad,
  ExpandDims, MaxpoolWithMask, NhwcMaxPool) use the standard rules.
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.errors import ShapeError
from analyzer.ir.graph import TensorSpec, dtype_bits
from analyzer.counting.rules.onnx import elementwise
from analyzer.counting.rules.onnx import linear
from analyzer.counting.rules.onnx import indexing
from analyzer.counting.rules.onnx import movement
from analyzer.counting.rules.onnx import pooling
from analyzer.counting.rules.onnx import sampling
from analyzer.counting.rules.onnx.common import output
from analyzer.counting.rules.onnx.normalization import meanvar_work, rms_work

MS = "com.microsoft"

GELU = (4, 1)        # erf form, elementwise.gelu
FAST_GELU = (8, 1)   # tanh form, elementwise.gelu(approximate="tanh")
SILU = (3, 1)        # x * sigmoid(x): sigmoid (2 + exp) and the multiply


def _present(ins, i: int) -> bool:
    return len(ins) > i and ins[i] is not None


def _per_element(n: int, cost: tuple[int, int], extra: int = 0, fn: str | None = None) -> Work:
    """``cost`` (vector, transcendental) per element of ``n``, plus ``extra`` vector; ``fn``: the
    function each transcendental evaluates (None: unnamed)."""
    v, t = cost
    return Work(vector_flops=n * (v + extra), transcendentals=n * t,
                functions=((fn, n * t),) if fn else ())


def activation_cost(name: str | None) -> tuple[int, int]:
    """Per-element (vector, transcendental) cost of a fused activation, named as ORT names them."""
    if not name:
        return 0, 0
    if name == "Clip":
        return 2, 0  # min and max, as Clip with both bounds
    if name in elementwise.UNARY:
        return elementwise.UNARY[name]
    raise ShapeError(f"unknown fused activation '{name}'")


def activation_function(name: str | None) -> str | None:
    """The one function a fused activation's transcendentals evaluate (None: none, or several)."""
    fns = elementwise.FUNCTIONS.get(name or "", ())
    return fns[0] if len(fns) == 1 else None


def _add(*works: Work, note: str | None = None) -> Work:
    return Work(mac_flops=sum(w.mac_flops for w in works), vector_flops=sum(w.vector_flops for w in works),
                transcendentals=sum(w.transcendentals for w in works), note=note,
                functions=tuple(p for w in works for p in w.functions))


# ----------------------------------------------------------------------------- activations


@register("Gelu", domain=MS)
def ms_gelu(ins, outs, ctx):
    return _per_element(output(outs).numel(), GELU, fn="erf")


@register("BiasGelu", domain=MS)
def bias_gelu(ins, outs, ctx):
    return _per_element(output(outs).numel(), GELU, extra=1, fn="erf")


@register("FastGelu", domain=MS)
def fast_gelu(ins, outs, ctx):
    return _per_element(output(outs).numel(), FAST_GELU, extra=1 if _present(ins, 1) else 0, fn="tanh")


@register("QuickGelu", domain=MS)
def quick_gelu(ins, outs, ctx):
    return _per_element(output(outs).numel(), (4, 1), fn="logistic")


@register("BiasAdd", domain=MS)
def bias_add(ins, outs, ctx):
    return Work(vector_flops=2 * output(outs).numel())


@register("BiasSplitGelu", domain=MS)
def bias_split_gelu(ins, outs, ctx):
    n_in, n_out = ins[0].numel(), output(outs).numel()
    v, t = GELU
    return Work(vector_flops=n_in + n_out * (v + 1), transcendentals=n_out * t, functions=(("erf", n_out * t),))


@register("BiasSoftmax", domain=MS)
def bias_softmax(ins, outs, ctx):
    return _per_element(output(outs).numel(), (4, 1), extra=1, fn="exp")


@register("BiasDropout", "BitmaskBiasDropout", domain=MS)
def bias_dropout(ins, outs, ctx):
    adds = 1 + (1 if _present(ins, 2) else 0)
    return Work(vector_flops=adds * output(outs).numel(), note="inference: dropout is an identity")


# ----------------------------------------------------------------------------- normalizations


def _skip_adds(ins, n: int, bias_index: int) -> int:
    return n + (n if _present(ins, bias_index) else 0)


@register("SkipLayerNormalization", domain=MS)
def skip_layer_norm(ins, outs, ctx):
    # input, skip, gamma, beta?, bias?
    x = ins[0]
    n = x.numel()
    rows = n // x.dim(-1)
    return _add(Work(vector_flops=_skip_adds(ins, n, 4)), meanvar_work(n, rows, _present(ins, 3)))


@register("SkipSimplifiedLayerNormalization", domain=MS)
def skip_simplified_layer_norm(ins, outs, ctx):
    # input, skip, gamma, bias?
    x = ins[0]
    n = x.numel()
    return _add(Work(vector_flops=_skip_adds(ins, n, 3)), rms_work(n, n // x.dim(-1)))


@register("SimplifiedLayerNormalization")
@register("SimplifiedLayerNormalization", domain=MS)
def simplified_layer_norm(ins, outs, ctx, *, axis=-1):
    shape = ins[0].dims()
    ax = axis + len(shape) if axis < 0 else axis
    return rms_work(prod(shape), prod(shape[:ax]))


def _table_reads(spec: TensorSpec, elements: int) -> int:
    return min(spec.nbytes(), (elements * dtype_bits(spec.dtype) + 7) // 8)


@register("EmbedLayerNormalization", domain=MS)
def embed_layer_norm(ins, outs, ctx):
    # input_ids, segment_ids?, word_embedding, position_embedding, segment_embedding?, gamma, beta,
    # mask?, position_ids?
    ids, word = ins[0], ins[2]
    tokens = ids.numel()
    n = tokens * word.dim(-1)
    tables = [2, 3] + ([4] if _present(ins, 4) else [])
    reads = {i: _table_reads(ins[i], n) for i in tables}  # only the gathered rows
    vec = n * (len(tables) - 1)  # sum of the embeddings
    if _present(ins, 7):
        vec += ins[7].numel()  # mask -> mask_index
    return _with_reads(_add(Work(vector_flops=vec), meanvar_work(n, tokens, True)), reads)


@register("QEmbedLayerNormalization", domain=MS)
def qembed_layer_norm(ins, outs, ctx):
    # EmbedLayerNormalization over 8-bit tables (inputs 0-7 as there; 8-17 scales and zero
    # points): each gathered value and gamma/beta element is dequantized first, (q - zp) * scale
    w = embed_layer_norm(ins[:8], outs, ctx)
    hidden = ins[2].dim(-1)
    n = ins[0].numel() * hidden
    tables = 3 if _present(ins, 4) else 2
    return Work(vector_flops=w.vector_flops + 2 * (n * tables + 2 * hidden),
                transcendentals=w.transcendentals, reads=w.reads, functions=w.functions)


def _with_reads(w: Work, reads) -> Work:
    return Work(mac_flops=w.mac_flops, vector_flops=w.vector_flops, transcendentals=w.transcendentals,
                reads=reads, mac_dtype=w.mac_dtype, note=w.note, functions=w.functions)


@register("GroupNorm", domain=MS)
def ms_group_norm(ins, outs, ctx, *, groups, activation=0):
    x = ins[0]
    n = x.numel()
    w = meanvar_work(n, x.dim(0) * groups, True)
    return _add(w, _per_element(n, SILU, fn="logistic")) if activation else w


@register("SkipGroupNorm", domain=MS)
def skip_group_norm(ins, outs, ctx, *, groups, activation=0):
    # X, gamma, beta, skip, bias?
    x = ins[0]
    n = x.numel()
    w = _add(Work(vector_flops=_skip_adds(ins, n, 4)), meanvar_work(n, x.dim(0) * groups, True))
    return _add(w, _per_element(n, SILU, fn="logistic")) if activation else w


# ----------------------------------------------------------------------------- matmul / conv / gemm


def _transposed(spec: TensorSpec, trans: int = 1, trans_batch: int = 0) -> TensorSpec:
    """FusedMatMul's view of an operand: transBatch moves dim 0 behind the batch dims
    (``[1..r-2, 0, r-1]``), trans swaps the last two."""
    shape = spec.dims()
    if trans_batch and len(shape) > 2:
        shape = shape[1:-1] + (shape[0], shape[-1])
    if trans and len(shape) >= 2:
        shape = shape[:-2] + (shape[-1], shape[-2])
    return TensorSpec(shape, spec.dtype)


@register("FusedMatMul", domain=MS)
def fused_matmul(ins, outs, ctx, *, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
    a = _transposed(ins[0], transA, transBatchA) if transA or transBatchA else ins[0]
    b = _transposed(ins[1], transB, transBatchB) if transB or transBatchB else ins[1]
    mm = linear.matmul((a, b), (output(outs),), ctx)
    return Work(mac_flops=mm.mac_flops, vector_flops=output(outs).numel() if alpha != 1.0 else 0)


@register("TransposeMatMul", domain=MS)
def transpose_matmul(ins, outs, ctx, *, alpha=1.0, transA=0, transB=0):
    return fused_matmul(ins, outs, ctx, alpha=alpha, transA=transA, transB=transB)


@register("FusedMatMulActivation", domain=MS)
def fused_matmul_activation(ins, outs, ctx, *, activation, alpha=1.0, transA=0, transB=0,
                            transBatchA=0, transBatchB=0):
    mm = fused_matmul(ins, outs, ctx, alpha=alpha, transA=transA, transB=transB,
                      transBatchA=transBatchA, transBatchB=transBatchB)
    return _add(mm, _per_element(output(outs).numel(), activation_cost(activation),
                                 fn=activation_function(activation)))


@register("NhwcConv", domain=MS)
def nhwc_conv(ins, outs, ctx):
    return linear.conv(ins[:3], (output(outs),), ctx)


@register("FusedConv", "NhwcFusedConv", domain=MS)
def fused_conv(ins, outs, ctx, *, activation=None):
    # X, W, B?, Z? (Z is added to the convolution before the activation)
    c = linear.conv(ins[:3], (output(outs),), ctx)
    n = output(outs).numel()
    z = n if _present(ins, 3) else 0
    return _add(c, Work(vector_flops=z),
                _per_element(n, activation_cost(activation), fn=activation_function(activation)))


@register("FusedGemm", domain=MS)
def fused_gemm(ins, outs, ctx, *, activation=None, alpha=1.0, beta=1.0, transA=0):
    g = linear.gemm(ins, (output(outs),), ctx, alpha=alpha, beta=beta, transA=transA)
    return _add(g, _per_element(output(outs).numel(), activation_cost(activation),
                                 fn=activation_function(activation)))


@register("GemmFastGelu", domain=MS)
def gemm_fast_gelu(ins, outs, ctx):
    mm = linear.matmul(ins[:2], (output(outs),), ctx)
    return _add(mm, _per_element(output(outs).numel(), FAST_GELU, extra=1 if _present(ins, 2) else 0,
                                 fn="tanh"))


# ----------------------------------------------------------------------------- copies of standard ops

register("GatherND", domain=MS)(movement.gather)
register("Range", domain=MS)(movement.range_)
register("Pad", domain=MS)(movement._nothing)
register("ExpandDims", domain=MS)(movement._nothing)
register("Trilu", domain=MS)(indexing.trilu)
register("Unique", domain=MS)(indexing.unique)
register("CausalConvWithState", domain=MS)(linear.causal_conv_with_state)
register("GridSample", domain=MS)(sampling.grid_sample)
register("MaxpoolWithMask", "NhwcMaxPool", domain=MS)(pooling.max_pool)
