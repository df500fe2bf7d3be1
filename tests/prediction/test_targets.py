"""Targets are decided once (``prediction.targets.resolve``) and travel with each Prediction:
training, scaling and sensitivity use the profile a prediction was made on, never a profile
looked up again by its id. A ``.toml`` copy of a shipped profile under another id, and a profile
edited with ``dataclasses.replace``, must both reach every stage."""

from __future__ import annotations

import dataclasses
import os

import pytest

import analyzer
import hardware_db
from analyzer.prediction import runtimes
from analyzer.prediction.targets import Target, groups, resolve

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "samples", "mlp.onnx")


@pytest.fixture
def my_box(tmp_path):
    """The shipped A100 profile's file under the id ``my-box`` (which no shipped profile has)."""
    src = hardware_db.get("a100").path
    with open(src, encoding="utf-8") as f:
        text = f.read()
    old = hardware_db.get("a100").id
    path = tmp_path / "my-box.toml"
    path.write_text(text.replace(f'id = "{old}"', 'id = "my-box"', 1))
    return str(path)


def test_resolve_decides_the_runtime_once_and_says_why():
    t = resolve(["a100", "tpu-v5e"], None, "onnx")
    assert [x.runtime.name for x in t] == ["kernel", "xla"]
    assert t[0].why == "default for a gpu"
    assert resolve(t, "eager", "onnx") == t                  # targets given are kept as they are
    assert [x.runtime.name for x in resolve("a100", None, "jaxpr")] == ["xla"]
    assert resolve("a100", "eager", "onnx")[0].why == "requested"
    assert resolve(None) == ()
    # one lowering per runtime, in first-seen order
    g = groups(resolve(["a100", "tpu-v5e", "h100"], None, "onnx"))
    assert [(rt.name, idx) for rt, idx in g] == [("kernel", [0, 2]), ("xla", [1])]


def test_only_onnxruntime_reads_its_own_fusion_record():
    # runtime-specific behaviour is data on the runtime record, not a test of its name
    assert {n for n, r in runtimes.RUNTIMES.items() if r.fusion_record} == {"onnxruntime"}


def test_a_prediction_keeps_its_target():
    r = analyzer.analyze(MLP, ["a100", "t4"])
    assert [p.target.id for p in r.predictions] == [p.hardware for p in r.predictions]
    assert all(isinstance(p.target, Target) for p in r.predictions)
    assert r.predictions[0].target.runtime.name == r.predictions[0].runtime


def test_train_with_a_toml_profile_under_another_id(my_box, run_cli):
    # this failed with "unknown hardware 'my-box'": the training step looked the id up again
    res = run_cli(MLP, "--hw", my_box, "--train", "--batch", "32")
    assert res.exit_code == 0, res.output
    r = analyzer.analyze(MLP, my_box, train=True, batch=32)
    ref = analyzer.analyze(MLP, "a100", train=True, batch=32)
    # the same figures under another id: the same step, to the last bit
    assert r.training.steps[0].hardware == "my-box"
    assert r.training.steps[0].step_s == ref.training.steps[0].step_s


def test_devices_with_a_toml_profile(my_box, run_cli):
    res = run_cli(MLP, "--hw", my_box, "--devices", "1,8")
    assert res.exit_code == 0, res.output
    assert "my-box" in res.output


def test_an_edited_profile_reaches_the_training_step():
    base = hardware_db.get("a100")
    # half the DRAM bandwidth: a memory-bound training step must get slower, which it cannot if
    # the step looks up the shipped profile by id (the edited one has the same id)
    slow = dataclasses.replace(base, mem_bw_gbs=base.mem_bw_gbs / 2)
    a = analyzer.analyze(MLP, base, train=True, batch=4096)
    b = analyzer.analyze(MLP, slow, train=True, batch=4096)
    assert b.predictions[0].latency_s > a.predictions[0].latency_s
    assert b.training.steps[0].step_s > a.training.steps[0].step_s
