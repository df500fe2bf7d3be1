"""Elementwise ops: one parametrized rule per family, counted per output element.

The per-element costs below are the operations a straightforward kernel performs
(the convention opcost documents; other tools differ and are a display option):
``(vector_flops, transcendentals)`` per output element.  exp, log, tanh, erf,
sqrt, sin, pow, ... are transcendentals; add, mul, compare, select, abs are vector.
Casts and copies are not arithmetic (0 FLOPs; their bytes are still counted).
Swish ``x*sigmoid(alpha*x)`` (opset 24+): 4 + 1 T; SwiGLU: Swish(A) * B: 5 + 1 T.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.common import output

# op: (vector per element, transcendentals per element)
UNARY: dict[str, tuple[int, int]] = {
    # plain arithmetic
    "Relu": (1, 0),            # max(x, 0)
    "Abs": (1, 0), "Neg": (1, 0), "Sign": (1, 0), "Not": (1, 0), "BitwiseNot": (1, 0),
    "Ceil": (1, 0), "Floor": (1, 0), "Round": (1, 0), "Reciprocal": (1, 0),
    "IsNaN": (1, 0), "IsInf": (1, 0),
    "LeakyRelu": (2, 0),       # x * alpha, select on x < 0
    "ThresholdedRelu": (2, 0), # compare, select
    "Shrink": (3, 0),          # two compares, one add/sub
    "HardSigmoid": (4, 0),     # alpha*x + beta, then max(0), min(1)
    "HardSwish": (5, 0),       # hardsigmoid (4) then * x
    "Softsign": (3, 0),        # x / (1 + |x|)
    # transcendental
    "Exp": (0, 1), "Log": (0, 1), "Tanh": (0, 1), "Erf": (0, 1), "Sqrt": (0, 1),
    "Sin": (0, 1), "Cos": (0, 1), "Tan": (0, 1), "Asin": (0, 1), "Acos": (0, 1), "Atan": (0, 1),
    "Sinh": (0, 1), "Cosh": (0, 1), "Asinh": (0, 1), "Acosh": (0, 1), "Atanh": (0, 1),
    "Sigmoid": (2, 1),         # 1 / (1 + exp(-x)): exp, add, divide
    "Softplus": (1, 2),        # log(1 + exp(x))
    "Elu": (3, 1),             # alpha * (exp(x) - 1), select
    "Celu": (4, 1),            # max(0,x) + min(0, alpha*(exp(x/alpha)-1))
    "Selu": (4, 1),            # gamma * (select(x>0, x, alpha*exp(x) - alpha))
    "Mish": (2, 3),            # x * tanh(softplus(x))
}

# op: the functions its transcendentals evaluate, one each per element (``Work.functions``;
# JAX's primitive names: Sigmoid's exp is the ``logistic`` XLA evaluates as one op)
FUNCTIONS: dict[str, tuple[str, ...]] = {
    "Exp": ("exp",), "Log": ("log",), "Tanh": ("tanh",), "Erf": ("erf",), "Sqrt": ("sqrt",),
    "Sin": ("sin",), "Cos": ("cos",), "Tan": ("tan",), "Asin": ("asin",), "Acos": ("acos",),
    "Atan": ("atan",), "Sinh": ("sinh",), "Cosh": ("cosh",), "Asinh": ("asinh",),
    "Acosh": ("acosh",), "Atanh": ("atanh",), "Sigmoid": ("logistic",),
    "Softplus": ("exp", "log1p"), "Elu": ("expm1",), "Celu": ("expm1",), "Selu": ("expm1",),
    "Mish": ("exp", "log1p", "tanh"), "Pow": ("pow",),
}

# binary / variadic broadcasting ops: (vector, transcendental) per output element per pair
BINARY: dict[str, tuple[int, int]] = {
    "Add": (1, 0), "Sub": (1, 0), "Mul": (1, 0), "Div": (1, 0), "Mod": (1, 0),
    "And": (1, 0), "Or": (1, 0), "Xor": (1, 0), "BitShift": (1, 0),
    "BitwiseAnd": (1, 0), "BitwiseOr": (1, 0), "BitwiseXor": (1, 0),
    "Equal": (1, 0), "Greater": (1, 0), "Less": (1, 0),
    "GreaterOrEqual": (1, 0), "LessOrEqual": (1, 0),
    "Pow": (0, 1),             # x ** y = exp(y * log x): one transcendental
    "PRelu": (2, 0),           # x * slope, select
    "Max": (1, 0), "Min": (1, 0), "Sum": (1, 0),
}


def per_element(v: int, t: int, name: str, fns: tuple[str, ...] = ()):
    """A rule charging ``v`` vector ops and ``t`` transcendentals per output element, those
    named by ``fns`` (one evaluation of each per element; none: unnamed) (shared with the lax
    rules, so the same math costs the same in ONNX and JAX)."""
    def rule(ins, outs, ctx):
        n = outs[0].numel()
        return Work(vector_flops=v * n, transcendentals=t * n, functions=tuple((f, n) for f in fns))

    rule.__name__ = name
    return rule


for _op, (_v, _t) in UNARY.items():
    register(_op)(per_element(_v, _t, f"unary_{_op}", FUNCTIONS.get(_op, ())))


def _binary(op: str):
    v, t = BINARY[op]

    def rule(ins, outs, ctx):
        n = outs[0].numel()
        pairs = max(sum(1 for s in ins if s is not None) - 1, 1)  # variadic Sum/Max/Min
        return Work(vector_flops=v * n * pairs, transcendentals=t * n * pairs,
                    functions=tuple((f, n * pairs) for f in FUNCTIONS.get(op, ())))

    rule.__name__ = f"binary_{op}"
    return rule


for _op in BINARY:
    register(_op)(_binary(_op))


@register("Mean")
def mean(ins, outs, ctx):
    n = outs[0].numel()
    k = sum(1 for s in ins if s is not None)
    return Work(vector_flops=n * (k - 1) + n)  # (k-1) adds + 1 divide per element


@register("Where")
def where(ins, outs, ctx):
    return Work(vector_flops=outs[0].numel())  # one select per element


@register("Clip")  # min/max are scalar settings, not weights
def clip(ins, outs, ctx):
    n = outs[0].numel()
    bounds = sum(1 for s in ins[1:3] if s is not None)  # opset >= 11: min/max are inputs
    return Work(vector_flops=n * max(bounds, 1))


@register("Gelu")
def gelu(ins, outs, ctx, *, approximate="none"):
    n = outs[0].numel()
    if approximate == "tanh":
        # 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))): x^3 (2), *c (1), + (1), *k (1), tanh, +1, *x, *0.5
        return Work(vector_flops=8 * n, transcendentals=n, functions=(("tanh", n),))
    # 0.5*x*(1+erf(x/sqrt(2))): divide, erf, add, mul, mul
    return Work(vector_flops=4 * n, transcendentals=n, functions=(("erf", n),))


@register("Cast", "CastLike")
def cast(ins, outs, ctx):
    return Work()  # conversion is data movement, not arithmetic; bytes are counted


@register("Dropout")  # ratio and training_mode are settings
def dropout(ins, outs, ctx):
    # inference: identity (training_mode is a runtime input; a training export is noted)
    return Work(writes=0, reads={0: 0}, note="inference: Dropout is an identity")


SWISH = (4, 1)  # alpha*x, sigmoid (2 + exp), * x


@register("Swish")
def swish(ins, outs, ctx):
    n = output(outs).numel()
    return Work(vector_flops=SWISH[0] * n, transcendentals=SWISH[1] * n, functions=(("logistic", n),))


@register("SwiGLU")
def swiglu(ins, outs, ctx):
    n = output(outs).numel()
    return Work(vector_flops=(SWISH[0] + 1) * n, transcendentals=SWISH[1] * n,
                functions=(("logistic", n),))
