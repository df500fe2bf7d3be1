"""Paths: the model, --hw FILE, --baseline and --kwargs-json @FILE must be regular files of a
stated size (a FIFO hung, /dev/zero was read until memory ran out); -o / --save-baseline onto a
folder, a missing folder, a device or an unwritable place is one line, exit 2, before any work;
written files get the user's umask, through a temp file in the target's own folder."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from profile_docs import tiny_cpu_toml

from analyzer import userfiles

ROOT = Path(__file__).resolve().parents[2]
MLP = str(ROOT / "samples" / "mlp.onnx")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


def _cli(*args, timeout=90):
    """The CLI in a subprocess: a read that blocks shows up as a timeout, not a hung test run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "cli.main", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _one_line_error(res, *words):
    assert res.returncode == 2, (res.returncode, res.stderr[-800:])
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr
    for w in words:
        assert w in res.stderr, res.stderr


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "pipe"
    os.mkfifo(p)
    return p


@pytest.fixture
def jax_pkg(tmp_path, monkeypatch):
    pkg = tmp_path / "kwpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "prog.py").write_text(textwrap.dedent("""
        import jax.numpy as jnp

        def step(x, *, train=True):
            return jnp.tanh(x) if train else x * 2
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


# ----------------------------------------------------------------------------- reading


@pytest.mark.machine
@needs_fifo
@pytest.mark.parametrize("where", ["model", "--hw", "--baseline", "hw show"])
def test_a_fifo_is_refused_not_read(fifo, where):
    args = {"model": [fifo], "--hw": [MLP, "--hw", fifo], "--baseline": [MLP, "--baseline", fifo],
            "hw show": ["hw", "show", fifo]}[where]
    _one_line_error(_cli(*args), "FIFO", "not a regular file")


@pytest.mark.machine
@needs_fifo
def test_kwargs_json_fifo_is_refused(fifo, jax_pkg):
    env_path = f"{ROOT}{os.pathsep}{jax_pkg}"
    res = subprocess.run([sys.executable, "-m", "cli.main", "kwpkg.prog:step", "--input",
                          "x=f32[2,2]", "--kwargs-json", f"@{fifo}"], cwd=ROOT, timeout=90,
                         env={**os.environ, "PYTHONPATH": env_path}, capture_output=True, text=True)
    _one_line_error(res, "--kwargs-json", "FIFO")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("args", [["/dev/zero"], [MLP, "--hw", "/dev/zero"],
                                  [MLP, "--baseline", "/dev/zero"]])
@pytest.mark.machine
def test_dev_zero_is_refused_not_read(args):
    _one_line_error(_cli(*args), "character device")


@pytest.mark.parametrize("args", [["{d}"], [MLP, "--hw", "{d}/"], [MLP, "--baseline", "{d}"]])
def test_a_folder_is_refused(run_cli, tmp_path, args):
    res = run_cli(*[a.format(d=tmp_path) for a in args])
    assert res.exit_code == 2 and "directory" in res.stderr and res.stderr.count("\n") == 1


