"""Which GEMMs Megatron-LM splits in a transformer (Shoeybi et al. 2019), found from a
Report's nodes and their dataflow.

The finder (``find``) works on the graph, not on names:

- A *weight GEMM* is a MatMul / Gemm / FusedMatMul whose second operand is a constant 2-D
  floating-point tensor (``[K, N]`` or, transposed, ``[N, K]``; ``N`` = the output's last dim).
- Weight GEMMs that read the same *source* (their data input, followed back through shape-only
  ops: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Cast) are *siblings* (Q, K, V; gate and
  up). From them the finder walks the dataflow forward to the next weight GEMMs. The siblings are
  *column-parallel* and the weight GEMMs it stops at (reading the walked region at their data
  input) *row-parallel* when the region closes: no node of it is a normalization, none feeds a
  graph output, and none mixes in an outside activation that carries a gradient (a residual
  stream: side inputs without a gradient, such as attention masks or rotary tables, and constants
  are allowed). The region (bias adds, head reshapes, attention scores, softmax, the activation)
  is split by the heads or the hidden columns: each device does ``1/t`` of it.
  Candidates are taken in graph order; a GEMM already row-parallel is not a column of another pair.
- The *word embedding* is the Gather with the most rows whose table is a constant 2-D float
  tensor and whose indices are a runtime tensor: vocab-parallel (its table split by rows).
  The *LM head* is an unpaired weight GEMM whose ``N`` equals the word embedding's vocabulary
  (tied or not): column-parallel over the vocabulary, its work and every node fed only by it
  (a loss over the logits) ``1/t``.
- Everything else (layer norms, residual adds, position embeddings, masks) is replicated on
  every device: factor 1.

``analyzer.scaling.tensor`` turns a found pattern into a plan for ``t`` devices.
"""

from __future__ import annotations

from dataclasses import dataclass

WEIGHT_GEMMS = frozenset({"MatMul", "Gemm", "FusedMatMul"})
SHAPE_ONLY = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Cast"})
NORMS = frozenset({"LayerNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
                   "SkipSimplifiedLayerNormalization", "RMSNormalization", "BatchNormalization",
                   "GroupNormalization", "InstanceNormalization", "LpNormalization"})
_REGION_LIMIT = 4000   # nodes walked from one sibling set before it is called unrecognised


def _floating(spec) -> bool:
    if spec is None:
        return False
    d = str(spec.dtype).lower()
    return d.startswith(("float", "bfloat", "f", "bf")) and not d.startswith("fn")


def weight_dims(node) -> tuple[int, int] | None:
    """``(K, N)`` of a weight GEMM, else None."""
    if node.op not in WEIGHT_GEMMS or 1 not in node.constant_inputs or len(node.in_specs) < 2:
        return None
    w = node.in_specs[1]
    out = node.out_specs[0] if node.out_specs else None
    if not _floating(w) or w.shape is None or len(w.shape) != 2 or out is None or not out.shape:
        return None
    a, b = w.shape
    n = out.shape[-1]
    if not all(isinstance(x, int) for x in (a, b, n)):
        return None
    if b == n:
        return a, b
    if a == n:
        return b, a
    return None


@dataclass(frozen=True)
class Pair:
    """One Megatron column -> row unit: node indices of its column GEMMs (siblings), the nodes
    split between them (``region``), its row GEMMs, and the attention heads when the region
    holds a score product ``[.., heads, s, s]`` (else None)."""

    columns: tuple[int, ...]
    region: tuple[int, ...]
    rows: tuple[int, ...]
    heads: int | None = None
    kind: str = "mlp"   # "attention" when a non-weight product (scores) is in the region


@dataclass(frozen=True)
class Pattern:
    """What ``find`` recognised (independent of the device count)."""

    pairs: tuple[Pair, ...]
    embedding: int | None           # the word embedding's Gather (vocab-parallel)
    lm_head: int | None             # the LM head's GEMM (vocab-parallel column)
    lm_region: tuple[int, ...] = ()  # nodes fed only by the LM head
    notes: tuple[str, ...] = ()

    @property
    def recognised(self) -> bool:
        return bool(self.pairs)


def _producers(nodes) -> dict[str, int]:
    out = {}
    for i, n in enumerate(nodes):
        for o in n.out_names:
            if o:
                out[o] = i
    return out


def _consumers(nodes) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        if n.status == "folded":
            continue
        for name in n.in_names:
            if name:
                out.setdefault(name, []).append(i)
    return out


def _activations(nodes, gemms: set[int]) -> set[str]:
    """Tensors that carry a learned activation (and so a gradient): the outputs of weight GEMMs
    and of embedding Gathers (a constant 2-D float table), and everything computed from them.
    Masks and tables computed from graph inputs and constants alone are not among them."""
    out: set[str] = set()
    for i, n in enumerate(nodes):
        if n.status == "folded":
            continue
        if i in gemms or _embedding(n) or any(x in out for x in n.in_names if x):
            out.update(x for x in n.out_names if x)
    return out


