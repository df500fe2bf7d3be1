"""Predict a grid of common single ops on every accelerator profile: does each one predict?

    PYTHONPATH=$PWD python bench/accel_single_ops.py [--out FILE.md] [--quick]

Predictions only (no measurement, no fitting).  Two grids:

- JAX programs (``jax_cases``: matmul and batched ``dot_general`` in bf16, f32, int8 with int32
  accumulation, float8_e4m3fn / float8_e5m2, a f16 matmul, f32 matmuls at precision HIGH / HIGHEST; NHWC convolutions, grouped, depthwise
  and transposed; elementwise, reductions, softmax, layer norm, attention, gather, scatter-add,
  cumsum, sort, top_k, rfft, transpose, concatenate, reshape, dynamic_slice, pooling, resize,
  scan and while loops), each at a small, an off-grid (1000, 129) and a large (4096) shape,
  predicted under the ``xla`` runtime on every TPU profile (``TPUS``).
- One-node ONNX models (``onnx_cases``: float32 graphs, weights declared as external data that
  is never read) on the Hexagon (``qnn``), Apple Neural Engine (``coreml``) and Edge TPU
  (``edgetpu``) profiles and the DSP / NPU profiles under their default runtimes (``ACCELS``,
  with int8 columns for one Hexagon and one ANE).

Each cell is the predicted latency (us), or the exception's type where the library raised one
(its message is listed under the table).  A cell is plausible when it is finite and > 0, or 0
with the library's warning that no node launches a kernel (a lone view: ``predict.NO_KERNEL``,
"(no kernel)" in the table).  A case with an uncosted node fails.  The
generation order (``ORDER``, the pairs of tests/prediction/test_xla_tpu.py): the newer TPU is
never predicted slower where it is at least as good on every figure the case needs (the peak of
the case's matrix dtype and the HBM bandwidth, both per JAX device; ``order_applies``).
Exit 1 on an error, an implausible cell or an order violation.  Writes
bench/results/accel_single_ops.md (``--quick``: the subsets ``QUICK`` and ``QUICK_ONNX``, printed
only; tests/bench/test_accel_single_ops.py runs them).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
RESULT = os.path.join(ROOT, "bench", "results", "accel_single_ops.md")
COMMAND = "PYTHONPATH=$PWD python bench/accel_single_ops.py"
TPUS = ("tpu-v2", "tpu-v3", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x")
# (profile, runtime: None for its default, precision: None for the runtime's default)
ACCELS = (("hexagon-sd8gen2", "qnn", None), ("hexagon-sd8gen3", "qnn", None), ("hexagon-sd8gen3", "qnn", "int8"),
          ("ane-a16", "coreml", None), ("ane-a17pro", "coreml", None), ("ane-m4", "coreml", None),
          ("ane-a17pro", "coreml", "int8"), ("edge-tpu", "edgetpu", None), ("hifi4", None, None),
          ("hifi5", None, None), ("vision-p6", None, None), ("vision-q6", None, None), ("vision-q7", None, None),
          ("vision-q8", None, None), ("ethos-u55", None, None), ("ethos-u65", None, None),
          ("neupro-m", None, None), ("neupro-nano", None, None))
# (older, newer): the newer at least as good on the datasheet figures both state
ORDER = (("tpu-v5e", "tpu-v6e"), ("tpu-v6e", "tpu7x"), ("tpu-v5e", "tpu-v5p"), ("tpu-v4", "tpu-v5p"))
# shape sets: small, off the MXU / vector grid, large
SIZES = {"s": (8, 128), "o": (1000, 129), "l": (4096, 4096)}
MM = {"s": (128, 128, 128), "o": (1000, 129, 1000), "l": (4096, 4096, 4096)}
BMM = {"s": (4, 128, 64, 128), "o": (12, 1000, 129, 100), "l": (16, 1024, 4096, 1024)}
# NHWC input (n, h, w, c), output channels, kernel size
CONV = {"s": (1, 8, 8, 16, 32, 3), "o": (2, 57, 57, 129, 129, 3), "l": (8, 64, 64, 256, 256, 3)}
QUICK = ("matmul bf16 o", "matmul int8 s", "matmul f8e4m3 s", "dot_general bf16 o", "conv dw s",
         "gelu erf o", "layer_norm o", "scatter_add o", "sort o", "top_k o", "rfft o", "while o",
         "scan s", "matmul f32 l", "reshape s")
QUICK_ONNX = ("MatMul o", "Conv dw o", "Concat l", "LayerNormalization s", "Resize s", "Reshape s", "NonZero o",
              "GroupNormalization o")


def _sd(shape, dtype):
    import jax

    return jax.ShapeDtypeStruct(tuple(shape), dtype)


def _matmul_cases(jnp, lax):
    dt = {"bf16": (jnp.bfloat16, None), "f32": (jnp.float32, None), "int8": (jnp.int8, jnp.int32),
          "f8e4m3": (jnp.float8_e4m3fn, jnp.float32), "f8e5m2": (jnp.float8_e5m2, jnp.float32)}
    out = {}
    for name, (d, acc) in dt.items():
        def mm(a, b, acc=acc):
            return jnp.matmul(a, b, preferred_element_type=acc)

        def bmm(a, b, acc=acc):
            return lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))), preferred_element_type=acc)

        for s, (m, k, n) in MM.items():
            out[f"matmul {name} {s}"] = (mm, (_sd((m, k), d), _sd((k, n), d)))
        for s, (b, m, k, n) in BMM.items():
            out[f"dot_general {name} {s}"] = (bmm, (_sd((b, m, k), d), _sd((b, k, n), d)))
    for level in ("high", "highest"):    # an f32 dot's precision: 3 / 6 bf16 MXU passes on a TPU
        for s, (m, k, n) in MM.items():
            out[f"matmul f32 {level} {s}"] = (lambda a, b, p=level: jnp.matmul(a, b, precision=p),
                                              (_sd((m, k), jnp.float32), _sd((k, n), jnp.float32)))
    return out


def _conv_cases(jnp, lax):
    out = {}
    for s, (n, h, w, c, o, r) in CONV.items():
        for kind, groups in (("dense", 1), ("grouped", 4), ("dw", c)):
            cout = c if kind == "dw" else o - o % groups

            def conv(x, k, g=groups):
                return lax.conv_general_dilated(x, k, (1, 1), "SAME", feature_group_count=g,
                                                dimension_numbers=("NHWC", "HWIO", "NHWC"))

            out[f"conv {kind} {s}"] = (conv, (_sd((n, h, w, c - c % groups), jnp.bfloat16),
                                            _sd((r, r, (c - c % groups) // groups, cout), jnp.bfloat16)))
    return out


def _row_ops(jax, jnp, lax):
    """name -> fn of one [rows, cols] array (bf16 where XLA takes it, rfft in f32)."""
    def layer_norm(x):
        m = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean(jnp.square(x - m), axis=-1, keepdims=True)
        return (x - m) * lax.rsqrt(v + 1e-5)

    def scan(x):
        return lax.scan(lambda c, r: (jnp.tanh(c + r), None), jnp.zeros_like(x[0]), x)[0]

    def loop(x):
        return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, jnp.tanh(c[1]) * 0.5),
                              (0, x))[1]

    return {"exp": jnp.exp, "tanh": jnp.tanh, "gelu tanh": jax.nn.gelu,
            "gelu erf": lambda x: jax.nn.gelu(x, approximate=False),
            "sum": lambda x: jnp.sum(x, axis=-1), "max": lambda x: jnp.max(x, axis=-1),
            "mean": lambda x: jnp.mean(x, axis=-1), "softmax": lambda x: jax.nn.softmax(x, axis=-1),
            "layer_norm": layer_norm, "cumsum": lambda x: jnp.cumsum(x, axis=-1),
            "sort": lambda x: jnp.sort(x, axis=-1), "top_k": lambda x: lax.top_k(x, 8)[0],
            "rfft": lambda x: jnp.fft.rfft(x, axis=-1), "transpose": lambda x: x.T,
            "reshape": lambda x: x.reshape(-1), "concatenate": lambda x: jnp.concatenate([x, x], 0),
            "scan": scan, "while": loop}


def _elementwise_cases(jax, jnp, lax):
    out = {}
    for s, shape in SIZES.items():
        x = _sd(shape, jnp.bfloat16)
        out[f"add {s}"] = (jnp.add, (x, x))
        out[f"mul {s}"] = (jnp.multiply, (x, x))
        for name, fn in _row_ops(jax, jnp, lax).items():
            out[f"{name} {s}"] = (fn, (_sd(shape, jnp.float32) if name == "rfft" else x,))
        rows = shape[0]
        out[f"take {s}"] = (lambda t, i: jnp.take(t, i, axis=0), (x, _sd((rows // 2 + 1,), jnp.int32)))
        out[f"scatter_add {s}"] = (lambda t, i, u: t.at[i].add(u),
                                   (x, _sd((rows // 2 + 1,), jnp.int32), _sd((rows // 2 + 1, shape[1]), jnp.bfloat16)))
        out[f"dynamic_slice {s}"] = (lambda t, i, r=rows // 2, c=shape[1]: lax.dynamic_slice(t, (i, 0), (r, c)),
                                     (x, _sd((), jnp.int32)))
    return out


def _more_row_ops(jax, jnp, lax):
    """More one-array programs: the other ops of a common model."""
    def pool(x, op, init):
        return lax.reduce_window(x, init, op, (2, 2), (2, 2), "VALID")

    return {"argmax": lambda x: jnp.argmax(x, axis=-1), "sigmoid": jax.nn.sigmoid, "relu": jax.nn.relu,
            "where": lambda x: jnp.where(x > 0, x, 0.1 * x), "clip": lambda x: jnp.clip(x, -1, 1),
            "astype f32": lambda x: x.astype(jnp.float32), "pad": lambda x: jnp.pad(x, ((1, 1), (2, 2))),
            "logsumexp": lambda x: jax.nn.logsumexp(x, axis=-1),
            "max_pool": lambda x: pool(x, lax.max, -jnp.inf), "avg_pool": lambda x: pool(x, lax.add, 0.0) / 4,
            "resize": lambda x: jax.image.resize(x, (2 * x.shape[0], 2 * x.shape[1]), "linear"),
            "one_hot": lambda x: jax.nn.one_hot(jnp.argmax(x, axis=-1), 16, dtype=x.dtype),
            "nested jit": jax.jit(lambda x: jnp.tanh(x) * 2)}


def _attention_cases(jax, jnp, lax):
    out = {}
    for s, (b, t, h, d) in {"s": (1, 16, 2, 64), "o": (2, 129, 4, 100), "l": (4, 4096, 8, 128)}.items():
        q = _sd((b, t, h, d), jnp.bfloat16)
        out[f"einsum attention {s}"] = (lambda q, k: jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k), -1), (q, q))
        out[f"dot_product_attention {s}"] = (jax.nn.dot_product_attention, (q, q, q))
    for s, (n, hh, w, c, o, r) in CONV.items():
        def tconv(x, k):
            return lax.conv_transpose(x, k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        out[f"conv_transpose {s}"] = (tconv, (_sd((n, hh, w, c), jnp.bfloat16), _sd((r, r, c, o), jnp.bfloat16)))
        out[f"matmul f16 {s}"] = (jnp.matmul, (_sd(MM[s][:2], jnp.float16), _sd(MM[s][1:], jnp.float16)))
    return out


def jax_cases():
    """name -> (fn, example args as ShapeDtypeStructs)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    more = {f"{n} {s}": (fn, (_sd(shape, jnp.bfloat16),)) for s, shape in SIZES.items()
            for n, fn in _more_row_ops(jax, jnp, lax).items()}
    return {**_matmul_cases(jnp, lax), **_conv_cases(jnp, lax), **_elementwise_cases(jax, jnp, lax),
            **more, **_attention_cases(jax, jnp, lax)}


