"""The JAX frontend (analyzer/frontends/jaxpr.py): tracing, names, constants, sub-jaxprs, specs, CLI."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import analyzer  # noqa: E402
from analyzer.frontends.jaxpr.load import is_jax_target, parse_spec  # noqa: E402
from analyzer.report.rollups import grouped, module_of  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples", "jax_models.py")


def S(*shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


def names(report):
    return [n.name for n in report.nodes]


# ----------------------------------------------------------------------------- names


def test_flax_style_module_path_in_names():
    # Flax/Haiku name their module scopes like this; jax.named_scope is what they use underneath
    def f(w, x):
        with jax.named_scope("Transformer_0"):
            with jax.named_scope("MultiHeadDotProductAttention_0"):
                with jax.named_scope("Dense_0"):
                    return jax.nn.relu(x @ w)

    r = analyzer.analyze_jax(f, S(8, 8), S(2, 8))
    assert "Transformer_0/MultiHeadDotProductAttention_0/Dense_0/dot_general" in names(r)
    # jax.nn.relu is a jit: its equations sit under jit(relu)
    assert "Transformer_0/MultiHeadDotProductAttention_0/Dense_0/jit(relu)/max" in names(r)


def test_names_are_unique_and_derivatives_are_named():
    def loss(w, x):
        with jax.named_scope("fc"):
            h = x @ w
            h = h + 1.0
            h = h + 2.0
        return (h * h).sum()  # the gradient needs h: the forward adds stay live

    r = analyzer.analyze_jax(jax.grad(loss), S(4, 3), S(2, 4))
    ns = names(r)
    assert len(ns) == len(set(ns))
    assert "jvp(fc)/add" in ns and "jvp(fc)/add#2" in ns
    assert any(n.startswith("transpose(jvp(fc))/dot_general") for n in ns)


def test_top_level_jit_is_not_a_prefix_but_inner_jits_are():
    inner = jax.jit(lambda x: jnp.exp(x), inline=False)
    r = analyzer.analyze_jax(jax.jit(lambda x: inner(x) * 2.0), S(4))
    assert names(r) == ["jit(<lambda>)/exp", "mul"]


def test_scan_body_rows_are_named_under_the_scan():
    def f(xs):
        with jax.named_scope("rnn"):
            return lax.scan(lambda c, x: (jnp.tanh(c + x), None), jnp.zeros(3), xs)[0]

    r = analyzer.analyze_jax(f, S(5, 3))
    assert "rnn/scan" in names(r) and "rnn/scan/tanh" in names(r)


def test_grouped_totals_by_module():
    def f(x):
        with jax.named_scope("a"):
            with jax.named_scope("b"):
                x = jnp.sin(x)
            x = jnp.cos(x)
        return x + 1.0

    r = analyzer.analyze_jax(f, S(10))
    g1 = {g.name: g for g in grouped(r, 1)}
    assert list(g1) == ["a", "add"]
    assert g1["a"].nodes == 2 and g1["a"].cost.transcendentals == 20
    assert [g.name for g in grouped(r, 2)] == ["a/b", "a", "add"]
    assert module_of("/encoder/layer.0/attention/MatMul", 2) == "encoder/layer.0"
    assert module_of("relu#3", 1) == "relu"


# ----------------------------------------------------------------------------- constants and params


def test_closed_over_arrays_are_params_literals_are_not():
    w = np.ones((4, 5), np.float32)

    def f(x):
        return x @ w * 3.0 + 1.0

    r = analyzer.analyze_jax(f, S(2, 4))
    assert r.totals.params == 20  # w (closed over, a const of the ClosedJaxpr); 3.0 and 1.0 are not
    dot = next(n for n in r.nodes if n.op == "dot_general")
    assert dot.weight_bytes == 80 and dot.activation_bytes_read == 2 * 4 * 4


def test_params_argnums_marks_weights_by_position_or_name():
    def f(params, x):
        return x @ params["w"] + params["b"]

    p = {"w": S(4, 5), "b": S(5)}
    assert analyzer.analyze_jax(f, p, S(2, 4)).totals.params == 0   # default: no arg is a weight
    r = analyzer.analyze_jax(f, p, S(2, 4), params_argnums=0)
    assert r.totals.params == 25 and r.totals.weight_bytes == 25 * 4
    assert analyzer.analyze_jax(f, p, S(2, 4), params_argnums="params").totals.params == 25
    assert r.model["inputs"] == {"params['b']": [5], "params['w']": [4, 5], "x": [2, 4]}
    assert r.model["format"] == "jaxpr"


def test_static_kwargs_and_concrete_arrays():
    def f(x, *, train=False, scale=2.0):
        return x * scale if train else x

    r = analyzer.analyze_jax(f, np.zeros((3, 3), np.float32), train=True)
    assert r.totals.vector_flops == 9
    assert analyzer.analyze_jax(f, S(3, 3), train=False).totals.flops == 0


def test_a_closed_jaxpr_is_accepted():
    cj = jax.make_jaxpr(lambda a, b: a @ b)(S(3, 4), S(4, 5))
    assert analyzer.analyze_jax(cj).totals.mac_flops == 2 * 3 * 4 * 5


# ----------------------------------------------------------------------------- sub-jaxprs


def test_custom_vjp_remat_and_shard_map_are_inlined():
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (c * g,))

    def g(x):
        return jax.checkpoint(lambda y: jnp.exp(y) @ y)(f(x))

    r = analyzer.analyze_jax(g, S(4, 4))
    assert [n.op for n in r.nodes] == ["sin", "exp", "dot_general"]
    assert "checkpoint/dot_general" in names(r)
    assert r.coverage.uncosted == ()

    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((1,), ("d",))
    sm = jax.shard_map(lambda a: a @ a, mesh=mesh, in_specs=P(), out_specs=P())
    r = analyzer.analyze_jax(sm, S(8, 8))
    assert names(r) == ["shard_map/dot_general"] and r.totals.mac_flops == 1024


def test_shard_map_body_runs_at_per_device_shapes_and_keeps_its_mesh():
    from jax.sharding import AbstractMesh, PartitionSpec as P

    mesh = AbstractMesh((2, 4), ("data", "model"))

    def loop(w, x):   # inside a scan: the body's operands are not the program's inputs
        def step(c, _):
            return jax.shard_map(lambda w_, a: lax.psum(a @ w_, "model"), mesh=mesh,
                                 in_specs=(P("model", None), P(None, "model")),
                                 out_specs=P())(w, c), None
        return lax.scan(step, x, None, length=3)[0]

    r = analyzer.analyze_jax(loop, S(64, 64), S(64, 64), params_argnums=0)
    dot = next(n for n in r.nodes if n.op == "dot_general")
    # per device [64, 16] @ [16, 64], 3 trips: 3 * 2 * 64 * 16 * 64 = 393216 (not the global
    # contraction 3 * 2 * 64 * 64 * 64)
    assert [s.shape for s in dot.in_specs] == [(64, 16), (16, 64)]
    assert dot.cost.mac_flops == 393216
    # the weight's shard stays a weight: 16 * 64 fp32 per device
    assert dot.cost.params == 1024 and dot.cost.weight_bytes == 3 * 4096
    psum = next(n for n in r.nodes if n.op == "psum_invariant")
    assert r.model["mesh"]["meshes"] == [{"data": 2, "model": 4}]
    assert r.model["mesh"]["named_axis_ops"][psum.out_names[0]] == {
        "op": "psum_invariant", "axes": ["model"], "sizes": [4]}


def test_pallas_call_uses_its_cost_estimate_else_uncosted():
    pl = pytest.importorskip("jax.experimental.pallas")

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = jnp.dot(x_ref[...], y_ref[...])

    def mm(x, y, est=None):
        kw = {} if est is None else {"cost_estimate": est}
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((64, 64), jnp.float32),
                              grid=(2, 2),
                              in_specs=[pl.BlockSpec((32, 64), lambda i, j: (i, 0)),
                                        pl.BlockSpec((64, 32), lambda i, j: (0, j))],
                              out_specs=pl.BlockSpec((32, 32), lambda i, j: (i, j)),
                              interpret=True, **kw)(x, y)

    r = analyzer.analyze_jax(mm, S(64, 64), S(64, 64))
    assert r.coverage.uncosted == ("pallas_call",)  # never a silent zero
    est = pl.CostEstimate(flops=2 * 64 ** 3, transcendentals=0, bytes_accessed=3 * 64 * 64 * 4)
    r = analyzer.analyze_jax(lambda a, b: mm(a, b, est), S(64, 64), S(64, 64))
    assert r.coverage.uncosted == () and r.totals.mac_flops == 2 * 64 ** 3


def test_unknown_primitive_is_uncosted_not_zero():
    r = analyzer.analyze_jax(lambda x: jax.lax.linalg.tridiagonal(x)[1], S(4, 4))  # no rule (yet)
    assert any(n.status == "uncosted" for n in r.nodes)
    assert r.coverage.uncosted


# ----------------------------------------------------------------------------- specs and errors


@pytest.mark.parametrize("text,shape,dtype", [
    ("f32[8,224]", (8, 224), "float32"), ("bf16[2, 16]", (2, 16), "bfloat16"),
    ("i32[]", (), "int32"), ("u8[3]", (3,), "uint8"), ("8x224", (8, 224), "float32"),
    ("float16[4]", (4,), "float16"),
])
def test_parse_spec(text, shape, dtype):
    s = parse_spec(text)
    assert s.shape == shape and str(s.dtype) == dtype


@pytest.mark.parametrize("text", ["f32[8,a]", "q7[3]", "f32", "[3]"])
def test_bad_specs(text):
    with pytest.raises(analyzer.InputSpecError):
        parse_spec(text, "x")


def test_tracing_failure_is_a_model_load_error():
    with pytest.raises(analyzer.ModelLoadError, match="tracing"):
        analyzer.analyze_jax(lambda x: x @ jnp.ones((3, 3)), S(2, 4))


def test_is_jax_target():
    assert is_jax_target("samples/jax_models.py:mlp") and is_jax_target("pkg.mod:fn")
    assert not is_jax_target("model.onnx") and not is_jax_target("samples/mlp.onnx")


# ----------------------------------------------------------------------------- command line


def test_cli_file_function_with_inputs(run_cli):
    r = run_cli(f"{SAMPLES}:mlp_infer", "--input", "x=f32[1,784]", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["model"]["format"] == "jaxpr" and d["model"]["inputs"] == {"x": [1, 784]}
    assert d["totals"]["mac_flops"] == 469504 and d["totals"]["params"] == 235146


def test_cli_module_function_kwargs_json_and_group_depth(run_cli, tmp_path, monkeypatch):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "prog.py").write_text(textwrap.dedent("""
        import jax, jax.numpy as jnp

        def step(x, y, *, train=True, depth=1):
            with jax.named_scope("block"):
                for _ in range(depth):
                    x = x @ y
            return jnp.tanh(x) if train else x
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    r = run_cli("mypkg.prog:step", "--input", "x=f32[4,8]", "--input", "y=f32[8,8]",
                "--kwargs-json", '{"train": false, "depth": 3}', "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["totals"]["mac_flops"] == 3 * 2 * 4 * 8 * 8 and d["totals"]["transcendentals"] == 0
    r = run_cli("mypkg.prog:step", "--input", "x=f32[4,8]", "--input", "y=f32[8,8]",
                "--group-depth", "1", "--format", "json")
    assert r.exit_code == 0, r.output
    g = json.loads(r.stdout)["groups"]
    assert g["depth"] == 1 and [x["name"] for x in g["rows"]] == ["block", "tanh"]
    r = run_cli("mypkg.prog:step", "--input", "x=f32[4,8]", "--input", "y=f32[8,8]", "--group-depth", "1")
    assert r.exit_code == 0 and "block" in r.stdout and "by module" in r.stdout


@pytest.mark.parametrize("args,msg", [
    (["--input", "x=f32[1,7]"], "tracing mlp_infer failed"),     # shapes that do not fit
    (["--input", "x=f32[1;784]"], "expected DTYPE"),              # a bad spec
    ([], "missing --input for parameter 'x'"),
    (["--input", "z=f32[1]"], "'z' is not a parameter"),
    (["--input", "x=f32[1,784]", "--kwargs-json", "{oops"], "not valid JSON"),
])
def test_cli_bad_input_exits_2_with_one_line(run_cli, args, msg):
    r = run_cli(f"{SAMPLES}:mlp_infer", *args)
    assert r.exit_code == 2
    assert msg in r.stderr and r.stderr.count("\n") == 1


def test_cli_import_errors_exit_2(run_cli, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import not_a_module_opcost\n")
    r = run_cli(f"{bad}:f", "--input", "x=f32[1]")
    assert r.exit_code == 2 and "import failed" in r.stderr
    r = run_cli(f"{tmp_path / 'missing.py'}:f")
    assert r.exit_code == 2 and "no such file" in r.stderr
    r = run_cli("no_such_pkg_opcost.mod:f")
    assert r.exit_code == 2 and "import failed" in r.stderr
    r = run_cli(f"{SAMPLES}:nope")
    assert r.exit_code == 2 and "no attribute 'nope'" in r.stderr
