"""Targets: what a prediction is for, decided once at the entry point.

A target is a hardware profile, the runtime that runs the model on it (``runtimes.Runtime``)
and why that runtime: the caller's ``runtime=``; else ``xla`` for a JAX program; else the
profile's ``default_runtime``; else its kind's default (``runtimes.choose``). ``resolve`` turns
what a caller passes as ``hw`` (ids, paths to ``.toml`` profiles, ``HardwareProfile`` objects,
or targets already resolved) into a tuple of targets, loading each profile once; prediction,
search, training, scaling and measuring take those targets and never look a profile up again,
so a profile read from a file or edited with ``dataclasses.replace`` is the one every later
stage sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from analyzer.prediction import xla_conv_layout
from analyzer.prediction.runtimes import Runtime, choose


@dataclass(frozen=True)
class Target:
    """One profile and the runtime a prediction on it assumes."""

    profile: Any          # hardware_db.HardwareProfile
    runtime: Runtime
    why: str              # why this runtime ("requested", "JAX program", "<id>'s default", ...)

    @property
    def id(self) -> str:
        return self.profile.id

    def __repr__(self) -> str:
        return f"Target({self.profile.id}, runtime={self.runtime.name}: {self.why})"


def load_profile(hw: Any):
    """A profile from an id, a path to a ``.toml`` file or a profile object (returned as is)."""
    if isinstance(hw, Target):
        return hw.profile
    if hasattr(hw, "peak_flops"):
        return hw
    import hardware_db

    return hardware_db.get(hw)


def resolve(hw: Any, runtime: str | None = None, model_format: str = "onnx",
            host: str | None = None) -> tuple[Target, ...]:
    """The targets of ``hw`` (one, or a sequence of ids / paths / profiles / targets) under the
    caller's ``runtime`` for a model of ``model_format`` ("onnx" or "jaxpr"), charging ``host``'s
    per-op host figures (``runtimes.EAGER_HOSTS``; None: the default). A ``Target`` passed
    in is kept as it is (resolving twice is a no-op); empty for ``hw=None``."""
    if hw is None:
        return ()
    items: Sequence[Any] = [hw] if isinstance(hw, (str, Target)) or hasattr(hw, "peak_flops") else list(hw)
    out = []
    named: dict[str, str] = {}   # profile id -> the id, alias or path that named it
    for h in items:
        if isinstance(h, Target):
            out.append(h)
            continue
        prof = load_profile(h)
        if isinstance(h, str):   # two names of one profile: its rows and columns would repeat
            if prof.id in named:
                from analyzer.errors import Hint, InputSpecError

                said = f"'{h}' is given twice" if named[prof.id] == h else \
                    f"'{named[prof.id]}' and '{h}' are the same profile ({prof.id})"
                raise InputSpecError(f"{{hw}}: {said}; give it once", hints=(Hint("hw"),))
            named[prof.id] = h
        rt, why = choose(runtime, model_format, prof, host)
        out.append(Target(prof, rt, why))
    return tuple(out)


def groups(targets: Sequence[Target]) -> list[tuple[Runtime, list[int]]]:
    """[(runtime, target indices)] in first-seen order: the targets a prediction lowers together
    (one lowering per runtime and fusion policy: ``xla`` on a CPU plans XLA's CPU kernels; and
    under ``xla`` GPUs apart from other kinds, whose plans keep their transposes and dots: a
    GPU's plan folds the one and merges the other, ``lowering.fold_transposes``, whatever else
    is predicted beside it)."""
    order: dict[tuple[str, str, bool | str], list[int]] = {}
    by_name: dict[tuple[str, str, bool | str], Runtime] = {}
    for i, t in enumerate(targets):
        gpu_xla = t.runtime.fusion == "xla" and getattr(t.profile, "kind", "") == "gpu"
        # (and GPUs by the layout XLA gives their convolutions: ``xla_conv_layout.generation``)
        key = (t.runtime.name, t.runtime.fusion, gpu_xla and xla_conv_layout.generation([t.profile]))
        order.setdefault(key, []).append(i)
        by_name[key] = t.runtime
    return [(by_name[key], idx) for key, idx in order.items()]
