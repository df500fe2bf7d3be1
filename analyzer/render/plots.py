"""The roofline chart alone (``--plot FILE``): formatting only, from ``Prediction.roofline``.

png and svg are drawn with matplotlib (plotly's static export needs kaleido and a browser, which
an offline install lacks); html is the plotly figure of the HTML report, JS embedded."""

from __future__ import annotations

import os

from analyzer.errors import Hint, InputSpecError


def write_roofline(report, path: str) -> str:
    """Write the chart to ``path``; returns how it was drawn ("matplotlib" / "plotly")."""
    if not report.predictions:
        raise InputSpecError("the roofline chart plots a prediction: give {hw}", hints=(Hint("hw"),))
    ext = os.path.splitext(path)[1].lower()
    if ext == ".html":
        from analyzer.render.html import roofline_figure, write_figure

        write_figure(roofline_figure(report), path)
        return "plotly"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputSpecError("a png or svg chart needs matplotlib: pip install 'opcost[plot]'") from None
    from analyzer.render.roofline import roofline_series

    fig, ax = plt.subplots(figsize=(8, 5.5))
    series = roofline_series(report)
    hws = list(dict.fromkeys(s["hardware"] for s in series))
    for s in series:   # one colour per profile: its roof and its points
        color = f"C{hws.index(s['hardware']) % 10}"
        if s["kind"] == "roof":
            ax.plot(s["x"], s["y"], "-", lw=1.5, label=s["label"], color=color)
        else:
            ax.scatter(s["x"], s["y"], s=10, alpha=0.6, label=s["label"], color=color)
            # each point's effective roof (the rate the model's terms held it to: efficiencies,
            # waves, cache, floor), drawn as a short bar above the point, like the HTML hover
            held = [(x, r) for x, r in zip(s["x"], s["roof"]) if r > 0]
            if held:
                ax.scatter([x for x, _ in held], [r for _, r in held], marker="_", s=60, lw=1.2,
                           alpha=0.8, color=color, label=f"{s['hardware']} effective roof per layer",
                           gid="effective-roof")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attained (FLOP/s)")
    ax.set_title(f"roofline: {os.path.basename(str(report.model.get('path', '')))}")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path + ".tmp" + ext
    try:
        fig.savefig(tmp)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return "matplotlib"
