"""Fit and check opcost's ``xla`` runtime on TPU against the public TPU single-op timings.

    PYTHONPATH=$PWD python bench/check_tpu.py [MEASUREMENTS_DIR] [--write]

MEASUREMENTS_DIR defaults to ../shared/measurements/accelerators (tpu_ops.csv: the jax Pallas TPU
matmul notebook's stored outputs, a TPU v5e, bf16 ``jnp.ones`` operands; each a mean of 100
host-timed calls of ``jax.block_until_ready(f(x, y))``, host dispatch included).  Each row's
product is a one-node ONNX MatMul (bf16 [m,k] x [k,n]) predicted on the row's profile under the
``xla`` runtime, whose time on a TPU is that call's wall-clock (``analyzer/prediction/xla_tpu.py``):

    t = call_launch + floor + max(F / (peak * e_mat), bytes / bandwidth)

The fit: the three XLA (``jnp.matmul``) rows, 1024/4096/8192 cubed, fix the two constants of the
v5e family, the per-call launch ``call_launch`` (``run_fixed_s``) and the MXU's fraction of the
bf16 peak ``e_mat`` (gemm, bgemm, conv), by least squares on the relative error (linear in
``call_launch + floor`` and ``1 / e_mat``; every row is compute-bound at the fitted e_mat).
``floor`` is the kind's assumed 1 us per kernel (not fitted).  Three rows, two constants: the
in-sample error has one degree of freedom; the leave-one-row-out figure (fit on two rows, predict
the third) is the cross-validation.  The Pallas rows time hand-written kernels with fixed block
sizes (not what XLA runs): listed for reference, never fitted.

``--write`` writes hardware_db/efficiency/google-tpu-v5e.json (the fit) and one file per other
TPU generation that inherits it (``INHERITING``); without it the script checks the files on disk
(the opcost predictions beside the closed form).  Writes bench/results/check_tpu.md.  Needs pandas.

``--cross`` instead prints (and writes to bench/results/check_tpu_cross.md) the predicted call
times of ``CROSS_SHAPES`` (bf16 jnp.matmul, [m,k] x [k,n]) on ``CROSS_PROFILES`` with each
product's padding factor (the MXU padding's work over the direct 2mkn): no measurement, a
table to compare generations and code versions with.
"""

from __future__ import annotations

import datetime
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
RESULT = os.path.join(ROOT, "bench", "results", "check_tpu.md")
SCRIPT = "bench/check_tpu.py"
COMMAND = "PYTHONPATH=$PWD python bench/check_tpu.py ../shared/measurements/accelerators --write"
XLA = "xla jnp.matmul"
FITTED = "google-tpu-v5e"
FIT_DEVICE = "tpu-v5e"
# the other TPU generations: family -> its profiles (they inherit the v5e fit; v6e and TPU7x are checked: CHECKED)
INHERITING = {"google-tpu-v2": ["tpu-v2"], "google-tpu-v3": ["tpu-v3"], "google-tpu-v4": ["tpu-v4"],
              "google-tpu-v5p": ["tpu-v5p"], "google-tpu-v6e": ["tpu-v6e"], "google-tpu-v7": ["tpu7x"]}