def test_kwargs_json_from_a_file(run_cli, jax_pkg, tmp_path):
    f = tmp_path / "kw.json"
    f.write_text('{"train": false}')
    res = run_cli("kwpkg.prog:step", "--input", "x=f32[2,2]", "--kwargs-json", f"@{f}",
                  "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["totals"]["transcendentals"] == 0   # train=False: no tanh
    res = run_cli("kwpkg.prog:step", "--input", "x=f32[2,2]", "--kwargs-json", f"@{tmp_path}/no")
    assert res.exit_code == 2 and "no such file" in res.stderr


@pytest.mark.parametrize("kind", ["model", "profile", "baseline", "kwargs"])
def test_files_over_their_cap_are_refused(run_cli, monkeypatch, tmp_path, jax_pkg, kind):
    monkeypatch.setitem(userfiles.CAPS, kind, 100)
    hw = tmp_path / "tiny.toml"
    hw.write_text(tiny_cpu_toml(bw="10.0"))
    base = tmp_path / "base.json"
    kw = tmp_path / "kw.json"
    kw.write_text('{"train": false, "pad": "' + "x" * 200 + '"}')
    if kind == "baseline":
        assert run_cli(MLP, "--save-baseline", base).exit_code == 0
    args = {"model": [MLP], "profile": [MLP, "--hw", hw], "baseline": [MLP, "--baseline", base],
            "kwargs": ["kwpkg.prog:step", "--input", "x=f32[2,2]", "--kwargs-json", f"@{kw}"]}[kind]
    res = run_cli(*args)
    assert res.exit_code == 2, res.output
    assert "over opcost's limit of 100 bytes" in res.stderr and res.stderr.count("\n") == 1


def test_stated_caps():
    assert userfiles.CAPS["model"] == 2**31 - 1          # protobuf's limit for one message
    assert userfiles.CAPS["profile"] == userfiles.CAPS["kwargs"] == 16 * 2**20
    assert userfiles.CAPS["baseline"] == 512 * 2**20


def test_read_regular_checks_the_file_it_opened(tmp_path, monkeypatch):
    """What is read is what fstat saw: a path swapped for a FIFO after os.stat is refused."""
    real, target = tmp_path / "real", tmp_path / "swapped"
    real.write_bytes(b"data")
    os.mkfifo(target) if hasattr(os, "mkfifo") else pytest.skip("no FIFOs")
    calls = []
    orig = os.stat

    def stat_of_real(p, *a, **k):   # os.stat sees a regular file; the open finds the FIFO
        calls.append(p)
        return orig(real) if str(p) == str(target) else orig(p, *a, **k)

    monkeypatch.setattr(userfiles.os, "stat", stat_of_real)
    with pytest.raises(ValueError, match="FIFO"):
        userfiles.read_regular(target, "x", 100, ValueError)
    assert calls


# ----------------------------------------------------------------------------- writing


@pytest.mark.parametrize("flag", ["--output", "--save-baseline"])
def test_writing_onto_a_folder_or_missing_folder_fails_before_the_work(run_cli, tmp_path, flag,
                                                                       monkeypatch):
    import analyzer

    def no_work(*a, **k):
        raise AssertionError("analysed before checking the output path")

    monkeypatch.setattr(analyzer, "analyze", no_work)
    for target, words in ((tmp_path, "is a folder"), (tmp_path / "no" / "x.json", "does not exist"),
                          (Path(MLP) / "x.json", "")):
        res = run_cli(MLP, flag, target)
        assert res.exit_code == 2, res.output
        assert res.stderr.startswith(f"error: {flag} ") and words in res.stderr
        assert res.stderr.count("\n") == 1


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="no /dev/null")
def test_writing_onto_a_device_is_refused(run_cli):
    res = run_cli(MLP, "-o", "/dev/null")
    assert res.exit_code == 2 and "not a regular file" in res.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)     # not replaced by a rename


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc")
@pytest.mark.parametrize("flag", ["--output", "--save-baseline"])
def test_an_unwritable_place_is_one_line(run_cli, flag):
    res = run_cli(MLP, flag, "/proc/opcost-report.json")
    assert res.exit_code == 2 and "not writable" in res.stderr and res.stderr.count("\n") == 1


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write anywhere")
def test_a_read_only_folder_is_one_line(run_cli, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        res = run_cli(MLP, "-o", ro / "r.json")
    finally:
        ro.chmod(0o755)
    assert res.exit_code == 2 and "not writable" in res.stderr


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_written_files_get_the_umask_and_the_temp_file_sits_beside_them(run_cli, tmp_path, mask,
                                                                       monkeypatch):
    import tempfile

    dirs = []
    real_mkstemp = tempfile.mkstemp

    def recording(*a, **k):
        dirs.append(k.get("dir"))
        return real_mkstemp(*a, **k)

    monkeypatch.setattr(tempfile, "mkstemp", recording)
    old = os.umask(mask)
    try:
        out, base = tmp_path / "r.json", tmp_path / "b.json"
        res = run_cli(MLP, "--format", "json", "-o", out, "--save-baseline", base)
    finally:
        os.umask(old)
    assert res.exit_code == 0, res.output
    for f in (out, base):
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o666 & ~mask
    assert dirs and all(os.path.samefile(d, tmp_path) for d in dirs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "r.json"]   # no temp left
    json.loads(out.read_text())
