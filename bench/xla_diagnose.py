#!/usr/bin/env python3
"""Where a JAX program's time goes on XLA's CPU backend: the diagnostics behind the README's notes
on the XLA calibration's misses (scratch measurements; nothing here is fitted on).

    PYTHONPATH=$PWD python bench/xla_diagnose.py thunks mlp train 8 [--top 20]
    PYTHONPATH=$PWD python bench/xla_diagnose.py row "layer norm 24x96" [--profile P.toml]
    PYTHONPATH=$PWD python bench/xla_diagnose.py fusions transformer train 8 [--profile P.toml]
    PYTHONPATH=$PWD python bench/xla_diagnose.py counts [--profile P.toml] [--policy xla_cpu|xla]
    PYTHONPATH=$PWD python bench/xla_diagnose.py loop-gemv [--profile P.toml]
    PYTHONPATH=$PWD python bench/xla_diagnose.py dot-forms
    PYTHONPATH=$PWD python bench/xla_diagnose.py conv-grads
    PYTHONPATH=$PWD python bench/xla_diagnose.py dispatch on|off

``thunks NET infer|train BATCH``: one of ``samples/jax_models.py``'s programs (as
``bench/accuracy_xla_cpu.py`` runs them), 50 calls under ``jax.profiler.trace``; prints each XLA
thunk's microseconds per call from the Perfetto trace, largest first (the profiler adds its own
time: compare thunks with each other, not with an untraced wall-clock), and the optimized HLO
line of each (``dot`` thunks run through Eigen, ``ynn_fusion`` through YNNPACK).

``row LABEL...``: calibration rows by label: XLA's thunks with their profiled time, opcost's
kernels on the profile, and the row's time as the calibration takes it, beside the run overhead.

``fusions NET infer|train BATCH``: the thunks of that program's optimized HLO (entry computation,
by kind, fusions by name) beside the kernels of opcost's plan under the ``xla`` runtime (on a CPU profile the ``xla_cpu`` policy) by op class; compiles only.

``counts [--programs samples|heldout2]``: for each of the 16 programs ``bench/accuracy_xla_cpu.py`` scores (or the second set's 8), the kernel launches
per call of the optimized HLO (``bench/xla_hlo.py``: every thunk, loop bodies once per trip) beside
the launches of opcost's plan (each kernel's runs, with the launches it carries for a loop's
slices and counter; ``--policy xla``: the GPU/TPU ``xla`` policy's plan on the same profile);
compiles only, times nothing.

``loop-gemv``: scans of a GEMV + tanh with closed-over weights (16-576 KB), timed, beside the
prediction with and without the loop-resident weights (the profile's ``cache_bytes`` dropped).

``dot-forms``: a product of M x K by K x N fp32 written four ways, by which operand dims are
contracted (nn: lhs 1, rhs 0; tn: lhs 0, rhs 0; nt: lhs 1, rhs 1; tt: lhs 0, rhs 1): the 25th
percentile of the jitted call's wall-clock less a 1-element program's, the fastest of 3, and the
library the optimized HLO runs it with (a ``__ynn_fusion``: YNNPACK; a plain ``dot``: Eigen). The
forms whose lhs is contracted over its leading dim are opcost's ``gemm_tn`` class.
``conv-grads``: the CNN sample's two kinds of convolution alone, forward and both gradients.
Async dispatch off in these three, as the calibration measures. ``dispatch``: what it changes:
two small programs' call wall-clock quantiles with it on and off."""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "samples"))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def thunks(net: str, kind: str, batch: int, top: int) -> None:
    import accuracy_xla_cpu as acc
    import jax_models as jm

    p, x, lab = jm.example_inputs(net, batch)
    if net == "transformer":
        lab = x
    fn, shapes = ((getattr(jm, f"{net}_infer"), (x,)) if kind == "infer"
                  else (getattr(jm, f"{net}_train_step"), (p, x, lab)))
    args = acc.concrete(shapes, np.random.default_rng(0))
    per, hlo = _thunk_us(fn, args, 50)
    print(f"{net} {kind} batch {batch}: {len(per)} thunks, {sum(per.values()):.1f} us per call in thunks")
    for name, us in sorted(per.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{us:9.2f} us  {name:28s} {hlo[name]}")


def _thunk_us(fn, args, calls: int) -> tuple[dict[str, float], dict[str, str]]:
    """({thunk: mean microseconds per call}, {thunk: its optimized HLO line}) of ``calls`` calls
    of the jitted ``fn(*args)`` under ``jax.profiler.trace`` (after 20 warm-up calls)."""
    import jax

    f = jax.jit(fn)
    for _ in range(20):
        jax.block_until_ready(f(*args))
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d, create_perfetto_trace=True):
            for _ in range(calls):
                jax.block_until_ready(f(*args))
        path = glob.glob(os.path.join(d, "**", "*.trace.json.gz"), recursive=True)[0]
        with gzip.open(path) as fh:
            trace = json.load(fh)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    hlo = {}
    for m in re.finditer(r"^\s*(?:ROOT )?%([\w.\-]+) = (.*)$", f.lower(*args).compile().as_text(), re.M):
        hlo[m.group(1)] = re.sub(r", metadata=\{[^}]*\}", "", m.group(2))[:160]
    per = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and e.get("name") in hlo:
            per[e["name"]] += float(e["dur"]) / calls
    return per, hlo


