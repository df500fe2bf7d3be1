"""Values the JAX frontend knows while it lowers a jaxpr (shared by ``load`` and ``loops``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Known:
    """A value known while tracing: a literal, or a scalar computed only from literals."""

    value: Any


def open_jaxpr(j: Any) -> tuple[Any, list]:
    """(Jaxpr, consts) of a ClosedJaxpr or an open Jaxpr."""
    inner = getattr(j, "jaxpr", None)
    if inner is not None and hasattr(j, "consts"):
        return inner, list(j.consts)
    return j, []
