"""The nodes an exporter folded into constants that eager PyTorch still computes on every call
(rule ``folded-recomputed`` of ``eager_rules``).

The TorchScript exporter folds every subgraph that does not depend on a graph input: the
attention mask's index tensors and comparisons, the position and token-type lookups.  The
frontend keeps those nodes in the report, flagged ``folded``; eager PyTorch runs them each call.
A folded node is recomputed (one kernel) when all of these hold:

- its value reaches, through data inputs only, a node that runs (``_reaches_data``): a value
  that only feeds shape-like inputs (a Reshape's shape, an Expand's sizes) is shape arithmetic,
  Python ints in eager;
- it is not shape arithmetic: not Shape/Size nor computed from their values (``shape_values``);
- it is not Python-number arithmetic: not every input and output a scalar (rank 0);
- it is not a view in eager: an Identity, Reshape/Flatten/Squeeze/Unsqueeze, Transpose,
  Expand, Slice (a buffer sliced: ``position_ids[:, :n]``), Split, a Cast to its own dtype
  (a weight transposed or reshaped for a MatMul is a layout choice: no kernel);
- it is not a Constant (the exporter's folded result, a literal, a buffer): except
- an integer Constant of more than one element read as data by a node that runs is an index
  tensor the module builds on each call (``torch.arange(n) + offset``: two kernels, an arange
  and the add of the offset, a Python int: Hugging Face's ``cache_position`` and the mask's
  ``q_idx``/``kv_idx``).  A registered integer buffer sliced by the module (BERT's
  ``position_ids``) is folded to the same Constant and runs no kernel: counted here, stated.

The kernels are tiny (launch-bound); each is charged its output written and, per data input, at
most as many bytes read as it writes (a lookup reads its rows, not the table).
"""

from __future__ import annotations

from math import prod

from analyzer.counting.engine import FOLDED
from analyzer.ir.ops import facts

_ONNX = ("", "ai.onnx")
SHAPE_OPS = frozenset({"Shape", "Size"})
_VIEWS = frozenset({"Identity", "Dropout", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                    "Transpose", "Expand", "Slice", "Split"})
_INT = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
ARANGE_KERNELS = 2       # torch.arange(n) + offset


def shape_values(nodes, fnodes) -> set[tuple[str, str]]:
    """Tensors of shape arithmetic: the outputs of Shape/Size, and of every node whose inputs
    are such tensors or constants (at least one such tensor; every input of a folded node is
    a constant).  Eager PyTorch computes them in Python ints (``x.size(1)``), no aten op."""
    out: set[tuple[str, str]] = set()
    for nd, fn in zip(nodes, fnodes):
        ins = [(p, (fn.level, t)) for p, t in enumerate(fn.inputs) if t]
        folded = nd.status == FOLDED
        if nd.op in SHAPE_OPS or (ins and any(k in out for _, k in ins) and all(
                k in out or folded or p in fn.constant_inputs for p, k in ins)):
            out.update((fn.level, t) for t in fn.outputs if t)
    return out


def _reaches_data(nodes, fnodes) -> list[bool]:
    """Per node: a folded node whose value reaches, through data inputs only, a node that is
    not folded."""
    live: set[tuple[str, str]] = set()
    out = [False] * len(nodes)
    for i in range(len(nodes) - 1, -1, -1):
        nd, fn = nodes[i], fnodes[i]
        if nd.status == FOLDED:
            out[i] = any((fn.level, t) in live for t in fn.outputs if t)
            if not out[i]:
                continue
        shape_like = facts(nd.domain, nd.op).shape_inputs
        live.update((fn.level, t) for p, t in enumerate(fn.inputs) if t and p not in shape_like)
    return out


def _rank(spec):
    return None if spec is None or spec.shape is None else len(spec.shape)


def _is_view(nd) -> bool:
    if nd.op in _VIEWS:
        return True
    return nd.op == "Cast" and bool(nd.in_specs) and bool(nd.out_specs) and \
        nd.in_specs[0] is not None and nd.out_specs[0] is not None and \
        nd.in_specs[0].dtype == nd.out_specs[0].dtype


def recomputed(nodes, fnodes) -> dict[int, int]:
    """Folded node index -> kernels eager PyTorch launches for it on every call (module
    docstring): 1 for a recomputed node, ``ARANGE_KERNELS`` for an index tensor."""
    runs = [fn.launches for fn in fnodes]
    reach = _reaches_data(nodes, fnodes)
    shape = shape_values(nodes, fnodes)
    out: dict[int, int] = {}
    for i, (nd, fn) in enumerate(zip(nodes, fnodes)):
        if not reach[i] or nd.domain not in _ONNX or nd.op == "Constant" or _is_view(nd):
            continue
        if any((fn.level, t) in shape for t in fn.outputs if t):
            continue
        if all(_rank(s) == 0 for s in (*nd.in_specs, *nd.out_specs)):
            continue      # Python-number arithmetic
        out[i] = 1
    runs = [r or i in out for i, r in enumerate(runs)]
    consumers: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for j, (nd, fn) in enumerate(zip(nodes, fnodes)):
        shape_like = facts(nd.domain, nd.op).shape_inputs
        for p, t in enumerate(fn.inputs):
            if t and p not in shape_like:
                consumers.setdefault((fn.level, t), []).append(j)
    for i, (nd, fn) in enumerate(zip(nodes, fnodes)):
        spec = nd.out_specs[0] if nd.out_specs else None
        if nd.status != FOLDED or nd.op != "Constant" or spec is None or spec.shape is None \
                or str(spec.dtype) not in _INT or not all(type(d) is int for d in spec.shape) \
                or prod(spec.shape) <= 1 or not fn.outputs:
            continue
        if any(runs[j] for j in consumers.get((fn.level, fn.outputs[0]), [])):
            out[i] = ARANGE_KERNELS
    return out


def kernel_bytes(fn) -> int:
    """Bytes one recomputed node's kernel moves: its outputs written, and per input at most as
    many bytes read as it writes."""
    written = sum(fn.output_bytes)
    return int(written + sum(min(b, written) for b in fn.input_bytes))
