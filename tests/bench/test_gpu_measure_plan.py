"""bench/gpu's plan (no torch, no GPU): case counts per part (closed forms beside them), the size
ranges the fits need, every case's time definitions, the dry run as a process, the README's one
device command, and assemble.py's joins and fit layouts on hand-written rows."""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU = os.path.join(ROOT, "bench", "gpu")
if GPU not in sys.path:
    sys.path.insert(0, GPU)

import assemble  # noqa: E402
import gpu_plan  # noqa: E402
import measure  # noqa: E402

FULL = gpu_plan.plan(gpu_plan.PARTS)


def _part(part, cases=FULL):
    return [c for c in cases if c["part"] == part]


def test_case_counts_per_part():
    # ops, per dtype: 12 sizes x (8 elementwise + 2 fp8 + 3 norms) = 156; softmax over last dims
    # 128, 1024, 4096, 32768 where they fit: 1 + 2 + 3 + 3 + 8 x 4 = 41; embedding 2 tables x 8 = 16;
    # then the norm hidden sweep 2 dtypes x 2 sizes x 6 widths x 2 norms = 48: 3 x 213 + 48 = 687
    assert len(_part("ops")) == 3 * (156 + 41 + 16) + 48 == 687
    # gemm: 3 precisions x (12 (N,K) x 10 M + bmm 2 bh x 4 M x 3 keys x (qk, pv)) = 3 x 168
    assert len(_part("gemm")) == 3 * (12 * 10 + 2 * 4 * 3 * 2) == 504
    # conv: 3 precisions x 2 batches x (23 resnet50 + 30 mobilenet_v2 distinct convolutions)
    assert len(gpu_plan.RESNET50_CONVS) == 23 and len(gpu_plan.mobilenet_v2_convs()) == 30
    assert len(_part("conv")) == 3 * 2 * (23 + 30) == 318
    # models: 5 models x 2 batches x 3 precisions x (infer, train); compile: 6
    assert len(_part("models")) == 5 * 2 * 3 * 2 == 60
    assert len(_part("compile")) == 6
    smoke = gpu_plan.plan(gpu_plan.PARTS, smoke=True)
    # smoke ops, per dtype (fp32, bf16): 2 sizes (4 KiB, 16 MiB) x 13 = 26, softmax 2 (last dims 128
    # and 1024 in 4 KiB) + 4 = 6, 2 tables x 2 token counts = 4: 2 x 36 = 72; gemm 3 precisions x
    # (2 (N,K) x 2 M + bmm qk, pv) = 18; conv 3 precisions x 2 nets x 2 convs = 12
    assert {p: len(_part(p, smoke)) for p in gpu_plan.PARTS} == {"ops": 72, "gemm": 18, "conv": 12, "models": 2,
                                                                 "compile": 1}
    assert len({c["key"] for c in FULL}) == len(FULL)


def test_memory_bound_sizes_cover_1kib_to_1gib_log_spaced():
    assert gpu_plan.SIZE_EXPONENTS == (10, 12, 14, 15, 17, 19, 21, 23, 25, 26, 28, 30)
    for op in (*gpu_plan.ELEMENTWISE, "fp8_quantize", "layer_norm", "rms_norm"):
        for dt in gpu_plan.DTYPES:
            sizes = sorted({c["M"] * c["N"] * gpu_plan.ITEMSIZE[dt] for c in _part("ops")
                            if c["op"] == op and c["dtype"] == dt and (
                                c["N"] == (4096 if op.endswith("norm") else 1024) or c["M"] == 1 or op == "transpose")})
            assert sizes[0] == 2**10 and sizes[-1] == 2**30, (op, dt)
            assert len(sizes) == 12 and max(b / a for a, b in itertools.pairwise(sizes)) <= 4, (op, dt)
    soft = {c["N"] for c in _part("ops") if c["op"] == "softmax"}
    assert soft == {128, 1024, 4096, 32768}
    big = max(c["M"] * c["N"] * 4 for c in _part("ops") if c["op"] == "softmax" and c["dtype"] == "fp32")
    assert big == 2**30


