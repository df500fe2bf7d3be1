#!/usr/bin/env python3
"""CPU accuracy of opcost's calibrated onnxruntime predictions (no model is ever calibrated on).

    PYTHONPATH=$PWD python bench/accuracy_cpu.py [--profile P.json] [--threads 1,2]
        [--levels default,off] [--q 0.5] [--out bench/results/accuracy_cpu_<date>]

1. per thread count and level, calibrate (synthetic single-op models only), written as a
   profile TOML (``<out>_profile_<level>_<N>t.toml``), and measure the models right after it
   (a calibration and its measurements minutes apart, not one config's calibration beside
   another's measurements); or reuse profiles: ``--profile default:1=a.toml,default:2=b.toml``;
   above 1 thread the host's thread mode is probed before the calibration and before and after
   the measurements (``analyzer.prediction.cpu.thread_notes``: on this 2-core VM onnxruntime at 2
   threads runs in a fast or a slow state; a calibration and a measurement in different states
   are reported as such);
2. for every evaluated model: the prediction is the product's, ``analyzer.analyze(model,
   hw=profile.toml).predictions[0].latency_s`` (the profile's default runtime is onnxruntime);
   measured with ``ort_measure.measure`` (same threads and level);
3. prints and writes per model predicted vs measured ms, error %, and overall MAPE, share within
   +-10 % / +-20 %, bias, node-level Spearman (per onnxruntime kernel: the product's predicted
   time of the nodes it replaced vs onnxruntime's profiled kernel time).

Time definition: a model's measured latency is the median ``session.run`` wall-clock of a pass
(``--runs`` runs, at least 0.5 s), and with ``--passes P`` > 1 the fastest of P such passes, the
passes going over all models in turn (another process, or a slow minute of a shared host, only
adds time; ``calibrate`` keeps each row's fastest of 5 passes the same way). Above 1 thread the
thread probe is timed before every pass, and up to ``EXTRA_PASSES`` passes are added while none
ran in the fast state (this VM's slow 2-thread state, README "Accuracy"; the calibration describes
the fast one). The first pass's figures are reported beside them.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TORCH = ["resnet18", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "bert", "gpt2", "vit"]


def models() -> list[str]:
    out = sorted(glob.glob(os.path.join(ROOT, "samples", "*.onnx")))
    out += [os.path.join(ROOT, "tests", "fixtures", "torch", f"{m}.onnx") for m in TORCH]
    out += sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "fixtures", "ort", "*.onnx"))
                  if not any(q in os.path.basename(p) for q in ("int4", "qop", "qdyn")))
    out += sorted(glob.glob(os.path.join(ROOT, "samples", "cpu_models", "*.onnx")))
    return [p for p in out if os.path.exists(p)]


def sym_dims(proto) -> dict[str, int]:
    d = {}
    for i in proto.graph.input:
        for x in i.type.tensor_type.shape.dim:
            if x.dim_param:
                d[x.dim_param] = 1
    return d


def evaluate(path, profile, threads, level, q, runs):
    import onnx

    from analyzer import analyze
    from analyzer.prediction.onnxruntime.graph import fused_graph, fusion_map
    from analyzer.measure.onnxruntime import measure
    from analyzer.report.measured import spearman

    proto = onnx.load(path, load_external_data=False)
    dims = sym_dims(proto)
    rep = analyze(path, hw=profile, dims=dims or None)
    pred = rep.predictions[0]
    fused = fused_graph(path, level, threads)
    fmap = fusion_map(proto, fused)
    m = measure(path, threads=threads, level=level, runs=runs, dims=dims, fused=fused, q=q)
    row_t = {}
    for n in pred.nodes:
        row_t[n.name] = row_t.get(n.name, 0.0) + n.time_s
    # member-less fused nodes (inserted by onnxruntime) are measured with the kernel they are
    # charged to (ort_graph.memberless_owner), as the prediction charges them
    from analyzer.prediction.onnxruntime.graph import memberless_owner
    meas_k = dict(m.by_fused)
    for x, owner in memberless_owner(proto, fused, fmap).items():
        meas_k[owner] = meas_k.get(owner, 0.0) + m.by_fused.get(x, 0.0)
    pk, mk = [], []
    for fname, names in fmap.items():
        t = meas_k.get(fname)
        p = sum(row_t.get(x, 0.0) for x in names)
        if t and p:
            pk.append(p)
            mk.append(t)
    rho = spearman(pk, mk) if len(pk) >= 3 else None
    rho = float("nan") if rho is None else rho
    samples = sorted(m.run_samples_s)
    return {"model": os.path.relpath(path, ROOT), "kernels": pred.kernels,
            "predicted_ms": pred.latency_s * 1e3, "measured_ms": m.latency_s * 1e3,
            "measured_p10_p90_ms": [float(np.quantile(samples, 0.1)) * 1e3,
                                    float(np.quantile(samples, 0.9)) * 1e3],
            "error_pct": (pred.latency_s - m.latency_s) / m.latency_s * 100, "spearman": rho,
            "first_pass_error_pct": (pred.latency_s - m.latency_s) / m.latency_s * 100,
            "measured_passes_ms": [m.latency_s * 1e3],
            "joined_kernels": len(pk), "notes": list(pred.notes),
            "uncosted": [n.name for n in rep.nodes if n.status == "uncosted"]}


def wall_ms(path, threads, level, q, runs) -> float:
    """One more pass: the ``q`` quantile of ``session.run`` wall-clock (ms) of a fresh session,
    as ``ort_measure.measure`` times it (no profiling)."""
    import onnx

    from analyzer.measure import onnxruntime as om

    wall, _ = om.wall_runs(om.model_bytes(path), threads, level, runs,
                           sym_dims(onnx.load(path, load_external_data=False)))
    return om.quantile(wall, q) * 1e3


EXTRA_PASSES = 3   # above 1 thread: passes added while no pass ran between two fast probes


def more_passes(rows, passes: int, first_probe, probe, wall) -> list:
    """Passes 2..``passes`` over ``rows`` (each row's ``measured_passes_ms`` grows by
    ``wall(model)``); with a ``first_probe`` (above 1 thread) ``probe()`` between passes and after
    the last, and up to ``EXTRA_PASSES`` more while no pass ran between two fast probes
    (``thread_state.another_pass``). Returns the probes (one more than the passes)."""
    from analyzer.measure.cpu import thread_state

    probes = [first_probe] if first_probe else []
    done = 1
    while True:
        if probes:   # after pass ``done``, before the next
            probes.append(probe())
        if not thread_state.another_pass(done, passes, EXTRA_PASSES, [p["speedup"] for p in probes] if probes else None):
            return probes
        for r in rows:
            r["measured_passes_ms"].append(wall(r["model"]))
        done += 1


def reprofile(probes: list, now: dict) -> bool:
    """Profile the models again (their node Spearman) when the first pass, which profiled them,
    ran in the slow thread state, a later pass ran fast, and the probe reads fast ``now``."""
    return (bool(probes) and probes[0]["mode"] != "fast" and now["mode"] == "fast"
            and any(p["mode"] == "fast" for p in probes[1:]))


def thread_mode(threads: int) -> dict:
    """The host's multi-thread state now: ``analyzer.prediction.cpu.thread_notes``'s probe (the one
    ``calibrate`` times at its start and end), its speed-up at ``threads`` over 1 thread, 0.1 s
    of runs each, and its ``state`` (fast: the threads help; slow: they slow it down)."""
    from analyzer.measure.cpu import thread_state
    from analyzer.measure.calibrate import wall_time

    s = thread_state.speedup(threads, lambda m, t: wall_time(m, t, "default", 0.5, min_s=0.1))
    return {"speedup": round(s, 3), "mode": thread_state.state(s), "at": time.strftime("%H:%M:%S")}


def summary(rows):
    e = np.array([r["error_pct"] for r in rows])
    rho = np.array([r["spearman"] for r in rows if np.isfinite(r["spearman"])])
    return {"models": len(rows), "mape_pct": float(np.mean(np.abs(e))),
            "within_10_pct": float(np.mean(np.abs(e) <= 10) * 100),
            "within_20_pct": float(np.mean(np.abs(e) <= 20) * 100),
            "bias_pct": float(np.mean(e)),
            "median_node_spearman": float(np.median(rho)) if len(rho) else float("nan"),
            "mean_node_spearman": float(np.mean(rho)) if len(rho) else float("nan")}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--levels", default="default,off")
    ap.add_argument("--profile", default="", help="LEVEL:N=profile.toml[,...]: reuse calibrations")
    ap.add_argument("--q", type=float, default=0.5, help="quantile over runs (0.5 = medians)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--passes", type=int, default=3, help="passes over all models; each keeps its fastest")
    ap.add_argument("--only", default="", help="comma-separated substrings of model paths")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                  f"accuracy_cpu_{datetime.date.today().isoformat()}"))
    a = ap.parse_args(argv)
    from analyzer.measure.calibrate import calibrate, write_profile

    threads = [int(x) for x in a.threads.split(",")]
    levels = a.levels.split(",")
    given = dict(x.split("=", 1) for x in a.profile.split(",") if x)
    profiles, cal_s = {}, {}
    load0 = os.getloadavg()
    ms = [p for p in models() if not a.only or any(s in p for s in a.only.split(","))]
    results = {"date": datetime.date.today().isoformat(), "quantile": a.q,
               "calibration_seconds": cal_s, "profiles": {},
               "calibrated_on": "synthetic single-op models only (none of the evaluated models)",
               "predictor": "analyzer.analyze(model, hw=<calibrated profile .toml>).predictions[0].latency_s",
               "machine": _lscpu(), "loadavg_before": load0, "configs": []}
    for level in levels:
        for t in threads:
            key = f"{level}:{t}"
            modes = {}
            if key in given:
                profiles[key] = given[key]
                cal_s[key] = None
            else:
                if t > 1:
                    modes["calibration"] = thread_mode(t)
                t0 = time.perf_counter()
                doc = calibrate(threads=t, q=a.q, level=level)
                cal_s[key] = time.perf_counter() - t0
                os.makedirs(os.path.dirname(a.out), exist_ok=True)
                profiles[key] = write_profile(doc, f"{a.out}_profile_{level}_{t}t.toml")
                with open(f"{a.out}_rows_{level}_{t}t.json", "w") as f:   # what the fits saw
                    json.dump(doc.get("_rows", {}), f)
                print(f"calibration {key}: {cal_s[key]:.1f} s", flush=True)
            results["profiles"][key] = os.path.relpath(profiles[key], ROOT)
            row_passes = calibration_passes(profiles[key])
            if t > 1:
                modes["measurement_start"] = thread_mode(t)
            rows = []
            for p in ms:
                try:
                    r = evaluate(p, profiles[f"{level}:{t}"], t, level, a.q, a.runs)
                except Exception as e:  # keep going: report the failure
                    print(f"  {os.path.relpath(p, ROOT)}: FAILED {type(e).__name__}: {e}", flush=True)
                    continue
                rows.append(r)
                print(f"  [{level} {t}t] {r['model']:<45} pred {r['predicted_ms']:9.3f} ms  "
                      f"meas {r['measured_ms']:9.3f} ms  err {r['error_pct']:+6.1f}%  "
                      f"rho {r['spearman']:.2f}", flush=True)
            # more passes over all the models (each keeps its fastest); above 1 thread the probe
            # between passes and after the last, and up to EXTRA_PASSES more while none ran
            # between two fast probes (as calibrate does for its rows: the profile describes the
            # fast state)
            probes = more_passes(rows, a.passes, modes.get("measurement_start"), lambda: thread_mode(t),
                                 lambda m: wall_ms(os.path.join(ROOT, m), t, level, a.q, a.runs))
            if probes:
                modes["passes"] = probes
                now = thread_mode(t)
                if reprofile(probes, now):   # the node ranks of a profile taken in the fast state
                    modes["reprofiled"] = now
                    for r in rows:
                        again = evaluate(os.path.join(ROOT, r["model"]), profiles[key], t, level, a.q, a.runs)
                        r["first_pass_spearman"], r["spearman"] = r["spearman"], again["spearman"]
                        r["measured_passes_ms"].append(again["measured_ms"])
            for r in rows:
                r["measured_ms"] = min(r["measured_passes_ms"])
                r["error_pct"] = (r["predicted_ms"] - r["measured_ms"]) / r["measured_ms"] * 100
            if t > 1:
                modes["measurement_end"] = thread_mode(t)
            s = summary(rows)
            s["first_pass"] = summary([dict(r, error_pct=r["first_pass_error_pct"],
                                            spearman=r.get("first_pass_spearman", r["spearman"])) for r in rows])
            print(f"[{level} {t}t] {json.dumps(s)} thread modes {json.dumps(modes)}", flush=True)
            results["configs"].append({"level": level, "threads": t, "summary": s, "rows": rows,
                                       "thread_modes": modes, "row_passes": row_passes,
                                       "loadavg_after": os.getloadavg()})
    results["loadavg_after"] = os.getloadavg()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump(results, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write(markdown(results, " ".join(sys.argv)))
    print("wrote", a.out + ".md")


def _lscpu() -> str:
    import subprocess
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "unknown"
    keep = ("Model name", "Core(s) per socket", "Thread(s) per core", "L2 cache", "L3 cache")
    return "; ".join(" ".join(l.split()) for l in out.splitlines() if l.split(":")[0].strip() in keep)


def calibration_passes(profile_path: str) -> dict | None:
    """The thread probe's range over the calibration's row passes (``calibrate.time_rows``),
    from the profile: {"passes", "min", "max"}; None where the profile has none (1 thread)."""
    import tomllib

    with open(profile_path, "rb") as f:
        cal = tomllib.load(f).get("calibration", {})
    if "thread_speedup_passes_min" not in cal:
        return None
    return {"passes": cal.get("row_passes"), "min": cal["thread_speedup_passes_min"],
            "max": cal["thread_speedup_passes_max"]}


def markdown(res, cmd):
    L = [f"# CPU accuracy (onnxruntime) {res['date']}", "",
         f"Command: `PYTHONPATH=$PWD python {cmd}`", "",
         f"Calibration: {res['calibrated_on']}; seconds per thread count: "
         f"{ {k: round(v or 0, 1) for k, v in res['calibration_seconds'].items()} }; quantile over runs: {res['quantile']}.",
         "", f"Predictor: `{res['predictor']}`.", "", f"Machine: {res['machine']}.", "",
         f"Load average (1, 5, 15 min): before {res['loadavg_before']}, at the end {res['loadavg_after']}.",
         "", "Thread mode (above 1 thread): the speed-up at N threads over 1 thread of the probe "
         "`calibrate` times at its start and end (`analyzer.prediction.cpu.thread_notes`), before the "
         "calibration and before and after the measurements (fast: the threads help; slow: they "
         "slow it down); in brackets, its range over the calibration's row passes (each row keeps "
         "its fastest pass) and over the measurement passes (taken before each and after the last; above "
         f"1 thread up to {EXTRA_PASSES} passes are added while none ran between two fast probes; each "
         "model keeps its fastest); where "
         "the first pass, which profiles the models for the node Spearman, ran slow and a later one "
         "fast, the models are profiled again in the fast state.", ""]
    L += ["Measured: the fastest of each model's passes (its median over runs per pass); the first pass "
          "alone in the last columns.", "",
          "| level | threads | models | MAPE % | within 10 % | within 20 % | bias % | node Spearman (median) "
          "| thread mode: calibration / measurement start / end | first pass: MAPE % | within 10 % |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]

    def mode(c):
        m = c.get("thread_modes") or {}
        rp = c.get("row_passes")
        cells = [f"{m[k]['mode']} ({m[k]['speedup']:.2f}x)" if k in m else "-"
                 for k in ("calibration", "measurement_start", "measurement_end")]
        if rp:
            cells[0] += f" [{rp['passes']} row passes: {rp['min']:.2f}-{rp['max']:.2f}x]"
        ps = [p["speedup"] for p in m.get("passes", ())]
        if ps:
            cells[1] += f" [{len(ps) - 1} passes, probed between: {min(ps):.2f}-{max(ps):.2f}x]"
        if "reprofiled" in m:
            cells[1] += f" [profiled again at {m['reprofiled']['speedup']:.2f}x]"
        return " / ".join(cells) if m else "-"

    for c in res["configs"]:
        s = c["summary"]
        first = s.get("first_pass", {})
        L.append(f"| {c['level']} | {c['threads']} | {s['models']} | {s['mape_pct']:.1f} | "
                 f"{s['within_10_pct']:.0f} | {s['within_20_pct']:.0f} | {s['bias_pct']:+.1f} | "
                 f"{s['median_node_spearman']:.2f} | {mode(c)} | {first.get('mape_pct', float('nan')):.1f} | "
                 f"{first.get('within_10_pct', float('nan')):.0f} |")
    for c in res["configs"]:
        L += ["", f"## level {c['level']}, {c['threads']} thread(s)", "",
              "| model | kernels | predicted ms | measured ms | measured p10-p90 ms (first pass) | error % "
              "| node Spearman | passes ms |",
              "|---|---|---|---|---|---|---|---|"]
        for r in c["rows"]:
            lo, hi = r["measured_p10_p90_ms"]
            L.append(f"| {r['model']} | {r['kernels']} | {r['predicted_ms']:.3f} | {r['measured_ms']:.3f} | "
                     f"{lo:.3f}-{hi:.3f} | {r['error_pct']:+.1f} | {r['spearman']:.2f} | "
                     f"{', '.join(f'{x:.3f}' for x in r.get('measured_passes_ms', []))} |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
