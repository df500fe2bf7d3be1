"""The backward all-reduces of a tensor plan (``analyzer.scaling.tensor``) that Megatron-LM runs
asynchronously, and the weight-gradient GEMMs they overlap.

Megatron-LM core_r0.5.0 (``megatron/core/tensor_parallel/layers.py``,
``LinearWithGradAccumulationAndAsyncCommunication.backward``): with
``async_tensor_model_parallel_allreduce`` (Megatron's default: ``--no-async-tensor-model-parallel-
allreduce`` turns it off; off with sequence parallelism, ``ModelParallelConfig.__post_init__``;
it needs ``CUDA_DEVICE_MAX_CONNECTIONS=1``), a column-parallel linear layer does not all-reduce
its input gradient through ``copy_to_tensor_model_parallel_region``: its backward computes the
input gradient, launches ``all_reduce(grad_input, async_op=True)``, then runs the weight-gradient
GEMM (``wgrad_gemm_accum_fp32`` with gradient-accumulation fusion) and the bias sum, and waits
on the all-reduce only after them. The LM head does the same (the legacy model's
``parallel_lm_logits`` passes ``async_grad_allreduce``). So the all-reduce overlaps that layer's
weight-gradient GEMM: exposed ``max(0, all-reduce - wgrad)``. One fused QKV linear in Megatron:
the column siblings that read one input (Q, K, V as separate GEMMs) count as one layer, their
weight-gradient GEMMs together. The bias sum's overlap is not counted (the exposed part is an
upper bound); the GEMM's slowdown from sharing the GPU with NCCL's kernels is not modelled.

The weight-gradient GEMM of one device: the backward rule's ``dW`` kernel (``backward_rules``)
of the node at its per-device weight (the plan's ``weights``: ``[K, N / t]``).
"""

from __future__ import annotations

from dataclasses import replace

from analyzer.ir.graph import TensorSpec


def _shard_node(node, k: int, n: int):
    """``node`` (a weight GEMM) with its weight ``[k, n]`` and its output's last dim ``n``."""
    w, o = node.in_specs[1], node.out_specs[0]
    out = TensorSpec(tuple(o.shape[:-1]) + (n,), o.dtype)
    return replace(node, in_specs=(node.in_specs[0], TensorSpec((k, n), w.dtype))
                   + tuple(node.in_specs[2:]), out_specs=(out,) + tuple(node.out_specs[1:]))


def wgrad_kernels(nodes, plan, i: int) -> list:
    """The per-device weight-gradient kernels of column GEMM ``i`` and its siblings (the
    columns of ``plan`` that read the same input)."""
    from analyzer.training.backward_rules import matmul
    from analyzer.training.grad_kernel import Ctx

    x = nodes[i].in_names[0] if nodes[i].in_names else None
    out = []
    for j in plan.columns:
        if not nodes[j].in_names or nodes[j].in_names[0] != x or j not in plan.weights:
            continue
        k, n = plan.weights[j]
        needs = (False, True) + (False,) * (len(nodes[j].in_specs) - 2)
        out += [kk for kk in (matmul(Ctx(j, _shard_node(nodes[j], k, n), needs)) or [])
                if kk.kind == "dW"]
    return out


def wgrad_seconds(nodes, plan, pred, profile) -> dict[str, float]:
    """Backward all-reduce's node name -> seconds of the weight-gradient GEMMs it overlaps on
    one device (module docstring); empty under sequence parallelism (no async all-reduce)."""
    from analyzer.training.backward_time import each_seconds

    if plan.sequence_parallel:
        return {}
    where = {n.name: i for i, n in enumerate(nodes)}
    out = {}
    for c in plan.collectives:
        i = where.get(c.node)
        if c.phase != "backward" or c.kind != "all_reduce" or i is None or i not in plan.columns:
            continue
        out[c.node] = sum(each_seconds(wgrad_kernels(nodes, plan, i), pred, profile))
    return out


def hidden(comm_s: float, wgrad_s: float) -> float:
    """Seconds of an async all-reduce of ``comm_s`` hidden under ``wgrad_s`` of GEMMs."""
    return min(comm_s, max(0.0, wgrad_s))
