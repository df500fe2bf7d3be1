"""`analyze hw calibrate`: the CLI shell around ``analyzer.measure.calibrate`` (the library
call is replaced by a fixed document here: a real calibration takes about a minute)."""

from __future__ import annotations

import os

import pytest

import hardware_db
from profile_docs import calibrated_doc


def _doc() -> dict:
    return calibrated_doc(threads=2)


@pytest.fixture
def fake_calibrate(monkeypatch):
    """Replace the library's calibrate with one that reports progress and returns ``_doc()``."""
    from analyzer.measure import calibrate as lib

    calls = []

    def fake(runtime="onnxruntime", threads=None, progress=None, **kw):
        calls.append({"runtime": runtime, "threads": threads})
        for f in (0.0, 0.5, 1.0):
            progress(f, "measuring")
        return _doc()

    monkeypatch.setattr(lib, "calibrate", fake)
    return calls


def test_calibrate_writes_a_profile_that_hw_loads(run_cli, tmp_path, fake_calibrate):
    out = tmp_path / "my-machine.toml"
    res = run_cli("hw", "calibrate", "--out", out, "--threads", "2")
    assert res.exit_code == 0, res.output
    assert fake_calibrate == [{"runtime": "onnxruntime", "threads": 2}]
    prof = hardware_db.get(str(out))
    assert prof.kind == "cpu" and prof.id == "calibrated-test-2t"
    assert f"wrote {out}" in res.stdout
    assert "250 GFLOP/s" in res.stdout and "12.5 GB/s" in res.stdout and "1.5 µs" in res.stdout
    assert f"analyze model.onnx --hw {out}" in res.stdout
    assert [p for p in os.listdir(tmp_path) if p.startswith(".opcost-")] == []  # no temp left


def test_calibrate_id_names_the_profile(run_cli, tmp_path, fake_calibrate):
    out = tmp_path / "m.toml"
    res = run_cli("hw", "calibrate", "--out", out, "--id", "my-box")
    assert res.exit_code == 0, res.output
    assert hardware_db.get(str(out)).id == "my-box"


@pytest.mark.parametrize("where", ["folder", "missing"])
def test_calibrate_refuses_a_folder_or_a_missing_folder(run_cli, tmp_path, fake_calibrate, where):
    out = tmp_path if where == "folder" else tmp_path / "nope" / "m.toml"
    res = run_cli("hw", "calibrate", "--out", out)
    assert res.exit_code == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "--out" in res.stderr
    assert fake_calibrate == []   # refused before measuring


def _xla_doc() -> dict:
    doc = calibrated_doc(threads=2)
    doc.update({"id": "calibrated-test-xla", "default_runtime": "xla"})
    doc["overhead"]["launch_overhead_us"] = 0.11
    doc["calibration"] = {"runtime": "xla", "jax_version": "0.10.2", "threads": 2, "run_overhead_us": 4.1}
    from hardware_db.validate import number_paths
    doc["sources"] = {k: "measured by the test" for k in number_paths(doc)}
    return doc


def test_calibrate_xla_writes_a_profile_that_predicts_xla(run_cli, tmp_path, monkeypatch):
    from analyzer.measure import calibrate as lib

    calls = []

    def fake(runtime="onnxruntime", threads=None, progress=None, **kw):
        calls.append({"runtime": runtime, "threads": threads})
        progress(1.0, "done")
        return _xla_doc()

    monkeypatch.setattr(lib, "calibrate", fake)
    out = tmp_path / "x.toml"
    res = run_cli("hw", "calibrate", "--out", out, "--runtime", "xla")
    assert res.exit_code == 0, res.output
    assert calls == [{"runtime": "xla", "threads": None}]
    prof = hardware_db.get(str(out))
    assert prof.default_runtime == "xla" and prof.calibration["runtime"] == "xla"
    assert "0.11 µs per kernel in a program" in res.stdout and "4.1 µs per call" in res.stdout
    assert "JAX 0.10.2" in res.stdout and f"--hw {out}" in res.stdout


def test_calibrate_xla_refuses_threads(run_cli, tmp_path, fake_calibrate):
    res = run_cli("hw", "calibrate", "--out", tmp_path / "m.toml", "--runtime", "xla", "--threads", "2")
    assert res.exit_code == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "--threads" in res.stderr
    assert fake_calibrate == []   # refused before measuring


