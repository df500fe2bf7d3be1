"""XLA's own GPU kernels take their own classes under the ``xla`` runtime (``op_classes.XLA_CLASS``).

XLA compiles a JAX program's elementwise chains into loop fusions, its reductions, norms and
softmaxes into reduction or Triton row fusions, and its dots into Triton GEMM fusions or cuBLAS
calls.  Their fixed cost and small-size rates are not PyTorch's: on the lent H200 (jax 0.11.2)
a one-block loop fusion took 0.80-0.86 us of kernel time where PyTorch's vectorized add took
about 1.0 us, a single-block reduction 0.96 us, a small Triton GEMM 1.0-1.4 us against the 2.9 us
floor the cuBLAS set carries from graph replays (the measurement and the fit: ``bench/xla_sets.py``).

A fusion XLA builds around a reduction is a reduction fusion (its emitter is the reduction's: one
block per row or tile, the elementwise members computed inline), whatever member is heaviest: a
layer norm written in ``jax.numpy`` (two means, a subtract, a square, an rsqrt, a scale) is one
``fusion`` kernel of XLA's row-reduction kind on the H200, not a loop fusion.  So a kernel whose
heaviest member is a loop op but which has a reduction member (``REDUCING``) takes ``xla_reduce``.

``xla_classes`` moves each kernel's class code to its XLA class (``XLA_CLASS``) when the runtime's
fusion policy is ``xla`` and every profile lowered together is a GPU (``lowering.fold_transposes``'
condition: the XLA GPU plan).  A family whose file has no set for an XLA class takes the class it
falls back to (``CLASS_FALLBACK``: ``xla_loop`` -> ``elementwise`` ...), so a GPU without XLA
measurements predicts exactly as before the classes existed; the class name in ``--explain`` says
which kernel it is either way.
"""

from __future__ import annotations

from analyzer.prediction.efficiency.op_classes import CLASS_CODE, XLA_CLASS

# class code -> its XLA class's code (codes of classes XLA_CLASS leaves alone map to themselves)
_XLA_CODE = {CLASS_CODE[a]: CLASS_CODE[b] for a, b in XLA_CLASS.items()}
# member classes that make a fusion a reduction fusion, and the XLA classes such a kernel leaves
REDUCING = frozenset(("reduce", "norm", "softmax", "softmax_block", "pooling"))
_LOOP_CODES = frozenset(CLASS_CODE[c] for c in ("xla_loop", "xla_act"))
_REDUCE_CODE = CLASS_CODE["xla_reduce"]


def applies(fusion_policy: str, gpu_only: bool) -> bool:
    """Whether a lowering moves its kernels to XLA's classes: the ``xla`` fusion policy on GPU
    profiles only (``gpu_only``: ``lowering.fold_transposes(profiles)``)."""
    return fusion_policy == "xla" and gpu_only


def xla_code(code: int, member_classes) -> int:
    """One kernel's class code under ``xla_classes``: its XLA class, ``xla_reduce`` for a loop
    class with a reduction among ``member_classes`` (the members' op class names)."""
    out = _XLA_CODE.get(int(code), int(code))
    if out in _LOOP_CODES and any(c in REDUCING for c in member_classes):
        return _REDUCE_CODE
    return out


def xla_classes(cls_l: tuple, fusion_policy: str, gpu_only: bool, members, fnodes) -> tuple:
    """The kernels' class codes, each moved to its XLA class (``xla_code``) where ``applies``;
    ``members``: each kernel's node indices, ``fnodes``: the ``fusion.FusionNode`` of each node."""
    if not applies(fusion_policy, gpu_only):
        return cls_l
    return tuple(xla_code(c, [fnodes[i].op_class for i in ms]) for c, ms in zip(cls_l, members))

