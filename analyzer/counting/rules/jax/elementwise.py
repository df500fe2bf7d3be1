"""JAX elementwise primitives (domain ``"jax"``), counted per output element.

The per-element numbers are the ONNX ones of ``rules/elementwise.py`` (``UNARY``/``BINARY``),
looked up through ``SAME_AS`` so the same math never gets two different counts; only
primitives with no ONNX twin get their own line in ``JAX_ONLY``, each with its reason.
Literal operands (``x * 0.5``) are immediates: the frontend passes them as absent inputs.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.elementwise import BINARY, FUNCTIONS, UNARY, per_element

D = "jax"

# jax primitive -> the ONNX op with the same math (its per-element counts are used)
SAME_AS: dict[str, str] = {
    # binary
    "add": "Add", "add_any": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "rem": "Mod",
    "max": "Max", "min": "Min", "pow": "Pow",
    "and": "And", "or": "Or", "xor": "Xor",
    "shift_left": "BitShift", "shift_right_logical": "BitShift", "shift_right_arithmetic": "BitShift",
    "eq": "Equal", "ne": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
    "ge": "GreaterOrEqual", "eq_to": "Equal", "le_to": "LessOrEqual", "lt_to": "Less",
    # unary
    "neg": "Neg", "abs": "Abs", "sign": "Sign", "not": "Not", "floor": "Floor", "ceil": "Ceil",
    "round": "Round", "is_finite": "IsInf",
    "exp": "Exp", "log": "Log", "tanh": "Tanh", "erf": "Erf", "sqrt": "Sqrt",
    "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
    "logistic": "Sigmoid",
}

# (vector, transcendentals) per output element for primitives with no ONNX twin
JAX_ONLY: dict[str, tuple[int, int]] = {
    "exp2": (0, 1),             # one special-function evaluation, like Exp
    "expm1": (0, 1),            # fused exp(x) - 1: one special function
    "log1p": (0, 1),            # fused log(1 + x)
    "rsqrt": (1, 1),            # Sqrt (0,1) + Reciprocal (1,0)
    "cbrt": (0, 1),
    "square": (1, 0),           # x * x: one Mul
    "erfc": (0, 1),             # like Erf
    "erf_inv": (0, 1),          # like Erf
    "atan2": (0, 1),            # like Atan
    "lgamma": (0, 1), "digamma": (0, 1), "polygamma": (0, 1), "zeta": (0, 1),
    "igamma": (0, 1), "igammac": (0, 1), "igamma_grad_a": (0, 1), "random_gamma_grad": (0, 1),
    "bessel_i0e": (0, 1), "bessel_i1e": (0, 1), "regularized_incomplete_beta": (0, 1),
    "nextafter": (1, 0), "population_count": (1, 0), "clz": (1, 0), "mulhi": (1, 0),
    "select_n": (1, 0),         # one select per element, like Where
    "clamp": (2, 0),            # max then min, like Clip with both bounds
    # no arithmetic (bytes are still counted): conversions, complex parts
    "convert_element_type": (0, 0), "reduce_precision": (0, 0), "real": (0, 0), "imag": (0, 0),
    "conj": (0, 0), "complex": (0, 0),
}


def _table() -> dict[str, tuple[int, int]]:
    out = dict(JAX_ONLY)
    for jax_op, onnx_op in SAME_AS.items():
        out[jax_op] = UNARY[onnx_op] if onnx_op in UNARY else BINARY[onnx_op]
    return out


PER_ELEMENT = _table()




def _functions(op: str, t: int) -> tuple[str, ...]:
    """The functions a primitive's ``t`` transcendentals an element evaluate: its ONNX twin's,
    else (one of them) the primitive's own name."""
    if op in SAME_AS:
        return FUNCTIONS.get(SAME_AS[op], ())
    return (op,) if t == 1 else ()


for _op, (_v, _t) in PER_ELEMENT.items():
    register(_op, domain=D)(per_element(_v, _t, f"lax_{_op}", _functions(_op, _t)))


@register("integer_pow", domain=D)
def integer_pow(ins, outs, ctx, *, y):
    """x ** y by repeated squaring: floor(log2|y|) squarings + (popcount(|y|) - 1) multiplies,
    plus one reciprocal when y < 0 (x**2: 1, x**3: 2, x**4: 2, x**-1: 1)."""
    n = outs[0].numel()
    m = abs(int(y))
    muls = (m.bit_length() - 1) + (bin(m).count("1") - 1) if m > 1 else 0
    return Work(vector_flops=n * (muls + (1 if y < 0 else 0)))


# ----------------------------------------------------------------------------- random numbers
# threefry2x32 on one (x0, x1) pair: 20 rounds of (x0 += x1; x1 = rotl(x1, r) [shl, shr, or];
# x1 ^= x0) = 5 integer ops each = 100, plus the key schedule: 2 adds up front and 2 adds after
# each of the 5 groups of 4 rounds = 12. 112 ops per pair of 32-bit words = 56 per word.
THREEFRY_OPS_PER_WORD = 56


def _words(spec, bits: int = 32) -> int:
    return -(-spec.numel() * bits // 32)


@register("random_bits", domain=D)
def random_bits(ins, outs, ctx, *, bit_width=32):
    # the key's implementation generates ceil(n * bits / 32) 32-bit words (threefry by default)
    return Work(vector_flops=THREEFRY_OPS_PER_WORD * _words(outs[0], bit_width))


@register("random_split", "random_fold_in", domain=D)
def random_split(ins, outs, ctx):
    # each new key is two threefry words (the key spec is its uint32 key data: numel = words)
    return Work(vector_flops=THREEFRY_OPS_PER_WORD * outs[0].numel())


@register("threefry2x32", domain=D)
def threefry2x32(ins, outs, ctx):
    # outputs are the two word arrays: one pair per element of the first
    return Work(vector_flops=2 * THREEFRY_OPS_PER_WORD * outs[0].numel())


@register("rng_bit_generator", domain=D)
def rng_bit_generator(ins, outs, ctx):
    # the backend picks the algorithm (threefry or philox); counted at the threefry rate per word
    words = sum(_words(o, 32 if o.dtype != "uint64" else 64) for o in outs[1:] if o is not None)
    return Work(vector_flops=THREEFRY_OPS_PER_WORD * words,
                note="RNG algorithm is backend-chosen; counted at threefry's 56 ops per 32-bit word",
                estimate=True)


@register("random_seed", "random_clone", domain=D)
def random_seed(ins, outs, ctx):
    return Work()  # a key is built from the seed's bits: no arithmetic


@register("random_wrap", "random_unwrap", domain=D)
def random_wrap(ins, outs, ctx):
    return Work()  # the same uint32 words seen as a key (or back): a relabel
