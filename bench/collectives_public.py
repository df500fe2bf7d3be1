"""Score the shipped NCCL model on public nccl-tests tables (held out: nothing is fitted on them).

Data: ``bench/data/nccl_public/`` (``tables.toml`` names each table's CSV, source, the system as
posted and the figures used to describe it; the README says where else was looked). The scored
value is each row's out-of-place time (us). Every row is checked on load: its algbw equals
size / time and its busbw algbw x 2(n-1)/n (all-reduce) to the posted rounding, which catches a
mistyped number.

Each table is predicted through ``analyzer.scaling.fabric.Fabric`` with ``algorithm="nccl"`` and
the shipped constants (``hardware_db/collectives/nccl.json``): inside a node (or NVLink domain) the
fitted form on the node's NVLink figure and NVLS efficiency (``nodes.toml``), between nodes the
unfitted closed form on each GPU's posted network share (``nic_gbs_per_gpu``) with no per-step
latency (none is on record for RoCE, EFA or NDR), the per-call base once per call. Two scores:

- strict: the shipped constants, the shipped (median) base;
- run base: the table's own per-call base, the one value (0.1 us grid, up to 1 ms) that fits its
  rows of at most 4 KiB (a table without such rows has none); every other constant shipped.

Per table: MAPE and bias (mean signed error, prediction / measured - 1) over all rows, over the
rows above 4 KiB and over those of at least 1 MiB. A table whose network share is not on record
is listed and left unscored.

    PYTHONPATH=$PWD python bench/collectives_public.py [--out bench/results/collectives_public.md]
    PYTHONPATH=$PWD python bench/collectives_public.py --nccl-net   # NCCL's own cost model across nodes

``--nccl-net`` scores the form built on NCCL's ``src/graph/tuning.cc`` across nodes
(``analyzer.scaling.collectives.across_nodes``, constants ``hardware_db/collectives/nccl_tuning.json``):
one ring through all ranks on the slowest hop, NCCL's tree for all-reduce, NCCL's latencies. Its
latency holds NCCL's own base, so a run base changes only the one-node tables under it. It was
judged by a rule written before it was scored and not adopted (docs/accuracy.md, Collectives).
"""

from __future__ import annotations

import argparse
import csv
import os
import tomllib
from dataclasses import replace

import numpy as np

from analyzer.scaling import collectives as C
from analyzer.scaling import fabric as FB
from hardware_db import collectives, links
from report_lines import emit_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data", "nccl_public")
SMALL = 4096   # rows that measure a run's per-call base
MIN_BUSBW = 0.1   # GB/s: busbw-only rows below it are not scored (two decimals: > 5 % rounding)
NET_SHIPPED = ("Between nodes: the unfitted closed form on the posted network share per GPU, no "
               "per-step latency on record (0). ")
NET_NCCL = ("Between nodes (`--nccl-net`): NCCL's own cost model (`collectives.across_nodes`, "
            "`nccl_tuning.json`) on the node's network (the posted share per GPU x GPUs) and the "
            "NVLink figure; NCCL's base and per-step latencies, so the run base applies inside a "
            "node only. ")
COMMAND = "PYTHONPATH=$PWD python bench/collectives_public.py --out bench/results/collectives_public.md"
COMMAND_NET = ("PYTHONPATH=$PWD python bench/collectives_public.py --nccl-net "
               "--out bench/results/collectives_public_nccl_net.md")


def bus_factor(collective: str, n: int) -> float:
    return 2 * (n - 1) / n if collective == "all_reduce" else (n - 1) / n


def check_row(r: dict, n: int, where: str) -> None:
    """The posted algbw and busbw agree with size / time (x the bus factor for busbw) to the
    posted two decimals."""
    size, t = float(r["size_bytes"]), float(r["time_us"])
    alg, bus = float(r["algbw_gbs"]), float(r["busbw_gbs"])
    want = size / t / 1e3
    if abs(alg - want) > max(0.006, 0.002 * want):
        raise SystemExit(f"{where}: size {size:.0f}: algbw {alg} but size/time = {want:.3f}")
    if abs(bus - want * bus_factor(r["collective"], n)) > max(0.006, 0.003 * bus):
        raise SystemExit(f"{where}: size {size:.0f}: busbw {bus} but size/time x factor = "
                         f"{want * bus_factor(r['collective'], n):.3f}")


