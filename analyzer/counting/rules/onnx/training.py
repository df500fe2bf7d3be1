"""ai.onnx.preview.training optimizers (Gradient is a control rule: ``control.py``).

Per optimized element: Adagrad 8 + 1 sqrt, Adam 13 (+2 with a post norm coefficient) + 1 sqrt,
Momentum 7 (Nesterov 9); plus their few scalar ops.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register

TRAINING = "ai.onnx.preview.training"


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
