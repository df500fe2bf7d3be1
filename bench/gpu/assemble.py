#!/usr/bin/env python3
"""Join one bench/gpu/measure.py run into result files, and convert rows into the layouts the fit
scripts read. Joins and renames only: nothing is fitted or adjusted here.

    python3 bench/gpu/assemble.py RUN_DIR --gpu h200 --date YYYY-MM-DD --command "the run command"
        [--device-system h200_sxm] [--out-dir bench/results]

Writes, in OUT_DIR, with PREFIX = <gpu>_ and SUFFIX = _<date>:

  PREFIX<part>SUFFIX.csv    one row per case (pass A joined with pass B on the case key) for each part
                            run (compile rows go with models), plus gpu_name, torch, date_utc
  PREFIXkernelsSUFFIX.json.gz  per part and case key: every kernel name and its median duration (gzip)
  PREFIXmetaSUFFIX.json     the command, the device tool's reply, machine.txt, run.json, each part's
                            meta (environment, settings, time definitions, cuts), a summary of
                            smi_trace.csv (and the trace itself)
  PREFIXfit_neusightSUFFIX.csv  fp32 (TF32 off) rows in shared/measurements/gpu/neusight_ops.csv.gz's
                            columns (bench/fit_neusight.py): latency_us = event_us, NeuSight's own
                            definition; op add, mul, relu, gelu (erf), softmax, ln, bmm, linear_nobias
                            (F.linear without bias: NeuSight's ``linear`` has one), conv (groups 1)
  PREFIXfit_vidurSUFFIX.csv     fp16/bf16 rows in vidur_a100_a40.csv's columns (bench/fit_efficiency.py):
                            measured_us = kernel_sum_us (timing kernel_sum); op gemm, add, gelu_erf,
                            layernorm_affine, embedding (the ops its closed forms know)
  PREFIXfit_aic_gemmSUFFIX.csv  bf16 F.linear rows in aic_gemm.csv's columns: latency_us = graph_us
                            (timing graph; one weight, not aiconfigurator's six rotated copies)

For an H100 (``--gpu`` naming h100) the files are named <gpu>_check_* and no fit layout is written:
its data are check data only (and bench/accuracy.py reads bench/h100's own h100_ops_*.csv).
"""

from __future__ import annotations

import argparse
import importlib.util
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gpu_plan  # noqa: E402

PART_FILES = {"ops": ("ops",), "gemm": ("gemm",), "conv": ("conv",), "models": ("models", "compile")}
NEUSIGHT_COLS = ("device_system", "device_name", "op", "op_class", "B", "H", "M", "N", "K", "in_channels",
                 "out_channels", "kernel_size", "input_size", "stride", "padding", "latency_us", "bytes_min",
                 "flops", "kernel_name", "kernels_launched", "warps_per_sm", "blocks_per_sm", "grid_x", "grid_y",
                 "grid_z", "block_x", "block_y", "block_z", "torch_version", "cuda_version", "cudnn_version",
                 "source_path", "source_row")
VIDUR_COLS = ("source", "gpu", "op", "dtype", "batch", "M", "N", "K", "measured_us", "std_us", "timing", "model",
              "tp", "notes")
AIC_COLS = ("device_system", "device_name", "framework", "version", "kernel_source", "dtype", "m", "n", "k",
            "latency_us", "timing")
NEUSIGHT_OPS = {"add": ("add", "elementwise_binary"), "mul": ("mul", "elementwise_binary"),
                "relu": ("relu", "elementwise_unary"), "gelu_erf": ("gelu", "elementwise_unary"),
                "softmax": ("softmax", "softmax"), "layer_norm": ("ln", "layernorm"),
                "bmm": ("bmm", "matmul"), "gemm": ("linear_nobias", "matmul"), "conv2d": ("conv", "conv")}
VIDUR_OPS = {"gemm": "gemm", "add": "add", "gelu_erf": "gelu_erf", "layer_norm": "layernorm_affine",
             "embedding": "embedding"}