def read_rows(t: dict, n: int) -> list[tuple]:
    """[(collective, bytes, seconds)] of one table: the out-of-place time, or, for a table posted
    as in-place bus bandwidth only (``value = "busbw_inplace"``), size x bus factor / busbw for
    the rows with busbw >= ``MIN_BUSBW`` (two posted decimals: rounding <= 5 %)."""
    rows = []
    with open(os.path.join(DATA, t["file"])) as f:
        for r in csv.DictReader(f):
            c, nb = r["collective"], int(r["size_bytes"])
            if t.get("value") == "busbw_inplace":
                bus = float(r["busbw_inplace_gbs"])
                if bus >= MIN_BUSBW:
                    rows.append((c, nb, nb * bus_factor(c, n) / (bus * 1e9)))
                continue
            check_row(r, n, t["file"])
            rows.append((c, nb, float(r["time_us"]) * 1e-6))
    return rows


def load() -> dict:
    """{table id: (its tables.toml entry, [(collective, bytes, seconds)])}."""
    with open(os.path.join(DATA, "tables.toml"), "rb") as f:
        doc = tomllib.load(f)
    return {tid: (t, read_rows(t, t["gpus_per_node"] * t["nodes"])) for tid, t in doc.items()}


def fabric(t: dict, k: C.NcclConstants) -> FB.Fabric | None:
    """The table's system as a two-level ``Fabric`` (None: a network share not on record for a
    table that spans nodes). A forced algorithm restricts the model: ``ring`` drops the NVLS
    candidate, ``nvls`` prices the rings out (a ring step of 1000 s never wins)."""
    node = links.get_node(t["node"])
    nvls = node.nvls_efficiency if node.nvls and t.get("algorithm") != "ring" else 0.0
    if t.get("algorithm") == "nvls":
        k = replace(k, step_s={p: 1e3 for p in C.PROTOCOLS})
    intra = FB.Level.of(links.get(node.intra_link), nvls_efficiency=nvls)
    g = t["gpus_per_node"]
    if t["nodes"] > 1 and "nic_gbs_per_gpu" not in t:
        return None
    share = t.get("nic_gbs_per_gpu", 1.0)
    inter = FB.Level.of(links.make(share, link_id="posted", name="posted network share per GPU"))
    return FB.Fabric(inter, intra, per_node=g, algorithm="nccl", nics=g, constants=k)


def predict(t: dict, rows, k: C.NcclConstants) -> np.ndarray | None:
    fb = fabric(t, k)
    if fb is None:
        return None
    n = t["gpus_per_node"] * t["nodes"]
    return np.array([fb.collective(c, nb, n).total for c, nb, _ in rows])


def run_base(t: dict, rows, k: C.NcclConstants) -> C.NcclConstants | None:
    """``k`` with the per-call base that best fits the table's rows of at most ``SMALL`` bytes
    (MAPE, 0.1 us grid to 1 ms); None without such rows."""
    small = [r for r in rows if r[1] <= SMALL]
    if not small:
        return None
    floor = predict(t, small, replace(k, base_s=0.0))
    meas = np.array([r[2] for r in small])
    grid = np.arange(0, 10001) * 1e-7
    err = [float(np.mean(np.abs((floor + b) / meas - 1))) for b in grid]
    return replace(k, base_s=float(grid[int(np.argmin(err))]))


def score(pred: np.ndarray, rows) -> dict:
    meas = np.array([r[2] for r in rows])
    nb = np.array([r[1] for r in rows])
    e = pred / meas - 1
    pick = lambda m: (round(float(np.mean(np.abs(e[m])) * 100), 1), round(float(np.mean(e[m]) * 100), 1)) \
        if m.any() else None  # noqa: E731
    return {"all": pick(nb >= 0), "above_4k": pick(nb > SMALL), "ge_1mib": pick(nb >= 1 << 20)}


def evaluate(tables: dict, k: C.NcclConstants) -> dict:
    """{table: {"strict": score, "run": score or None, "run_base_us", "rows", "sizes"}} (None
    where the table is not scored)."""
    out = {}
    for tid, (t, rows) in tables.items():
        pred = predict(t, rows, k)
        if pred is None:
            out[tid] = None
            continue
        kr = run_base(t, rows, k)
        small = [r[2] for r in rows if r[1] <= SMALL]
        out[tid] = {"strict": score(pred, rows), "rows": len(rows),
                    "floor_us": round(float(np.median(small)) * 1e6, 1) if small else None,
                    "sizes": (min(r[1] for r in rows), max(r[1] for r in rows)),
                    "run": score(predict(t, rows, kr), rows) if kr else None,
                    "run_base_us": round(kr.base_s * 1e6, 1) if kr else None}
    return out


