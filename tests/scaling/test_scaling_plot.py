"""The scaling plot (``--plot-scaling``): its reference lines are the ideal at every device count
the curve has, as drawn (read back from the figure in display coordinates, the way the eye
reads it, so a straight segment across a log axis counts as what it shows)."""

import numpy as np
import pytest

from analyzer.scaling import parallel as P
from analyzer.scaling.curve import Scaling


class _Report:
    def __init__(self, scaling):
        self.scaling = scaling


def _curve(devices=(1, 2, 4, 8)):
    # a made-up curve: speed-up n / (1 + 0.1 (n - 1)), efficiency = speed-up / n
    pts = []
    for n in devices:
        s = n / (1 + 0.1 * (n - 1))
        pts.append(P.Point(hardware="a100", devices=n, step_s=1 / s, compute_s=1 / n,
                           communication_s=0.0, exposed_communication_s=1 / s - 1 / n,
                           bubble_s=0.0, speedup=s, efficiency=s / n,
                           serial_fraction=P.serial_fraction(n, s)))
    return Scaling("data", "ib-fdr", tuple(pts))


def _drawn_y(ax, line, x):
    """The y a line shows at data x: its polyline interpolated in display coordinates."""
    disp = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
    xd = ax.transData.transform([[x, 1.0]])[0][0]
    yd = np.interp(xd, disp[:, 0], disp[:, 1])
    return ax.transData.inverted().transform([[xd, yd]])[0][1]


def _figure(monkeypatch, tmp_path, devices):
    pytest.importorskip("matplotlib")
    import matplotlib.figure

    from cli import scaling as scaling_cli

    seen = []
    real = matplotlib.figure.Figure.savefig

    def keep(self, *a, **k):
        seen.append(self)
        return real(self, *a, **k)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    scaling_cli.plot(_Report(_curve(devices)), str(tmp_path / "s.svg"))
    assert (tmp_path / "s.svg").exists() and len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("devices", [(1, 2, 4, 8), (1, 3, 6, 12, 64)])
def test_speedup_reference_is_n_at_every_device_count(monkeypatch, tmp_path, devices):
    fig = _figure(monkeypatch, tmp_path, devices)
    ax = fig.axes[0]
    ref = [ln for ln in ax.get_lines() if ln.get_label() == "linear"]
    assert len(ref) == 1
    for n in devices:
        # ideal speed-up at n devices is n (a straight segment from (1, 1) to (8, 8) across the
        # log2 axis shows 1 + 7 * log2(n) / 3 instead: 3.33 at n = 2)
        assert _drawn_y(ax, ref[0], n) == pytest.approx(n, rel=1e-3)


def test_efficiency_panel_has_the_ideal_line(monkeypatch, tmp_path):
    fig = _figure(monkeypatch, tmp_path, (1, 2, 4, 8))
    ax = fig.axes[1]
    ref = [ln for ln in ax.get_lines() if ln.get_label() == "ideal"]
    assert len(ref) == 1
    for n in (1, 2, 4, 8):
        assert _drawn_y(ax, ref[0], n) == pytest.approx(1.0)   # ideal efficiency S/N = 1