def row(labels: list[str], profile: str) -> None:
    """Calibration rows (``analyzer.measure.xla.rows``, by label): XLA's thunks of each with their
    profiled microseconds per call (200 calls; the profiler adds its own time to each), opcost's
    ``xla`` plan on ``profile`` (kernel, class, launches, bytes, predicted us), and the row's
    time as the calibration takes it (0.25 quantile, the fastest of 3) beside the run overhead's
    (``run_overhead``, timed right after the row)."""
    import jax

    from analyzer import analyze_jax
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.calibrate import QUANTILE, _rng, time_program

    builders = {label: build for rs in xr.xla_rows().values() for label, build in rs}
    for label in labels:
        fn, args = builders[label](_rng(label))
        args = xr.as_jax_args(args)
        per, hlo = _thunk_us(fn, args, 200)
        t = min(time_program(fn, args, QUANTILE) for _ in range(3))
        base = run_overhead()   # (beside each row: a loaded host's state drifts)
        print(f"{label}: {t * 1e6:.2f} us (run overhead {base * 1e6:.2f} us); XLA {len(per)} thunks, "
              f"{sum(per.values()):.2f} us in thunks (profiled)")
        for name, us in per.items():
            print(f"  {us:7.2f} us  {name:28s} {hlo[name][:110]}")
        sds = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)
        p = analyze_jax(fn, *sds, hw=profile, runtime="xla").predictions[0]
        k = p.kernel_table
        print(f"  opcost {p.latency_s * 1e6:.2f} us predicted, {p.launches} launches, kernels:")
        for i, name in enumerate(k.names):
            print(f"  {k.time[i] * 1e6:7.2f} us  {name[:28]:28s} {k.op_class[i]:12s} "
                  f"{k.fixed[i] * 1e6:5.2f} us fixed  {k.nbytes[i]:10.0f} B")


def run_overhead() -> float:
    """The smallest program's time (``xla_rows.run_overhead_program``), the fastest of 3: what
    every timing here is taken net of."""
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.calibrate import time_program

    fn, args = xr.run_overhead_program()
    args = xr.as_jax_args(args)
    return min(time_program(fn, args, 0.25, 0.1) for _ in range(3))


def dot_forms() -> None:
    import jax
    from jax import lax

    from analyzer.measure.xla.calibrate import time_program

    rng = np.random.default_rng(0)

    def r(*s):
        return jax.numpy.asarray(rng.standard_normal(s).astype(np.float32))

    base = run_overhead()
    forms = {"nn": ((1,), (0,)), "tn": ((0,), (0,)), "nt": ((1,), (1,)), "tt": ((0,), (1,))}
    print("M x K x N         nn us    tn us    nt us    tt us   tn/nn  tt/nt   library (nn tn nt tt)")
    for m, k, n in [(64, 128, 256), (128, 64, 256), (128, 256, 64), (256, 128, 64), (64, 128, 64),
                    (256, 256, 256), (32, 512, 128), (8, 784, 256), (784, 8, 256)]:
        us, lib = {}, {}
        for name, (lc, rc) in forms.items():
            a = r(*((k, m) if lc == (0,) else (m, k)))
            b = r(*((k, n) if rc == (0,) else (n, k)))
            fn = (lambda a, b, lc=lc, rc=rc: lax.dot_general(a, b, ((lc, rc), ((), ()))))  # noqa: E731
            us[name] = (min(time_program(fn, (a, b), 0.25, 0.05) for _ in range(3)) - base) * 1e6
            lib[name] = _dot_library(jax.jit(fn).lower(a, b).compile().as_text())
        print(f"{m:4d} x {k:3d} x {n:3d}  " + "  ".join(f"{us[f]:7.1f}" for f in forms)
              + f"  {us['tn'] / us['nn']:6.2f} {us['tt'] / us['nt']:6.2f}   " + " ".join(lib[f] for f in forms))