def test_gemm_and_conv_grids():
    gemm = [c for c in _part("gemm") if c["op"] == "gemm"]
    assert sorted({c["M"] for c in gemm}) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert {(c["dtype"], c["tf32"]) for c in FULL if c["part"] in ("gemm", "conv")} == {
        ("fp32", 0), ("fp32", 1), ("bf16", 0), ("fp16", 0)}
    assert {c["layout"] for c in _part("conv") if c["dtype"] == "fp16"} == {"nhwc"}
    assert {c["B"] for c in _part("conv")} == {1, 32} and {c["B"] for c in _part("models")} == {1, 8}
    # depthwise convolutions of mobilenet_v2 are grouped by their channels
    assert all(c["groups"] in (1, c["cin"]) for c in _part("conv"))


def test_every_case_names_its_time_definitions():
    for c in FULL:
        assert c["times"] and set(c["times"]) <= set(gpu_plan.PART_TIMES[c["part"]]), c["key"]
        assert all(t in gpu_plan.TIME_DEFS for t in c["times"])
        assert set(c["counts"]) == {"w_eager", "n_eager", "n_events", "w_graph", "n_graph", "graph_reps",
                                    "w_prof", "n_prof"}
        assert c["est_s"] > 0 and c["flops"] >= 0 and isinstance(c["flops"], int)
        # graph_x20 keeps 20 outputs in the graph pool: only for cases up to X20_MAX_BYTES
        assert ("graph_x20_us" in c["times"]) == (c["part"] in ("ops", "gemm") and c["bytes_alloc"] <= 2**28)
    assert {t for c in FULL for t in c["times"]} == set(gpu_plan.TIME_DEFS)


def test_closed_form_counts():
    add = next(c for c in _part("ops") if c["op"] == "add" and c["dtype"] == "bf16" and c["M"] * c["N"] == 2**29)
    assert (add["flops"], add["bytes_min"]) == (2**29, 3 * 2**29 * 2)       # one add per element; a, b, out
    g = next(c for c in _part("gemm") if c["op"] == "gemm" and c["M"] == 4 and c["N"] == 768 and c["K"] == 3072
             and c["dtype"] == "bf16")
    assert g["flops"] == 2 * 4 * 768 * 3072 and g["bytes_min"] == (4 * 3072 + 768 * 3072 + 4 * 768) * 2
    stem = next(c for c in _part("conv") if c["cin"] == 3 and c["ksize"] == 7 and c["B"] == 1 and not c["tf32"])
    assert gpu_plan.conv_out_hw(stem) == 112 and stem["flops"] == 2 * 64 * 112 * 112 * 3 * 49   # 236 MFLOP


def test_estimated_machine_time_fits_each_default_budget():
    # a planning check (no timing): the full plan's estimate per part stays inside its default budget
    summ = gpu_plan.summary(FULL)
    for p, b in measure.BUDGET_S.items():
        if p != "compile":
            assert summ[p]["est_s"] < b, (p, summ[p]["est_s"], b)
    assert sum(measure.BUDGET_S[p] + measure.OVERHEAD_S for p in measure.DEFAULT_PARTS) <= measure.DEFAULT_TOTAL_S


