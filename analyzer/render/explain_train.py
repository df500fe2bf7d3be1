"""``--explain``'s lines for a layer whose kernel differs in a training step's forward: the eager
plan's BatchNorms in training mode (rule ``bn-train``, ``training.step.forward_prediction``)."""

from __future__ import annotations

from analyzer.render import safe
from analyzer.render.headline import human_time


def training_lines(report, p, index: int, inserted_lines) -> list[str]:
    """The kernel of ``report.nodes[index]`` in the training forward on ``p``'s profile, its time
    and its inserted launches (``inserted_lines``: explain's renderer of them); none where the
    report has no training step with a training-mode BatchNorm on that profile."""
    from analyzer.training.step import forward_prediction

    tr = report.training
    st = next((s for s in tr.steps if s.hardware == p.hardware), None) if tr is not None else None
    if st is None or not st.bn_train:
        return []
    e = forward_prediction(report, p).explain(index)
    if e is None or e.inserted == (p.explain(index) or e).inserted:
        return []
    return [f"  training forward (rule bn-train, {st.bn_train} BatchNorms in training mode): kernel "
            f"{human_time(e.time_s)} = fixed {human_time(e.overhead_s)} + {'max' if p.overlap else 'sum'}"
            f"(compute, memory) of {safe.text(e.kernel)}", *inserted_lines(e)]
