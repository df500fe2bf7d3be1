"""A binary elementwise op of a tensor whose last dimensions are 1 and a 1-element constant of no
higher rank than those runs element by element on onnxruntime's CPU provider.

onnxruntime's broadcasting loop for Add/Sub/Mul/Div calls its inner kernel once per span of the
output in which neither input is broadcast. For ``x[1, C, 1, 1] + c`` with ``c`` a scalar of
rank 0 (or a ``[1]``) the span is the trailing 1s, 1 element: the loop makes C calls of one
element each. Measured with onnxruntime 1.32 on a 2-core EPYC at 1 thread, per node of a chain of
17 against a chain of 1 (``bench/ort_scalar_spans.py``; one process, the host loaded, the ratios
stable): ``x[1, C, 1, 1] + c[]`` 0.98 / 5.84 / 22.06 us at C = 64 / 576 / 2304 (about 10 ns an
element; 20 ns in a more loaded minute), the same with ``c[1, 1, 1, 1]`` 0.31 / 0.35 / 0.49 us;
``x[1, 576]``, ``x[1, 1, 1, 576]``, ``x[1, 576, 2, 2]`` with ``c[]`` 0.36-0.51 us; ``x[1, 576, 1]``
with ``c[]`` or ``c[1]`` 5.83 us, with ``c[1, 1]`` 0.38 us; Sub and Mul the same in either
operand order, Div with the constant second. So: a 1-element constant of rank r and a tensor of more than one element whose
last t >= 1 dimensions are 1, r <= t. A squeeze-excite block's
hard-sigmoid exported as ``Add(s, 3) -> Clip -> Div(., 6)`` on its ``[1, C, 1, 1]`` excitation
(an exporter writing the 3 and the 6 as 1-element constants of rank 0 or 1) takes this path twice.

Single-op calibration rows do not see it (their shapes end in a dimension above 1). So
``calibrate`` times pairs of single ops, the constant as ``[1, 1, 1, 1]`` and as a scalar, at
shapes no evaluated model has (``pair_models``), and stores the median seconds per element as
``calibration.scalar_span_ns``; ``lowering`` adds, for a calibrated onnxruntime profile, each such
node's output elements x that figure to its kernel's fixed cost (``span_s``).

The same loop makes one call per span wherever the two inputs broadcast differently in the
output's trailing dimensions than in the ones before: ``x[1, C, H, W] * s[1, C, 1, 1]`` (a
squeeze-excite's channel scale, a per-channel affine) runs C calls of H x W elements (a bias
``x[1, S, D] + b[D]`` S calls of D: not charged, see ``span_calls``). Measured the same way (per node of a chain of 16 against a
chain of 1, the scale as ``[1, C, 1, 1]`` against ``[1, 1, 1, 1]``; host loaded, load average
3-5): 9-13 ns a call at C x H x W = 576 x 5 x 5, 288 x 7 x 7, 256 x 10 x 10, 128 x 14 x 14,
1200 x 2 x 2 and 200 x 16 x 16 (at 1200 x 2 x 2 the whole Mul took 23x its time with the
``[1, 1, 1, 1]`` scale). Calibration rows have one span (same shapes, or a 1-element operand), so
``calibrate`` times such pairs too (``channel_pair_models``: ``calibration.channel_span_ns``, per
call) and ``span_s`` charges ``span_calls`` x that figure; a profile without it takes
``scalar_span_ns`` (assumed: a call costs the same whatever its span), else 0. The NCHWc layout
runs a binary op blocked on two blocked tensors of one shape (a residual Add, fused into the
convolution before it), and a per-channel Mul or Add of a constant on a blocked tensor as a
blocked depthwise convolution (DenseNet's second affine after each BatchNormalization): no
broadcast loop in either, so a calibration with the layout charges no calls to a constant
per-channel operand.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from analyzer.prediction.cpu.epilogue import pair_difference
from analyzer.prediction.onnxruntime.graph import LAYOUT_LEVELS

SPAN_OPS = frozenset({"Add", "Sub", "Mul", "Div"})


def pair_models() -> list[tuple[Any, Any, int]]:
    """(``x + c[1, 1, 1, 1]``, ``x + c[]``, elements) for ``x`` of ``[1, C, 1, 1]``, C = 1200 and
    2800, and ``[1, 1800, 1]``: shapes no evaluated model has."""
    out = []
    for shape in ([1, 1200, 1, 1], [1, 2800, 1, 1], [1, 1800, 1]):
        pair = [_const_op_model("Add", shape, cshape, "span") for cshape in ([1] * len(shape), [])]
        out.append((pair[0], pair[1], int(np.prod(shape))))
    return out


def _const_op_model(op: str, shape, cshape, name: str):
    """A one-node fp32 model ``y = op(x, c)``: ``x`` an input of ``shape``, ``c`` a constant 0.5
    of ``cshape`` (opset 17, IR 8)."""
    from onnx import TensorProto, helper, numpy_helper

    c = numpy_helper.from_array(np.full(cshape, 0.5, np.float32), "c")
    g = helper.make_graph([helper.make_node(op, ["x", "c"], ["y"])], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], [c])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def channel_pair_models() -> list[tuple[Any, Any, int]]:
    """(``x * s[1, 1, 1, 1]``, ``x * s[1, C, 1, 1]``, calls = C) for ``x`` of ``[1, C, h, w]`` at
    (C, h, w) = (700, 3, 3), (1500, 2, 2), (180, 12, 12): shapes no evaluated model has."""
    out = []
    for c, h, w in ((700, 3, 3), (1500, 2, 2), (180, 12, 12)):
        pair = [_const_op_model("Mul", [1, c, h, w], cshape, "channel_span")
                for cshape in ([1, 1, 1, 1], [1, c, 1, 1])]
        out.append((pair[0], pair[1], c))
    return out


def measure_channel(timer: Callable[[Any], float], tries: int = 3, pairs=None) -> float:
    """Seconds per call of the broadcast loop's spans: the median over ``pairs`` (default
    ``channel_pair_models()``) of (fastest time with the per-channel scale - fastest with the
    1-element one) / calls, at least 0."""
    return pair_difference(timer, pairs or channel_pair_models(), tries)


def measure(timer: Callable[[Any], float], tries: int = 3, pairs=None) -> float:
    """Seconds per element of the one-element spans: the median over ``pairs`` (default
    ``pair_models()``) of (fastest time with the scalar - fastest with the same-rank constant) /
    elements, at least 0. ``timer(model)``: one wall-clock measurement (seconds)."""
    return pair_difference(timer, pairs or pair_models(), tries)


def _static(spec) -> tuple[int, ...] | None:
    if spec is None or spec.shape is None or not all(type(d) is int for d in spec.shape):
        return None
    return tuple(spec.shape)


def _trailing_ones(shape: tuple[int, ...]) -> int:
    t = 0
    for d in reversed(shape):
        if d != 1:
            break
        t += 1
    return t


def span_elements(node) -> int:
    """Output elements of ``node`` that run as one-element spans: a node of ``SPAN_OPS`` with two
    inputs, one of them 1 element of rank r, the other of more than 1 element whose last t >= 1
    dimensions are 1, r <= t; else 0."""
    if node.op not in SPAN_OPS or len(node.in_specs) != 2 or not node.out_specs:
        return 0
    shapes = [_static(s) for s in node.in_specs]
    if any(s is None for s in shapes):
        return 0
    for a, b in (shapes, shapes[::-1]):
        t = _trailing_ones(b)
        if int(np.prod(a)) == 1 and int(np.prod(b)) > 1 and t >= 1 and len(a) <= t:
            return int(np.prod(b))
    return 0


def span_calls(node, blocked: bool = False) -> int:
    """Calls of onnxruntime's broadcast loop for a node of ``SPAN_OPS`` with two static inputs
    that broadcast differently in the output's trailing dimensions than in earlier ones; 0 where
    it runs as one span or ``span_elements`` counts it. Both shapes right-aligned to the output's
    rank, output dimensions of 1 dropped: the span is the product of the trailing dimensions
    over which (input 0 broadcast, input 1 broadcast) stays as in the last one; calls = output
    elements / span (``x[1, C, H, W] * s[1, C, 1, 1]``: C), counted for the form the calibration
    pairs measure only: a 4-D output whose span is its H x W (a bias ``x[1, S, D] + b[D]``, S calls
    by the same loop, is not charged: 13 ns a call at D = 64 here, not calibrated, and the recorded
    transformers, already over-predicted, moved +2-7 % with it).
    ``blocked`` (a session with the NCHWc layout): a 4-D node whose broadcast operand is a
    constant (``constant_inputs``) is taken as run as a blocked depthwise convolution, which
    onnxruntime's layout transform makes of a per-channel Mul or Add of a constant: 0 (assumed
    without reading the layout graph: where its input is not blocked it runs the loop)."""
    if node.op not in SPAN_OPS or len(node.in_specs) != 2 or not node.out_specs or span_elements(node):
        return 0
    shapes = [_static(s) for s in node.in_specs]
    if any(s is None for s in shapes):
        return 0
    rank = max(len(s) for s in shapes)
    a, b = ((1,) * (rank - len(s)) + s for s in shapes)
    out = [max(x, y) for x, y in zip(a, b)]
    flags = [(x == 1, y == 1) for x, y, o in zip(a, b, out) if o != 1]
    dims = [o for o in out if o != 1]
    if not flags:
        return 0
    span = 1
    for f, d in zip(reversed(flags), reversed(dims)):
        if f != flags[-1]:
            break
        span *= d
    calls = int(np.prod(dims)) // span
    if len(out) != 4 or span != out[2] * out[3]:   # only the per-channel form the pairs measure
        return 0
    if blocked and len(out) == 4 and any(flags[-1][j] and j in getattr(node, "constant_inputs", ()) for j in (0, 1)):
        return 0
    return calls if calls > 1 else 0


def span_s(calibration: Mapping[str, Any] | None, nodes: Sequence, members: Sequence[Sequence[int]]) -> np.ndarray:
    """Seconds per launch each kernel adds for its members' one-element spans (``scalar_span_ns``
    each) and their calls of per-channel spans (``channel_span_ns`` each; a profile without it:
    ``scalar_span_ns``); 0 where the profile has neither. ``members``: each kernel's node
    indices (``fusion.plan``). A calibration at a level with the NCHWc layout (``LAYOUT_LEVELS``)
    charges no calls to a per-channel constant (``span_calls``' ``blocked``)."""
    out = np.zeros(len(members))
    cal = calibration or {}
    per = float(cal.get("scalar_span_ns") or 0.0) * 1e-9
    per_call = cal.get("channel_span_ns")
    per_call = per if per_call is None else float(per_call) * 1e-9
    if per <= 0 and per_call <= 0:
        return out
    blocked = cal.get("level") in LAYOUT_LEVELS
    for k, mem in enumerate(members):
        for i in mem:
            out[k] += per * span_elements(nodes[i]) + per_call * span_calls(nodes[i], blocked)
    return out
