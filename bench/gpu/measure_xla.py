#!/usr/bin/env python3
"""Time XLA's GPU kernels one program at a time (``xla_cases.py``), on the lent GPU.

Two passes, each its own process (CUPTI is never active while wall-clock is taken):

  python3 bench/gpu/measure_xla.py wall --out DIR [--budget-s S]
      per case: compile; the compiled HLO's entry ops, fusions and custom calls; wall-clock of
      ``f(*args).block_until_ready()`` (median of 50 after 10 warm-ups) and pipelined time (50
      calls back to back, one wait); writes DIR/xla_ops_wall.csv and DIR/xla_ops_meta.json
  python3 bench/gpu/measure_xla.py prof --out DIR [--budget-s S]
      per case: 20 calls under torch.profiler (CUPTI sees the kernels XLA launches in the same
      process; each call waited for), kernel sum per call (median over the calls), kernel count,
      every kernel's name and median duration; writes DIR/xla_ops_prof.csv, DIR/xla_ops_kernels.json
  python3 bench/gpu/measure_xla.py list
      prints the cases (no GPU)

Inputs are on the device before timing and every call reuses them, so a working set under the L2
is timed L2-warm (as ``bench/h100/measure_models.py jaxprof`` times the whole programs).  Cases run
in tier order; a pass stops starting cases once its budget is spent and says so in the meta.
The helpers (wall, pipelined, profile_calls, hlo_entry_ops, smi) are ``measure_models.py``'s.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
T0 = time.perf_counter()
COLS = ["key", "family", "dtype", "args", "tier", "elems", "eager_wall_us", "eager_wall_min_us", "pipelined_us",
        "xla_entry_ops", "xla_fusions", "xla_custom_calls", "kernel_sum_us", "n_kernels", "first_kernel",
        "main_kernel", "prof_grouping", "error"]


def _models_module(out: str):
    os.environ["OUT"] = out
    spec = importlib.util.spec_from_file_location(
        "measure_models", os.path.join(os.path.dirname(HERE), "h100", "measure_models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def log(*a):
    print(f"[{time.perf_counter() - T0:7.1f}s]", *a, flush=True)


def _device_args(case, rng):
    import jax
    import jax.numpy as jnp
    import xla_cases
    out = []
    for shape, dt in case["args"]:
        a = rng.standard_normal(shape).astype("float32") * 0.5
        out.append(jax.device_put(jnp.asarray(a, dtype=xla_cases.DTYPES[dt])))
    return out


def _writer(path):
    f = open(path, "w", newline="")  # noqa: SIM115  (held open for the pass)
    w = csv.DictWriter(f, fieldnames=COLS, extrasaction="ignore")
    w.writeheader()
    f.flush()

    def row(d):
        w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in d.items()})
        f.flush()
    return row


def _base_row(c) -> dict:
    return {"key": c["key"], "family": c["family"], "dtype": c["dtype"], "tier": c["tier"], "elems": c["elems"],
            "args": ";".join(f"{d}[{','.join(map(str, s))}]" for s, d in c["args"])}


def _wall_case(M, c, f, args, row):
    txt = f.lower(*args).compile().as_text()
    ops = M.hlo_entry_ops(txt)
    row["xla_entry_ops"] = sum(v for k, v in ops.items() if k not in M.FREE)
    row["xla_fusions"] = len(re.findall(r"\sfusion\(", txt))
    row["xla_custom_calls"] = len(re.findall(r"\scustom-call\(", txt))
    jax_out = f(*args)
    jax_out = jax_out[0] if isinstance(jax_out, tuple) else jax_out
    jax_out.block_until_ready()
    row["eager_wall_us"], row["eager_wall_min_us"] = M.wall(lambda: f(*args).block_until_ready())
    outs = []
    row["pipelined_us"] = M.pipelined(lambda: outs.append(f(*args)),
                                      lambda: [o.block_until_ready() for o in outs[-1:]] and outs.clear())
    return txt


def _prof_case(M, f, args, row, kernels, key):
    r = M.profile_jitted(f, args)
    row.update({k: r.get(k) for k in ("kernel_sum_us", "n_kernels", "first_kernel", "prof_grouping")})
    med = r.get("median_us") or []
    if med:
        row["main_kernel"] = r["names"][max(range(len(med)), key=med.__getitem__)]
    kernels[key] = {"names": r.get("names"), "median_us": med}


def run(pass_: str, out: str, budget_s: float) -> None:
    os.makedirs(out, exist_ok=True)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    M = _models_module(out)
    import jax
    import numpy as np
    import xla_cases
    if pass_ == "prof":
        import torch
        torch.cuda.init()
    rng = np.random.default_rng(0)
    cases = xla_cases.cases()
    meta = {"pass": pass_, "jax": jax.__version__, "devices": [str(d) for d in jax.devices()],
            "device_kind": jax.devices()[0].device_kind, "backend": jax.default_backend(),
            "xla_flags": os.environ.get("XLA_FLAGS", ""), "budget_s": budget_s, "cases": len(cases),
            "smi_before": M.smi(), "hlo": {}, "skipped": []}
    row_out = _writer(os.path.join(out, f"xla_ops_{pass_}.csv"))
    kernels: dict = {}
    for c in cases:
        if time.perf_counter() - T0 > budget_s:
            meta["skipped"].append(c["key"])
            continue
        row = _base_row(c)
        try:
            f = jax.jit(c["fn"])
            args = _device_args(c, rng)
            if pass_ == "wall":
                txt = _wall_case(M, c, f, args, row)
                if c["tier"] == 0 or c["family"] in ("conv", "scan", "dot_bias_relu", "bdot"):
                    meta["hlo"][c["key"]] = txt[:20000]
            else:
                _prof_case(M, f, args, row, kernels, c["key"])
        except Exception as e:  # noqa: BLE001
            row["error"] = repr(e)[:300]
            log("ERROR", c["key"], repr(e)[:300])
        row_out(row)
        log(f"{pass_} {c['key']:40s} wall {row.get('eager_wall_us', '')} ksum {row.get('kernel_sum_us', '')} "
            f"n {row.get('n_kernels', '')}")
    meta["smi_after"] = M.smi()
    meta["wall_s"] = time.perf_counter() - T0
    with open(os.path.join(out, f"xla_ops_meta_{pass_}.json"), "w") as fh:
        json.dump(meta, fh, indent=1, default=str)
    if pass_ == "prof":
        with open(os.path.join(out, "xla_ops_kernels.json"), "w") as fh:
            json.dump(kernels, fh)
    log("done", pass_, "skipped", len(meta["skipped"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pass_", choices=("wall", "prof", "list"), metavar="PASS", help="wall, prof or list")
    ap.add_argument("--out", default="out_xla", help="output folder")
    ap.add_argument("--budget-s", type=float, default=120.0, help="stop starting cases after this many seconds")
    a = ap.parse_args(argv)
    if a.pass_ == "list":
        import xla_cases
        for c in xla_cases.cases():
            print(c["tier"], c["key"])
        return 0
    run(a.pass_, a.out, a.budget_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