# inheriting families checked (not fitted) against public timings: family -> what the check found
CHECKED = {
    "google-tpu-v6e": ("checked, not fitted, against public v6e timings (bench/tpu_public.py, bench/data/tpu): "
                       "84 host-timed matmuls 13.7 % MAPE, bias -13.0 %; one device-timed bf16 8192^3 -16.8 % "
                       "(the MXU at 0.79 of the bf16 peak there)"),
    "google-tpu-v7": ("checked, not fitted, against public TPU7x timings (bench/tpu_public.py, bench/data/tpu): "
                      "device-timed bf16 matmuls 0.6 % (12 rows) and 11.6 % (8 rows, another source); HBM copies "
                      "15.7 %, bias -15.7 % (0.87 of the datasheet bandwidth achieved); host-timed matmuls 24.0 %"),
}
MATRIX_FIT = ("gemm", "bgemm", "conv")      # classes that run on the MXU and take e_mat
SHOWN = ("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x")   # the generation table's profiles
# --cross: (m, k, n) of bf16 [m,k] x [k,n] products, the fit's cubes and shapes off the MXU grid
CROSS_SHAPES = ((1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (1000, 1000, 1000),
                (4096, 4096, 129), (4096, 129, 4096), (129, 4096, 4096), (4096, 4096, 384), (128, 128, 128))
CROSS_PROFILES = ("tpu-v5e", "tpu-v6e", "tpu7x")
CROSS_RESULT = os.path.join(ROOT, "bench", "results", "check_tpu_cross.md")


def matmul_model(m: int, k: int, n: int) -> bytes:
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("MatMul", ["x", "y"], ["z"], name="matmul")], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [m, k]),
                           helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [k, n])],
                          [helper.make_tensor_value_info("z", TensorProto.BFLOAT16, [m, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def predict_ms(profile, m: int, k: int, n: int):
    """(latency ms, the Prediction) of the row's product on ``profile`` (an id or a profile) under xla."""
    import analyzer
    from analyzer.prediction.predict import predict

    (pred,) = predict(analyzer.analyze(matmul_model(m, k, n)), [profile], runtime="xla")
    return pred.latency_s * 1e3, pred


def datasheet_terms(m: int, k: int, n: int) -> tuple[float, float]:
    """(compute s at e_mat = 1, memory s at e_bw = 1) of the product on the v5e's datasheet
    figures: opcost's own terms (tile padding included), read from ``explain``."""
    import dataclasses

    import hardware_db

    prof = dataclasses.replace(hardware_db.get(FIT_DEVICE), family="datasheet-tpu")
    _, pred = predict_ms(prof, m, k, n)
    e = pred.explain(0)
    return e.compute_s, e.memory_s


def floor_s() -> float:
    from analyzer.prediction import runtimes

    return runtimes.KIND_LAUNCH_US["tpu"][0] * 1e-6


def fit(c, mem, t) -> tuple[float, float]:
    """(launch + floor, 1 / e_mat) minimising sum ((A + c_i x) / t_i - 1)^2 (compute-bound rows)."""
    c, t = np.asarray(c, float), np.asarray(t, float)
    design = np.stack([1.0 / t, c / t], axis=1)
    (a, x), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    if np.any(c * x < np.asarray(mem)):
        raise SystemExit("a fitted row is memory-bound: the linear fit does not hold")
    return float(a), float(x)


def closed_form(a: float, x: float, c: float, mem: float) -> float:
    return a + max(c * x, mem)


def stats(err) -> dict:
    e = np.abs(np.asarray(err, float))
    return {"rows": int(e.size), "mape": round(float(e.mean()), 2), "max_ape": round(float(e.max()), 2),
            "bias": round(float(np.mean(err)), 2)}


def family_docs(launch_s: float, e_mat: float, rows: int, in_sample: dict, cv: dict) -> dict[str, dict]:
    """The fitted v5e file and the files of the generations that inherit it."""
    with open(os.path.join(ROOT, "hardware_db", "efficiency", "datasheet-tpu.json"), encoding="utf-8") as fh:
        base = json.load(fh)
    fl = floor_s()
    timing = ("mean of 100 timeit calls of jax.block_until_ready(f(x, y)) after one compile call (host "
              "dispatch included), jax Pallas TPU notebook @ 1082251c")
    fitprov = {"kind": "fit", "measurement_file": "tpu_ops.csv", "device_system": "TPU v5e (1 chip, Colab notebook)",
               "hardware": FIT_DEVICE, "filter": f"implementation == '{XLA}' (m = k = n = 1024, 4096, 8192, bf16)",
               "timing": timing, "rows": rows, "fit_date": datetime.date.today().isoformat(), "fit_script": SCRIPT,
               "command": COMMAND, "fit_error": in_sample, "cv_leave_one_row_out": cv,
               "fit_method": ("least squares on the relative error of t = run_fixed_s + floor_s + F / (197 TFLOP/s "
                              "x e_compute) over the three rows (2 constants, 1 degree of freedom); floor_s not "
                              "fitted (the kind's assumed 1 us per kernel)")}
    sets = {}
    for cls, entry in base["sets"].items():
        c = dict(entry["constants"], floor_s=fl)
        if cls in MATRIX_FIT:
            c["e_compute"] = e_mat
        prov = (fitprov if cls == "gemm" else
                {"kind": "inherit", "source": f"gemm's fitted e_compute on {FIT_DEVICE} (an XLA convolution and a "
                                              "batched product run on the same MXUs; not measured); floor_s the "
                                              "kind's assumed 1 us per kernel (runtimes.KIND_LAUNCH_US)"}
                if cls in MATRIX_FIT else
                {"kind": "prior", "source": "datasheet: peaks and bandwidth as the profile states them (no TPU "
                                            "bandwidth measurement was found: e_bw 1); floor_s the kind's assumed "
                                            "1 us per kernel (runtimes.KIND_LAUNCH_US)"})
        sets[cls] = {"constants": c, "provenance": prov}
    fitted = {"schema_version": 1, "family": FITTED,
              "description": ("TPU v5e constants fitted on the public host-timed XLA bf16 matmuls (tpu_ops.csv): the "
                              "per-call launch of a jitted call (run_fixed_s: host dispatch + program launch, a "
                              "property of the host and jax release more than of the chip) and the MXU's fraction "
                              "of the bf16 peak (e_compute of gemm, bgemm, conv); every other figure the "
                              "datasheet's; the other TPU generations inherit this file"),
              "devices": [FIT_DEVICE],
              "scalars": {"trans_weight": 1.0, "run_fixed_s": launch_s,
                          "provenance": {**fitprov, "source": "trans_weight: prior (a transcendental is one vector "
                                                              "op); run_fixed_s: fitted with e_compute (gemm's provenance)"}},
              "sets": sets}
    docs = {FITTED: fitted}
    for fam, devices in INHERITING.items():
        lead = CHECKED.get(fam, f"No public single-op timing of {', '.join(devices)}")
        docs[fam] = {"schema_version": 1, "family": fam,
                     "description": (f"{lead[0].upper()}{lead[1:]}: every constant, the per-call launch too, "
                                     f"inherited from {FITTED} (fitted on {FIT_DEVICE}, {SCRIPT}) on this chip's "
                                     f"datasheet figures"),
                     "devices": devices, "inherits": FITTED,
                     "scalars": {"trans_weight": 1.0, "provenance": {
                         "kind": "inherit", "source": f"run_fixed_s and every set from {FITTED} ({SCRIPT})"}},
                     "sets": {}}
    return docs


def write_docs(docs: dict[str, dict]) -> None:
    for fam, doc in docs.items():
        with open(os.path.join(ROOT, "hardware_db", "efficiency", f"{fam}.json"), "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")


def cross_table() -> list[str]:
    """Markdown lines: each of ``CROSS_SHAPES`` on each of ``CROSS_PROFILES`` under xla, the
    predicted call ms and the padding factor (``explain``'s ``pad``) per profile."""
    out = ["# TPU bf16 jnp.matmul predictions across generations (no measurement: predictions only)", "",
           "Command: `PYTHONPATH=$PWD python bench/check_tpu.py --cross`", "",
           "ms: a jitted call's host-timed wall-clock as predicted (per-call launch + kernel); pad: the "
           "padded MXU work over 2mkn.", "",
           "| m x k x n | " + " | ".join(f"{p} ms | {p} pad" for p in CROSS_PROFILES) + " |",
           "|---|" + "---:|---:|" * len(CROSS_PROFILES)]
    for m, k, n in CROSS_SHAPES:
        cells = []
        for pid in CROSS_PROFILES:
            ms, pred = predict_ms(pid, m, k, n)
            cells += [f"{ms:.4f}", f"{pred.explain(0).pad:.4g}"]
        out.append(f"| {m}x{k}x{n} | " + " | ".join(cells) + " |")
    return out + [""]


def main() -> None:
    if "--cross" in sys.argv:
        out = cross_table()
        with open(CROSS_RESULT, "w", encoding="utf-8") as fh:
            fh.write("\n".join(out) + "\n")
        print("\n".join(out))
        return
    import pandas as pd

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    mdir = args[0] if args else os.path.join(ROOT, "..", "shared", "measurements", "accelerators")
    d = pd.read_csv(os.path.join(mdir, "tpu_ops.csv"))
    terms = {r: datasheet_terms(r, r, r) for r in sorted(set(d.m))}
    x = d[d.implementation == XLA].sort_values("m")
    c = [terms[m][0] for m in x.m]
    mem = [terms[m][1] for m in x.m]
    t = list(x.measured_ms * 1e-3)
    a, inv_e = fit(c, mem, t)
    launch, e_mat = a - floor_s(), 1.0 / inv_e
    fitted = [closed_form(a, inv_e, ci, mi) for ci, mi in zip(c, mem)]
    in_err = [(p / ti - 1) * 100 for p, ti in zip(fitted, t)]
    loo, loo_consts = [], []
    for i in range(len(t)):
        keep = [j for j in range(len(t)) if j != i]
        ai, xi = fit([c[j] for j in keep], [mem[j] for j in keep], [t[j] for j in keep])
        loo.append((closed_form(ai, xi, c[i], mem[i]) / t[i] - 1) * 100)
        loo_consts.append((ai - floor_s(), 1.0 / xi))
    if "--write" in sys.argv:
        write_docs(family_docs(launch, e_mat, len(t), stats(in_err), stats(loo)))
    d["pred_ms"] = [predict_ms(r.device_profile, int(r.m), int(r.k), int(r.n))[0] for r in d.itertuples()]
    d["err"] = (d.pred_ms / d.measured_ms - 1) * 100
    agree = max(abs(p / (f * 1e3) - 1) for p, f in zip(d[d.implementation == XLA].sort_values("m").pred_ms, fitted))
    out = ["# TPU single ops: opcost's xla runtime fitted on and checked against the public v5e timings", "",
           f"Command: `{COMMAND}`", "",
           "Time predicted (xla on a TPU): a jitted call's host-timed wall-clock, "
           "`t = call_launch + floor + max(F / (peak x e_mat), bytes / bandwidth)`.", "",
           f"Devices with rows: {', '.join(sorted(set(d.device_profile)))} (ops: {', '.join(sorted(set(d.op)))}); "
           "no tpu-v6e or tpu7x row exists in the shared measurements (public v6e and TPU7x rows: "
           "bench/tpu_public.py).", "",
           "## Fit (in-sample: 3 XLA rows, 2 constants, 1 degree of freedom)", "",
           f"- call_launch (run_fixed_s) = {launch * 1e6:.2f} us per call; floor 1 us per kernel (assumed, not fitted)",
           f"- e_mat (gemm, bgemm, conv e_compute) = {e_mat:.4f} of 197 TFLOP/s bf16 "
           f"({e_mat * 197:.1f} TFLOP/s)",
           f"- in-sample: MAPE {np.mean(np.abs(in_err)):.2f} %, max {np.max(np.abs(in_err)):.2f} % "
           f"(rows: {', '.join(f'{m}^3 {e:+.2f} %' for m, e in zip(x.m, in_err))})",
           f"- opcost's prediction with the files on disk vs this closed form: largest relative difference "
           f"{agree:.1e}", "",
           "## Leave-one-row-out (the cross-validation: fit on two rows, predict the third)", "",
           "| left out | call_launch us | e_mat | measured ms | predicted ms | error % |",
           "|---:|---:|---:|---:|---:|---:|"]
    for i, m in enumerate(x.m):
        li, ei = loo_consts[i]
        out.append(f"| {m}^3 | {li * 1e6:.2f} | {ei:.4f} | {t[i] * 1e3:.4f} | {t[i] * 1e3 * (1 + loo[i] / 100):.4f} | "
                   f"{loo[i]:+.2f} |")
    out += ["", f"Leave-one-row-out MAPE {np.mean(np.abs(loo)):.2f} %, max {np.max(np.abs(loo)):.2f} % "
            "(out of sample within the v5e rows; no other TPU has rows).", "",
            "## All rows with the constants on disk (Pallas rows: reference only, never fitted)", "",
            "| device | implementation | variant | m=k=n | measured ms | predicted ms | error % |",
            "|---|---|---|---:|---:|---:|---:|"]
    for r in d.itertuples():
        out.append(f"| {r.device_profile} | {r.implementation} | {r.variant} | {r.m} | {r.measured_ms:.4f} | "
                   f"{r.pred_ms:.4f} | {r.err:+.1f} |")
    out += ["", "## Other generations (the v5e's constants on each chip's datasheet figures; v6e and TPU7x "
            "checked in bench/tpu_public.py)", "",
            "A chip JAX exposes as several devices (xla_tpu.DEVICES_PER_CHIP) runs a call on one: its share "
            "of the chip's figures.", "",
            "| profile | chip bf16 TFLOP/s | chip HBM GB/s | JAX devices per chip | 1024^3 ms | 4096^3 ms | 8192^3 ms |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    import hardware_db
    from analyzer.prediction.xla_tpu import DEVICES_PER_CHIP

    for pid in SHOWN:
        p = hardware_db.get(pid)
        ms = [predict_ms(pid, s, s, s)[0] for s in (1024, 4096, 8192)]
        out.append(f"| {pid} | {p.peak_flops('matrix', 'bf16') / 1e12:g} | {p.mem_bw_gbs:g} | "
                   f"{DEVICES_PER_CHIP.get(p.family, (1,))[0]} | " + " | ".join(f"{v:.4f}" for v in ms) + " |")
    out.append("")
    with open(RESULT, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
