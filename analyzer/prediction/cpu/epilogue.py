"""A Clip fused into an onnxruntime CPU convolution is not free: its per-element epilogue.

onnxruntime fuses a convolution and the activation after it into one kernel (FusedConv; in the
NCHWc layout a Conv with an ``activation`` attribute). A fused Relu costs next to nothing; a
fused Clip (ReLU6: MobileNetV2's activation) does not. Measured with onnxruntime 1.32 on a 2-core
EPYC at 1 thread, single-op wall-clock, the same convolution without / with a Clip after it
(onnxruntime fused both into the convolution):

- depthwise 3x3, 144 channels, 56x56: 127.2 / 182.5 us (+55 us on 451,584 outputs: 0.12 ns each)
- depthwise 3x3, 384 channels, 14x14: 31.1 / 38.2 us (+7.1 us on 75,264: 0.09 ns); 960 at 7x7:
  19.8 / 24.8 us (0.11 ns); with a fused Relu instead: +1.4 and +0.3 us
- 1x1, 24 -> 144 channels, 56x56: 160.1 / 193.8 us (0.075 ns); 3x3, 64 -> 64, 56x56: 888.9 /
  905.1 us (0.08 ns)

A standalone Clip over the 451,584 elements took 35 us: the fused epilogue is a pass over the
output of its own. Single-op calibration rows (conv classes, with a fused Relu or none) do not
see it; MobileNetV2 has 35 of them.

So ``calibrate`` times pairs of convolutions without and with a Clip (``pair_models``; no shape
of an evaluated model) and stores the median seconds per output element as
``calibration.clip_epilogue_ns``; ``lowering`` adds, for a calibrated onnxruntime profile, each
fused Clip's output elements x that figure to its kernel's fixed cost, where the kernel is a
convolution (``epilogue_s``). A Clip that runs as its own kernel is an ``activation`` kernel.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from analyzer.prediction.efficiency import kernel_time as eff

# fused activations with a per-element epilogue, and the classes of the kernels they fuse into
EPILOGUE_OPS = frozenset({"Clip"})
CONV_CLASSES = frozenset(eff.CLASS_CODE[c] for c in ("conv", "conv_dw", "conv_1x1", "conv_grouped"))


def pair_models() -> list[tuple[Any, Any, int]]:
    """(convolution, the same + Clip(0, 6), output elements) for a depthwise, a pointwise and a
    3x3 convolution at shapes no evaluated model has."""
    from onnx import TensorProto, helper, numpy_helper

    out = []
    for c_in, c_out, hw, k, group in [(160, 160, 40, 3, 160), (448, 448, 12, 3, 448),
                                      (40, 200, 36, 1, 1), (40, 40, 40, 3, 1)]:
        rng = np.random.default_rng(c_in + hw)
        inits = [numpy_helper.from_array(rng.standard_normal((c_out, c_in // group, k, k)).astype(np.float32) * 0.1, "w"),
                 numpy_helper.from_array(np.zeros(c_out, np.float32), "b"),
                 numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
                 numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
        pair = []
        for clip in (False, True):
            nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=group, pads=[k // 2] * 4)]
            if clip:
                nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
            g = helper.make_graph(nodes, "epilogue", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                    [1, c_in, hw, hw])],
                                  [helper.make_tensor_value_info("y" if clip else "c", TensorProto.FLOAT,
                                                                 [1, c_out, hw, hw])],
                                  inits if clip else inits[:2])
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
            m.ir_version = 8
            pair.append(m)
        out.append((pair[0], pair[1], c_out * hw * hw))
    return out


def measure(timer: Callable[[Any], float], tries: int = 3, pairs=None) -> float:
    """Seconds per output element of a fused Clip: the median over ``pairs`` (default
    ``pair_models()``) of (fastest time with the Clip - fastest without) / output elements, at
    least 0. ``timer(model)``: one wall-clock measurement (seconds)."""
    return pair_difference(timer, pairs or pair_models(), tries)


def pair_difference(timer: Callable[[Any], float], pairs, tries: int = 3) -> float:
    """Seconds per element that the second model of each ``(base, other, elements)`` pair adds:
    the median over the pairs of (fastest of ``tries`` with ``other`` - fastest with ``base``) /
    elements, at least 0 (a difference below the timer's noise is no cost)."""
    per = []
    for base, other, elems in pairs:
        a = min(timer(base) for _ in range(tries))
        b = min(timer(other) for _ in range(tries))
        per.append((b - a) / elems)
    return max(float(np.median(per)), 0.0)


def epilogue_s(calibration: Mapping[str, Any] | None, nodes: Sequence, members: Sequence[Sequence[int]],
               cls: np.ndarray) -> np.ndarray:
    """Seconds per launch each kernel adds for the Clips fused into it (0 where the profile has no
    ``clip_epilogue_ns``, the kernel is not a convolution, or it fused none). ``members``: each
    kernel's node indices (``fusion.plan``); ``cls``: each kernel's class code."""
    out = np.zeros(len(members))
    per = float((calibration or {}).get("clip_epilogue_ns") or 0.0) * 1e-9
    if per <= 0:
        return out
    for k, mem in enumerate(members):
        if len(mem) > 1 and int(cls[k]) in CONV_CLASSES:
            for i in mem:
                n = nodes[i]
                if n.op in EPILOGUE_OPS and n.out_specs and n.out_specs[0] is not None:
                    shape = n.out_specs[0].shape or ()
                    if all(type(d) is int for d in shape):
                        out[k] += per * float(np.prod(shape, dtype=np.float64))
    return out