def _h100_assemble():
    """bench/h100/assemble_results.py (its CSV reader and writer), imported by path."""
    spec = importlib.util.spec_from_file_location("h100_assemble_results", os.path.join(
        os.path.dirname(HERE), "h100", "assemble_results.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


H100 = _h100_assemble()


def _read(path: str) -> list[dict]:
    return H100.read(path) if os.path.exists(path) else []


def _json(path: str, default=None):
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def part_rows(run_dir: str, name: str) -> list[dict]:
    """Pass A rows of a part (run order) with the pass B columns of the same key added."""
    b = {r["key"]: r for r in _read(os.path.join(run_dir, f"{name}_b.csv"))}
    out = []
    for r in _read(os.path.join(run_dir, f"{name}_a.csv")):
        extra = {k: v for k, v in b.get(r["key"], {}).items() if k not in gpu_plan.ID_COLS and k != "t_s"}
        out.append(r | {"t_s_b": b.get(r["key"], {}).get("t_s", "")} | extra)
    return out


def _columns(rows: list[dict]) -> list[str]:
    cols: dict = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    return list(cols)


def _i(v) -> int:
    return int(float(v)) if v not in ("", None) else 0


def _ok(r: dict, col: str) -> bool:
    return r.get(col, "") not in ("", "nan")


def neusight_row(r: dict, env: dict, names: list, device: str) -> dict | None:
    """A fp32 (TF32 off) row in NeuSight's layout; its N is the reduction and K the output width."""
    if r["op"] not in NEUSIGHT_OPS or r["dtype"] != "fp32" or _i(r["tf32"]) or not _ok(r, "event_us"):
        return None
    if r["op"] == "conv2d" and _i(r["groups"]) != 1:
        return None
    op, cls = NEUSIGHT_OPS[r["op"]]
    out = {"device_system": device, "device_name": env.get("gpu_name", ""), "op": op, "op_class": cls,
           "latency_us": r["event_us"], "bytes_min": r["bytes_min"], "kernel_name": r.get("main_kernel", ""),
           "kernels_launched": "".join(";" + n for n in names), "torch_version": env.get("torch", ""),
           "cuda_version": env.get("cuda_runtime", ""), "cudnn_version": env.get("cudnn", "")}
    if r["op"] in ("bmm", "gemm"):
        out.update(B=_i(r["B"]) or 1, M=r["M"], N=r["K"], K=r["N"], flops=r["flops"])
    elif r["op"] == "conv2d":
        out.update(B=r["B"], in_channels=r["cin"], out_channels=r["cout"], kernel_size=r["ksize"],
                   input_size=r["hw"], stride=r["stride"], padding=r["pad"], flops=r["flops"])
    else:
        out.update(B=r["M"], H=r["N"])
    return out


def vidur_row(r: dict, device: str) -> dict | None:
    """A fp16/bf16 row in vidur's layout (y[M,N] = x[M,K] W^T; embedding: K is the vocabulary)."""
    if r["op"] not in VIDUR_OPS or r["dtype"] not in ("fp16", "bf16") or not _ok(r, "kernel_sum_us"):
        return None
    k = r["V"] if r["op"] == "embedding" else (r["K"] if r["op"] == "gemm" else "")
    return {"source": "opcost bench/gpu", "gpu": device, "op": VIDUR_OPS[r["op"]], "dtype": r["dtype"],
            "M": r["M"], "N": r["N"], "K": k, "measured_us": r["kernel_sum_us"], "timing": "kernel_sum",
            "notes": "one op, same buffers every call (L2-warm when they fit)"}


def aic_row(r: dict, env: dict, device: str) -> dict | None:
    if r["op"] != "gemm" or r["dtype"] != "bf16" or not _ok(r, "graph_us"):
        return None
    return {"device_system": device, "device_name": env.get("gpu_name", ""), "framework": "pytorch",
            "version": env.get("torch", ""), "kernel_source": "F.linear (cuBLAS)", "dtype": "bfloat16",
            "m": r["M"], "n": r["N"], "k": r["K"], "latency_us": r["graph_us"], "timing": "graph"}


def smi_summary(path: str) -> dict:
    """Samples, SM clock range, largest power draw and clock-event reasons of smi_trace.csv."""
    rows = _read(path)
    if not rows:
        return {"samples": 0}

    def num(r, start):
        v = next((v for k, v in r.items() if k and k.strip().startswith(start)), "")
        try:
            return float(str(v).split()[0])
        except (ValueError, IndexError):
            return None
    sm = [x for x in (num(r, "clocks.current.sm") for r in rows) if x is not None]
    pw = [x for x in (num(r, "power.draw") for r in rows) if x is not None]
    reasons: dict = {}
    for r in rows:
        v = next((v.strip() for k, v in r.items() if k and "reasons" in k), "")
        reasons[v] = reasons.get(v, 0) + 1
    return {"samples": len(rows), "sm_clock_min_mhz": min(sm, default=None), "sm_clock_max_mhz": max(sm, default=None),
            "power_max_w": max(pw, default=None), "event_reasons_counts": reasons,
            "columns": list(rows[0]), "trace": [list(r.values()) for r in rows]}


def check_only(gpu: str) -> bool:
    """H100 data are held-out check data: never written in a fit layout."""
    return "h100" in gpu.lower()


def _text(*paths: str) -> str:
    for p in paths:
        if os.path.exists(p):
            with open(p, encoding="utf-8", errors="replace") as f:
                return f.read()
    return ""


def assemble(run_dir: str, out_dir: str, gpu: str, date: str, device: str, command: str,
             device_reply: dict | None = None) -> list[str]:
    """Write the joined and converted files; their paths."""
    os.makedirs(out_dir, exist_ok=True)
    # an H100's files are named <gpu>_check_*: bench/accuracy.py reads the newest h100_ops_*.csv,
    # written by bench/h100 in its own columns
    stem, written = os.path.join(out_dir, f"{gpu}_check_" if check_only(gpu) else f"{gpu}_"), []
    meta = {"command": command, "device_reply": device_reply, "run": _json(os.path.join(run_dir, "run.json"), {}),
            "machine_txt": _text(os.path.join(run_dir, "machine.txt"),
                                 os.path.join(os.path.dirname(os.path.abspath(run_dir)), "machine.txt")),
            "parts": {}, "smi_trace": smi_summary(os.path.join(run_dir, "smi_trace.csv"))}
    kernels, fit = {}, {"neusight": [], "vidur": [], "aic_gemm": []}
    for part, names in PART_FILES.items():
        rows = []
        for name in names:
            meta["parts"][name] = _json(os.path.join(run_dir, f"{name}_meta.json"))
            kernels[name] = _json(os.path.join(run_dir, f"{name}_kernels.json"), {})
            env = (meta["parts"][name] or {}).get("environment", {})
            for r in part_rows(run_dir, name):
                rows.append(r | {"gpu_name": env.get("gpu_name", ""), "torch": env.get("torch", ""),
                                 "date_utc": env.get("date_utc", "")})
                kern = (kernels[name].get(r["key"]) or {}).get("names") or []
                ns = neusight_row(r, env, kern, device)
                if ns is not None:
                    ns.update(source_path=f"{gpu}_{part}_{date}.csv", source_row=len(rows))
                fit["neusight"].append(ns)
                fit["vidur"].append(vidur_row(r, device))
                fit["aic_gemm"].append(aic_row(r, env, device))
        if rows:
            written.append(f"{stem}{part}_{date}.csv")
            H100.write(written[-1], rows, _columns(rows))
    for name, cols in (("neusight", NEUSIGHT_COLS), ("vidur", VIDUR_COLS), ("aic_gemm", AIC_COLS)):
        rows = [r for r in fit[name] if r is not None]
        if rows and not check_only(gpu):
            written.append(f"{stem}fit_{name}_{date}.csv")
            H100.write(written[-1], rows, cols)
    written.append(f"{stem}kernels_{date}.json.gz")   # gzip: a full run's names are ~9 MB as text
    with gzip.open(written[-1], "wt", encoding="utf-8") as f:
        json.dump(kernels, f, indent=1)
    written.append(f"{stem}meta_{date}.json")
    with open(written[-1], "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", help="the folder measure.py wrote (--out)")
    ap.add_argument("--gpu", required=True, help="file prefix, e.g. h200")
    ap.add_argument("--date", required=True, help="the run's UTC date, YYYY-MM-DD")
    ap.add_argument("--command", required=True, help="the exact run command line, kept in the meta")
    ap.add_argument("--device-system", help="device id in the fit layouts (default: <gpu>_sxm)")
    ap.add_argument("--device-reply", help="a JSON file: the run tool's reply (device, wall_s, lease), kept in the meta")
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(HERE), "results"))
    a = ap.parse_args(argv)
    if not os.path.exists(os.path.join(a.run_dir, "run.json")):
        print(f"error: {a.run_dir} has no run.json (not a measure.py output folder)", file=sys.stderr)
        return 2
    reply = _json(a.device_reply) if a.device_reply else None
    for path in assemble(a.run_dir, a.out_dir, a.gpu, a.date, a.device_system or f"{a.gpu}_sxm", a.command, reply):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
