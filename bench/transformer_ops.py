"""opcost on the op shapes a transformer runs: NeuSight's fp32 rows nearest to them, per class and GPU.

The shapes (``shapes``): the kernels HF transformers run per layer in eager PyTorch fp32 (TF32
off), BERT-base/large and GPT-2 small/medium/large (RoBERTa and DistilBERT share BERT-base's), at
batch ``BATCHES`` and sequence ``SEQS`` (BERT up to 512, GPT-2 up to 1024), head size 64:

- ``linear``: ``nn.Linear`` / GPT-2's ``Conv1D`` (``addmm``), M = B*S rows, (in, out) of the
  attention projections (Q, K, V and the output; GPT-2's fused QKV 3d) and the MLP (d -> 4d -> d);
- ``attn_qk``: ``torch.matmul(q, k^T)`` as bmm (B*H, S, 64) x (B*H, 64, S);
- ``attn_pv``: ``torch.matmul(p, v)`` as bmm (B*H, S, S) x (B*H, S, 64);
- ``softmax`` over the last axis of (B, H, S, S): B*H*S rows of S;
- ``layernorm`` over (B*S, d); ``gelu`` over (B*S, 4d); ``add`` (a residual) over (B*S, d).

For each shape and GPU the NeuSight row of the same op nearest in log space (``DIMS``: the matrix
ops on every GEMM dimension, softmax and layer norm on rows and row length, the elementwise ops on
the element count) is taken if it is within ``TOL`` on every dimension (exact where NeuSight has
the shape); the unique rows matched are the transformer subset.  Shapes outside NeuSight's range
(linear M > 8192, softmax rows > 16,384, ...) have no row and are counted apart.

Scores on the subset (every number: predicted / measured - 1 of the one eager call NeuSight
timed; time definition eager-op):

- in-sample: ``fit_neusight.fit_all`` on the hash-chosen fit rows of all five GPUs (the same rows
  ``bench/fit_neusight.py`` fits; the subset is not weighted in the fit), the fitted host dispatch;
- leave one GPU out: ``fit_neusight.logo`` (fit on four GPUs, score the fifth with its own
  host's dispatch and the boost clock);
- shipped: ``analyzer.analyze`` with the constants in ``hardware_db/efficiency`` (runtime
  ``kernel``, precision fp32) plus the in-sample fit's host dispatch, on ``PRODUCT_PER`` rows
  per class and GPU (the A100's memory-bound rows take the nvidia-ampere sets).

Usage: ``PYTHONPATH=$PWD python bench/transformer_ops.py [--data ...] [--out bench/results/transformer_ops_<date>.md]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import fit_neusight as fns  # noqa: E402
import neusight_data as nd  # noqa: E402
import neusight_report  # noqa: E402
from report_lines import emit_text  # noqa: E402

COMMAND = "PYTHONPATH=$PWD python bench/transformer_ops.py"
OUT = os.path.join(ROOT, "bench", "results", "transformer_ops_2026-12-02.md")
# (name, d_model, heads, layers' (in, out) Linear shapes, max sequence)
MODELS = (("bert-base", 768, 12, ((768, 768),) * 4 + ((768, 3072), (3072, 768)), 512),
          ("bert-large", 1024, 16, ((1024, 1024),) * 4 + ((1024, 4096), (4096, 1024)), 512),
          ("gpt2", 768, 12, ((768, 2304), (768, 768), (768, 3072), (3072, 768)), 1024),
          ("gpt2-medium", 1024, 16, ((1024, 3072), (1024, 1024), (1024, 4096), (4096, 1024)), 1024),
          ("gpt2-large", 1280, 20, ((1280, 3840), (1280, 1280), (1280, 5120), (5120, 1280)), 1024))
BATCHES = (1, 2, 4, 8, 16, 32)
SEQS = (128, 256, 512, 1024)
HEAD = 64
ROLE_OP = {"linear": "linear", "attn_qk": "bmm", "attn_pv": "bmm", "softmax": "softmax", "layernorm": "ln",
           "gelu": "gelu", "add": "add"}
# the NeuSight columns a role is matched on (linear: B is 1 and M the rows; bmm: B the batch, M x N by N x K)
DIMS = {"linear": ("M", "N", "K"), "bmm": ("B", "M", "N", "K"), "softmax": ("B", "H"), "ln": ("B", "H"),
        "gelu": ("E",), "add": ("E",)}
# the largest ratio allowed on any dimension between a shape and its row (elementwise kernels on the
# element count only: tighter)
TOL = {"linear": 1.5, "bmm": 1.5, "softmax": 1.25, "ln": 1.25, "gelu": 1.1, "add": 1.1}
PRODUCT_PER = 12
ROLES = tuple(ROLE_OP)


def shapes():
    """One row per distinct (role, NeuSight dims) the models run, with the models and (B, S)
    that run it and how many times per layer."""
    import pandas as pd

    rows = []
    for name, d, h, lin, smax in MODELS:
        for b in BATCHES:
            for s in SEQS:
                if s > smax:
                    continue
                base = {"model": name, "batch": b, "seq": s}
                for i, o in lin:
                    rows.append(dict(base, role="linear", M=b * s, N=i, K=o, B=1))
                rows.append(dict(base, role="attn_qk", B=b * h, M=s, N=HEAD, K=s))
                rows.append(dict(base, role="attn_pv", B=b * h, M=s, N=s, K=HEAD))
                rows.append(dict(base, role="softmax", B=b * h * s, H=s))
                rows += [dict(base, role="layernorm", B=b * s, H=d)] * 2
                rows.append(dict(base, role="gelu", E=b * s * 4 * d))
                rows += [dict(base, role="add", E=b * s * d)] * 2
    df = pd.DataFrame(rows)
    df["op"] = df.role.map(ROLE_OP)
    return df


def match(ns, shp):
    """Per (shape, device): the nearest NeuSight row of the op (``DIMS``, log distance) and its
    largest per-dimension ratio; ``row_id`` NaN where none is within ``TOL``."""
    import pandas as pd

    ns = ns.assign(E=ns.B * ns.H)
    out = []
    for (op, dev), rows in ns.groupby(["op", "device_system"]):
        want = shp[shp.op == op]
        if not len(want):
            continue
        cols = DIMS[op]
        a = np.log(np.maximum(rows[list(cols)].to_numpy(float), 1.0))
        for r in want.itertuples():
            x = np.log([float(getattr(r, c)) for c in cols])
            dist = np.abs(a - x)
            i = int(np.argmin((dist ** 2).sum(axis=1)))
            worst = float(np.exp(dist[i].max()))
            out.append({"shape": r.Index, "device_system": dev, "ratio": worst,
                        "row_id": int(rows.row_id.iloc[i]) if worst <= TOL[op] else np.nan})
    m = pd.DataFrame(out)
    return m.join(shp, on="shape")


def subset(ns, m):
    """The unique NeuSight rows matched (``row_id``), with the role each was matched for (the first)
    and how many (shape, model, batch, seq) entries map to it (``weight``)."""
    hit = m.dropna(subset=["row_id"])
    first = hit.groupby("row_id").agg(role=("role", "first"), weight=("role", "size"))
    sub = ns.set_index("row_id").join(first, how="inner").reset_index()
    sub["gpu"] = sub.device_system.map(nd.GPU)
    return sub


def shipped(rows, fit, per: int = PRODUCT_PER):
    """``analyzer.analyze`` (runtime kernel, fp32) with the shipped constants plus ``fit``'s host
    dispatch, on ``per`` hash-chosen rows per role and device."""
    import pandas as pd

    parts = []
    for _, g in rows.groupby(["role", "device_system"]):
        h = g.row_id.map(lambda r: hashlib.sha256(f"opcost-tf|{int(r)}".encode()).hexdigest())
        parts.append(g.assign(h=h).sort_values("h").head(per))
    pick = pd.concat(parts)
    host = np.array([fit.dispatch.get((d, fns.dclass(c)), 0.0) for d, c in zip(pick.device_system, pick.cls)])
    shipped_fit = fns.Fit({}, fit.shares, fit.dispatch)
    return pick.assign(p_ship=neusight_report.product_times(pick, shipped_fit, fns.fc.EFFICIENCY_DIR, "kernel") + host)


def _cell(m: dict) -> str:
    return f"{m['rows']:,} | {m['mape']:.1f} | {m['bias']:+.1f}" if m["rows"] else "0 | - | -"


def table(sub, cols: dict, title: str) -> list[str]:
    """Per role and GPU, then per role and overall: rows, MAPE, bias of each prediction column."""
    head = " | ".join(f"{n} rows | {n} MAPE % | {n} bias %" for n in cols)
    out = [f"### {title}", "", f"| role | GPU | {head} |", "|---|---|" + "---:|" * (3 * len(cols))]
    for role in ROLES:
        for g in nd.GPUS:
            d = sub[(sub.role == role) & (sub.gpu == g)]
            out.append(f"| {role} | {g} | " + " | ".join(_cell(fns.metrics(d[c], d.t)) for c in cols.values()) + " |")
        d = sub[sub.role == role]
        out.append(f"| **{role}** | all | " + " | ".join(_cell(fns.metrics(d[c], d.t)) for c in cols.values()) + " |")
    for g in nd.GPUS:
        d = sub[sub.gpu == g]
        out.append(f"| **all** | {g} | " + " | ".join(_cell(fns.metrics(d[c], d.t)) for c in cols.values()) + " |")
    out.append("| **all** | all | " + " | ".join(_cell(fns.metrics(sub[c], sub.t)) for c in cols.values()) + " |")
    return out + [""]


def coverage(m) -> list[str]:
    out = ["## Coverage", "", "Shapes (distinct role x dims per model, batch, sequence) and the share with a NeuSight "
           "row within the tolerance, per role (over the five GPUs):", "",
           "| role | tolerance (x per dim) | shape x GPU entries | matched % | median ratio of the matched | "
           "unique rows |", "|---|---:|---:|---:|---:|---:|"]
    for role in ROLES:
        d = m[m.role == role]
        hit = d.dropna(subset=["row_id"])
        out.append(f"| {role} | {TOL[ROLE_OP[role]]:g} | {len(d):,} | {100 * len(hit) / max(len(d), 1):.0f} | "
                   f"{hit.ratio.median():.3f} | {hit.row_id.nunique():,} |")
    return out + [""]


def main(argv=None) -> int:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=nd.DATA)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--no-product", action="store_true", help="skip the analyzer.analyze column")
    ap.add_argument("--no-whole-bgemm", action="store_true",
                    help="fit torch.bmm as before whole_tile (fit_neusight's --no-whole-bgemm)")
    ap.add_argument("--no-k-fill", action="store_true", help="fit torch.bmm without k_fill (fit_neusight's --no-k-fill)")
    args = ap.parse_args(argv)
    fns.WHOLE_BGEMM = not args.no_whole_bgemm
    fns.FIT_K_FILL = not args.no_k_fill
    t0 = time.time()
    ns = nd.load(args.data)
    m = match(ns, shapes())
    fit_rows = nd.subsample(ns)
    fit = fns.fit_all(fit_rows)
    folds = fns.logo(fit_rows, ns)
    held = pd.concat([t for _, t in folds.values()])[["row_id", "p_own"]]
    sub = subset(ns, m)
    sub = sub.assign(p_in=fns.predict(sub, fit)).merge(held, on="row_id")
    cols = {"in-sample": "p_in", "LOGO": "p_own"}
    if not args.no_product:
        ship = shipped(sub, fit)
        sub = sub.merge(ship[["row_id", "p_ship"]], on="row_id", how="left")
    lines = ["# opcost on transformer op shapes (NeuSight fp32 rows nearest to them)", "",
             f"Command: `{COMMAND}` ({time.time() - t0:.0f} s). Data: `{nd.MEASUREMENT_FILE}`; the shapes of "
             f"{', '.join(n for n, *_ in MODELS)} at batch {', '.join(map(str, BATCHES))} and sequence "
             f"{', '.join(map(str, SEQS))} (BERT to 512), head size {HEAD}. Each row: one PyTorch 2.1 eager call "
             "between CUDA events (eager-op: host dispatch + kernel). in-sample: the pooled fit of "
             "bench/fit_neusight.py (its hash-chosen fit rows, all five GPUs); LOGO: fit on four GPUs, the fifth "
             "scored with its own host's dispatch and boost clock (held out). The subset is every NeuSight row "
             "nearest to a transformer shape (unweighted).", ""]
    lines += coverage(m)
    lines += table(sub, cols, "Fit path: in-sample and leave one GPU out (all matched rows)")
    k = sub[~sub.near_floor]
    lines += table(k, cols, f"Kernel rows only (above {nd.FLOOR_X:g}x the device's and class's smallest latency)")
    if not args.no_product:
        s = sub.dropna(subset=["p_ship"])
        lines += table(s, {"shipped": "p_ship", "in-sample": "p_in"},
                       f"Shipped constants through analyzer.analyze (runtime kernel + the fitted host dispatch), "
                       f"{PRODUCT_PER} rows per role and GPU")
    emit_text(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
