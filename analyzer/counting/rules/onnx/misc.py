"""Standard ops outside the big families: selection, scatter, scans, recurrent layers, signal
processing, random generation, linear algebra and the preview training ops (sampling and
detection: ``sampling.py``).

Counting conventions (vector_flops unless said otherwise; ``lg(x)`` is ceil(log2 x)):

- TopK: a heap of k per row: ``L*lg(k)`` compares per row of length L (``L-1`` for k = 1), plus
  ``k*lg(k)`` to emit the heap sorted.  Unique: a sort (``n*lg(n)``) and an adjacent compare (n).
- NonZero / Compress / Unique / NonMaxSuppression: the output size depends on the data; when
  shape inference left it open, the bytes written are the upper bound (every element selected)
  and the node says so.
- One compare/select per element: NonZero (input), OneHot and Trilu (output), Compress (condition).
- Scatter*: copy data to the output (bytes only); a ``reduction`` is 1 op per update element.
  TensorScatter updates a cache in place: it writes only the update.
- CumSum/CumProd: 1 op per element (the scan axis is an input whose value a rule cannot see).
- RNN/GRU/LSTM, per step, direction, batch row and hidden unit (default activations): the input
  and recurrent products are mac_flops (``2*I*G*H`` and ``2*H*G*H`` per row, G gates); adding the
  two products 1 per gate, biases 2 per gate; sigmoid 2 + 1 exp, tanh 1 transcendental.  RNN:
  1 vector + 1 T; GRU: 12 vector + 3 T (z, r sigmoids; r*(.), tanh; the (1-z)*h + z*H blend
  (4)); LSTM: 14 vector + 5 T (i, f, o sigmoids; tanh(c); C = f*C + i*c (3); o*tanh(C)), peepholes 6.
- NonMaxSuppression per (batch, class): a score sort (``N*lg(N)``), box areas (3 per box), the
  score threshold (1 per box) and, upper bound, an IoU test for every pair (13 ops).
- DFT/STFT: a radix-2 FFT, ``5*N*lg(N)`` real ops per complex transform of length N (half for a
  real input), an inverse DFT adds the 1/N scaling (N), STFT adds the window multiply (N per frame).
  The DFT axis is the attribute (opset 17), else the one dim whose length changes, else -2 (opset
  20's default: the value of an axis input is not visible to a rule).
- Random generation per element: uniform 3 (draw, scale, shift), normal (Box-Muller) 4 vector +
  2 transcendentals.  Multinomial: exp of every logit, a running sum (1 per class) and per sample a
  draw plus a binary search (``1 + lg(classes)``).
- LpNormalization: |x| or x² (1), sum (1), divide (1) per
  element, a sqrt per row for p = 2.  Det: LU with partial pivoting, per M x M matrix
  ``M(M-1)/2`` pivot compares, ``M(M-1)/2`` divides, ``(M-1)M(2M-1)/3`` multiply-adds and ``M-1``
  multiplies for the diagonal product.  MelWeightMatrix: 4 per output element, a log and an exp
  per band edge.  TfIdfVectorizer: one hash lookup per candidate n-gram, one weight per output.
- Swish ``x*sigmoid(alpha*x)``: 4 + 1 T; SwiGLU: Swish(A) * B: 5 + 1 T.  CausalConvWithState:
  depthwise Conv (linear.py) plus the optional SiLU (3 + 1 T).
- ai.onnx.preview.training, per optimized element: Adagrad 8 + 1 sqrt, Adam 13 (+2 with a post
  norm coefficient) + 1 sqrt, Momentum 7 (Nesterov 9); plus their few scalar ops.
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.errors import ShapeError
from analyzer.counting.rules.onnx import linear

TRAINING = "ai.onnx.preview.training"


def _present(ins, i: int) -> bool:
    return len(ins) > i and ins[i] is not None


def output(outs, i: int = 0):
    """Output ``i``'s TensorSpec, or a clear error when the frontend has none (ONNX shape inference
    does not know ORT and some ai.onnx.ml ops: such a model must declare the output's value_info)."""
    spec = outs[i] if len(outs) > i else None
    if spec is None:
        raise ShapeError(f"output {i} has no type or shape (shape inference does not know this op; "
                         f"declare the output's value_info)")
    return spec


