"""bench/gpu's torch code on a CPU: every single-op maker and model builder runs one call, and one
part runs end to end through gpu_runner with the CUDA-only timings replaced by single calls (the
CSV rows, their errors and the meta are checked; no time is asserted)."""

from __future__ import annotations

import csv
import json

import pytest

torch = pytest.importorskip("torch")


import gpu_cases  # noqa: E402
import gpu_plan  # noqa: E402


def _smallest(part: str) -> list[dict]:
    """The smallest planned case of each (op, variant, dtype, tf32, layout, grouped)."""
    best: dict = {}
    for c in gpu_plan.plan((part,)):
        k = (c["op"], c["variant"], c["dtype"], c["tf32"], c["layout"], c["groups"] > 1)
        if k not in best or c["bytes_alloc"] < best[k]["bytes_alloc"]:
            best[k] = c
    return list(best.values())


@pytest.mark.parametrize("part", ["ops", "gemm", "conv"])
def test_every_single_op_maker_runs_one_call_on_cpu(part):
    cases = _smallest(part)
    # ops: (8 elementwise + 2 fp8 + layer_norm + 2 rms_norm + softmax + embedding) x 3 dtypes;
    # gemm: (gemm, bmm qk, bmm pv) x 3 precisions; conv: (resnet50, mobilenet_v2 dense and depthwise)
    # x 3 precisions (fp32, TF32, fp16 channels-last)
    assert len(cases) == {"ops": 15 * 3, "gemm": 3 * 3, "conv": 3 * 3}[part]
    for c in cases:
        if c["dtype"] == "fp16" and part == "conv":
            c = c | {"dtype": "fp32"}       # CPU conv2d has no fp16 kernel in every torch
        fn, ctx = gpu_cases.make(c, "cpu")
        with ctx():
            y = fn()
        if c["op"] == "embedding":
            assert tuple(y.shape) == (c["M"], c["N"])
        elif part == "ops":
            assert y.numel() == c["M"] * c["N"], c["key"]
        elif part == "gemm":
            assert tuple(y.shape[-2:]) == (c["M"], c["N"]), c["key"]
        else:
            assert tuple(y.shape) == (c["B"], c["cout"], gpu_plan.conv_out_hw(c), gpu_plan.conv_out_hw(c))
        if c["op"] == "fp8_quantize":
            assert y.dtype == gpu_cases.FP8
        else:
            assert torch.isfinite(y.float()).all(), c["key"]


def test_conv_shapes_are_the_torchvision_models_convolutions():
    tv = pytest.importorskip("torchvision")
    for name, planned in (("resnet50", gpu_plan.RESNET50_CONVS), ("mobilenet_v2", gpu_plan.mobilenet_v2_convs())):
        seen = []

        def hook(mod, args, _out, seen=seen):
            x = args[0]
            seen.append((mod.in_channels, mod.out_channels, mod.kernel_size[0], mod.stride[0], mod.padding[0],
                         x.shape[-1], mod.groups))
        model = getattr(tv.models, name)(weights=None).eval()
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                m.register_forward_hook(hook)
        with torch.inference_mode():
            model(torch.zeros(1, 3, 224, 224))
        assert tuple(dict.fromkeys(seen)) == planned, name


@pytest.mark.parametrize(("name", "mode", "use_hf"), [
    ("mobilenet_v2", "train", True), ("gpt2_small", "infer", True), ("bert_base", "train", True),
    ("gpt2_small", "train", False)])
def test_model_cases_build_and_run_one_step_on_cpu(name, mode, use_hf):
    import gpu_models

    if use_hf and name in ("gpt2_small", "bert_base"):
        pytest.importorskip("transformers")
    c = next(c for c in gpu_plan.plan(("models",)) if c["op"] == name and c["mode"] == mode and c["dtype"] == "fp32")
    c = c | {"B": 1, "seq": 16 if c["seq"] else 0}
    fn, ctx, info = gpu_models.make(c, "cpu", use_hf=use_hf)
    with ctx():
        out = fn()
    assert info["params"] > 1_000_000
    assert ("stand-in" in info["note"]) == (not use_hf and name in ("gpt2_small", "bert_base"))
    if mode == "train":
        assert out.ndim == 0 and torch.isfinite(out)
        model = fn.__closure__ and next(x.cell_contents for x in fn.__closure__ if isinstance(x.cell_contents, torch.nn.Module))
        assert any(p.grad is not None for p in model.parameters())
    else:
        assert torch.isfinite(gpu_models._tensor(out).float()).all()


