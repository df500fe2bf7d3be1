"""JAX counts what runs: dead code is removed before counting (as XLA removes it), flax.nnx
modules name their rows, and a MODEL file that exits on import is a clear error."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import analyzer  # noqa: E402
from analyzer.errors import ModelLoadError  # noqa: E402
from analyzer.frontends.jaxpr.inputs import load_program  # noqa: E402

f32 = jnp.float32
W1, W2, X = (jax.ShapeDtypeStruct((64, 128), f32), jax.ShapeDtypeStruct((128, 10), f32),
             jax.ShapeDtypeStruct((32, 64), f32))


def _net(w1, w2, x):
    return jnp.sum(jnp.tanh(x @ w1) @ w2)


def _saliency(w1, w2, x):
    return jax.grad(_net, argnums=2)(w1, w2, x)


def test_the_forward_result_grad_discards_is_not_counted():
    # the gradient of sum(h @ w2) w.r.t. h is ones @ w2^T: the forward h @ w2 is dead
    r = analyzer.analyze_jax(_saliency, W1, W2, X)
    # live: x@w1 2*32*64*128 = 524288, ones@w2^T 2*32*10*128 = 81920, (.)@w1^T 2*32*128*64 = 524288
    assert r.totals.mac_flops == 524288 + 81920 + 524288  # 1130496; the dead h@w2 is 81920 more
    assert sum(n.op == "dot_general" for n in r.nodes) == 3
    assert not any(n.op == "reduce_sum" for n in r.nodes)  # the discarded loss value


def test_live_counts_agree_with_xla_cost_analysis():
    r = analyzer.analyze_jax(_saliency, W1, W2, X)
    ca = jax.jit(_saliency).lower(W1, W2, X).compile().cost_analysis()
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    xla = ca.get("flops") if ca else None
    if not xla:
        pytest.skip("this backend reports no cost analysis")
    ours = r.totals.mac_flops + r.totals.vector_flops  # XLA's flops leave transcendentals apart
    assert abs(ours - xla) <= 0.01 * xla, (ours, xla)


def test_values_computed_and_dropped_are_not_counted():
    def f(x, w):
        unused = jnp.exp(x @ w)  # noqa: F841  (traced, never used)
        return x + 1.0

    r = analyzer.analyze_jax(f, jax.ShapeDtypeStruct((8, 8), f32), jax.ShapeDtypeStruct((8, 8), f32))
    assert [n.op for n in r.nodes] == ["add"]
    assert r.totals.vector_flops == 64 and r.totals.mac_flops == 0


def test_dead_code_inside_a_loop_body_is_removed_too():
    def f(x, w):
        def body(c, _):
            dead = c @ w  # noqa: F841
            return jnp.tanh(c), None
        return jax.lax.scan(body, x, None, length=3)[0]

    r = analyzer.analyze_jax(f, jax.ShapeDtypeStruct((4, 4), f32), jax.ShapeDtypeStruct((4, 4), f32))
    assert r.totals.mac_flops == 0
    assert r.totals.transcendentals == 3 * 16  # tanh, 3 trips of 16 elements


def test_side_effects_stay():
    def f(x):
        jax.debug.print("x {}", x)
        return x * 2.0

    r = analyzer.analyze_jax(f, jax.ShapeDtypeStruct((4,), f32))
    (printer,) = [n for n in r.nodes if n.op in ("debug_callback", "debug_print")]
    assert printer.status == "uncosted" and "runs on the host" in printer.note


def test_a_module_that_exits_on_import_is_a_load_error(tmp_path):
    p = tmp_path / "exits.py"
    p.write_text("import sys\nsys.exit(0)\n\ndef f(x):\n    return x\n")
    with pytest.raises(ModelLoadError, match=r"exits.py: the module exited while being imported"):
        load_program(f"{p}:f", {"x": "f32[4]"})


def test_the_cli_exits_2_naming_the_file(tmp_path, run_cli):
    p = tmp_path / "quits.py"
    p.write_text("raise SystemExit(3)\n")
    res = run_cli(f"{p}:f", "--input", "x=f32[4]")
    assert res.exit_code == 2
    assert "quits.py" in res.output + (res.stderr if res.stderr_bytes is not None else "")


def test_a_function_that_exits_while_traced_is_a_load_error():
    import sys

    with pytest.raises(ModelLoadError, match=r"sys\.exit"):
        analyzer.analyze_jax(lambda x: sys.exit(1), jax.ShapeDtypeStruct((4,), f32))


# ----------------------------------------------------------------------------- flax.nnx names


def test_flax_nnx_modules_name_their_rows():
    nnx = pytest.importorskip("flax.nnx")

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.conv = nnx.Conv(3, 8, (3, 3), rngs=rngs)
            self.lin = nnx.Linear(8, 4, rngs=rngs)

        def __call__(self, x):
            return self.lin(jax.nn.relu(self.conv(x)).mean((1, 2)))

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.stem = nnx.Conv(3, 3, (3, 3), rngs=rngs)
            self.blocks = nnx.List([Block(rngs), Block(rngs)])

        def __call__(self, x):
            x = self.stem(x)
            return self.blocks[0](x) + self.blocks[1](x)

    model = Net(nnx.Rngs(0))
    r = analyzer.analyze_jax(lambda x: model(x), jax.ShapeDtypeStruct((2, 16, 16, 3), f32))
    convs = [n.name for n in r.nodes if n.op == "conv_general_dilated"]
    dots = [n.name for n in r.nodes if n.op == "dot_general"]
    assert convs == ["stem/conv_general_dilated", "blocks/0/conv/conv_general_dilated",
                     "blocks/1/conv/conv_general_dilated"]
    assert dots == ["blocks/0/lin/dot_general", "blocks/1/lin/dot_general"]
    # the classes are restored after tracing
    assert not hasattr(type(model).__call__, "__wrapped__")
    assert not hasattr(nnx.Linear.__call__, "__wrapped__")