def lg(x: int) -> int:
    """ceil(log2 x) for x >= 1 (0 for x <= 1)."""
    return (x - 1).bit_length() if x > 1 else 0


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _upper_bound_writes(outs, bounds) -> tuple[int | None, str | None]:
    """Bytes written when some outputs have a data-dependent size: a static output is written
    whole, an open one at ``bounds[i]`` bytes.  (None, None) when every output is static."""
    present = [(i, o) for i, o in enumerate(outs) if o is not None]
    if all(o.is_static for _, o in present):
        return None, None
    total = sum(o.nbytes() if o.is_static else bounds(i) for i, o in present)
    return total, "output size depends on the data: bytes written are the upper bound"


# ----------------------------------------------------------------------------- selection


@register("TopK")
def topk(ins, outs, ctx, *, axis=-1, sorted=1):
    x = ins[0]
    shape = x.dims()
    ax = _axis(axis, len(shape))
    length = shape[ax]
    k = output(outs).dim(ax)
    rows = x.numel() // length if length else 0
    per_row = length - 1 if k <= 1 else length * lg(k)
    if sorted and k > 1:
        per_row += k * lg(k)
    return Work(vector_flops=rows * per_row)


@register("NonZero")
def nonzero(ins, outs, ctx):
    x = ins[0]
    n = x.numel()
    writes, note = _upper_bound_writes(outs, lambda i: len(x.dims()) * n * 8)
    return Work(vector_flops=n, writes=writes, note=note, estimate=note is not None)


@register("Unique")
def unique(ins, outs, ctx):
    x = ins[0]
    n = x.numel()
    writes, note = _upper_bound_writes(outs, lambda i: x.nbytes() if i == 0 else n * 8)
    return Work(vector_flops=n * lg(n) + n, writes=writes, note=note, estimate=note is not None)


@register("Compress")
def compress(ins, outs, ctx):
    x, cond = ins[0], ins[1]
    writes, note = _upper_bound_writes(outs, lambda i: x.nbytes())
    return Work(vector_flops=cond.numel(), writes=writes, note=note, estimate=note is not None)


@register("OneHot")
def one_hot(ins, outs, ctx):
    return Work(vector_flops=output(outs).numel())


@register("Trilu")
def trilu(ins, outs, ctx):
    return Work(vector_flops=output(outs).numel())