def _dot_library(hlo: str) -> str:
    """Which library XLA's CPU backend compiled a lone product to, from its optimized HLO: a
    YNNPACK fusion, or a plain ``dot`` instruction (an Eigen call)."""
    return "ynn" if "__ynn_fusion" in hlo else "eigen" if re.search(r"= \S+ dot\(", hlo) else "other"


def conv_grads() -> None:
    """The CNN sample's grouped dilated convolution (conv5: 4 groups, dilation 2, [8, 32, 16, 16])
    and its ungrouped 3x3 one (conv2: [8, 16, 32, 32]) at batch 8: forward, input gradient and
    weight gradient, each alone, beside opcost's MACs."""
    import jax
    from jax import lax

    from analyzer import analyze_jax
    from analyzer.measure.xla.calibrate import time_program

    rng = np.random.default_rng(0)

    def r(*s):
        return jax.numpy.asarray(rng.standard_normal(s).astype(np.float32))

    def conv(groups, dil, pad):
        return lambda x, w: lax.conv_general_dilated(x, w, (1, 1), ((pad, pad), (pad, pad)), rhs_dilation=(dil, dil),
                                                     feature_group_count=groups,
                                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    base = run_overhead()
    for name, c, x, w in [("conv5 (4 groups, dilation 2)", conv(4, 2, 2), r(8, 32, 16, 16), r(32, 8, 3, 3)),
                          ("conv2 (3x3)", conv(1, 1, 1), r(8, 16, 32, 32), r(16, 16, 3, 3))]:
        g = c(x, w)
        for what, fn, args in [("forward", c, (x, w)),
                               ("input gradient", lambda x, w, g, c=c: jax.vjp(lambda x: c(x, w), x)[1](g)[0], (x, w, g)),
                               ("weight gradient", lambda x, w, g, c=c: jax.vjp(lambda w: c(x, w), w)[1](g)[0], (x, w, g))]:
            t = min(time_program(fn, args, 0.25, 0.1) for _ in range(3)) - base
            mac = sum(n.cost.mac_flops for n in analyze_jax(fn, *(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)).nodes)
            print(f"{name:30s} {what:16s} {t * 1e6:9.1f} us  {mac / 1e6:6.2f} MFLOP  {mac / t / 1e9:6.1f} GFLOP/s")


def _program(net: str, kind: str, batch: int):
    """(function, concrete args, example shapes, params_argnums) of one sample program."""
    import accuracy_xla_cpu as acc
    import jax_models as jm

    p, x, lab = jm.example_inputs(net, batch)
    if net == "transformer":
        lab = x
    fn, shapes, pa = ((getattr(jm, f"{net}_infer"), (x,), None) if kind == "infer"
                      else (getattr(jm, f"{net}_train_step"), (p, x, lab), 0))
    return fn, acc.concrete(shapes, np.random.default_rng(0)), shapes, pa


def fusions(net: str, kind: str, batch: int, profile: str) -> None:
    """The thunks of the optimized HLO's entry computation (by kind; fusions by name, their
    numeric suffix dropped) beside the kernels of opcost's ``xla`` plan (by op class): what XLA's
    CPU backend fuses against what the fusion policy joins. Compiles only; times nothing."""
    import jax

    from analyzer import analyze_jax

    fn, args, shapes, pa = _program(net, kind, batch)
    text = jax.jit(fn).lower(*args).compile().as_text()
    start = text.find("\nENTRY")
    entry = text[start:text.find("\n}", start)]
    kinds, names = collections.Counter(), collections.Counter()
    for line in entry.splitlines()[1:]:
        m = re.search(r"%([\w.\-]+) = \S+ ([\w-]+)\(", line)
        if not m or m.group(2) in ("parameter", "get-tuple-element", "tuple", "bitcast", "constant"):
            continue
        op = m.group(2)
        if op == "fusion":
            op = "fusion " + ("ynnpack" if "__ynn" in line else re.search(r"kind=(\w+)", line).group(1))
            names[re.sub(r"\.\d+$", "", m.group(1))] += 1
        kinds[op] += 1
    kw = {} if pa is None else {"params_argnums": pa}
    table = analyze_jax(fn, *shapes, hw=profile, runtime="xla", **kw).predictions[0].kernel_table
    print(f"{net} {kind} batch {batch}: XLA {sum(kinds.values())} thunks {dict(kinds)}")
    print(f"  opcost {len(table.names)} kernels {dict(collections.Counter(table.op_class))}")
    print("  XLA fusions by name: " + ", ".join(f"{n} {c}" for n, c in names.most_common()))


def counts(profile: str, policy: str, programs: str = "samples") -> None:
    """Per program: XLA's thunk launches per call (``xla_hlo.thunks``) and opcost's planned
    launches (``Prediction.launches``: each kernel's runs and the launches it carries) under
    ``policy``: ``xla_cpu`` (what the ``xla`` runtime plans on a CPU) or ``xla`` (the GPU/TPU
    policy, forced onto the CPU profile)."""
    import jax

    import accuracy_xla_cpu as acc
    import xla_hlo
    from analyzer import analyze_jax
    from analyzer.prediction import runtimes
    from analyzer.prediction.targets import Target, load_profile

    if policy == "xla":
        profile = Target(load_profile(profile), runtimes.RUNTIMES["xla"], "requested")

    print("| program | XLA thunk launches | by kind | opcost planned launches | planned / XLA |")
    print("|---|---:|---|---:|---:|")
    tot = [0, 0]
    for name, fn, shapes, pa in (acc.programs() if programs == "samples" else acc.heldout_programs(programs)):
        args = acc.concrete(shapes, np.random.default_rng(0))
        c = xla_hlo.thunks(jax.jit(fn).lower(*args).compile().as_text())
        kw = {} if pa is None else {"params_argnums": pa}
        planned = analyze_jax(fn, *shapes, hw=profile, runtime="xla", **kw).predictions[0].launches
        xla = xla_hlo.launches(c)
        tot[0] += xla
        tot[1] += planned
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
        print(f"| {name} | {xla} | {kinds} | {planned} | {planned / xla:.2f} |")
    print(f"| all | {tot[0]} | | {tot[1]} | {tot[1] / tot[0]:.2f} |")


def loop_gemv(profile: str) -> None:
    """Scans of a GEMV + tanh with closed-over weights (synthetic, none a calibration row or a
    scored program): the jitted call's time (25th percentile, fastest of 3, async dispatch off)
    against the ``xla`` prediction on ``profile`` with its ``cache_bytes`` (the loop-resident
    weights) and without (a copy of the profile lacking it). Nothing is fitted."""
    import tempfile
    import tomllib

    import jax
    import jax.numpy as jnp

    from analyzer import analyze_jax
    from analyzer.measure.xla.calibrate import time_program
    from hardware_db.write import write_profile

    with open(profile, "rb") as f:
        doc = tomllib.load(f)
    doc["calibration"].pop("cache_bytes", None)
    doc["sources"].pop("calibration.cache_bytes", None)
    without = write_profile(doc, os.path.join(tempfile.mkdtemp(), "without_cache_bytes.toml"))
    rng = np.random.default_rng(0)
    for trips, b, k, n in ((64, 1, 64, 64), (64, 1, 256, 256), (32, 1, 384, 384), (64, 4, 128, 128)):
        w = jnp.asarray(rng.standard_normal((k, n)).astype(np.float32) / np.sqrt(k))

        def fn(xs, w=w):
            return jax.lax.scan(lambda c, x: (c, jnp.tanh(x @ w)), jnp.float32(0), xs)[1]
        xs = jnp.asarray(rng.standard_normal((trips, b, k)).astype(np.float32))
        t = min(time_program(fn, (xs,), 0.25, min_s=0.1) for _ in range(3))
        shape = jax.ShapeDtypeStruct(xs.shape, xs.dtype)
        got = [analyze_jax(fn, shape, hw=p, runtime="xla").predictions[0].latency_s for p in (without, profile)]
        print(f"{trips} trips of {b}x{k} @ {k}x{n} ({4 * k * n // 1024} KB of weights): measured {t * 1e6:7.1f} us; "
              f"without {got[0] * 1e6:7.1f} us ({100 * (got[0] / t - 1):+.0f} %), "
              f"with {got[1] * 1e6:7.1f} us ({100 * (got[1] / t - 1):+.0f} %)")


def dispatch(on: bool) -> None:
    """A 1024-element GELU and the MLP sample at batch 1, jitted, 3 runs of 400 calls each with
    JAX's CPU async dispatch ``on`` (its default) or off: quantiles of a call's wall-clock, us
    (one mode a process: it is set before the first call)."""
    import time

    import jax

    import accuracy_xla_cpu as acc
    import jax_models as jm

    rng = np.random.default_rng(0)
    gelu = (lambda x: jax.nn.gelu(x, approximate=False), (jax.numpy.asarray(rng.standard_normal(1024).astype(np.float32)),))
    mlp = (jm.mlp_infer, acc.concrete(jm.example_inputs("mlp", 1)[1:2], rng))
    jax.config.update("jax_cpu_enable_async_dispatch", on)
    for name, (fn, args) in (("gelu 1024", gelu), ("mlp_infer b1", mlp)):
        f = jax.jit(fn)
        for _ in range(10):
            jax.block_until_ready(f(*args))
        for _ in range(3):
            w = []
            for _ in range(400):
                t0 = time.perf_counter()
                jax.block_until_ready(f(*args))
                w.append(time.perf_counter() - t0)
            p5, p25, p50, p75 = np.percentile(np.array(w) * 1e6, [5, 25, 50, 75])
            print(f"async dispatch {'on ' if on else 'off'} {name:13s} p5 {p5:6.1f}  p25 {p25:6.1f}  "
                  f"p50 {p50:6.1f}  p75 {p75:6.1f}")
            time.sleep(0.5)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("thunks")
    t.add_argument("net", choices=("mlp", "cnn", "transformer", "rnn"))
    t.add_argument("kind", choices=("infer", "train"))
    t.add_argument("batch", type=int)
    t.add_argument("--top", type=int, default=20)
    r = sub.add_parser("row")
    r.add_argument("labels", nargs="+")
    r.add_argument("--profile", default=os.path.join(ROOT, "bench", "results",
                                                     "accuracy_xla_cpu_2026-11-29b_profile_1.toml"))
    f = sub.add_parser("fusions")
    f.add_argument("net", choices=("mlp", "cnn", "transformer", "rnn"))
    f.add_argument("kind", choices=("infer", "train"))
    f.add_argument("batch", type=int)
    f.add_argument("--profile", default=os.path.join(ROOT, "bench", "results",
                                                     "accuracy_xla_cpu_2026-11-29b_profile_1.toml"))
    c = sub.add_parser("counts")
    c.add_argument("--profile", default=os.path.join(ROOT, "bench", "results",
                                                     "accuracy_xla_cpu_2026-11-29b_profile_1.toml"))
    c.add_argument("--policy", choices=("xla_cpu", "xla"), default="xla_cpu")
    c.add_argument("--programs", choices=("samples", "heldout2"), default="samples",
                   help="the program set (heldout3 is left out: it is read once, by the accuracy bench)")
    g = sub.add_parser("loop-gemv")
    g.add_argument("--profile", default=os.path.join(ROOT, "bench", "results",
                                                     "accuracy_xla_cpu_2026-11-29b_profile_1.toml"))
    sub.add_parser("dot-forms")
    sub.add_parser("conv-grads")
    sub.add_parser("dispatch").add_argument("mode", choices=("on", "off"))
    a = ap.parse_args()
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)   # (dispatch sets its own mode)
    if a.cmd == "thunks":
        thunks(a.net, a.kind, a.batch, a.top)
    elif a.cmd == "row":
        row(a.labels, a.profile)
    elif a.cmd == "fusions":
        fusions(a.net, a.kind, a.batch, a.profile)
    elif a.cmd == "counts":
        counts(a.profile, a.policy, a.programs)
    elif a.cmd == "loop-gemv":
        loop_gemv(a.profile)
    elif a.cmd == "conv-grads":
        conv_grads()
    elif a.cmd == "dispatch":
        dispatch(a.mode == "on")
    else:
        dot_forms()
    return 0


if __name__ == "__main__":
    sys.exit(main())
