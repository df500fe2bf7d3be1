"""The synthetic JAX programs ``analyze hw calibrate --runtime xla`` times (never a user's).

Each row is one small jitted program that XLA compiles to one kernel of interest (a dot, a
convolution, a loop fusion, a reduction, a gather, a transpose), in the two forms JAX programs
take: weights closed over as constants (inference functions like ``samples/jax_models.py``'s
``*_infer``) and every operand an argument (train steps: activations times gradients). The
shapes span GEMV to square GEMMs, 3x3/1x1/depthwise convolutions and their input and weight
gradients, and elementwise sizes from 1K to 4M floats; none is a layer of the JAX programs
``bench/accuracy_xla_cpu.py`` scores (``tests/measure/test_xla_calibration.py`` checks it).

A row is ``(label, build)``; ``build(rng)`` returns ``(fn, args)``: a function of arrays and
concrete float32 arguments (numpy). Built lazily: importing this module imports no JAX.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

Row = tuple[str, Callable[[np.random.Generator], tuple[Callable, tuple]]]


def _r(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def _dot_const(m, k, n):
    def build(rng):
        w = _r(rng, k, n, scale=k ** -0.5)
        return (lambda x: x @ w), (_r(rng, m, k),)
    return f"dot {m}x{k}x{n} (weights constant)", build


# dots with both operands as arguments, by the dims they contract: (lhs, rhs), the operand shapes
_DOT_FORMS = {"both arguments": ((1,), (0,)),   # x @ w
              "x^T g": ((0,), (0,)),            # a weight gradient as jax.grad writes it
              "g w^T": ((1,), (1,))}            # an input gradient


def _dot_args(m, k, n, form="both arguments"):
    def build(rng):
        from jax import lax
        lc, rc = _DOT_FORMS[form]
        a = _r(rng, *((k, m) if lc == (0,) else (m, k)))
        b = _r(rng, *((k, n) if rc == (0,) else (n, k)))
        return (lambda a, b: lax.dot_general(a, b, ((lc, rc), ((), ())))), (a, b)
    return f"dot {m}x{k}x{n} ({form})", build


def _bdot(b, s, t, d):
    def build(rng):
        import jax.numpy as jnp
        return (lambda q, k: jnp.einsum("bqd,bkd->bqk", q, k)), (_r(rng, b, s, d), _r(rng, b, t, d))
    return f"batched dot {b}x{s}x{t}x{d}", build


def _conv_fn(stride, pad, groups):
    from jax import lax

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad)] * 2,
                                        feature_group_count=groups,
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return conv


def _conv(n, c, hw, o, k, stride=1, groups=1):
    def build(rng):
        w = _r(rng, o, c // groups, k, k, scale=(c // groups * k * k) ** -0.5)
        conv = _conv_fn(stride, k // 2, groups)
        return (lambda x: conv(x, w)), (_r(rng, n, c, hw, hw),)
    dw = " depthwise" if groups == c else f" {groups} groups" if groups > 1 else ""
    return f"conv{dw} {n}x{c}x{hw}x{hw} -> {o} k{k} s{stride}", build


def _conv1d(n, c, length, o, k, dilation=1):
    """A 1-D convolution (NCH, "SAME" padding), as temporal and audio stacks write it."""
    def build(rng):
        from jax import lax
        w = _r(rng, o, c, k, scale=(c * k) ** -0.5)
        return (lambda x: lax.conv_general_dilated(x, w, (1,), "SAME", rhs_dilation=(dilation,),
                                                   dimension_numbers=("NCH", "OIH", "NCH"))), (_r(rng, n, c, length),)
    dil = f" dilation {dilation}" if dilation > 1 else ""
    return f"conv1d {n}x{c}x{length} -> {o} k{k}{dil}", build


def _conv_dgrad(n, c, hw, o, k, stride=1, groups=1):
    """The input gradient of a convolution (what jax.grad emits for a conv's input)."""
    def build(rng):
        import jax
        w = _r(rng, o, c // groups, k, k, scale=(c // groups * k * k) ** -0.5)
        conv = _conv_fn(stride, k // 2, groups)
        x = _r(rng, n, c, hw, hw)
        out = (hw + 2 * (k // 2) - k) // stride + 1

        def dgrad(x, g):
            return jax.vjp(lambda x: conv(x, w), x)[1](g)[0]
        return dgrad, (x, _r(rng, n, o, out, out))
    return f"conv input gradient {n}x{c}x{hw}x{hw} -> {o} k{k} s{stride}{_groups(groups)}", build


def _groups(groups):
    return f", {groups} groups" if groups > 1 else ""


def _conv_wgrad(n, c, hw, o, k, stride=1, groups=1):
    """The weight gradient of a convolution (jax.grad for a conv's weights; of a grouped one, a
    convolution with batch_group_count = groups)."""
    def build(rng):
        import jax
        conv = _conv_fn(stride, k // 2, groups)
        out = (hw + 2 * (k // 2) - k) // stride + 1

        def wgrad(x, w, g):
            return jax.vjp(lambda w: conv(x, w), w)[1](g)[0]
        return wgrad, (_r(rng, n, c, hw, hw), _r(rng, o, c // groups, k, k), _r(rng, n, o, out, out))
    return f"conv weight gradient {n}x{c}x{hw}x{hw} -> {o} k{k} s{stride}{_groups(groups)}", build


def _pool(n, c, hw, kind):
    def build(rng):
        import jax
        import jax.numpy as jnp
        from jax import lax

        def pool(x):
            if kind == "avg":
                return lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID") * 0.25
            return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        x = _r(rng, n, c, hw, hw)
        if kind == "grad":
            return (lambda x, g: jax.vjp(pool, x)[1](g)[0]), (x, _r(rng, n, c, hw // 2, hw // 2))
        return pool, (x,)
    return f"{kind} pool 2x2 {n}x{c}x{hw}x{hw}", build


def _ew(label, f, *shapes):
    def build(rng):
        return f, tuple(_r(rng, *s) for s in shapes)
    return label, build


def _ew_const(label, f_of_c, shape, c_shape):
    def build(rng):
        c = _r(rng, *c_shape)
        return f_of_c(c), (_r(rng, *shape),)
    return label, build


def xla_rows() -> dict[str, list[Row]]:
    """``{row group: [(label, build)]}``; the op class of a row is the class opcost's ``xla``
    lowering gives its kernel (``calibrate_xla``), not the group (a group is how the rows were
    chosen)."""
    return {**_matrix_rows(), **_vector_rows()}


def _matrix_rows() -> dict[str, list[Row]]:
    """Products, convolutions (and their gradients) and pools: the matrix-unit rows."""
    G: dict[str, list[Row]] = {}
    G["dot"] = ([_dot_const(m, k, n) for m, k, n in [
        (1, 32, 48), (1, 128, 128), (1, 256, 512), (1, 512, 512), (1, 1024, 1024), (1, 96, 16),
        (2, 64, 96), (4, 512, 512), (8, 32, 48), (8, 384, 384), (16, 128, 96), (32, 64, 48),
        (32, 256, 256), (64, 64, 64), (64, 512, 128), (128, 128, 128), (128, 384, 1536),
        (256, 256, 256), (512, 128, 32), (1024, 64, 64), (48, 1024, 1024), (200, 96, 200)]]
        + [_dot_args(m, k, n) for m, k, n in [
            (8, 48, 96), (24, 128, 128), (96, 96, 96), (256, 64, 256), (512, 512, 512)]]
        + [_dot_args(m, k, n, "x^T g") for m, k, n in [
            (128, 16, 64), (512, 24, 256), (96, 64, 96), (64, 1024, 64),
            # weight gradients of small batches: a few rows contracted into a large output
            (640, 8, 320), (384, 4, 512), (1024, 16, 128), (256, 2, 96),
            # and of larger layers (the rows above stop at 8 MFLOP)
            (512, 64, 384), (1024, 32, 1024), (256, 128, 256), (768, 96, 256)]]
        + [_dot_args(m, k, n, "g w^T") for m, k, n in [(4, 96, 320), (16, 512, 256), (128, 64, 192)]])
    G["batched dot"] = [_bdot(b, s, t, d) for b, s, t, d in [
        (2, 8, 8, 8), (8, 32, 32, 16), (16, 16, 16, 32), (24, 64, 64, 32), (48, 24, 24, 8),
        (12, 128, 128, 64), (4, 256, 256, 16)]]
    G["conv"] = ([_conv(n, c, hw, o, k, s) for n, c, hw, o, k, s in [
        (1, 3, 24, 8, 3, 1), (1, 8, 24, 16, 3, 1), (1, 16, 12, 32, 3, 2), (1, 32, 28, 32, 3, 1),
        (2, 16, 20, 24, 3, 1), (4, 24, 16, 24, 3, 1), (1, 64, 14, 64, 3, 1), (1, 3, 56, 32, 3, 2),
        (1, 128, 8, 128, 3, 1), (1, 16, 40, 16, 5, 1)]]
        + [_conv(n, c, hw, o, 1) for n, c, hw, o in [
            (1, 32, 24, 64), (1, 96, 14, 24), (2, 64, 16, 16), (1, 256, 7, 64)]]
        + [_conv(n, c, hw, c, k, 1, groups=c) for n, c, hw, k in [
            (1, 32, 28, 3), (1, 96, 14, 3), (2, 48, 20, 5)]]
        + [_conv(n, c, hw, o, k, 1, groups=g) for n, c, hw, o, k, g in [
            (2, 32, 16, 32, 3, 4), (1, 64, 14, 64, 3, 8), (4, 24, 12, 48, 3, 3)]]
        # batches and channels of mid-size networks: XLA's CPU convolutions reach 1.5x the small
        # rows' rate there (a 1-D 8x64x256 k5 conv at 73 GMAC/s, the rows above at <= 46), and its
        # depthwise convolution runs at a cost per output (27-28 ns at 3x3 from 16 K to 262 K
        # outputs, 41 ns at 5x5) that rows of batch 1-2 alone did not fix (synthetic probes)
        + [_conv(n, c, hw, o, k, s) for n, c, hw, o, k, s in [
            (8, 32, 16, 32, 3, 1), (4, 64, 16, 64, 3, 1), (2, 48, 32, 48, 3, 1), (8, 16, 24, 32, 3, 2)]]
        + [_conv1d(n, c, length, o, k, d) for n, c, length, o, k, d in [
            (8, 32, 128, 64, 5, 1), (4, 64, 256, 64, 3, 1), (16, 16, 512, 32, 7, 1), (2, 128, 64, 128, 3, 1),
            (4, 32, 256, 32, 3, 2), (8, 24, 96, 24, 9, 1)]]
        + [_conv(n, c, hw, o, 1) for n, c, hw, o in [
            (8, 32, 24, 64), (4, 128, 14, 128), (16, 64, 8, 256), (2, 256, 14, 128)]]
        + [_conv(n, c, hw, c, k, s, groups=c) for n, c, hw, k, s in [
            (8, 32, 24, 3, 1), (4, 64, 16, 3, 1), (8, 16, 32, 5, 1), (2, 128, 14, 3, 1), (4, 48, 28, 3, 2),
            (2, 32, 20, 7, 1)]])
    G["conv gradients"] = ([_conv_dgrad(n, c, hw, o, k, s) for n, c, hw, o, k, s in [
        (2, 8, 24, 16, 3, 1), (4, 24, 12, 48, 3, 1), (2, 16, 20, 16, 3, 2), (8, 12, 16, 24, 3, 1)]]
        + [_conv_wgrad(n, c, hw, o, k, s) for n, c, hw, o, k, s in [
            (2, 8, 24, 16, 3, 1), (4, 24, 12, 48, 3, 1), (2, 16, 20, 16, 3, 2), (8, 12, 16, 24, 3, 1)]]
        # grouped: the input gradient is a grouped convolution, the weight gradient one with
        # batch_group_count = groups (XLA's CPU backend: a tenth and a 200th of the 3x3 rate)
        + [_conv_dgrad(n, c, hw, o, k, 1, groups=g) for n, c, hw, o, k, g in [
            (2, 32, 16, 32, 3, 4), (4, 24, 12, 48, 3, 3)]]
        + [_conv_wgrad(n, c, hw, o, k, 1, groups=g) for n, c, hw, o, k, g in [
            (2, 16, 12, 16, 3, 4), (1, 32, 10, 32, 3, 8), (4, 12, 8, 24, 3, 3), (2, 48, 12, 48, 3, 6),
            (4, 32, 16, 32, 3, 4)]]
        # depthwise convolutions' gradients (groups = channels): their input gradient a depthwise
        # convolution, their weight gradient one with batch_group_count = channels; the rows above
        # were all 3x3 and at most 8 groups
        + [_conv_dgrad(n, c, hw, c, k, 1, groups=c) for n, c, hw, k in [(2, 32, 20, 7), (4, 64, 12, 3)]]
        + [_conv_wgrad(n, c, hw, c, k, 1, groups=c) for n, c, hw, k in [
            (2, 32, 20, 7), (8, 16, 12, 5), (4, 64, 12, 3), (2, 96, 14, 3)]])
    G["pooling"] = ([_pool(n, c, hw, "max") for n, c, hw in [(1, 16, 32), (4, 32, 24), (8, 64, 16)]]
                    + [_pool(n, c, hw, "avg") for n, c, hw in [(2, 24, 28), (1, 64, 56)]]
                    + [_pool(n, c, hw, "grad") for n, c, hw in [(1, 16, 32), (4, 24, 16), (2, 64, 20)]])
    return G


def _vector_rows() -> dict[str, list[Row]]:
    """Elementwise, transcendental, row-reduction, gather and transpose rows."""
    import jax
    import jax.numpy as jnp

    G: dict[str, list[Row]] = {}
    sizes = [1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
    G["elementwise"] = ([_ew(f"add {e}", lambda x, y: x + y, (e,), (e,)) for e in sizes]
                        + [_ew(f"relu {e}", lambda x: jnp.maximum(x, 0.0), (e,)) for e in sizes[::2]]
                        + [_ew_const(f"bias add {r}x{c}", lambda b: (lambda x: x + b), (r, c), (c,))
                           for r, c in [(8, 96), (64, 384), (512, 1024)]]
                        # fused kernels of several arguments (an SGD update, a multiply-add)
                        + [_ew(f"sgd update {e}", lambda p, g: p - 0.01 * g, (e,), (e,))
                           for e in (4096, 65536, 262144, 1048576)]
                        + [_ew(f"multiply-add {e}", lambda x, y, z: x * y + z, (e,), (e,), (e,))
                           for e in (16384, 262144)])
    G["transcendental"] = ([_ew(f"tanh {e}", jnp.tanh, (e,)) for e in sizes[:6:1]]
                           + [_ew(f"exp {e}", jnp.exp, (e,)) for e in sizes[1:6:2]]
                           + [_ew(f"gelu {e}", lambda x: jax.nn.gelu(x, approximate=False), (e,))
                              for e in sizes[0:6:2]]
                           + [_ew(f"sigmoid {e}", jax.nn.sigmoid, (e,)) for e in sizes[1:6:2]])

    G["row reductions"] = ([_ew(f"layer norm {r}x{c}", _layernorm, (r, c))
                            for r, c in [(4, 48), (24, 96), (96, 256), (512, 768), (2048, 128)]]
                           + [_ew(f"softmax {r}x{c}", lambda x: jax.nn.softmax(x, -1), (r, c))
                              for r, c in [(8, 8), (48, 24), (256, 128), (1536, 256)]]
                           + [_ew(f"row sum {r}x{c}", lambda x: jnp.sum(x, -1), (r, c))
                              for r, c in [(4, 40), (64, 512), (1024, 1024)]]
                           + [_ew(f"column sum {r}x{c}", lambda x: jnp.sum(x, 0), (r, c))
                              for r, c in [(24, 48), (256, 512)]])

    G["gather"] = [_gather(v, d, n) for v, d, n in [(100, 16, 4), (1000, 64, 32), (8000, 256, 512),
                                                   (30000, 512, 128)]]
    G["transpose"] = ([_ew(f"transpose {a}x{b}", lambda x: x.T, (a, b))
                       for a, b in [(16, 24), (128, 96), (512, 512), (2048, 1024)]]
                      + [_ew(f"transpose 0213 {a}x{b}x{c}x{d}", lambda x: x.transpose(0, 2, 1, 3),
                             (a, b, c, d)) for a, b, c, d in [(1, 24, 2, 16), (4, 64, 8, 32), (8, 256, 6, 64)]])
    return G


def _layernorm(x):
    """(x - mean) / sqrt(var + 1e-5) over the last axis (no scale or shift)."""
    import jax
    import jax.numpy as jnp

    m = jnp.mean(x, -1, keepdims=True)
    v = jnp.mean((x - m) ** 2, -1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5)


def _gather(v, d, n):
    """A row: ``n`` random rows taken from a ``v`` x ``d`` table."""
    import jax.numpy as jnp

    def build(rng):
        table = _r(rng, v, d)
        ids = rng.integers(0, v, n).astype(np.int32)
        return (lambda t: jnp.take(t, ids, axis=0)), (table,)
    return f"gather {n} rows of {v}x{d}", build


def run_overhead_program() -> tuple[Callable, tuple]:
    """The smallest program: one add on 8 floats (a run's own cost, its kernel included)."""
    return (lambda x: x + 1.0), (np.ones(8, np.float32),)


TINY_CHAIN = 200   # dots in the chain whose time per link is a small kernel's inside a program


def dot_chain(n: int, m: int = 32, k: int = 64) -> tuple[Callable, tuple]:
    """``n`` dependent small dots (``m``x``k``x``k``, weights constant): the first's extra cost
    over the others' is the cost of waking XLA's dot runtime in a run (``calibrate_xla``)."""
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    ws = [_r(rng, k, k, scale=k ** -0.5) for _ in range(n)]

    def f(x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return x
    return f, (_r(rng, m, k),)


def as_jax_args(args: tuple) -> tuple[Any, ...]:
    """The arguments as device arrays (a numpy argument is copied to the device on every call)."""
    import jax
    return tuple(jax.device_put(a) for a in args)


# trips of the two scans whose difference is a scan's cost per trip (``scan_program``)
SCAN_TRIPS = (8, 264)


def scan_program(trips: int, k: int = 8) -> tuple[Callable, tuple]:
    """A scan of ``trips`` trips over a tiny body: ``c = tanh(x_t @ w + c)`` with ``w`` a
    ``k``x``k`` constant, the carry stacked as an output (1x``k`` floats). Each trip XLA's CPU
    runtime runs the body's thunks back to back (the dot, the fused tanh, the slice of x_t, the
    stacked output's update, the trip counter); their work is a few hundred FLOPs, so the time
    per trip (the difference of two trip counts) is the in-loop launches' fixed cost."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(2)
    w = _r(rng, k, k, scale=k ** -0.5)

    def f(c, xs):
        return jax.lax.scan(lambda c, x: (jnp.tanh(x @ w + c), c), c, xs)
    return f, (_r(rng, 1, k), _r(rng, trips, 1, k))


# trips and rows of the scans whose body holds a dot XLA runs through YNNPACK (``dot_scan_program``):
# two trip counts, so that a cost per trip and one per loop execution are told apart
DOT_SCAN_TRIPS = (8, 64)
DOT_SCAN_ROWS = (4, 8, 16)


def dot_scan_program(trips: int, m: int, k: int = 64) -> tuple[Callable, tuple]:
    """A scan of ``trips`` trips whose body is ``h = tanh(h @ w + x_t)``: the carry ``h`` [``m``,
    ``k``], ``w`` a ``k``x``k`` constant, ``x_t`` [``m``, ``k``] scanned; the last carry is the
    result. With ``m`` > 1 the body's product is a dot XLA's CPU backend runs as a YNNPACK fusion
    (not an Eigen matrix-vector product); it depends on the previous trip's carry, so XLA cannot
    take it out of the loop. Timed at ``DOT_SCAN_TRIPS`` for each of ``DOT_SCAN_ROWS``."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    w = _r(rng, k, k, scale=k ** -0.5)

    def f(h, xs):
        return jax.lax.scan(lambda h, x: (jnp.tanh(h @ w + x), None), h, xs)[0]
    return f, (_r(rng, m, k), _r(rng, trips, m, k))


# kernels, rows and trips of the calibration's scans over elementwise-only bodies (``ew_scan_program``):
# what a loop body's vector kernels cost a trip apart from a dot (``measure.xla.loop_work``)
EW_SCAN_KERNELS = (1, 4)
EW_SCAN_ROWS = (16, 64)
EW_SCAN_TRIPS = (8, 64)


def ew_scan_program(trips: int, m: int, kernels: int, n: int = 64) -> tuple[Callable, tuple]:
    """A scan of ``trips`` trips whose body is ``kernels`` independent elementwise kernels, each
    ``h_i = tanh(h_i + x_t)`` on a carry ``h_i`` [``m``, ``n``] with ``x_t`` [``m``, ``n``] scanned
    (the slice fused into each reader); the last carries are the result. XLA's CPU backend runs each
    carry's update as a loop fusion of its own, and each trip the trip counter (a copy, an add, the
    condition's compare): ``kernels + 3`` launches a trip, no dot."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(4)

    def f(hs, xs):
        return jax.lax.scan(lambda hs, x: (tuple(jnp.tanh(h + x) for h in hs), None), hs, xs)[0]
    hs = tuple(_r(rng, m, n) for _ in range(kernels))
    return f, (hs, _r(rng, trips, m, n))