@register("NonMaxSuppression")
def non_max_suppression(ins, outs, ctx):
    scores = ins[1]
    b, c, n = scores.dims()
    per_class = n * lg(n) + 3 * n + n + 13 * (n * (n - 1) // 2)
    writes, note = _upper_bound_writes(outs, lambda i: b * c * n * 3 * 8)
    return Work(vector_flops=b * c * per_class, writes=writes,
                note="; ".join(x for x in ("IoU counted for every box pair (upper bound)", note) if x),
                estimate=True)


# ----------------------------------------------------------------------------- scatter / scan


@register("ScatterElements", "ScatterND")
def scatter(ins, outs, ctx, *, reduction="none"):
    updates = ins[2]
    return Work(vector_flops=updates.numel() if reduction != "none" else 0)


@register("Scatter")
def scatter_v9(ins, outs, ctx):
    return Work()  # the deprecated ScatterElements without a reduction: bytes only


@register("TensorScatter")
def tensor_scatter(ins, outs, ctx):
    update = ins[1]
    return Work(reads={0: 0}, writes=update.nbytes(), note="in-place cache update: writes the update only")


@register("CumSum", "CumProd")
def cumulative(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel())


# ----------------------------------------------------------------------------- recurrent layers

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
# per (step, direction, batch row, hidden unit): (vector, transcendental) with default activations
_CELL = {"RNN": (1, 1), "GRU": (12, 3), "LSTM": (14, 5)}


def _recurrent(op: str):
    gates = _GATES[op]
    cell_v, cell_t = _CELL[op]

    def rule(ins, outs, ctx, *, layout=0):
        x, w = ins[0], ins[1]
        seq, batch = (x.dim(0), x.dim(1)) if layout == 0 else (x.dim(1), x.dim(0))
        inp = x.dim(2)
        dirs = w.dim(0)
        h = w.dim(1) // gates
        rows = seq * dirs * batch
        mac = 2 * rows * inp * gates * h + 2 * rows * h * gates * h
        v = cell_v + (2 * gates if _present(ins, 3) else 0)
        if op == "LSTM" and _present(ins, 7):
            v += 6  # peepholes: multiply-add on i, f, o
        return Work(mac_flops=mac, vector_flops=rows * h * v, transcendentals=rows * h * cell_t)

    rule.__name__ = f"recurrent_{op}"
    return rule


for _op in _GATES:
    register(_op)(_recurrent(_op))


# ----------------------------------------------------------------------------- copies and fills


@register("MaxUnpool")
def max_unpool(ins, outs, ctx):
    return Work()  # zero-fill and scatter: bytes only


@register("ReverseSequence")
def reverse_sequence(ins, outs, ctx):
    return Work()  # a permuted copy


@register("EyeLike")
def eye_like(ins, outs, ctx):
    return Work()  # a fill: writes its output


# ----------------------------------------------------------------------------- signal processing

FFT = 5  # real ops per N*lg(N) of a complex radix-2 FFT


def _fft(n: int, real_input: bool) -> int:
    ops = FFT * n * lg(n)
    return ops // 2 if real_input else ops


@register("DFT")
def dft(ins, outs, ctx, *, axis=None, inverse=0, onesided=0):
    x, y = ins[0].dims(), output(outs).dims()
    r = len(x)
    if axis is None:
        changed = [i for i in range(1, r - 1) if x[i] != y[i]]
        axis = changed[0] if len(changed) == 1 else -2
    ax = _axis(axis, r)
    x_len, y_len = x[ax], y[ax]
    if onesided:
        n = 2 * (y_len - 1) if _present(ins, 1) else x_len
    else:
        n = y_len
    transforms = prod(y) // (y_len * y[-1]) if y_len else 0
    per = _fft(n, x[-1] == 1) + (n if inverse else 0)
    return Work(vector_flops=transforms * per)


@register("STFT")
def stft(ins, outs, ctx, *, onesided=1):
    y = output(outs).dims()  # (batch, frames, bins, 2)
    batch, frames, bins = y[0], y[1], y[2]
    window = ins[2] if _present(ins, 2) else None
    if window is not None:
        n = window.dim(0)
    else:
        n = 2 * (bins - 1) if onesided else bins
    per_frame = _fft(n, ins[0].dim(-1) == 1) + (n if window is not None else 0)
    return Work(vector_flops=batch * frames * per_frame)


@register("MelWeightMatrix")
def mel_weight_matrix(ins, outs, ctx):
    y = output(outs)
    bands = y.dim(1)
    return Work(vector_flops=4 * y.numel(), transcendentals=2 * (bands + 2))


# ----------------------------------------------------------------------------- random

UNIFORM = (3, 0)
NORMAL = (4, 2)


def _random(cost):
    v, t = cost

    def rule(ins, outs, ctx):
        n = output(outs).numel()
        return Work(vector_flops=v * n, transcendentals=t * n)

    return rule


register("RandomUniform")(_random(UNIFORM))
register("RandomNormal")(_random(NORMAL))
register("RandomUniformLike")(_random(UNIFORM))
register("RandomNormalLike")(_random(NORMAL))


@register("Multinomial")
def multinomial(ins, outs, ctx, *, sample_size=1):
    batch, classes = ins[0].dims()
    logits = batch * classes
    return Work(vector_flops=logits + batch * sample_size * (1 + lg(classes)), transcendentals=logits)


# ----------------------------------------------------------------------------- linear algebra / norms


@register("LpNormalization")
def lp_normalization(ins, outs, ctx, *, axis=-1, p=2):
    shape = ins[0].dims()
    n = prod(shape)
    length = shape[_axis(axis, len(shape))]
    rows = n // length if length else 0
    return Work(vector_flops=3 * n, transcendentals=rows if p == 2 else 0)


def _lu_det_ops(m: int) -> int:
    pairs = m * (m - 1) // 2
    return 2 * pairs + (m - 1) * m * (2 * m - 1) // 3 + max(m - 1, 0)


@register("Det")
def det(ins, outs, ctx):
    shape = ins[0].dims()
    m = shape[-1]
    if len(shape) < 2 or shape[-2] != m:
        raise ShapeError(f"Det needs square matrices, got {ins[0]}")
    return Work(vector_flops=prod(shape[:-2]) * _lu_det_ops(m))


@register("TfIdfVectorizer")
def tfidf_vectorizer(ins, outs, ctx, *, max_gram_length, min_gram_length, max_skip_count=0,
                     mode="TF"):
    x = ins[0].dims()
    positions = prod(x)
    lookups = positions * (max_gram_length - min_gram_length + 1) * (max_skip_count + 1)
    return Work(vector_flops=lookups + (output(outs).numel() if mode != "TF" else 0))


# ----------------------------------------------------------------------------- activations (opset 24+)

SWISH = (4, 1)  # alpha*x, sigmoid (2 + exp), * x


@register("Swish")
def swish(ins, outs, ctx):
    n = output(outs).numel()
    return Work(vector_flops=SWISH[0] * n, transcendentals=SWISH[1] * n)


@register("SwiGLU")
def swiglu(ins, outs, ctx):
    n = output(outs).numel()
    return Work(vector_flops=(SWISH[0] + 1) * n, transcendentals=SWISH[1] * n)


def _causal_conv(ins, outs, ctx, *, activation="none"):
    # input (B, C, L...), weight (C, 1, k...), bias?, past_state?: a depthwise conv over the padded
    # input (group = channels)
    x, w = ins[0], ins[1]
    bias = ins[2] if _present(ins, 2) else None
    y = output(outs)
    c = linear.conv((x, w, bias), (y,), ctx)
    n = y.numel()
    silu = activation in ("silu", "swish")
    return Work(mac_flops=c.mac_flops, vector_flops=c.vector_flops + (3 * n if silu else 0),
                transcendentals=n if silu else 0)


register("CausalConvWithState")(_causal_conv)
register("CausalConvWithState", domain="com.microsoft")(_causal_conv)


# ----------------------------------------------------------------------------- preview training


def _optimized_elements(ins, groups: int) -> int:
    n = (len(ins) - 2) // groups
    return sum(ins[2 + i].numel() for i in range(n))


@register("Adagrad", domain=TRAINING)
def adagrad(ins, outs, ctx):
    # R, T, X..., G..., H...: g = norm*X + G (2); H += g*g (2); X -= r*g / (sqrt(H) + eps) (4)
    n = _optimized_elements(ins, 3)
    return Work(vector_flops=8 * n + 3, transcendentals=n)  # r = R / (1 + T*decay): 3 scalar ops


@register("Adam", domain=TRAINING)
def adam(ins, outs, ctx, *, norm_coefficient_post=0.0):
    # R, T, X..., G..., V..., H...: g = norm*X + G (2); V = a*V + (1-a)*g (3);
    # H = b*H + (1-b)*g*g (4); X -= r*V / (sqrt(H) + eps) (4); post: X *= 1 - post (2)
    n = _optimized_elements(ins, 4)
    per = 13 + (2 if norm_coefficient_post else 0)
    return Work(vector_flops=per * n + 6, transcendentals=n + 2)  # bias corrections: 2 pow


@register("Momentum", domain=TRAINING)
def momentum(ins, outs, ctx, *, mode="standard"):
    # R, T, X..., G..., V...: g = norm*X + G (2); V = a*V + b*g (3); X -= R*V (2) (Nesterov: +2)
    n = _optimized_elements(ins, 3)
    return Work(vector_flops=(9 if mode == "nesterov" else 7) * n)
