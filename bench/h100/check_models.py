"""Whole-model predictions against the H100 check data (bench/results/h100_models_*.csv).

JAX programs (samples/jax_models.py, params as an argument) predicted with ``runtime="xla"`` on
``h100-sxm`` against the profiler's kernel sum of the jitted call, and XLA's own kernel count
against opcost's fusion count; torchvision ResNet-18 / MobileNet-V2 against the same networks'
ONNX exports in tests/fixtures/torch/ (``runtime="eager-kernel"``, the eager plan's kernels
without host, vs the kernel sum of the eager forward, ``runtime="kernel"`` beside it;
``runtime="eager"``, the whole-model stream, vs eager wall-clock of one forward and a
synchronize; ``eager-op``, the per-op sum, beside it for comparison). Held-out data: nothing here is fitted, and no variant is
chosen on these figures.

Usage: ``python bench/h100/check_models.py [--csv bench/results/h100_models_<date>.csv]``;
``--hw h200 --csv bench/results/h200_jax_models_<date>.csv`` scores the same JAX programs measured
on the lent H200 (its file holds JAX rows only).
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)


def _jax_case(row):
    import jax
    import jax.numpy as jnp

    from samples import jax_models as M

    name = row["model"]   # the batch is in the row's input_spec
    dt = {"f32": jnp.float32, "bf16": jnp.bfloat16}[row["dtype"]]
    params = getattr(M, f"{name}_params")(abstract=True)
    params = jax.tree_util.tree_map(lambda s: jax.ShapeDtypeStruct(s.shape, dt), params)
    spec = row["input_spec"].split("=", 1)[1]
    shape = tuple(int(x) for x in spec[spec.index("[") + 1:-1].split(","))
    x = jax.ShapeDtypeStruct(shape, dt)
    return getattr(M, name), params, x


# runtimes printed beside the overall line's (another prediction of a column already scored)
BESIDE = ("kernel", "eager-op", "eager --host torch2.11-h200")
# eager under another host's table (runtimes.EAGER_HOSTS): the H200 host's, fitted on the H200's
# eager rows, scored here on another machine's rows beside the default
RUNS = (("eager-kernel", "kernel_sum_us", None), ("kernel", "kernel_sum_us", None),
        ("eager", "eager_wall_us", None), ("eager-op", "eager_wall_us", None),
        ("eager", "eager_wall_us", "torch2.11-h200"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default=max(glob.glob(os.path.join(ROOT, "bench", "results",
                                                                 "h100_models_*.csv"))))
    ap.add_argument("--hw", default="h100", help="the profile the rows were measured on")
    args = ap.parse_args(argv)
    import analyzer

    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    print("| model | dtype | batch | runtime | measured us | predicted us | error | kernels measured / predicted |")
    print("|---|---|---:|---|---:|---:|---:|---|")
    errs = []
    by_rt: dict[str, list[float]] = {}
    for r in rows:
        if r["framework"] == "jax" and r["variant"] == "params_arg" and r["kernel_sum_us"]:
            fn, params, x = _jax_case(r)
            p = analyzer.analyze_jax(fn, params, x, params_argnums=0, hw=args.hw).predictions[0]
            meas = float(r["kernel_sum_us"])
            kern = f"{r['n_kernels']} / {p.launches}"
            rt = p.runtime
        elif r["framework"] == "torch" and r["kernel_sum_us"]:
            path = os.path.join(ROOT, "tests", "fixtures", "torch", f"{r['model']}.onnx")
            if not os.path.exists(path):
                continue
            prec = {"fp32": None, "fp16": "fp16"}[r["dtype"]]
            b = int(r["batch"])
            # eager-kernel: the eager plan's kernels without host, what the torch kernel sum
            # measures (kernel, one kernel per node, and eager-op printed beside, not in the line)
            for run, col, host in RUNS:
                rep = analyzer.analyze(path, hw=args.hw, runtime=run, precision=prec,
                                       dims={"batch": b} if b != 1 else None,
                                       **({"host": host} if host else {})) \
                    if b == 1 else None
                rt = f"{run} --host {host}" if host else run
                if rep is None:
                    continue
                p = rep.predictions[0]
                meas = float(r[col])
                e = (p.latency_s * 1e6 - meas) / meas
                by_rt.setdefault(rt, []).append(e)
                if rt not in BESIDE:   # the overall line keeps one time definition per row
                    errs.append(e)
                print(f"| {r['model']} | {r['dtype']} | {b} | {rt} | {meas:.1f} | "
                      f"{p.latency_s * 1e6:.1f} | {100 * e:+.0f}% | {r['n_kernels']} / {p.launches} |")
            continue
        else:
            continue
        e = (p.latency_s * 1e6 - meas) / meas
        errs.append(e)
        by_rt.setdefault(rt, []).append(e)
        print(f"| {r['model']} | {r['dtype']} | {r['batch']} | {rt} | {meas:.1f} | "
              f"{p.latency_s * 1e6:.1f} | {100 * e:+.0f}% | {kern} |")
    if errs:
        mape = 100 * sum(abs(e) for e in errs) / len(errs)
        bias = 100 * sum(errs) / len(errs)
        print(f"\n{len(errs)} cases: MAPE {mape:.1f}%, bias {bias:+.1f}%")
        for rt, es in by_rt.items():
            print(f"  {rt}: {len(es)} cases, MAPE {100 * sum(abs(e) for e in es) / len(es):.1f}%, "
                  f"bias {100 * sum(es) / len(es):+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
