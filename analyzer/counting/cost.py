"""The cost record and the one rule registry.

A *rule* is a pure function of a node's input and output ``TensorSpec``s, a ``RuleContext``
and the node's attributes that returns a ``Work`` (a control-flow rule: a ``Plan``): the
arithmetic it does, split by class, and (only where it differs from "read every data input
whole, write every output whole") the bytes it really moves.  The engine
(``analyzer/counting/engine.py``) turns ``Work`` into a ``Cost`` by splitting reads into
weights (constant inputs) and activations.  Rules never see hardware.

The contract, checked by ``register``::

    def rule(ins, outs, ctx, *, attr_a=<schema default>, attr_b=<schema default>) -> Work

- ``ctx`` is the third *positional* parameter, always: it is not an attribute, so it does not
  share the attributes' namespace (no ONNX attribute or JAX param can shadow it, and no
  underscore prefix is needed to keep them apart), every rule takes it the same way (a helper
  rule that calls another passes it on as ``linear.conv(ins, outs, ctx, group=g)``), and a rule
  that forgot it fails at registration rather than on the first node that reaches it.
- Attributes are keyword-only, with the op schema's defaults, and a rule declares exactly the
  attributes it reads: no ``**kwargs`` catch-all.  The engine passes a node's attributes
  filtered to the declared names (``Rule.attrs``, computed once here), so an attribute a rule
  does not read never reaches it, and ``tests/counting/test_rule_contract.py`` checks every
  declared name against the op's schema (a misspelled ``kernal_shape`` fails there instead of
  silently taking its default).

Registration is explicit and keyed by ``(domain, op_type)``; registering the same key twice
is a programming error.  What the IR must know about an op whatever rules exist (which inputs
are shape-like, whether it moves data) lives in ``analyzer.ir.ops``, not here: rules only count.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple

from analyzer.ir.ops import canonical_domain  # re-exported: one spelling rule

from analyzer.ir.graph import Graph, Node

# the costing options (analyzer.counting.engine.Options), by name only: the engine imports this
# module, not the other way round
Options = Any

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
    # which kernel the op runs as where its specs alone do not say (the prediction stage's op
    # class; counts never depend on it): "grouped" / "batch_grouped" for a JAX convolution with
    # feature_group_count / batch_group_count above 1 (its dimension numbers hide them);
    # "perm=0,2,1,3" for a Transpose (its permutation: which strides an eager view has);
    # " dn=0,3,1,2,..." after a JAX convolution's word: its dimension numbers where they are not
    # NCHW / OIHW / NCHW; " relayout=0,1" after it: its operands not in a channels-last order;
    # " gemv=0" after a JAX dot's: its matrix-vector operand; "tree=B1,..." for a JAX reduction:
    # the bytes of each round of partial results XLA's CPU backend's tree reduction writes;
    # "row=C" for a softmax over an innermost row of C; "reduction=mean" for a loss.  Words are
    # space-separated and read through ``kernel_words`` only
    kernel: str | None = None
    # the transcendentals by the function each evaluates: (function, count) pairs, counts exact
    # and summing to at most ``transcendentals`` (``by_function`` names the rest UNNAMED);
    # function names are JAX's primitives' (``FUNCTIONS``); counts never depend on the split
    functions: tuple[tuple[str, int], ...] = ()


# the functions a transcendental may be named by (JAX primitive names; an ONNX op's are its JAX
# twin's: Sigmoid evaluates ``logistic``); UNNAMED: a count whose rule does not split it
FUNCTIONS = frozenset({
    "exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "erf", "erfc", "erf_inv",
    "sqrt", "rsqrt", "cbrt", "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "asinh", "acosh", "atanh", "lgamma", "digamma", "polygamma", "zeta",
    "igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "bessel_i0e", "bessel_i1e",
    "regularized_incomplete_beta",
})
UNNAMED = "unnamed"


def by_function(functions, transcendentals: int, times: int = 1) -> tuple[tuple[str, int], ...]:
    """The full split of ``transcendentals`` (x ``times``) by function: ``functions``' pairs
    (equal names summed), and the count no pair names as ``UNNAMED``; sorted by name, no zero
    counts; () where there are none. ``ValueError`` where the pairs name an unknown function or
    count more than ``transcendentals`` (a rule's bug)."""
    out: dict[str, int] = {}
    for f, c in functions:
        if f not in FUNCTIONS:
            raise ValueError(f"unknown transcendental function {f!r}")
        out[f] = out.get(f, 0) + int(c)
    rest = int(transcendentals) - sum(out.values())
    if rest < 0:
        raise ValueError(f"functions {functions!r} count more than {transcendentals} transcendentals")
    if rest:
        out[UNNAMED] = rest
    return tuple((f, c * times) for f, c in sorted(out.items()) if c)


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
    """What a control-flow rule (io "control" in ``analyzer.ir.ops``) returns: which sub-graphs run and how often.

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
    work: Work = Work()  # noqa: RUF009  (Work is an immutable NamedTuple: one shared default is safe)
    note: str | None = None
    work_of: tuple[tuple[object, int], ...] = ()
    estimate: bool = False  # as Work.estimate (a loop that may stop early: an upper bound)


@dataclass(frozen=True, slots=True)
class RuleContext:
    """What a rule may know besides its node's specs and attributes.

    ``opset``: the model's opset for the node's domain (a graph without opset information,
    a jaxpr, gets a very large number: the newest semantics).  ``options``: the costing
    options (``engine.Options``: ``loop_trips``, ``causal``).  Control-flow rules also get
    ``values`` (the known constant value of each input, None where unknown), ``graph`` (the
    graph holding the node) and ``node``; the rules of ``value_rules.VALUE_RULES`` get ``values``;
    for other rules these are empty."""

    opset: int
    options: "Options"
    values: tuple[Any, ...] = ()
    graph: "Graph | None" = None
    node: "Node | None" = None


RuleFn = Callable[..., "Work | Plan"]

_POSITIONAL = ("ins", "outs", "ctx")


def rule_attributes(fn: RuleFn) -> frozenset[str]:
    """The attribute names ``fn`` declares, after checking it follows the rule contract
    (``fn(ins, outs, ctx, *, attrs...)``, no ``*args``/``**kwargs``); ``TypeError`` if not."""
    params = list(inspect.signature(fn).parameters.values())
    head = [p.name for p in params[:3]]
    name = getattr(fn, "__qualname__", repr(fn))
    if head != list(_POSITIONAL) or any(
            p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params[:3]):
        raise TypeError(f"cost rule {name} must take (ins, outs, ctx, *, attributes...), "
                        f"not ({', '.join(str(p) for p in params)})")
    rest = params[3:]
    bad = [str(p) for p in rest if p.kind is not p.KEYWORD_ONLY]
    if bad:
        raise TypeError(f"cost rule {name}: attributes must be keyword-only and named one by "
                        f"one (no *args, **kwargs), not {', '.join(bad)}")
    return frozenset(p.name for p in rest)


@dataclass(frozen=True, slots=True)
class Rule:
    """A registered rule. ``attrs``: the attribute names ``fn`` declares (the engine passes
    only those)."""

    fn: RuleFn
    op: str
    domain: str
    attrs: frozenset[str]


RULES: dict[tuple[str, str], Rule] = {}


def register(*ops: str, domain: str = "") -> Callable[[RuleFn], RuleFn]:
    """Register ``fn`` as the rule of each op in ``ops`` (one parametrized family)."""
    dom = canonical_domain(domain)

    def deco(fn: RuleFn) -> RuleFn:
        attrs = rule_attributes(fn)
        for op in ops:
            key = (dom, op)
            if key in RULES:
                raise ValueError(f"duplicate cost rule for {dom or 'ai.onnx'}::{op}")
            RULES[key] = Rule(fn, op, dom, attrs)
        return fn

    return deco


def lookup(domain: str, op: str) -> Rule | None:
    return RULES.get((canonical_domain(domain), op))


def has_rule(domain: str, op: str) -> bool:
    """Whether opcost counts ``op`` directly (what the frontends ask before decomposing a
    function op or inlining a call: they are handed this function, they do not import it)."""
    return (canonical_domain(domain), op) in RULES
