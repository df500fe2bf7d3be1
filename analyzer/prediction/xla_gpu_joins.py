"""XLA GPU's fusions into matrix kernels that the ``xla`` plan applies on a GPU profile
(``fusion.plan`` with ``fold_transposes``, after its loop/input fusion; the search's fast path
replays the same joins, ``search.fastpath.kernel_cache``):

- **cuDNN fused convolution**: XLA's GPU compiler rewrites a convolution followed by a scale,
  a per-channel bias add, a side-input add and a ReLU into one cuDNN
  ``convBiasActivationForward`` custom call (``CudnnFusedConvRewriter``,
  ``xla/service/gpu/transforms/cudnn_fused_conv_rewriter.cc``); constant factors (an inference
  batch norm's closed-over statistics, scale and shift) are folded into the filter and the
  bias first.  Planned: the kernel that is a convolution's only reader joins the convolution
  when each of its members, in graph order, is (a) computed from constants only, (b) a
  broadcast of a non-constant tensor (a bias), or (c) on the chain from the convolution's
  result with one chain input: a ``sub`` / ``mul`` / ``div`` / ``max`` (ReLU's ``max(x, 0)``)
  whose other inputs are constants, or an ``add`` whose other input is a constant, a bias
  broadcast or, once per kernel, any other tensor (the side input); and only a chain member's
  result leaves the kernel.  A constant is one of the compiled program (``compiled_constants``):
  an immediate, a closed-over array, an ONNX initializer; weights passed as jit arguments
  (``params_argnums``) are runtime inputs XLA cannot fold, so a per-channel scale or shift made
  from them is no cuDNN epilogue (cuDNN's scale factors are scalars) while their bias broadcast
  is.  An inference batch norm + ReLU after a convolution is one kernel with it when its
  statistics are closed over; with them as arguments, or in a training batch norm (statistics
  computed in the program), or in an epilogue that also makes a ReLU mask for the backward
  pass, it is a kernel apart.
- **M = 1 dot**: a dot one of whose operands has no dimension of size > 1 besides the
  contracted and batch ones (``gemv``: a matrix-vector product, e.g. a Dense layer at batch 1)
  is a reduction in XLA's GPU HLO (a ``kInput`` reduction fusion, not a GEMM), and, as every
  reduction fusion, takes in its elementwise producers as an operand prologue.  Planned: the
  kernel producing a ``gemv`` dot's operand joins the dot when all its members are
  elementwise, activation or movement nodes (no reduction) and the dot is the only reader of
  what leaves that kernel.

Either kernel is priced as its matrix member (``kernel_rows.fused_row``: the heaviest member's
class and view), launching once and moving the members' bytes less the intermediates
(``fusion_bytes``): the matrix kernel reads the producer's inputs instead of its result, or
writes the epilogue's result instead of its own.  Every join is tested for a cycle of the
kernel graph (``fusion_legality.Joins``).  Not planned: the GEMM prologues and split-K
reductions XLA's Triton GEMM fusions add at M > 1 (their tiles come from the autotuner), the
Triton softmax / layer-norm fusions that take in a dot.
"""

from __future__ import annotations

# op classes of a convolution (``efficiency.op_classes``) whose epilogue cuDNN fuses
CONV_CLASSES = frozenset({"conv", "conv_dw", "conv_1x1", "conv1d", "conv_grouped", "conv_batch_grouped",
                          "conv_simt", "conv3_simt", "conv_stem"})
# op classes a ``gemv`` dot's prologue kernel may hold (elementwise, no reduction)
PROLOGUE_CLASSES = frozenset({"elementwise", "activation", "swish", "movement", "view"})
# an epilogue member's kind by op name (JAX primitive or ONNX op)
_KIND = {"sub": "sub", "Sub": "sub", "mul": "mul", "Mul": "mul", "div": "div", "Div": "div",
         "max": "max", "Max": "max", "Relu": "max", "add": "add", "Add": "add", "add_any": "add",
         "broadcast_in_dim": "bcast", "Expand": "bcast"}


def compiled_constants(fn) -> frozenset[int]:
    """The input positions of ``fn`` (a ``fusion.FusionNode``) that hold constants of the
    compiled program: of a JAX node, the closed-over arrays (named with the JAX frontend's
    ``CONST_PREFIX``; weights in ``params_argnums`` are jit arguments, runtime inputs); of an
    ONNX node, every ``constant_inputs`` position (initializers)."""
    if fn.domain != "jax":
        return fn.constant_inputs
    from analyzer.frontends.jaxpr.load import CONST_PREFIX
    return frozenset(p for p in fn.constant_inputs if fn.inputs[p].startswith(CONST_PREFIX))