def _weight(name, dims):
    """A float32 initializer declared as external data that does not exist (never read)."""
    from onnx import TensorProto

    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "absent.data"), ("offset", "0"), ("length", str(4 * math.prod(dims)))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def _one_node(op, inputs, weights=(), consts=(), opset=17, n_out=1, **attrs):
    """A one-node ONNX model: ``inputs`` name -> float32 shape, or (shape, ONNX elem type);
    ``weights`` (name, dims) external float32 initializers; ``consts`` small initializers (numpy
    arrays by name), after the weights in the node's inputs; outputs y, y1, ..."""
    from onnx import TensorProto, helper, numpy_helper

    names = list(inputs) + [w for w, _ in weights] + [c for c, _ in consts]
    outs = ["y"] + [f"y{k}" for k in range(1, n_out)]
    node = helper.make_node(op, names, outs, name=op.lower(), **attrs)
    inits = [_weight(w, d) for w, d in weights] + [numpy_helper.from_array(a, c) for c, a in consts]
    vis = [helper.make_tensor_value_info(n, *((v[1], list(v[0])) if isinstance(v[0], tuple)
                                              else (TensorProto.FLOAT, list(v)))) for n, v in inputs.items()]
    g = helper.make_graph([node], op, vis, [helper.make_tensor_value_info(o, 0, None) for o in outs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _onnx_shape_cases(s, rows, cols):
    import numpy as np

    x = {"x": (rows, cols)}
    return {
        f"MatMul {s}": _one_node("MatMul", x, [("w", (cols, cols))]),
        f"Gemm {s}": _one_node("Gemm", x, [("w", (cols, cols)), ("b", (cols,))], transB=1),
        f"Softmax {s}": _one_node("Softmax", x, axis=-1),
        f"LayerNormalization {s}": _one_node("LayerNormalization", x, [("g", (cols,)), ("b", (cols,))], axis=-1),
        f"Gelu {s}": _one_node("Gelu", x, opset=20),
        f"Add {s}": _one_node("Add", {"x": (rows, cols), "z": (rows, cols)}),
        f"ReduceMean {s}": _one_node("ReduceMean", x, axes=[-1]),
        f"Gather {s}": _one_node("Gather", x, consts=[("i", np.arange(rows // 2, dtype=np.int64))], axis=0),
        f"Transpose {s}": _one_node("Transpose", x, perm=[1, 0]),
        f"Concat {s}": _one_node("Concat", {"x": (rows, cols), "z": (rows, cols)}, axis=0)}


def _onnx_more_cases(s, rows, cols):
    import numpy as np
    from onnx import TensorProto

    x, i64 = {"x": (rows, cols)}, np.int64
    half = np.array([rows // 2, rows - rows // 2], i64)
    return {
        f"ArgMax {s}": _one_node("ArgMax", x, axis=-1), f"Sigmoid {s}": _one_node("Sigmoid", x),
        f"Relu {s}": _one_node("Relu", x), f"Erf {s}": _one_node("Erf", x), f"Sqrt {s}": _one_node("Sqrt", x),
        f"Where {s}": _one_node("Where", {"c": ((rows, cols), TensorProto.BOOL), "x": (rows, cols), "z": (rows, cols)}),
        f"Slice {s}": _one_node("Slice", x, consts=[("st", np.array([1], i64)), ("en", np.array([rows], i64)),
                                                    ("ax", np.array([0], i64))]),
        f"Pad {s}": _one_node("Pad", x, consts=[("p", np.array([1, 2, 1, 2], i64))]),
        f"Cast {s}": _one_node("Cast", x, to=TensorProto.FLOAT16),
        f"Reshape {s}": _one_node("Reshape", x, consts=[("sh", np.array([-1], i64))]),
        f"Split {s}": _one_node("Split", x, consts=[("sp", half)], n_out=2, axis=0),
        f"Einsum {s}": _one_node("Einsum", x, [("w", (cols, cols))], equation="ij,jk->ik"),
        f"Expand {s}": _one_node("Expand", {"x": (1, cols)}, consts=[("sh", np.array([rows, cols], i64))]),
        f"TopK {s}": _one_node("TopK", x, consts=[("k", np.array([min(8, cols)], i64))], n_out=2, axis=-1),
        f"CumSum {s}": _one_node("CumSum", x, consts=[("ax", np.array(1, i64))]),
        f"NonZero {s}": _one_node("NonZero", x),
        f"ScatterND {s}": _one_node("ScatterND", {"x": (rows, cols), "ix": ((rows // 2, 1), TensorProto.INT64),
                                                  "u": (rows // 2, cols)})}


def _onnx_more_conv_cases(s, n, h, w, c, o, r):
    x = {"x": (n, c, h, w)}
    return {
        f"BatchNormalization {s}": _one_node("BatchNormalization", x, [(k, (c,)) for k in ("g", "b", "m", "v")]),
        f"AveragePool {s}": _one_node("AveragePool", x, kernel_shape=[2, 2], strides=[2, 2]),
        f"GlobalAveragePool {s}": _one_node("GlobalAveragePool", x),
        f"ConvTranspose {s}": _one_node("ConvTranspose", x, [("w", (c, o, 2, 2))], strides=[2, 2]),
        f"GroupNormalization {s}": _one_node("GroupNormalization", x, [("g", (c,)), ("b", (c,))],
                                             num_groups=c // 4 if c % 4 == 0 else 1, opset=21)}


def _onnx_conv_cases(s, n, h, w, c, o, r):
    import numpy as np

    x = {"x": (n, c, h, w)}
    scales = np.array([1, 1, 2, 2], dtype=np.float32)
    return {
        f"Conv {s}": _one_node("Conv", x, [("w", (o, c, r, r)), ("b", (o,))], pads=[1] * 4),
        f"Conv dw {s}": _one_node("Conv", x, [("w", (c, 1, r, r)), ("b", (c,))], pads=[1] * 4, group=c),
        f"Resize {s}": _one_node("Resize", x, consts=[("roi", np.zeros(0, np.float32)), ("sc", scales)],
                                 mode="nearest"),
        f"MaxPool {s}": _one_node("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2])}


def onnx_cases():
    """name -> onnx.ModelProto (float32 graphs; the profile's runtime picks its precision)."""
    out = {}
    for s, (rows, cols) in SIZES.items():
        out.update(_onnx_shape_cases(s, rows, cols))
        out.update(_onnx_more_cases(s, rows, cols))
    for s, (n, h, w, c, o, r) in CONV.items():
        out.update(_onnx_conv_cases(s, n, h, w, c, o, r))
        out.update(_onnx_more_conv_cases(s, n, h, w, c, o, r))
    return out


def _cells(report, targets):
    """[(latency s | None, error 'Type: message' | None, whether it warns that no kernel runs)] of
    one counted report per (profile, runtime, precision)."""
    from analyzer.prediction.predict import NO_KERNEL, predict

    out = []
    for pid, rt, precision in targets:
        try:
            (p,) = predict(report, [pid], runtime=rt, precision=precision)
            out.append((p.latency_s, None, NO_KERNEL in p.warnings))
        except Exception as e:     # noqa: BLE001  (the bench reports every failure, library or not)
            out.append((None, f"{type(e).__name__}: {e}", False))
    return out


def _count(build):
    """(report, None) or (None, error) of the counting stage (the frontend and the rules)."""
    try:
        rep = build()
    except Exception as e:         # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"
    if rep.coverage.uncosted:
        return None, f"uncosted: {', '.join(rep.coverage.uncosted)}"
    return rep, None


def run_jax(names=None):
    """{case: [(latency, error)] per TPUS}."""
    import analyzer

    rows = {}
    for name, (fn, args) in jax_cases().items():
        if names is None or name in names:
            rep, err = _count(lambda: analyzer.analyze_jax(fn, *args))
            rows[name] = _cells(rep, [(t, "xla", None) for t in TPUS]) if rep else [(None, err, False)] * len(TPUS)
    return rows


def run_onnx(names=None):
    """{case: [(latency, error)] per ACCELS}."""
    import analyzer

    rows = {}
    for name, model in onnx_cases().items():
        if names is None or name in names:
            rep, err = _count(lambda: analyzer.analyze(model))
            rows[name] = _cells(rep, ACCELS) if rep else [(None, err, False)] * len(ACCELS)
    return rows


def plausible(cell) -> bool:
    """Finite and > 0, or 0 with the library's warning that no kernel runs (a model of views)."""
    t, err, no_kernel = cell
    return err is None and t is not None and math.isfinite(t) and (t > 0 or (t == 0 and no_kernel))


def _figures(pid, dtype):
    """(matrix peak of ``dtype`` per JAX device or None, HBM GB/s per JAX device)."""
    import hardware_db
    from analyzer.prediction import xla_tpu

    p = hardware_db.get(pid)
    per = xla_tpu.DEVICES_PER_CHIP.get(p.family, (1,))[0]
    peak = p.peak_flops("matrix", dtype)
    return (peak / per if peak else None), p.mem_bw_gbs / per


def case_dtype(name: str) -> str:
    """The matrix dtype a case's figures are read at: bf16 unless the case names int8 or fp8 (an
    f32 dot runs on the MXU in bf16 passes: one at XLA's default precision on a TPU, 3 / 6 at HIGH /
    HIGHEST on every TPU alike)."""
    for key, d in (("int8", "int8"), ("f8", "fp8")):
        if f" {key}" in name:
            return d
    return "bf16"


def order_applies(old, new, name) -> bool:
    """The newer is at least as good on the case's matrix peak (when the older states one) and bandwidth."""
    (pa, ba), (pb, bb) = _figures(old, case_dtype(name)), _figures(new, case_dtype(name))
    return bb >= ba and (pa is None or (pb is not None and pb >= pa))


def order_violations(rows):
    """[(case, old, t_old, new, t_new)] where a newer TPU that order_applies is predicted slower."""
    out = []
    for name, cells in rows.items():
        t = dict(zip(TPUS, cells))
        for old, new in ORDER:
            if plausible(t[old]) and plausible(t[new]) and order_applies(old, new, name) \
                    and t[new][0] > t[old][0]:
                out.append((name, old, t[old][0], new, t[new][0]))
    return out


def _fmt(cell) -> str:
    t, err, no_kernel = cell
    if err is not None:
        return err.split(":", 1)[0]
    return (f"{t * 1e6:.4g}{' (no kernel)' if no_kernel else ''}" if plausible(cell) else f"BAD {t!r}")


def table(rows, columns) -> list[str]:
    lines = ["| case | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {n} | " + " | ".join(_fmt(c) for c in cells) + " |" for n, cells in rows.items()]
    return lines


def _errors(rows, columns) -> list[str]:
    seen = {}
    for name, cells in rows.items():
        for col, (_t, err, _w) in zip(columns, cells):
            if err is not None:
                seen.setdefault(err, []).append(f"{name} @ {col}")
    return [f"- `{err[:400]}`: {', '.join(where[:6])}{' ...' if len(where) > 6 else ''} ({len(where)} cells)"
            for err, where in seen.items()]


def report(jrows, orows) -> tuple[list[str], int]:
    """(markdown lines, number of failures: errors, implausible cells, order violations)."""
    acc_cols = [f"{p} {rt or 'default'}{' ' + x if x else ''}" for p, rt, x in ACCELS]
    bad = sum(not plausible(c) for rows in (jrows, orows) for cells in rows.values() for c in cells)
    viol = order_violations(jrows)
    lines = [f"    {COMMAND}", "",
             f"Predicted latency (us) of single ops; a cell names the exception where the library raised one. "
             f"{sum(len(v) for v in jrows.values()) + sum(len(v) for v in orows.values())} cells, "
             f"{bad} failed (an error, or not finite > 0 without the no-kernel warning), "
             f"{len(viol)} generation-order violations.", "",
             "## JAX programs under xla on the TPU profiles", "", *table(jrows, TPUS), "",
             "## One-node ONNX models on the other accelerators (profile, runtime, precision where not the default)", "",
             *table(orows, acc_cols), "", "## Errors", ""]
    lines += _errors(jrows, TPUS) + _errors(orows, acc_cols) or ["none"]
    lines += ["", "## Generation order (newer slower where it is at least as good on every figure)", ""]
    lines += [f"- {n}: {o} {a * 1e6:.4g} us < {w} {b * 1e6:.4g} us" for n, o, a, w, b in viol] or ["none"]
    return lines, bad + len(viol)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=RESULT)
    ap.add_argument("--quick", action="store_true", help="the QUICK subset, printed only")
    a = ap.parse_args(argv)
    names = set(QUICK) if a.quick else None
    lines, failures = report(run_jax(names), run_onnx(set(QUICK_ONNX) if a.quick else None))
    text = "\n".join(["# Single ops on the accelerator profiles", "", *lines, ""])
    print(text)
    if not a.quick:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
