"""Regenerate the golden reports tests/golden/<sample>.json from the current analyzer.

Usage::

    python tests/update_goldens.py

Run it only when a change in the counts is intended, and review the diff. A golden is the
JSON report (``Report.to_dict()``) minus ``model.path`` (which depends on the checkout).
Before writing, each report is checked against the closed forms of samples/make_samples.py
(params and mac_flops), so a regression cannot be blessed by accident.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
GOLDEN = Path(__file__).resolve().parent / "golden"

# sample name -> dims bound when analysing it
GOLDEN_SAMPLES: dict[str, dict[str, int]] = {
    "mlp": {},
    "cnn": {},
    "transformer": {},
    "dynamic_batch": {"batch": 2},
}


def expected() -> dict:
    spec = importlib.util.spec_from_file_location("opcost_make_samples_for_goldens", SAMPLES / "make_samples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.EXPECTED


def closed_form(name: str) -> tuple[int, int]:
    """(params, mac_flops) of ``name`` at its golden dims, from make_samples.EXPECTED."""
    exp = expected()[name]
    scale = 1
    if name == "dynamic_batch":  # EXPECTED holds batch=1; mac_flops scale linearly, params do not
        scale = GOLDEN_SAMPLES[name]["batch"] // exp["dims"]["batch"]
    return exp["params"], exp["mac_flops"] * scale


def current(name: str) -> dict:
    """The current report of sample ``name`` as a golden dict (no ``model.path``)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import analyzer

    report = analyzer.analyze(str(SAMPLES / f"{name}.onnx"), dims=GOLDEN_SAMPLES[name] or None)
    d = json.loads(report.to_json())
    d["model"].pop("path", None)
    return d


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.json"


def main() -> int:
    GOLDEN.mkdir(exist_ok=True)
    bad = []
    for name in GOLDEN_SAMPLES:
        d = current(name)
        params, mac = closed_form(name)
        got = (d["totals"]["params"], d["totals"]["mac_flops"])
        if got != (params, mac):
            bad.append(f"{name}: analyzer gives params={got[0]} mac_flops={got[1]}, "
                       f"closed form params={params} mac_flops={mac}")
            continue
        golden_path(name).write_text(json.dumps(d, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {golden_path(name).relative_to(ROOT)}: {len(d['nodes'])} nodes, "
              f"params={params}, mac_flops={mac}")
    for b in bad:
        print(f"NOT WRITTEN (disagrees with samples/make_samples.py EXPECTED): {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
