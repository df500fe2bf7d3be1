#!/usr/bin/env python3
"""Record onnxruntime measurements once, then re-predict them offline against any profile.

    PYTHONPATH=$PWD python bench/cpu_replay.py record OUT.json [--threads 1] [--level default]
    PYTHONPATH=$PWD python bench/cpu_replay.py replay REC.json PROFILE.toml [--kernels]

``record`` measures every model of ``bench/accuracy_cpu.py`` (wall-clock median and profiled
per-kernel times, joined to onnxruntime's fused graph) and writes them with the load average;
nothing is calibrated. ``replay`` predicts each recorded model with ``analyze(model,
hw=PROFILE)`` and prints the same end-to-end summary as the bench (MAPE, share within +-10 % /
+-20 %, bias) plus, per op class, predicted vs profiled kernel time (profiled times carry 1-2 us
of the profiler's own cost per node: compare large kernels). Develop a calibration or model
change against one quiet recording instead of re-measuring on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))


def _read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def record(out: str, threads: int, level: str, runs: int) -> None:
    import onnx

    import accuracy_cpu as bench
    from analyzer.prediction.onnxruntime.graph import fused_graph, fusion_map, memberless_owner
    from analyzer.measure.onnxruntime import measure

    res = {"threads": threads, "level": level, "loadavg_before": os.getloadavg(), "models": {}}
    for p in bench.models():
        proto = onnx.load(p, load_external_data=False)
        dims = bench.sym_dims(proto)
        fused = fused_graph(p, level, threads)
        fmap = fusion_map(proto, fused)
        m = measure(p, threads=threads, level=level, runs=runs, dims=dims, fused=fused)
        res["models"][os.path.relpath(p, ROOT)] = {
            "latency_s": m.latency_s, "by_fused": m.by_fused, "unmatched": m.unmatched,
            "fmap": fmap, "owner": memberless_owner(proto, fused, fmap)}
        print(f"{os.path.relpath(p, ROOT):45s} {m.latency_s * 1e3:9.3f} ms", flush=True)
    res["loadavg_after"] = os.getloadavg()
    with open(out, "w") as f:
        json.dump(res, f)
    print("wrote", out, "load average", res["loadavg_before"], "->", res["loadavg_after"])


def replay(rec_path: str, profile: str, kernels: bool) -> dict:
    import accuracy_cpu as bench
    import onnx

    from analyzer import analyze

    rec = _read_json(rec_path)
    errs, by_class = [], {}
    for path, m in rec["models"].items():
        full = os.path.join(ROOT, path)
        dims = bench.sym_dims(onnx.load(full, load_external_data=False))
        rep = analyze(full, hw=profile, dims=dims or None)
        pred = rep.predictions[0]
        e = (pred.latency_s - m["latency_s"]) / m["latency_s"] * 100
        errs.append(e)
        print(f"{path:45s} pred {pred.latency_s * 1e3:9.3f} meas {m['latency_s'] * 1e3:9.3f} ms  "
              f"err {e:+6.1f}%")
        t = pred.kernel_table
        idx = {n.name: i for i, n in enumerate(rep.nodes)}
        node_t: dict[str, float] = {}
        for n in pred.nodes:
            node_t[n.name] = node_t.get(n.name, 0.0) + n.time_s
        meas_k = dict(m["by_fused"])
        for x, owner in m["owner"].items():
            meas_k[owner] = meas_k.get(owner, 0.0) + m["by_fused"].get(x, 0.0)
        for fname, names in m["fmap"].items():
            ks = [int(t.kernel_of[idx[x]]) for x in names if x in idx and t.kernel_of[idx[x]] >= 0]
            p, mt = sum(node_t.get(x, 0.0) for x in names), meas_k.get(fname)
            if ks and p and mt:
                a = by_class.setdefault(t.op_class[ks[0]], [0.0, 0.0, 0])
                a[0], a[1], a[2] = a[0] + p, a[1] + mt, a[2] + 1
    e = np.array(errs)
    out = {"models": len(e), "mape_pct": float(np.mean(np.abs(e))),
           "within_10_pct": float(np.mean(np.abs(e) <= 10) * 100),
           "within_20_pct": float(np.mean(np.abs(e) <= 20) * 100), "bias_pct": float(np.mean(e))}
    print(json.dumps(out))
    if kernels:
        print("op class: predicted ms, profiled ms, kernels, ratio")
        for c, (p, mt, n) in sorted(by_class.items(), key=lambda kv: -kv[1][1]):
            print(f"  {c:12s} {p * 1e3:9.3f} {mt * 1e3:9.3f} {n:5d} {p / mt:6.2f}")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--level", default="default")
    r.add_argument("--runs", type=int, default=20)
    p = sub.add_parser("replay")
    p.add_argument("rec")
    p.add_argument("profile")
    p.add_argument("--kernels", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "record":
        record(a.out, a.threads, a.level, a.runs)
    else:
        replay(a.rec, a.profile, a.kernels)


if __name__ == "__main__":
    main()