@pytest.fixture
def fake_cuda(monkeypatch):
    """gpu_runner on the CPU: each CUDA-only timing replaced by one call of the case and a fixed value."""
    import gpu_runner
    import gpu_timing as T

    monkeypatch.setattr(gpu_runner, "DEVICE", "cpu")
    monkeypatch.setattr(gpu_runner, "environment", lambda: {"gpu_name": "none (test)"})
    monkeypatch.setattr(gpu_runner, "warm_clock", lambda s: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    for name, value in (("smi", {}), ("smi_clock_csv", ""), ("l2_flush", None)):
        monkeypatch.setattr(T, name, lambda v=value: v)
    monkeypatch.setattr(T, "time_events", lambda fn, n: (fn(), 3.0)[1])
    monkeypatch.setattr(T.H, "time_eager", lambda fn: (fn(), (10.0, 9.0))[1])
    monkeypatch.setattr(T.H, "time_graph", lambda fn: (fn(), (2.0, [2.0, 2.1, 1.9]))[1])
    monkeypatch.setattr(T.H, "time_graph_x20", lambda fn: (fn(), 1.5)[1])
    monkeypatch.setattr(T.H, "profile_kernels", lambda fn, flush=False: (fn(), {
        "kernel_sum_us": 1.25 if flush else 1.0, "n_kernels": 1, "first_kernel": "k", "main_kernel": "k",
        "grouping": "equal_groups", "kernel_names": ["k"], "kernel_median_us": [1.0]})[1])
    return gpu_runner


def _csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_a_part_runs_end_to_end_and_keeps_each_error_in_its_row(fake_cuda, monkeypatch, tmp_path):
    orig = gpu_cases._unary

    def unary(op):
        if op == "silu":
            raise RuntimeError("boom")
        return orig(op)
    monkeypatch.setattr(gpu_cases, "_unary", unary)
    monkeypatch.setattr(gpu_plan, "SMOKE_EXPONENTS", (10, 14))          # small tensors: a quick test
    monkeypatch.setattr(gpu_plan, "EMBEDDING_TABLES", ((1000, 64),))
    monkeypatch.setattr(gpu_plan, "X20_MAX_BYTES", 2**15)             # the 16 KiB cases go without graph_x20
    meta = fake_cuda.run_part("ops", str(tmp_path), 600.0, True, lambda *a: None)
    planned = gpu_plan.plan(("ops",), smoke=True)
    a, b = _csv(tmp_path / "ops_a.csv"), _csv(tmp_path / "ops_b.csv")
    assert [r["key"] for r in a] == [c["key"] for c in planned] == [r["key"] for r in b]
    assert meta["cases_a"] == meta["cases_b"] == len(planned) and meta["pass_a_cut_at"] is None
    silu = [r for r in a if r["op"] == "silu"]
    assert len(silu) == 4 and all("boom" in r["error_a"] and not r["eager_wall_us"] for r in silu)
    ok = [r for r in a if r["op"] != "silu"]
    assert all(not r["error_a"] for r in ok), [r["error_a"] for r in ok if r["error_a"]][:3]
    assert {r["eager_wall_us"] for r in ok} == {"10.000"}
    # graph_x20 where the case names it, not over X20_MAX_BYTES
    x20 = {r["key"]: r["graph_x20_us"] for r in ok}
    assert {x20[c["key"]] for c in planned if c["key"] in x20 and "graph_x20_us" in c["times"]} == {"1.500"}
    assert {x20[c["key"]] for c in planned if c["key"] in x20 and "graph_x20_us" not in c["times"]} == {""}
    assert all(json.loads(r["settings"]) == {"matmul_allow_tf32": False, "cudnn_allow_tf32": False} for r in ok)
    assert {r["kernel_sum_l2cold_us"] for r in b if r["op"] != "silu"} == {"1.250"}
    doc = json.loads((tmp_path / "ops_meta.json").read_text())
    assert set(doc["time_definitions"]) == set(gpu_plan.PART_TIMES["ops"])
    assert set(json.loads((tmp_path / "ops_kernels.json").read_text())) == {c["key"] for c in planned}


def test_a_spent_budget_cuts_the_part_before_its_first_case(fake_cuda, tmp_path):
    meta = fake_cuda.run_part("conv", str(tmp_path), 0.0, True, lambda *a: None)
    assert meta["pass_a_cut_at"] == 0 and meta["cases_a"] == meta["cases_b"] == 0
    assert _csv(tmp_path / "conv_a.csv") == []