@pytest.mark.machine
def test_dry_run_lists_the_plan_in_a_process(tmp_path):
    cmd = [sys.executable, os.path.join(GPU, "measure.py"), "--dry-run", "--parts", "ops,gemm,conv,models,compile",
           "--out", str(tmp_path)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=os.environ | {"GPU_BUDGET_OPS_S": "77"})
    assert r.returncode == 0, r.stderr
    assert "plan: 1575 cases (full)" in r.stdout and re.search(r"ops\s+687 cases .* budget 77 s", r.stdout)
    doc = json.loads((tmp_path / "plan.json").read_text())
    assert len(doc["cases"]) == 1575 and doc["summary"]["gemm"]["cases"] == 504
    bad = subprocess.run([sys.executable, os.path.join(GPU, "measure.py"), "--dry-run", "--parts", "ops,nope"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown part(s) nope" in bad.stderr


@pytest.mark.machine
def test_without_cuda_the_run_stops_at_once_with_exit_2(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    r = subprocess.run([sys.executable, os.path.join(GPU, "measure.py"), "--out", str(tmp_path), "--parts", "ops"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "no CUDA GPU" in r.stderr
    assert json.loads((tmp_path / "run.json").read_text())["parts"]["ops"]["returncode"] == 2


def test_the_readme_device_command_fits_the_run_tool():
    with open(os.path.join(GPU, "README.md"), encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"<!-- device-command -->\s*```sh\n(.*?)\n```", text, re.S)
    assert block, "README.md: the fenced command after <!-- device-command -->"
    cmd = block.group(1)
    assert "\n" not in cmd and len(cmd) <= 2000, len(cmd)
    assert "bench/gpu/measure.py --smoke" in cmd and "bench/gpu/measure.py --out" in cmd
    # the timeouts in the command add up to at most 6 minutes of wall time
    assert sum(int(t) for t in re.findall(r"timeout (\d+)", cmd)) <= 360


_write = assemble.H100.write   # bench/h100/assemble_results.write: the CSV writer the runs use


def test_assemble_joins_the_passes_and_converts_to_the_fit_layouts(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"argv": ["x"]}))
    pick = {"gemm": lambda c: c["op"] == "gemm" and c["M"] == 4 and c["N"] == 768 and c["K"] == 3072,
            "ops": lambda c: c["op"] in ("add", "embedding", "layer_norm") and c["M"] * c["N"] <= 2**14,
            "conv": lambda c: c["variant"] == "mobilenet_v2" and c["cin"] in (32, 96) and c["B"] == 1}
    env = {"gpu_name": "NVIDIA H200", "torch": "2.11.0+cu130", "cuda_runtime": "13.0", "cudnn": 91900}
    for part, keep in pick.items():
        cases = [c for c in _part(part) if keep(c)]
        a = [c | {"event_us": 7.0, "graph_us": 5.0, "error_a": ""} for c in cases]
        b = [c | {"kernel_sum_us": 3.0, "main_kernel": "kern"} for c in cases[:-1]]   # the last one: no pass B
        _write(run / f"{part}_a.csv", a, [*gpu_plan.ID_COLS, "event_us", "graph_us", "error_a", "t_s"])
        _write(run / f"{part}_b.csv", b, [*gpu_plan.ID_COLS, "kernel_sum_us", "main_kernel", "t_s"])
        (run / f"{part}_meta.json").write_text(json.dumps({"environment": env}))
        (run / f"{part}_kernels.json").write_text(json.dumps({c["key"]: {"names": ["k1", "winograd"]} for c in cases}))
    out = tmp_path / "res"
    paths = assemble.assemble(str(run), str(out), "h200", "2099-01-01", "h200_sxm", "CMD")
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted(f"h200_{n}_2099-01-01.{e}" for n, e in (
        ("ops", "csv"), ("gemm", "csv"), ("conv", "csv"), ("fit_neusight", "csv"), ("fit_vidur", "csv"),
        ("fit_aic_gemm", "csv"), ("kernels", "json.gz"), ("meta", "json")))
    with open(out / "h200_gemm_2099-01-01.csv", newline="") as f:
        gemm = list(csv.DictReader(f))
    assert len(gemm) == 3 and [r["kernel_sum_us"] for r in gemm] == ["3.0", "3.0", ""]
    with open(out / "h200_fit_neusight_2099-01-01.csv", newline="") as f:
        ns = list(csv.DictReader(f))
    lin = next(r for r in ns if r["op"] == "linear_nobias")
    # NeuSight: N is the reduction (our K = 3072), K the output width (our N = 768); time = event_us
    assert (lin["M"], lin["N"], lin["K"], lin["latency_us"], lin["B"]) == ("4", "3072", "768", "7.0", "1")
    assert lin["kernels_launched"] == ";k1;winograd" and lin["device_name"] == "NVIDIA H200"
    assert {r["op"] for r in ns} == {"linear_nobias", "add", "ln", "conv"}             # fp32, TF32 off only
    dense = {(str(c["cin"]), str(c["cout"])) for c in _part("conv") if pick["conv"](c) and c["groups"] == 1
             and c["dtype"] == "fp32" and not c["tf32"]}
    assert len(dense) == 4 and {(r["in_channels"], r["out_channels"]) for r in ns if r["op"] == "conv"} == dense
    with open(out / "h200_fit_vidur_2099-01-01.csv", newline="") as f:
        vd = list(csv.DictReader(f))
    emb = [r for r in vd if r["op"] == "embedding"]
    assert emb and all(r["K"] in ("50257", "32000") and r["dtype"] in ("bf16", "fp16") for r in emb)
    assert {r["op"] for r in vd} == {"gemm", "add", "layernorm_affine", "embedding"}
    assert all(r["measured_us"] == "3.0" and r["timing"] == "kernel_sum" for r in vd)
    with open(out / "h200_fit_aic_gemm_2099-01-01.csv", newline="") as f:
        aic = list(csv.DictReader(f))
    assert [(r["m"], r["n"], r["k"], r["dtype"], r["timing"], r["latency_us"]) for r in aic] == [
        ("4", "768", "3072", "bfloat16", "graph", "5.0")]
    meta = json.loads((out / "h200_meta_2099-01-01.json").read_text())
    assert meta["command"] == "CMD" and meta["smi_trace"] == {"samples": 0}
    # an H100's rows are held-out check data: joined, never written in a fit layout
    held = assemble.assemble(str(run), str(tmp_path / "h100"), "h100", "2099-01-01", "h100_sxm", "CMD")
    assert len(held) == 5 and not any("fit_" in p for p in held)
    assert all(os.path.basename(p).startswith("h100_check_") for p in held)       # not bench/h100's h100_ops_*
    # the command line: a folder without run.json is refused (exit 2)
    (tmp_path / "reply.json").write_text(json.dumps({"wall_s": 300}))
    assert assemble.main([str(run), "--gpu", "h200", "--date", "2099-01-02", "--command", "C", "--device-reply",
                          str(tmp_path / "reply.json"), "--out-dir", str(tmp_path / "cli")]) == 0
    assert json.loads((tmp_path / "cli" / "h200_meta_2099-01-02.json").read_text())["device_reply"] == {"wall_s": 300}
    assert assemble.main([str(tmp_path), "--gpu", "h200", "--date", "d", "--command", "C"]) == 2


def test_the_full_run_takes_the_parts_whose_smoke_run_timed_a_case(tmp_path):
    # a row counts when any pass-A time is there, even beside an error of another definition
    _write(tmp_path / "ops_a.csv", [{"key": "a", "error_a": "make: boom"},
                                    {"key": "b", "graph_us": "", "event_us": "4.0", "error_a": "graph_us: capture"},
                                    {"key": "c", "error_a": ""}], ["key", "event_us", "graph_us", "error_a"])
    assert measure.rows_ok(str(tmp_path / "ops_a.csv")) == (3, 1)
    assert measure.rows_ok(str(tmp_path / "absent.csv")) == (0, 0)
    (tmp_path / "run.json").write_text(json.dumps({"parts": {
        "ops": {"rows_ok": 1}, "gemm": {"rows_ok": 0}, "conv": {"skipped": "no time"}, "models": {"rows_ok": 2}}}))
    assert measure.ok_parts(str(tmp_path)) == ["ops", "models"]
    assert measure.ok_parts(str(tmp_path / "nothing")) == []
