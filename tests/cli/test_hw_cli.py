"""`analyze hw list`, `analyze hw show`, and --hw on a model (ids, aliases, typos, user files),
plus the predictions block of the JSON report (DESIGN.md "Interfaces users rely on")."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hardware_db
from onnx_builders import one_node

ROOT = Path(__file__).resolve().parents[2]
ROUND_GPU = ROOT / "tests" / "fixtures" / "hw" / "round-gpu.toml"
MLP = ROOT / "samples" / "mlp.onnx"


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.fixture
def user_toml(tmp_path) -> Path:
    dst = tmp_path / "profiles" / "user.toml"
    dst.parent.mkdir()
    shutil.copy(ROUND_GPU, dst)
    return dst


# ------------------------------------------------------------------------------ hw list / show

def test_hw_list_table(run_cli):
    res = run_cli("hw", "list")
    assert res.exit_code == 0, res.output
    for text in ("a100-80gb-sxm", "h100-sxm", "t4", "tpu-v5e", "memory BW", "launch"):
        assert text in res.stdout
    assert "— = unknown" in res.stdout


def test_hw_list_json(run_cli):
    res = run_cli("hw", "list", "--format", "json")
    assert res.exit_code == 0, res.output
    profiles = json.loads(res.stdout)
    assert len(profiles) >= 20
    ids = [p["id"] for p in profiles]
    assert len(set(ids)) == len(ids)
    for p in profiles:
        assert isinstance(p["id"], str) and isinstance(p["name"], str) and p["name"]
        assert p["kind"] in hardware_db.KINDS
    assert {"gpu", "tpu", "cpu"} <= {p["kind"] for p in profiles}
    a100 = next(p for p in profiles if p["id"] == "a100-80gb-sxm")
    assert a100["mem_bw_gbs"] == 2039.0 and "a100" in a100["aliases"]


def test_hw_show_a100_gives_sources(run_cli):
    res = run_cli("hw", "show", "a100")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert out.startswith("NVIDIA A100 80GB SXM4  (id a100-80gb-sxm, gpu, NVIDIA)")
    assert "memory.mem_bw_gbs" in out and "2.04 TB/s" in out
    assert "glennklockwood.com" in out          # a source, not just a number
    js = run_cli("hw", "show", "a100", "--format", "json")
    assert js.exit_code == 0
    d = json.loads(js.stdout)
    assert d["id"] == "a100-80gb-sxm"
    assert set(d["sources"]) >= {"memory.mem_bw_gbs", "matrix_tflops.bf16", "vector_tflops.fp32"}
    assert all(d["sources"].values())


def test_hw_show_user_file(run_cli, user_toml):
    res = run_cli("hw", "show", user_toml)
    assert res.exit_code == 0, res.output
    assert "round-gpu" in res.stdout and "memory.mem_bw_gbs" in res.stdout
    assert "round number chosen" in res.stdout


@pytest.mark.parametrize("args", [("hw", "list"), ("hw", "list", "--format", "json"),
                                  ("hw", "show", "a100"), ("hw", "show", "a100", "--format", "json")])
@pytest.mark.machine
def test_hw_commands_do_not_import_jax_or_onnx(args):
    code = (
        "import sys\n"
        "from cli.main import main\n"
        f"try:\n    main({list(args)!r}, standalone_mode=False)\n"
        "finally:\n    print('HEAVY', [m for m in ('jax', 'onnx') if m in sys.modules])\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "HEAVY []" in p.stdout, p.stdout[-500:]
    assert "a100-80gb-sxm" in p.stdout


def test_hw_show_typo_suggests(run_cli):
    res = run_cli("hw", "show", "a10O")
    assert res.exit_code == 2
    err = _one_line(res.stderr)
    assert "unknown hardware 'a10O'" in err and "did you mean" in err and "a100" in err


# ------------------------------------------------------------------------------ --hw on a model

def test_unknown_hw_on_a_model(run_cli):
    res = run_cli(MLP, "--hw", "nosuch")
    assert res.exit_code == 2
    err = _one_line(res.stderr)
    assert "unknown hardware 'nosuch'" in err and "analyze hw list" in err
    typo = run_cli(MLP, "--hw", "a100,h10")
    assert typo.exit_code == 2
    assert "did you mean" in _one_line(typo.stderr) and "h100" in typo.stderr


def test_hw_user_toml_path(run_cli, save, user_toml):
    # Add of two float32[4] on round-gpu: overhead-bound, 2 us + 48 B / 1000 GB/s = 2.000048 us
    model = save(one_node("Add", (4,), (4,)))
    res = run_cli(model, "--hw", user_toml, "--format", "json")
    assert res.exit_code == 0, res.output
    (p,) = json.loads(res.stdout)["predictions"]
    assert p["hardware"] == "round-gpu"
    assert p["latency_s"] == pytest.approx(2e-6 + 48 / 1000e9, rel=1e-6)
    assert p["nodes"][0]["bound"] == "overhead"
    both = run_cli(model, "--hw", f"a100,{user_toml}", "--format", "json")
    assert both.exit_code == 0
    assert [q["hardware"] for q in json.loads(both.stdout)["predictions"]] == ["a100-80gb-sxm", "round-gpu"]


@pytest.mark.parametrize("old,new,field", [
    ("mem_bw_gbs = 1000.0", 'mem_bw_gbs = "fast"', "memory.mem_bw_gbs"),
    ("mem_bw_gbs = 1000.0", "mem_bw_gbs = -5.0", "memory.mem_bw_gbs"),
    ("mem_bw_gbs = 1000.0", "mem_bw_gb = 1000.0", "memory.mem_bw_gb"),
    ('kind = "gpu"', 'kind = "fpga"', "kind"),
    ('"overhead.launch_overhead_us" = "test fixture: round number chosen for closed-form arithmetic"',
     "", "overhead.launch_overhead_us"),
])
def test_malformed_user_toml_names_the_field(run_cli, user_toml, old, new, field):
    text = user_toml.read_text(encoding="utf-8")
    assert old in text
    user_toml.write_text(text.replace(old, new), encoding="utf-8")
    res = run_cli(MLP, "--hw", user_toml)
    assert res.exit_code == 2, res.output
    err = _one_line(res.stderr)
    assert f"'{field}'" in err and "user.toml" in err


def test_invalid_toml_syntax(run_cli, tmp_path):
    bad = tmp_path / "broken.toml"
    bad.write_text("id = \n[[[", encoding="utf-8")
    res = run_cli(MLP, "--hw", bad)
    assert res.exit_code == 2
    assert "invalid TOML" in _one_line(res.stderr)


def test_model_json_predictions_have_the_design_keys(run_cli):
    res = run_cli("model", MLP, "--hw", "a100,h100", "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema_version"] == 1
    preds = doc["predictions"]
    assert [p["hardware"] for p in preds] == ["a100-80gb-sxm", "h100-sxm"]
    runtime = [n["name"] for n in doc["nodes"] if n["status"] != "folded"]
    for p in preds:
        assert {"hardware", "precision", "latency_s", "bound_share", "nodes"} <= set(p)
        assert p["precision"] == "fp32"
        assert set(p["bound_share"]) == {"compute", "memory", "overhead"}
        assert sum(p["bound_share"].values()) == pytest.approx(1.0)
        assert p["nodes"], p
        for n in p["nodes"]:
            assert {"name", "time_s", "compute_s", "memory_s", "overhead_s", "bound"} <= set(n)
            assert n["bound"] in ("compute", "memory", "overhead")
            assert n["name"] in runtime
            assert all(isinstance(n[k], float) for k in ("time_s", "compute_s", "memory_s", "overhead_s"))
        assert p["latency_s"] == pytest.approx(sum(n["time_s"] for n in p["nodes"]), rel=1e-9)
    # H100 is faster than A100 on the same model
    assert preds[1]["latency_s"] < preds[0]["latency_s"]


@pytest.mark.parametrize("cols", [80, 120])
@pytest.mark.parametrize("args", [("hw", "list"), ("hw", "show", "a100"), ("hw", "list", "--links")])
def test_hw_views_fit_the_terminal(run_cli, monkeypatch, cols, args):
    monkeypatch.setenv("COLUMNS", str(cols))
    res = run_cli(*args)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert all(len(x) <= cols for x in lines), max(lines, key=len)
    if args == ("hw", "list"):   # one line per profile: every id whole, peaks and bandwidth kept
        cells = [x.replace("│", " ").split() for x in lines]
        ids = [c[0] for c in cells if c and c[0] in ("a100-80gb-sxm", "h100-sxm")]
        assert ids == ["a100-80gb-sxm", "h100-sxm"] and "memory BW" in res.stdout
    if args[-1] == "--links":   # every link and node id whole, each node's NICs on its own line
        for ident in ("ib-ndr", "nvlink5", "dgx-h100", "rtx-pro-6000-8"):
            assert any(x.replace("│", " ").split()[:1] == [ident] for x in lines if x.strip()), ident
        assert "8 x ib-ndr" in res.stdout
