"""The series of a roofline chart, shared by the HTML report (plotly) and ``--plot``
(matplotlib): formatting only, from ``Prediction.roofline`` (points and roofs computed there)."""

from __future__ import annotations

import math

from analyzer.render import safe

ROOF_POINTS = 48


def roofline_series(report, indices: set[int] | None = None) -> list[dict]:
    """Per profile: a ``points`` series (x intensity FLOP/B, y attained FLOP/s, the layer
    names shown as text) and a ``roof`` series (min(peak, bandwidth x intensity) over the
    points' range).  ``indices``: only these nodes' points."""
    per = []
    xs = []
    for p in report.predictions:
        pts, roofs = p.roofline()
        if indices is not None:
            pts = [x for x in pts if x[0] in indices]
        per.append((p, pts, roofs))
        xs += [x[1] for x in pts if x[1] > 0]
    lo = min(xs) / 4 if xs else 1e-2
    hi = max(xs) * 4 if xs else 1e4
    grid = [lo * (hi / lo) ** (i / (ROOF_POINTS - 1)) for i in range(ROOF_POINTS)]
    out = []
    for p, pts, roofs in per:
        hw = safe.text(p.hardware)
        peak = max(roofs.get("matrix_peak", 0.0), roofs.get("vector_peak", 0.0))
        bw = roofs.get("mem_bw", 0.0)
        if peak > 0 and bw > 0:
            out.append({"kind": "roof", "hardware": hw,
                        "label": f"{hw} roof ({peak / 1e12:.3g} TFLOP/s, {bw / 1e9:.4g} GB/s)",
                        "x": grid, "y": [min(peak, bw * x) for x in grid],
                        "ridge": peak / bw})
        keep = [x for x in pts if x[1] > 0 and x[2] > 0 and math.isfinite(x[1])]
        out.append({"kind": "points", "hardware": hw, "label": f"{hw} layers",
                    "x": [x[1] for x in keep], "y": [x[2] for x in keep],
                    # the roof each point was held to by the model's terms (Prediction.roofline)
                    "roof": [x[3] if len(x) > 3 else 0.0 for x in keep],
                    "index": [x[0] for x in keep],
                    "names": [safe.text(report.nodes[x[0]].name) for x in keep],
                    "ops": [safe.text(report.nodes[x[0]].op) for x in keep]})
    return out