def fmt_bytes(b: int) -> str:
    for unit, v in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= v:
            return f"{b / v:g} {unit}"
    return f"{b} B"


def fmt(s) -> str:
    return "-" if s is None else f"{s[0]:.1f} % ({s[1]:+.1f} %)"


def summary(tables: dict, res: dict) -> list[str]:
    """Mean over the scored tables (each table weighs one) of the MAPE over all rows, single
    node and across nodes apart; and, for the tables with a run base and rows above ``SMALL``
    (those the base is not fitted on), strict and run-base MAPE over those rows."""
    L = []
    for label, multi in (("one node or NVLink domain", False), ("across nodes", True)):
        ids = [t for t, r in res.items() if r and (tables[t][0]["nodes"] > 1) == multi]
        runs = [t for t in ids if res[t]["run"] and res[t]["run"]["above_4k"]]
        strict = np.mean([res[t]["strict"]["all"][0] for t in ids])
        line = (f"- {label}: {len(ids)} tables, {sum(res[t]['rows'] for t in ids)} rows; mean strict "
                f"MAPE {strict:.1f} %")
        if runs:
            line += (f"; the {len(runs)} with a run base, over their rows > {SMALL} B: strict "
                     f"{np.mean([res[t]['strict']['above_4k'][0] for t in runs]):.1f} %, run base "
                     f"{np.mean([res[t]['run']['above_4k'][0] for t in runs]):.1f} %")
        L.append(line + ".")
    return L


def report(tables: dict, res: dict, k: C.NcclConstants, nccl_net: bool = False) -> str:
    title = ("NCCL's own cost model across nodes (not adopted)" if nccl_net
             else "Shipped NCCL model")
    L = [f"# {title} on public nccl-tests tables (held out)", "",
         f"Command: `{COMMAND_NET if nccl_net else COMMAND}`. Data: `bench/data/nccl_public/` (sources in its `tables.toml` and "
         "README). Value: the out-of-place time. Constants: `hardware_db/collectives/nccl.json` "
         f"(shipped base {k.base_s * 1e6:.1f} us). " + (NET_NCCL if nccl_net else NET_SHIPPED) + "Run base: the table's "
         f"own per-call base, fitted on its rows of <= {SMALL} B. Cells: MAPE (bias).", "",
         "| table | GPUs | rows | sizes | strict | strict > 4 KiB | strict >= 1 MiB "
         f"| measured <= {SMALL} B, median | run base | run base, all | run base > 4 KiB "
         "| run base >= 1 MiB |",
         "|---|---|---:|---|---|---|---|---:|---:|---|---|---|"]
    for tid, r in res.items():
        t = tables[tid][0]
        gpus = f"{t['nodes']} x {t['gpus_per_node']}"
        if r is None:
            L.append(f"| {tid} | {gpus} | {len(tables[tid][1])} | | not scored: network share per GPU "
                     "not on record | | | | | | | |")
            continue
        run = r["run"] or {}
        L.append(f"| {tid} | {gpus} | {r['rows']} | {fmt_bytes(r['sizes'][0])} - {fmt_bytes(r['sizes'][1])} "
                 f"| {fmt(r['strict']['all'])} | {fmt(r['strict']['above_4k'])} | {fmt(r['strict']['ge_1mib'])} "
                 f"| {'-' if r['floor_us'] is None else str(r['floor_us']) + ' us'} "
                 f"| {'-' if r['run_base_us'] is None else str(r['run_base_us']) + ' us'} "
                 f"| {fmt(run.get('all'))} | {fmt(run.get('above_4k'))} | {fmt(run.get('ge_1mib'))} |")
    return "\n".join(L + [""] + summary(tables, res)) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="markdown report to write")
    ap.add_argument("--nccl-net", action="store_true",
                    help="price calls across nodes with NCCL's own cost model (not adopted)")
    a = ap.parse_args()
    k = C.constants_from(collectives.nccl(), collectives.nccl_tuning() if a.nccl_net else None)
    tables = load()
    emit_text(a.out, report(tables, evaluate(tables, k), k, a.nccl_net))


if __name__ == "__main__":
    main()
