"""Signal processing: DFT, STFT, MelWeightMatrix.

- DFT/STFT: a radix-2 FFT, ``5*N*lg(N)`` real ops per complex transform of length N (half for a
  real input), an inverse DFT adds the 1/N scaling (N), STFT adds the window multiply (N per frame).
  The DFT axis is the attribute (opset 17), else the one dim whose length changes, else -2 (opset
  20's default: the value of an axis input is not visible to a rule).
- MelWeightMatrix: 4 per output element, a log and an exp per band edge.
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.common import axis_index, lg, output, present

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
    ax = axis_index(axis, r)
    x_len, y_len = x[ax], y[ax]
    if onesided:
        n = 2 * (y_len - 1) if present(ins, 1) else x_len
    else:
        n = y_len
    transforms = prod(y) // (y_len * y[-1]) if y_len else 0
    per = _fft(n, x[-1] == 1) + (n if inverse else 0)
    return Work(vector_flops=transforms * per)


@register("STFT")
def stft(ins, outs, ctx, *, onesided=1):
    y = output(outs).dims()  # (batch, frames, bins, 2)
    batch, frames, bins = y[0], y[1], y[2]
    window = ins[2] if present(ins, 2) else None
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
