"""Layer names for modules that emit no named scopes: flax.nnx.

Flax linen, Equinox and Haiku put their module paths into jax's name stack, so node names come out
as ``encoder/layer0/dense/dot_general``; flax.nnx modules are plain Python objects called directly
and emit nothing, so every row was ``conv_general_dilated#2``.  While a program is traced,
``module_scopes`` wraps the ``__call__`` of every loaded ``nnx.Module`` subclass in a
``jax.named_scope`` of the module's path in its graph, relative to the module that called it
(``nnx.iter_graph`` paths: attribute names and list indices), so the rows read
``blocks/0/conv/conv_general_dilated``.  The outermost module called adds no component (it is the
model).  Nothing is imported: when flax.nnx is not loaded this does nothing, and the classes are
restored afterwards.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

_STATE = threading.local()


def _subclasses(cls: type) -> list[type]:
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        for s in c.__subclasses__():
            if s not in out:
                out.append(s)
                todo.append(s)
    return out


def _relative_path(parent: Any, child: Any, nnx: Any) -> str | None:
    """``child``'s path inside ``parent``'s graph, as ``a/0/b``; None when it is not there."""
    cache = _STATE.paths
    table = cache.get(id(parent))
    if table is None:
        table = {}
        try:
            for path, node in nnx.iter_graph(parent):
                if isinstance(node, nnx.Module):
                    table.setdefault(id(node), "/".join(str(p) for p in path))
        except Exception:  # an object nnx cannot walk: no names, no harm
            table = {}
        cache[id(parent)] = table
    path = table.get(id(child))
    return path or None


def _wrap(call: Any, nnx: Any, jax: Any) -> Any:
    def scoped_call(self, *args, **kwargs):
        stack = _STATE.stack
        name = _relative_path(stack[-1], self, nnx) if stack else None
        stack.append(self)
        try:
            if name:
                with jax.named_scope(name):
                    return call(self, *args, **kwargs)
            return call(self, *args, **kwargs)
        finally:
            stack.pop()

    scoped_call.__wrapped__ = call  # type: ignore[attr-defined]
    return scoped_call


@contextmanager
def module_scopes() -> Iterator[None]:
    """Name flax.nnx module calls while the body traces (a no-op without flax.nnx loaded)."""
    nnx = sys.modules.get("flax.nnx")
    module = getattr(nnx, "Module", None)
    if module is None or not hasattr(nnx, "iter_graph"):
        yield
        return
    import jax

    patched = [(c, c.__dict__["__call__"]) for c in [module, *_subclasses(module)]
               if "__call__" in c.__dict__]
    _STATE.stack, _STATE.paths = [], {}
    try:
        for c, call in patched:
            c.__call__ = _wrap(call, nnx, jax)
        yield
    finally:
        for c, call in patched:
            c.__call__ = call
        _STATE.stack, _STATE.paths = [], {}
