"""``eager-op``'s per-call host table (``runtimes.EAGER_OP_CALL_US``) checked by leaving one NeuSight
host out, for ``bench/fit_neusight.py``'s report.

The table: per op class the median over NeuSight's five measuring hosts of their fitted per-call
host time (``fit_neusight.fit_dispatch``: latency - kernel over each host's near-floor rows),
mapped to opcost's classes by ``CALL_CLASSES``.  The check, per held-out GPU (``fit_neusight.logo``'s
folds: the kernel constants fitted on the other four, boost clock):

- ``A``: the per-class median of the other four hosts (``fit_neusight.host_median``);
- ``B``: LLMCompass's A100 figures (``runtimes.EAGER_DISPATCH_US``: 21 us matrix, 12 us other);

scored on every row of the held-out GPU by the fit's feature path (``fit_neusight.predict``), and
on the product-check rows through ``analyzer.analyze`` (runtime ``eager-op``, the table patched to
``A`` or ``B``).  MAPE and median bias over all rows and per class.
"""

from __future__ import annotations

from fit_neusight import Fit, dclass, host_median, metrics, predict
from analyzer.prediction import runtimes

# opcost op class -> NeuSight's dispatch class whose figure it takes (the default: elementwise's)
CALL_CLASSES = {"gemm": "gemm_simt", "bgemm": "bgemm_simt", "attention": "bgemm_simt", "conv": "conv3_simt",
                "norm": "norm", "softmax": "softmax", "activation": "activation", "elementwise": "elementwise",
                "reduce": "elementwise"}
DEFAULT_CLASS = "elementwise"


def call_table(median: dict) -> tuple[dict, float]:
    """(``EAGER_OP_CALL_US``-shaped table in microseconds, default) of a per-dispatch-class median
    in seconds."""
    return ({k: round(median[v] * 1e6, 1) for k, v in CALL_CLASSES.items()},
            round(median[DEFAULT_CLASS] * 1e6, 1))


def llmcompass(dev_classes) -> dict:
    """``B`` as a (device, dispatch class) -> seconds table for ``fit_neusight.predict``."""
    return {(d, c): runtimes.eager_dispatch_us(c) * 1e-6 for d, c in dev_classes}


def product_columns(fit: Fit, rows, product_times, held: Fit, eff_dir: str) -> dict:
    """``product_check``'s hook: the fold's rows through ``analyzer.analyze`` (eager-op) with the
    per-call table patched to ``A`` (the fold's four hosts) and to ``B`` (LLMCompass)."""
    devs = {d for d, _ in fit.dispatch}
    tables = {"p_call_a": call_table(host_median(fit.dispatch, devs)),
              "p_call_b": (dict(runtimes.EAGER_DISPATCH_US), runtimes.EAGER_DISPATCH_DEFAULT_US)}
    saved = runtimes.EAGER_OP_CALL_US, runtimes.EAGER_OP_CALL_DEFAULT_US
    out = {}
    try:
        for col, (table, default) in tables.items():
            runtimes.EAGER_OP_CALL_US, runtimes.EAGER_OP_CALL_DEFAULT_US = table, default
            out[col] = product_times(rows, held, eff_dir, "eager-op")
    finally:
        runtimes.EAGER_OP_CALL_US, runtimes.EAGER_OP_CALL_DEFAULT_US = saved
    return out


def _pair(rows, a: str, b: str) -> str:
    x, y = metrics(rows[a], rows.t), metrics(rows[b], rows.t)
    return f"{x['rows']:,} | {x['mape']:.1f} | {x['bias']:+.1f} | {y['mape']:.1f} | {y['bias']:+.1f}"


def call_lines(fit: Fit, folds: dict, prod) -> list[str]:
    """The report's section: the five hosts' table against the shipped one, and the
    leave-one-host-out check (feature path on every row; the product rows ``prod``)."""
    import pandas as pd

    five, default = call_table(host_median(fit.dispatch, {d for d, _ in fit.dispatch}))
    shipped = {k: runtimes.EAGER_OP_CALL_US.get(k) for k in five}
    parts = []
    for f, test in folds.values():
        b = llmcompass({(d, dclass(c)) for d, c in zip(test.device_system, test.cls)})
        parts.append(test.assign(p_b=predict(test, Fit(f.sets, {}, f.dispatch), b)))
    rows = pd.concat(parts)
    out = ["## eager-op per-call host table (runtimes.EAGER_OP_CALL_US), leave one host out", "",
           "The five hosts' median per opcost class (NeuSight class: " +
           ", ".join(f"{k} <- {v}" for k, v in CALL_CLASSES.items()) + f"; default <- {DEFAULT_CLASS}), "
           "in microseconds, beside runtimes.EAGER_OP_CALL_US as shipped:", "",
           "| class | five hosts' median | shipped |", "|---|---:|---:|"]
    out += [f"| {k} | {v:g} | {shipped[k]:g} |" for k, v in five.items()]
    out += [f"| default | {default:g} | {runtimes.EAGER_OP_CALL_DEFAULT_US:g} |", "",
            "Leave one host out: each GPU's rows with its fold's kernel constants (fitted on the other four, "
            "boost clock) and A = the other four hosts' per-class median, B = LLMCompass's figures "
            "(runtimes.EAGER_DISPATCH_US: 21 us matrix, 12 us other). The adoption criterion, fixed before any "
            "check figure: A's MAPE over all rows below B's on both the feature path (every row) and the "
            "product rows.", "",
            "| class | rows | A MAPE % | A bias % | B MAPE % | B bias % |", "|---|---:|---:|---:|---:|---:|"]
    for c, d in rows.groupby("cls"):
        out.append(f"| {c} | {_pair(d, 'p_pool', 'p_b')} |")
    out.append(f"| all (feature path, every row) | {_pair(rows, 'p_pool', 'p_b')} |")
    if prod is not None and "p_call_a" in prod:
        for c, d in prod.groupby("cls"):
            out.append(f"| {c} (product rows) | {_pair(d, 'p_call_a', 'p_call_b')} |")
        out.append(f"| all (product rows, analyzer.analyze eager-op) | {_pair(prod, 'p_call_a', 'p_call_b')} |")
    return out + [""]