def node_role(op: str, op_class: str, launches: bool, fusible: bool, gemv: bool, inputs, constant_inputs) -> tuple:
    """(kind, prologue, constant positions) of one node: kind ``conv``, ``gemv`` or an epilogue
    kind (``_KIND``) for a node that launches, else ''; prologue: it may be a member of a
    ``gemv`` dot's prologue kernel; the input positions that hold constants of the compiled
    program (``constant_inputs``: ``compiled_constants``) or are omitted."""
    consts = frozenset(constant_inputs) | frozenset(p for p, t in enumerate(inputs) if not t)
    if not launches:
        return "", False, consts
    kind = "conv" if op_class in CONV_CLASSES else "gemv" if gemv else _KIND.get(op, "") if fusible else ""
    return kind, fusible and op_class in PROLOGUE_CLASSES, consts


class _Groups:
    """The members of each group of ``joins`` (a ``fusion_legality.Joins``), kept as it joins."""

    def __init__(self, joins, n: int):
        self.joins = joins
        self.of: dict[int, list[int]] = {}
        for j in range(n):
            self.of.setdefault(joins.find(j), []).append(j)

    def members(self, j: int) -> list[int]:
        return self.of[self.joins.find(j)]

    def join(self, a: int, b: int) -> None:
        ra, rb = self.joins.find(a), self.joins.find(b)
        if ra != rb and self.joins.join(a, b):
            self.of[self.joins.find(a)] = sorted(self.of.pop(ra) + self.of.pop(rb))


def join(joins, roles, inputs, src, readers) -> None:
    """The joins on ``joins`` (module docstring): per node ``roles[j]`` (``node_role``) and its
    input tensor names ``inputs[j]``; ``src(j, t)``: the launching node that makes tensor ``t``
    read by node ``j`` (views that launch nothing looked through; None: a program input or
    constant); ``readers(i)``: (the nodes reading node ``i``'s outputs, views looked through;
    whether one of them is a program output)."""
    n = len(roles)
    kinds = [r[0] for r in roles]
    if "conv" not in kinds and "gemv" not in kinds:
        return
    groups = _Groups(joins, n)
    for c in range(n):
        if kinds[c] == "conv":
            e = _epilogue(c, groups, roles, inputs, src, readers)
            if e is not None:
                groups.join(c, e)
    for d in range(n):
        if kinds[d] == "gemv":
            for p in _prologues(d, groups, roles, inputs, src, readers):
                groups.join(p, d)


def _epilogue(c: int, groups, roles, inputs, src, readers) -> int | None:
    """The node whose kernel joins convolution ``c`` as its cuDNN epilogue, or None."""
    rs, out = readers(c)
    if out or len(set(rs)) != 1:
        return None
    e = rs[0]
    ms = groups.members(e)
    chain = {c}
    if not _chain_ok(ms, chain, roles, inputs, src):
        return None
    inside = set(ms)
    leaving = [u for u in ms if _leaves(u, inside, readers)]
    return e if len(leaving) == 1 and leaving[0] in chain else None


def _chain_ok(ms, chain: set, roles, inputs, src) -> bool:
    """Whether members ``ms`` (graph order) are constants, bias broadcasts or chain members
    from ``chain`` (which gains the chain members), as ``_epilogue`` takes them."""
    const, bias, side = set(), set(), False
    for u in ms:
        kind, _, consts = roles[u]
        cls = [("k" if p in consts else "a" if (i := src(u, t)) in chain else "k" if i in const
                else "b" if i in bias else "o") for p, t in enumerate(inputs[u])]
        rest = [x for x in cls if x != "a"]
        if len(rest) == len(cls):   # not on the chain
            if all(x == "k" for x in cls):
                const.add(u)
            elif kind == "bcast" and cls == ["o"]:
                bias.add(u)
            else:
                return False
            continue
        if len(cls) - len(rest) > 1:
            return False
        if kind == "add" and rest.count("o") == 1 and not side:
            side = True
        elif not (kind in ("sub", "mul", "div", "max", "add") and all(x == "k" or (x == "b" and kind == "add")
                                                                      for x in rest)):
            return False
        chain.add(u)
    return True


def _leaves(u: int, inside: set, readers) -> bool:
    rs, out = readers(u)
    return out or any(r not in inside for r in rs)


def _prologues(d: int, groups, roles, inputs, src, readers) -> list[int]:
    """The producers whose kernels join ``gemv`` dot ``d`` as its operand prologue."""
    out = []
    for t in inputs[d][:2]:
        p = src(d, t) if t else None
        if p is None or not roles[p][1]:
            continue
        ms = groups.members(p)
        if d in ms or not all(roles[u][1] for u in ms):
            continue
        inside = set(ms) | {d}
        if not any(_leaves(u, inside, readers) for u in ms):
            out.append(p)
    return out
