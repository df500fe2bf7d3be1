"""Transcendentals by function (``Work.functions`` -> ``NodeCost.functions``): the rules name the
function each transcendental evaluates (JAX's primitive names), every one is counted (the
rest as ``unnamed``), and the split changes no count."""

from __future__ import annotations

import pytest

from analyzer.counting.cost import FUNCTIONS, UNNAMED, by_function
from analyzer.counting.rules.jax.elementwise import PER_ELEMENT, _functions
from analyzer.counting.rules.onnx import elementwise
from onnx_builders import node_of


def test_by_function_counts_every_transcendental_and_names_the_rest():
    # 10 named exp + 5 named exp (summed), 7 tanh, 3 of 25 not named
    assert by_function((("exp", 10), ("tanh", 7), ("exp", 5)), 25) == (("exp", 15), ("tanh", 7), (UNNAMED, 3))
    assert by_function((), 4, times=3) == ((UNNAMED, 12),)       # a loop body's 3 trips
    assert by_function((("exp", 0),), 0) == ()
    with pytest.raises(ValueError, match="unknown"):
        by_function((("expo", 1),), 1)
    with pytest.raises(ValueError, match="more than"):
        by_function((("exp", 2),), 1)


def test_every_onnx_and_jax_elementwise_transcendental_is_named():
    for op, (_v, t) in {**elementwise.UNARY, **elementwise.BINARY}.items():
        assert len(elementwise.FUNCTIONS.get(op, ())) == t, op
    for op, (_v, t) in PER_ELEMENT.items():
        fns = _functions(op, t)
        assert len(fns) == t and set(fns) <= FUNCTIONS, op


# (op, inputs, attrs, functions): n elements of each function the op evaluates
NAMED = [
    ("Tanh", [(3, 5)], {}, (("tanh", 15),)),
    ("Sigmoid", [(10,)], {}, (("logistic", 10),)),                   # its exp is XLA's logistic
    ("Erf", [(4,)], {}, (("erf", 4),)),
    ("Softplus", [(4,)], {}, (("exp", 4), ("log1p", 4))),            # log(1 + exp(x)): 2 a element
    ("Pow", [(6,), (6,)], {}, (("pow", 6),)),
    ("Gelu", [(10,)], {"opset": 20}, (("erf", 10),)),
    ("Gelu", [(10,)], {"opset": 20, "approximate": "tanh"}, (("tanh", 10),)),
    ("Softmax", [(4, 8)], {}, (("exp", 32),)),
    ("LogSoftmax", [(4, 8)], {}, (("exp", 32), ("log", 4))),         # a log per row of 8
    ("LayerNormalization", [(4, 8), (8,)], {"opset": 17}, (("rsqrt", 4),)),
    ("ReduceLogSumExp", [(4, 8)], {"keepdims": 0}, (("exp", 32), ("log", 1))),  # no axes: one sum
    ("Relu", [(4,)], {}, ()),
]


@pytest.mark.parametrize("op, args, kw, fns", NAMED, ids=[f"{e[0]}{i}" for i, e in enumerate(NAMED)])
def test_onnx_rules_name_their_functions(op, args, kw, fns):
    n = node_of(op, *args, **kw)
    assert n.functions == tuple(sorted(fns))
    assert sum(c for _, c in n.functions) == n.cost.transcendentals


def test_a_recurrent_cell_names_its_sigmoids_and_tanhs():
    import numpy as np

    # LSTM, seq 2, batch 1, input 3, hidden 4: per step and unit 3 logistic + 2 tanh
    # (2 x 1 x 4 = 8 units: 24 logistic, 16 tanh)
    w = np.zeros((1, 16, 3), np.float32)
    r = np.zeros((1, 16, 4), np.float32)
    n = node_of("LSTM", (2, 1, 3), w, r, hidden_size=4)
    assert n.functions == (("logistic", 24), ("tanh", 16))


def test_jax_primitives_name_their_functions_and_a_loop_scales_them():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    import analyzer

    def f(x):
        return jnp.tanh(x) + jax.nn.sigmoid(x) + jax.lax.erf(x) + jnp.exp(x) + jnp.log(x) + jax.lax.rsqrt(x)

    r = analyzer.analyze_jax(f, jax.ShapeDtypeStruct((8, 16), jnp.float32))
    got = {f: c for n in r.nodes for f, c in n.functions}
    # 128 elements of each
    assert got == {"tanh": 128, "logistic": 128, "erf": 128, "exp": 128, "log": 128, "rsqrt": 128}

    def scan(h, xs):
        return jax.lax.scan(lambda c, x: (jnp.tanh(c + x), None), h, xs)[0]

    r = analyzer.analyze_jax(scan, jax.ShapeDtypeStruct((4,), jnp.float32), jax.ShapeDtypeStruct((5, 4), jnp.float32))
    body = [n for n in r.nodes if n.op == "tanh"]
    # one tanh of 4 elements a trip, 5 trips
    assert [n.functions for n in body] == [(("tanh", 20),)] and body[0].cost.transcendentals == 20