@pytest.mark.parametrize("runtime", ["kernel", "eager"])
def test_calibrate_a_runtime_without_a_host_to_measure_is_refused(run_cli, tmp_path, fake_calibrate, runtime):
    res = run_cli("hw", "calibrate", "--out", tmp_path / "m.toml", "--runtime", runtime)
    assert res.exit_code == 2
    assert "'onnxruntime', 'xla'" in res.stderr and runtime in res.stderr   # a usage error
    assert fake_calibrate == []


def test_calibrate_xla_without_jax_names_it(run_cli, tmp_path, fake_calibrate, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_jax(name, *a, **k):
        if name == "jax" or name.startswith("jax."):
            raise ImportError("No module named 'jax'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_jax)
    res = run_cli("hw", "calibrate", "--out", tmp_path / "m.toml", "--runtime", "xla")
    assert res.exit_code == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "pip install jax" in res.stderr
    assert fake_calibrate == []


def test_calibrate_without_onnxruntime_names_the_measure_extra(run_cli, tmp_path, no_onnxruntime,
                                                              fake_calibrate):
    res = run_cli("hw", "calibrate", "--out", tmp_path / "m.toml")
    assert res.exit_code == 2
    assert len(res.stderr.strip().splitlines()) == 1
    assert "pip install 'opcost[measure]'" in res.stderr
    assert not (tmp_path / "m.toml").exists()


def test_calibrate_profile_that_does_not_load_is_an_internal_error(run_cli, tmp_path, monkeypatch):
    """The written file is kept (the measurement is not lost), and the user is told it is a bug."""
    from analyzer.measure import calibrate as lib

    doc = _doc()
    del doc["sources"]["memory.mem_bw_gbs"]
    monkeypatch.setattr(lib, "calibrate", lambda *a, **k: doc)
    out = tmp_path / "m.toml"
    res = run_cli("hw", "calibrate", "--out", out)
    assert res.exit_code == 3
    assert "cannot load it" in res.stderr and "please report it" in res.stderr
    assert out.exists()


def test_calibrate_prints_the_thread_warnings(run_cli, tmp_path, monkeypatch):
    # a document whose thread probe changed (1.5 -> 0.7): the CLI prints the library's warnings
    # (the library never prints), and the written profile keeps the two speed-ups
    from analyzer.measure import calibrate as lib
    from analyzer.prediction.cpu import thread_notes as thread_mode

    doc = _doc()
    doc["calibration"].update({"thread_speedup_start": 1.5, "thread_speedup_end": 0.7})
    doc["sources"].update(lib.calibration_sources(doc["calibration"], "test"))
    doc["_warnings"] = thread_mode.notes(doc["calibration"])
    monkeypatch.setattr(lib, "calibrate", lambda *a, **k: doc)
    out = tmp_path / "m.toml"
    res = run_cli("hw", "calibrate", "--out", out)
    assert res.exit_code == 0, res.output
    assert res.stdout.count("warning:") == 2 and "changed during the calibration" in res.stdout
    assert hardware_db.get(str(out)).calibration["thread_speedup_end"] == 0.7


def test_calibrate_prints_the_effective_cache_size(run_cli, tmp_path, monkeypatch):
    # 27,664,240 bytes -> 27.7 MB; the sysfs L3 33,554,432 -> 33.6 MB; written to the profile
    from analyzer.measure import calibrate as lib

    doc = _doc()
    doc["calibration"].update({"llc_bytes": 33554432.0, "cold_weight_bw_gbs": 42.0,
                               "llc_effective_bytes": 27664240.0, "llc_step_power": 6.0})
    doc["sources"].update(lib.calibration_sources(doc["calibration"], "test"))
    monkeypatch.setattr(lib, "calibrate", lambda *a, **k: doc)
    out = tmp_path / "m.toml"
    res = run_cli("hw", "calibrate", "--out", out)
    assert res.exit_code == 0, res.output
    assert "a run that moves 27.7 MB (its weights and the activations it writes) keeps half its weights cached (sysfs last-level cache 33.6 MB)" in res.stdout
    assert hardware_db.get(str(out)).calibration["llc_step_power"] == 6.0