def _embedding(n) -> bool:
    if n.op != "Gather" or 0 not in n.constant_inputs or 1 in n.constant_inputs \
            or len(n.in_specs) < 2:
        return False
    w = n.in_specs[0]
    return _floating(w) and w.shape is not None and len(w.shape) == 2 \
        and isinstance(w.shape[0], int)


def _source(nodes, producers, i: int) -> str:
    """The data input of node i followed back through shape-only ops."""
    name = nodes[i].in_names[0]
    while name in producers:
        p = nodes[producers[name]]
        if p.op not in SHAPE_ONLY or not p.in_names:
            break
        name = p.in_names[0]
    return name


def _walk(nodes, cons, grad, outputs, gemms, start: list[int]):
    """(region, rows) from the sibling GEMMs ``start``, or why it does not close. Nodes are
    visited in graph (topological) order, so every region input is made before it is read."""
    import heapq

    region: set[int] = set()
    rows: set[int] = set()
    made = {o for s in start for o in nodes[s].out_names if o}   # tensors of siblings + region
    queue: list[int] = []
    queued = set(start)

    def push(names):
        for name in names:
            if name in outputs:
                return False
            for j in cons.get(name, ()):
                if j not in queued:
                    queued.add(j)
                    heapq.heappush(queue, j)
        return True

    if not push(made):
        return "a region reaches a graph output"
    while queue:
        j = heapq.heappop(queue)
        n = nodes[j]
        if j in gemms:
            if n.in_names[0] not in made or any(x in made for x in n.in_names[1:]):
                return "a region feeds a GEMM's weight"
            rows.add(j)
            continue
        if n.op in NORMS:
            return "a region reaches a normalization"
        const = set(n.constant_inputs)
        for k, x in enumerate(n.in_names):
            if x and k not in const and x not in made and x in grad:
                return "a region mixes in an outside activation (a residual)"
        region.add(j)
        if len(region) > _REGION_LIMIT:
            return "a region too large"
        new = [o for o in n.out_names if o and o not in made]
        made.update(new)
        if not push(new):
            return "a region reaches a graph output"
    if not rows:
        return "no row GEMM after a column"
    return sorted(region), sorted(rows)


def _heads(nodes, region) -> tuple[int | None, bool]:
    for i in region:
        n = nodes[i]
        if n.op in ("MatMul", "Einsum") and n.cost.mac_flops and not n.constant_inputs:
            out = n.out_specs[0] if n.out_specs else None
            h = out.shape[-3] if out is not None and out.shape and len(out.shape) >= 3 else None
            return (h if isinstance(h, int) else None), True
    return None, False


def find(nodes, outputs=()) -> Pattern:
    """Megatron's column / row pairs, word embedding and LM head among ``nodes`` (a Report's,
    graph order); ``outputs``: the graph's output tensor names."""
    producers, cons = _producers(nodes), _consumers(nodes)
    outputs = set(outputs)
    gemms = {i for i, n in enumerate(nodes) if n.status != "folded" and weight_dims(n)}
    grad = _activations(nodes, gemms)
    groups: dict[str, list[int]] = {}
    for i in sorted(gemms):
        groups.setdefault(_source(nodes, producers, i), []).append(i)
    pairs: list[Pair] = []
    taken: set[int] = set()
    why: dict[str, int] = {}
    for i in sorted(gemms):
        if i in taken:
            continue
        sibs = [j for j in groups[_source(nodes, producers, i)] if j not in taken]
        got = _walk(nodes, cons, grad, outputs, gemms, sibs)
        if isinstance(got, str):
            why[got] = 1
            continue
        region, rows = got
        if set(rows) & taken or set(rows) & set(sibs):
            continue
        heads, attn = _heads(nodes, region)
        pairs.append(Pair(tuple(sibs), tuple(region), tuple(rows), heads,
                          "attention" if attn else "mlp"))
        taken.update(sibs)
        taken.update(rows)
        taken.update(region)
    emb = None
    best = 0
    for i, n in enumerate(nodes):
        if n.status != "folded" and _embedding(n) and n.in_specs[0].shape[0] > best:
            emb, best = i, n.in_specs[0].shape[0]
    lm, lm_region = None, ()
    if emb is not None:
        vocab = nodes[emb].in_specs[0].shape[0]
        for i in sorted(gemms - taken, reverse=True):
            if weight_dims(nodes[i])[1] == vocab:
                lm = i
                break
    if lm is not None:   # nodes fed (through their activations) only by the LM head
        made, reg = set(x for x in nodes[lm].out_names if x), []
        for j in range(lm + 1, len(nodes)):
            n = nodes[j]
            ins = [x for k, x in enumerate(n.in_names) if x and k not in n.constant_inputs]
            if n.status != "folded" and ins and any(x in made for x in ins) \
                    and all(x in made or x not in grad for x in ins):
                reg.append(j)
                made.update(x for x in n.out_names if x)
        lm_region = tuple(reg)
    notes = []
    if not pairs:
        notes.append("no Megatron column/row pattern recognised (weight GEMMs "
                     + ("none" if not gemms else "did not pair: " + "; ".join(sorted(why)))
                     + ")")
    return Pattern(tuple(pairs), emb, lm, lm_region, tuple(notes))
