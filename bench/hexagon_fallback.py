"""Check the ``qnn`` runtime's CPU fallback (analyzer/prediction/accelerators/qnn_fallback.py ``place``)
against Qualcomm AI Hub's own count of layers off the NPU, and score the AI Hub rows that ran part
of a model off the NPU.  Nothing is fitted or chosen here.

    PYTHONPATH=$PWD python bench/hexagon_fallback.py [MEASUREMENTS_DIR] [--out FILE]

Rows: ../shared/measurements/accelerators/aihub_hexagon.csv (its README says how each was timed),
runtimes tflite and qnn_dlc, every precision, the models whose graph the bench builds
(bench/hexagon_model.py HEX_GRAPHS).  Per model: AI Hub's off-NPU layers (``layers_total -
layers_npu``, or every layer where the primary compute unit is not the NPU) per runtime against
the kernels opcost's placement puts on the CPU at the row's precision (AI Hub counts TFLite / QNN
layers, opcost counts its fused kernels: the counts differ in kind; the check is 0 against more than
0).  Then each row with layers off the NPU: opcost's prediction at the row's deployment runtime
(qnn-tflite or qnn-dlc, shipped profiles) and its error; in-sample or held-out per row
(hexagon_model.HELD_OUT: reading a held-out model's row here is a held-out read, to be counted).

Needs pandas (bench only).
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import hexagon_model as H  # noqa: E402

COMMAND = "PYTHONPATH=$PWD python bench/hexagon_fallback.py ../shared/measurements/accelerators"
LIBRARY_RUNTIME = {"qnn_dlc": "qnn-dlc", "tflite": "qnn-tflite"}


def rows(mdir: str):
    """AI Hub's tflite and qnn_dlc rows of the models with a graph, with ``off`` = layers off the NPU."""
    import pandas as pd

    hx = pd.read_csv(os.path.join(mdir, "aihub_hexagon.csv"))
    hx = hx[hx.runtime.isin(list(LIBRARY_RUNTIME)) & hx.model_id.isin(list(H.HEX_GRAPHS))]
    hx = hx[[os.path.exists(os.path.join(H.FX, H.HEX_GRAPHS[m])) for m in hx.model_id]]
    npu = hx.primary_compute_unit == "NPU"
    off = (hx.layers_total - hx.layers_npu.fillna(0)).where(npu, hx.layers_total)
    return hx.assign(off=off.astype(int)).reset_index(drop=True)


def predicted(model_id: str, pid: str, precision: str, runtime: str):
    """(kernels on the CPU, kernels, latency ms) of opcost's prediction on the shipped profile."""
    import hardware_db
    from analyzer.prediction.predict import predict

    (p,) = predict(H.report(model_id), [hardware_db.get(pid)], precision=precision, runtime=runtime)
    return len(p.kernel_table.placed), len(p.kernel_table.names), p.latency_s * 1e3


def count_table(hx) -> list[str]:
    """Per model and precision: AI Hub's off-NPU layers per runtime against opcost's CPU kernels."""
    out = ["| model | held out | precision | AI Hub off-NPU layers (tflite) | (qnn_dlc) | opcost CPU kernels "
           "(of all) | agree (0 vs > 0) |", "|---|---|---|---:|---:|---:|---|"]
    n = agree = 0
    for (m, prec), g in hx.groupby(["model_id", "precision"]):
        cpu, total, _ = predicted(m, "hexagon-sd8gen2", prec, "qnn")
        by_rt = {rt: int(g[g.runtime == rt].off.max()) if (g.runtime == rt).any() else None
                 for rt in ("tflite", "qnn_dlc")}
        ok = all((v > 0) == (cpu > 0) for v in by_rt.values() if v is not None)
        n, agree = n + 1, agree + ok
        cell = {k: "-" if v is None else str(v) for k, v in by_rt.items()}
        out.append(f"| {m} | {'yes' if m in H.HELD_OUT else 'no'} | {prec} | {cell['tflite']} | {cell['qnn_dlc']} | "
                   f"{cpu} ({total}) | {'yes' if ok else 'no'} |")
    return out + ["", f"Agreement (0 vs > 0 on every runtime): {agree} of {n} model x precision pairs.", ""]


def fallback_table(hx) -> list[str]:
    """Each row with layers off the NPU: opcost at the row's deployment runtime and its error."""
    out = ["| model | sample | device | precision | runtime | AI Hub off-NPU layers (of all) | opcost CPU kernels | "
           "measured ms | opcost ms | error % |", "|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in hx[hx.off > 0].itertuples():
        cpu, _, ms = predicted(r.model_id, r.opcost_profile, r.precision, LIBRARY_RUNTIME[r.runtime])
        err = (ms / r.inference_time_ms - 1) * 100
        out.append(f"| {r.model_id} | {'held out' if r.model_id in H.HELD_OUT else 'in-sample model, row not fitted'} "
                   f"| {r.opcost_profile} | {r.precision} | {r.runtime} | {r.off} ({int(r.layers_total)}) | {cpu} | "
                   f"{r.inference_time_ms:.4g} | {ms:.4g} | {err:+.1f} |")
    return out + [""]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    hx = rows(a.measurements)
    text = ["# Hexagon: CPU fallback against AI Hub's off-NPU layers", "", f"Command: `{COMMAND}`", "",
            "**Off-NPU layers (AI Hub) against kernels placed on the CPU (opcost, 8 Gen 2 profile; the rules do "
            "not depend on the device or the deployment)**", "", *count_table(hx),
            "**Rows with layers off the NPU, opcost at the row's deployment runtime**", "", *fallback_table(hx)]
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
