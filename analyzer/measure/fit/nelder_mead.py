"""A derivative-free minimiser for the small, kinked loss surfaces of ``cpu_model.fit_class``."""

from __future__ import annotations

import numpy as np


def minimize(f, x0, steps, iters=600, tol=1e-10):
    """(x, f(x)) at the smallest value the Nelder-Mead simplex search from ``x0`` (the simplex's
    other vertices ``x0 + steps[i]`` along each axis) finds within ``iters`` steps, stopping where
    the simplex's values differ by less than ``tol``: reflection, expansion (x2), contraction
    (x0.5) and shrinking toward the best vertex (Nelder and Mead, Computer Journal 7, 1965)."""
    n = len(x0)
    pts = [np.asarray(x0, dtype=float)]
    for i in range(n):
        x = np.array(x0, dtype=float)
        x[i] += steps[i]
        pts.append(x)
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) < tol:
            break
        c = np.mean(pts[:-1], axis=0)
        xr = c + (c - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = c + 2 * (c - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (pts[-1] - c)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0] + 0.5 * (p - pts[0]) for p in pts]
                vals = [f(p) for p in pts]
    i = int(np.argmin(vals))
    return pts[i], vals[i]
