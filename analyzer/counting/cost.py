"""The cost record and the one rule registry.

A *rule* is a pure function of a node's input and output ``TensorSpec``s and its
attributes (keyword-only, with the op schema's defaults) that returns a ``Work``:
the arithmetic it does, split by class, and (only where it differs from "read
every data input whole, write every output whole") the bytes it really moves.
The engine (``analyzer/engine.py``) turns ``Work`` into a ``Cost`` by splitting
reads into weights (constant inputs) and activations.  Rules never see hardware.

Registration is explicit and keyed by ``(domain, op_type)``; registering the same
key twice is a programming error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, NamedTuple

# ONNX spells the default domain both ways.
_DOMAIN_ALIASES = {"ai.onnx": ""}


def canonical_domain(domain: str) -> str:
    return _DOMAIN_ALIASES.get(domain, domain)


class Work(NamedTuple):
    """What a rule returns: exact operation counts plus optional byte overrides.

    ``reads`` maps an input index to the bytes actually read from it (default: the
    whole tensor, for every input that is data rather than a shape-like argument);
    ``writes`` is the bytes written (default: every output whole).  ``mac_dtype``
    names the dtype the MAC array runs in when it differs from the first input's
    (integer matmuls, mixed precision).  Immutable (a NamedTuple: cheap to build
    once per node of a 100k-node graph).
    """

    mac_flops: int = 0
    vector_flops: int = 0
    transcendentals: int = 0
    reads: Mapping[int, int] | None = None
    writes: int | None = None
    mac_dtype: str | None = None
    note: str | None = None
    # input index -> parameter elements, where the tensor's element count is not the
    # parameter count (packed 4-bit weights stored as uint8 blobs)
    params: Mapping[int, int] | None = None
    # weights the op holds in its attributes rather than in input tensors (ai.onnx.ml
    # coefficients, support vectors, tree thresholds): (parameter elements, ((dtype, bytes
    # read per run), ...)); the engine adds them to params (every node: no two share them)
    # and to weight_bytes
    held: tuple[int, tuple[tuple[str, int], ...]] | None = None
    # the counts rest on an assumption the note states (an upper bound for a data-dependent
    # size, a guessed sampling count): the report lists such nodes as estimates
    estimate: bool = False


COUNT_FIELDS = (
    "params", "mac_flops", "vector_flops", "transcendentals",
    "weight_bytes", "activation_bytes_read", "activation_bytes_written",
)


class Cost(NamedTuple):
    """Exact integer counts of one node (or a sum of nodes). Supports ``+`` and ``scaled``.

    Immutable; a NamedTuple rather than a frozen dataclass because a large graph builds
    one per node and tuple construction is several times cheaper. ``+`` adds field by
    field (it never concatenates)."""

    params: int = 0
    mac_flops: int = 0
    vector_flops: int = 0
    transcendentals: int = 0
    weight_bytes: int = 0
    activation_bytes_read: int = 0
    activation_bytes_written: int = 0

    @property
    def flops(self) -> int:
        return self.mac_flops + self.vector_flops + self.transcendentals

    @property
    def bytes_moved(self) -> int:
        """Bytes that cross the memory interface: weights + activations read + written."""
        return self.weight_bytes + self.activation_bytes_read + self.activation_bytes_written

    def __add__(self, other: "Cost") -> "Cost":  # type: ignore[override]
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(*(a + b for a, b in zip(self, other)))

    def __radd__(self, other):
        if other == 0:  # lets sum() start from 0
            return self
        return NotImplemented

    def __mul__(self, other):  # a tuple would repeat itself; a Cost refuses to
        return NotImplemented

    __rmul__ = __mul__

    def scaled(self, times: int, *, params: bool = False) -> "Cost":
        """The cost of running this ``times`` times (a loop body). Params are not
        multiplied unless asked: weights exist once however often they are read."""
        return Cost(self.params * times if params else self.params, *(v * times for v in self[1:]))

    def to_dict(self) -> dict[str, int]:
        d = dict(zip(COUNT_FIELDS, self))
        d["flops"] = self.flops
        return d


assert Cost._fields == COUNT_FIELDS


@dataclass(frozen=True, slots=True)
class Plan:
    """What a control-flow rule (``io="control"``) returns: which sub-graphs run and how often.

    ``run``: ``(subgraph attribute name, times)`` pairs, each costed and scaled by ``times``.
    ``costlier_of``: sub-graph names of which only the costliest runs (an ``If`` or ``cond``
    whose predicate is not constant); the report says which one was taken.
    ``work``: the control op's own arithmetic (e.g. a loop counter), usually empty.
    ``work_of``: ``(graph, times)`` pairs whose counts (params excepted), ``times`` over, are
    this node's own work; their nodes are not listed as rows (a ``Gradient``'s backward pass,
    counted from the forward nodes it differentiates).
    """

    run: tuple[tuple[str, int], ...] = ()
    costlier_of: tuple[str, ...] = ()
    work: Work = Work()
    note: str | None = None
    work_of: tuple[tuple[object, int], ...] = ()
    estimate: bool = False  # as Work.estimate (a loop that may stop early: an upper bound)


RuleFn = Callable[..., "Work | Plan"]


@dataclass(frozen=True, slots=True)
class Rule:
    """A registered rule. ``shape_inputs``: input indices that are shape-like arguments
    (never params, never read as data). ``io``: "data" (reads inputs, writes outputs),
    "view" (a metadata change: no bytes move), "meta" (reads only metadata, writes
    its small output) or "control" (the rule returns a ``Plan`` over the node's
    sub-graphs; called with ``values=`` the known constant input values too)."""

    fn: RuleFn
    op: str
    domain: str
    shape_inputs: frozenset[int]
    io: str


RULES: dict[tuple[str, str], Rule] = {}


def register(
    *ops: str,
    domain: str = "",
    shape_inputs: Iterable[int] = (),
    io: str = "data",
) -> Callable[[RuleFn], RuleFn]:
    """Register ``fn`` as the rule of each op in ``ops`` (one parametrized family)."""
    if io not in ("data", "view", "meta", "control"):
        raise ValueError(f"io must be data, view, meta or control, not {io!r}")
    dom = canonical_domain(domain)

    def deco(fn: RuleFn) -> RuleFn:
        for op in ops:
            key = (dom, op)
            if key in RULES:
                raise ValueError(f"duplicate cost rule for {dom or 'ai.onnx'}::{op}")
            RULES[key] = Rule(fn, op, dom, frozenset(shape_inputs), io)
        return fn

    return deco


def lookup(domain: str, op: str) -> Rule | None:
    return RULES.get((canonical_domain(domain), op))
