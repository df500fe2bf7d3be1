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
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from analyzer.prediction.cpu.epilogue import pair_difference

SPAN_OPS = frozenset({"Add", "Sub", "Mul", "Div"})


def pair_models() -> list[tuple[Any, Any, int]]:
    """(``x + c[1, 1, 1, 1]``, ``x + c[]``, elements) for ``x`` of ``[1, C, 1, 1]``, C = 1200 and
    2800, and ``[1, 1800, 1]``: shapes no evaluated model has."""
    from onnx import TensorProto, helper, numpy_helper

    out = []
    for shape in ([1, 1200, 1, 1], [1, 2800, 1, 1], [1, 1800, 1]):
        pair = []
        for cshape in ([1] * len(shape), []):
            c = numpy_helper.from_array(np.full(cshape, 0.5, np.float32), "c")
            g = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"])], "span",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], [c])
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
            m.ir_version = 8
            pair.append(m)
        out.append((pair[0], pair[1], int(np.prod(shape))))
    return out


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


def span_s(calibration: Mapping[str, Any] | None, nodes: Sequence, members: Sequence[Sequence[int]]) -> np.ndarray:
    """Seconds per launch each kernel adds for its members' one-element spans (0 where the
    profile has no ``scalar_span_ns``). ``members``: each kernel's node indices (``fusion.plan``)."""
    out = np.zeros(len(members))
    per = float((calibration or {}).get("scalar_span_ns") or 0.0) * 1e-9
    if per <= 0:
        return out
    for k, mem in enumerate(members):
        for i in mem:
            out[k] += per * span_elements(nodes[i])
    return out
