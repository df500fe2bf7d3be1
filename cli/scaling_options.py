"""The multi-device and training options of `analyze MODEL` (`--train`, `--devices`,
`--parallel` ...): declared, read and checked (a usage error exits 2), and the library calls
they make (``analyzer.scale``, the keywords of ``analyzer.analyze``).  Their output is rendered
by ``cli.scaling``."""

from __future__ import annotations

import click

from analyzer.errors import InputSpecError


_OPTIONS = [
    click.option("--train", is_flag=True, default=False,
                 help="Predict one training step: forward + backward + optimizer update, and "
                      "the memory footprint against the device (fits or not, largest batch)."),
    click.option("--optimizer", type=click.Choice(("sgd", "momentum", "adam", "adamw", "none")),
                 default=None,
                 help="With --train: the update rule (default sgd); none: forward + backward "
                      "only, no update (the time of a forward and loss.backward() between CUDA "
                      "events)."),
    click.option("--dropout", type=float, default=None, metavar="P",
                 help="With --train: dropout of probability P where PyTorch code puts nn.Dropout "
                      "(an eval export has none): on the attention probabilities (a Softmax "
                      "read by a MatMul), on each residual branch before its Add (a projection's "
                      "output), after the embedding sum (or its LayerNorm).  Each costs one "
                      "forward kernel (reads x, writes y and a 1-byte mask per element) and one "
                      "backward kernel (reads dY and the mask, writes dX); 0 places none.  "
                      "Dropout nodes of a training-mode export are priced the same way, always."),
    click.option("--devices", default=None, metavar="N[,N...]",
                 help="Device counts to predict, e.g. 1,2,4,8: step time, compute / "
                      "communication / bubble, speed-up, efficiency, Amdahl's serial share, "
                      "crossover."),
    click.option("--link", "link", default=None, metavar="ID",
                 help="Network between nodes (analyze hw list --links; default: the --node's "
                      "NIC link, else ib-fdr)."),
    click.option("--node", "node", default=None, metavar="ID",
                 help="Node design: GPUs, NVLink/NVLS and NICs per node (analyze hw list --links)."),
    click.option("--devices-per-node", "per_node", type=click.IntRange(min=1), default=1,
                 show_default=True, metavar="G", help="Devices per node over --intra-link."),
    click.option("--intra-link", "intra_link", default=None, metavar="ID",
                 help="Link inside a node (e.g. nvlink4, pcie3) when --devices-per-node > 1."),
    click.option("--parallel", type=click.Choice(("data", "tensor", "pipeline", "hybrid")),
                 default="data", show_default=True,
                 help="How the work is split over --devices. hybrid: Megatron-LM's tensor x "
                      "pipeline x data (--tensor-size T, --pipeline-size P, data-parallel "
                      "replicas = devices / (T x P))."),
    click.option("--tensor-size", "tensor_size", type=click.IntRange(min=1), default=None,
                 metavar="T", help="--parallel hybrid: tensor-parallel devices per stage "
                                   "(default 1)."),
    click.option("--pipeline-size", "pipeline_size", type=click.IntRange(min=1), default=None,
                 metavar="P", help="--parallel hybrid: pipeline stages."),
    click.option("--sequence-parallel", "sequence_parallel", is_flag=True,
                 help="Tensor parallel: Megatron's sequence parallelism (reduce-scatter + all-gather "
                      "instead of all-reduce; layer norms and dropouts split too)."),
    click.option("--collective", "algorithm", type=click.Choice(("nccl", "ring", "tree")),
                 default="nccl", show_default=True,
                 help="Collective model: nccl (fitted NCCL costs, algorithm and protocol by size), "
                      "ring or tree (closed forms; tree: a binary tree, the whole message per level)."),
    click.option("--data-parallel", "data_parallel",
                 type=click.Choice(("allreduce", "ddp", "megatron", "zero1", "zero2", "zero3")),
                 default="allreduce", show_default=True,
                 help="How data parallel syncs gradients. allreduce: the whole gradient in "
                      "--buckets equal all-reduces; ddp: PyTorch DDP (25 MiB buckets, the first "
                      "1 MiB, in reverse layer order); megatron: Megatron-LM's DDP (buckets of "
                      "max(40M, 1M x N) parameters with --overlap-backward, else one); zero1: + "
                      "optimizer state sharded (update / N, parameters all-gathered after it); "
                      "zero2: + gradients reduce-scattered; zero3 (FSDP): + parameters sharded, "
                      "all-gathered per unit before forward and backward. Memory per device in "
                      "the rows."),
    click.option("--clip-grad", "clip_grad", type=click.FloatRange(min=0), default=None,
                 metavar="NORM",
                 help="Gradient-norm clipping at NORM (0: none): a pass reading every gradient "
                      "for the global L2 norm, its all-reduce over the model-parallel ranks, a "
                      "pass scaling every gradient. Default: Megatron-LM's 1.0 with "
                      "--data-parallel megatron and --parallel tensor/pipeline/hybrid, none "
                      "otherwise."),
    click.option("--megatron-step/--no-megatron-step", "megatron_step", default=None,
                 help="Megatron-LM's own step kernels: the gradient buffer divided by the "
                      "data-parallel size, main_grad.add_ per parameter gradient (none for linear "
                      "weights: gradient-accumulation fusion), bias+GELU and "
                      "bias+dropout+residual fused in forward. Default: on where --clip-grad's "
                      "default is Megatron-LM's."),
    click.option("--zero-grad/--no-zero-grad", "zero_grad", default=None,
                 help="Zero the gradient buffer each step (a pass writing every gradient; "
                      "Megatron-LM's zero_grad_buffer). Default: on where --clip-grad's "
                      "default is Megatron's."),
    click.option("--bucket-mb", "bucket_mb", type=float, default=None, metavar="MIB",
                 help="Gradient bucket cap in MiB for --data-parallel ddp/megatron/zero1/zero2, "
                      "the unit size for zero3 (default: the framework's, above)."),
    click.option("--overlap-backward", "overlap_comm", is_flag=True,
                 help="Data parallel: a bucket's collective starts as soon as backward has "
                      "produced its gradients; only what runs past the end of backward is "
                      "exposed (zero3: gathers prefetched one unit ahead)."),
    click.option("--buckets", type=click.IntRange(min=1), default=1, show_default=True,
                 metavar="K", help="--data-parallel allreduce: equal gradient buckets "
                                   "(with --overlap-backward)."),
    click.option("--microbatches", type=click.IntRange(min=1), default=None, metavar="M",
                 help="Pipeline: micro-batches per step (default 4 x devices); step = sum of "
                      "the stages + (M-1) x the slowest, forward and backward."),
    click.option("--pipeline-split", "pipeline_split", type=click.Choice(("balanced", "even")),
                 default="balanced", show_default=True,
                 help="Pipeline stages: balanced (the contiguous split of layers whose slowest "
                      "stage is fastest, from the per-layer times) or even (Megatron-LM's: the "
                      "repeated blocks divided equally, embedding on the first stage, head on "
                      "the last)."),
    click.option("--schedule", type=click.Choice(("gpipe", "1f1b", "interleaved")),
                 default="1f1b", show_default=True,
                 help="Pipeline schedule: gpipe and 1f1b take the same step time, activations "
                      "in flight M (gpipe) or min(P, M) (1f1b); interleaved: Megatron-LM's "
                      "virtual pipeline (--virtual-stages V chunks per device, bubble "
                      "(P-1)/V stage times, V x the sends; repeated blocks divisible by P x V, "
                      "M a multiple of P)."),
    click.option("--virtual-stages", "virtual_stages", type=click.IntRange(min=1), default=None,
                 metavar="V", help="--schedule interleaved: model chunks per device."),
    click.option("--plot-scaling", "plot_scaling", default=None, metavar="FILE",
                 help="Write a speed-up / efficiency plot (.png or .svg; needs matplotlib)."),
]
NAMES = ("train", "optimizer", "dropout", "batch", "devices", "link", "node", "per_node", "intra_link", "parallel",
         "sequence_parallel", "algorithm", "data_parallel", "clip_grad", "zero_grad", "megatron_step",
         "bucket_mb", "overlap_comm", "buckets",
         "microbatches", "pipeline_split", "schedule", "plot_scaling", "tensor_size",
         "pipeline_size", "virtual_stages")


def options(f):
    """The multi-device and training options of the model command (``--batch``, which they
    share with inference, is the main command's, beside ``--dim``)."""
    for opt in reversed(_OPTIONS):
        f = opt(f)
    return f


def pop(params: dict) -> dict:
    """Take this module's options out of the command's parameters."""
    out = {k: params.pop(k) for k in NAMES}
    if out["devices"] is not None:
        try:
            out["devices"] = [int(x) for x in out["devices"].split(",") if x.strip()]
        except ValueError:
            raise InputSpecError(f"--devices '{out['devices']}': expected N[,N...], e.g. 1,2,4,8") from None
        if not out["devices"] or min(out["devices"]) < 1:
            raise InputSpecError("--devices: device counts must be >= 1")
    elif out["plot_scaling"]:
        raise InputSpecError("--plot-scaling needs --devices")
    _check_layout_flags(out)
    if out["bucket_mb"] is not None and not out["bucket_mb"] > 0:
        raise InputSpecError(f"--bucket-mb {out['bucket_mb']:g}: give a cap > 0 MiB, e.g. 25")
    if out["batch"] is not None:
        out["batch"] = parse_batch(out["batch"])
    return out


def _check_layout_flags(out: dict) -> None:
    """Flags that apply to some --parallel modes or schedules only: a usage error elsewhere."""
    par = out["parallel"]
    if out["sequence_parallel"] and par not in ("tensor", "hybrid"):
        raise InputSpecError("--sequence-parallel applies to --parallel tensor or hybrid")
    if (out["data_parallel"] not in (None, "allreduce") or out["bucket_mb"] is not None) \
            and par not in ("data", "hybrid"):
        raise InputSpecError("--data-parallel and --bucket-mb apply to --parallel data or hybrid")
    if out["pipeline_split"] not in (None, "balanced") and par not in ("pipeline", "hybrid"):
        raise InputSpecError("--pipeline-split applies to --parallel pipeline or hybrid")
    if (out["tensor_size"] is not None or out["pipeline_size"] is not None) and par != "hybrid":
        raise InputSpecError("--tensor-size and --pipeline-size apply to --parallel hybrid")
    if par == "hybrid" and out["pipeline_size"] is None and out["devices"] is not None:
        raise InputSpecError("--parallel hybrid needs --pipeline-size P (1: tensor x data only)")
    if out["schedule"] == "interleaved" and not out["virtual_stages"]:
        raise InputSpecError("--schedule interleaved needs --virtual-stages V (model chunks per "
                             "device, >= 2)")
    if out["virtual_stages"] is not None and out["schedule"] != "interleaved":
        raise InputSpecError("--virtual-stages applies to --schedule interleaved")


def parse_batch(text) -> list[int]:
    """--batch B or B1,B2,...: the batch values, each >= 1."""
    if isinstance(text, int):
        return [text]
    try:
        vals = [int(x) for x in str(text).split(",")]
    except ValueError:
        vals = []
    if not vals or min(vals) < 1:
        raise InputSpecError(f"--batch '{text}': expected B or B1,B2,... (integers >= 1), e.g. "
                             "--batch 64 or --batch 1,8,64")
    from cli.parsing import INT64_MAX

    if max(vals) > INT64_MAX:   # an ONNX dim is int64
        raise InputSpecError(f"--batch '{text}': {max(vals)} is beyond int64 (at most {INT64_MAX})")
    return vals


def one_batch(extra: dict, what: str) -> int | None:
    """The one --batch value of a command that does not sweep (``what``: its flag)."""
    b = extra["batch"]
    if b is not None and len(b) > 1:
        raise InputSpecError(f"a --batch sweep prints one row per value; it does not combine "
                             f"with {what}")
    return None if b is None else b[0]


def analysis_options(extra: dict, jax: bool) -> dict:
    """The library keywords of --train / --optimizer / --batch."""
    if extra["optimizer"] and not extra["train"]:
        raise InputSpecError("--optimizer applies to --train")
    if extra.get("dropout") is not None and not extra["train"]:
        raise InputSpecError("--dropout applies to --train")
    kw = {}
    if extra["train"]:
        kw["train"] = True
        kw["optimizer"] = extra["optimizer"] or "sgd"
        if extra.get("dropout") is not None:
            kw["dropout"] = extra["dropout"]
    if extra["batch"] is not None:
        if jax:
            raise InputSpecError("--batch applies to ONNX models; give a JAX program's batch in "
                                 "its --input shapes")
        kw["batch"] = one_batch(extra, "--train" if extra["train"] else "this command")
    return kw


def scale(model, hws, opts, extra: dict, **program):
    """``analyzer.scale`` with the command's options (``program``: a JAX function's ``args`` and
    ``kwargs``)."""
    import analyzer

    if not hws:
        raise InputSpecError("--devices needs --hw (the device to predict on)")
    return analyzer.scale(model, hws, extra["devices"], link=extra["link"],
                          parallel=extra["parallel"], batch=one_batch(extra, "--devices"),
                          train=bool(extra["train"]) or extra["parallel"] in ("data", "hybrid"),
                          optimizer=extra["optimizer"] or "sgd", per_node=extra["per_node"],
                          intra_link=extra["intra_link"], algorithm=extra["algorithm"],
                          node=extra["node"], overlap=extra["overlap_comm"], buckets=extra["buckets"],
                          data_parallel=extra["data_parallel"] or "allreduce",
                          bucket_mb=extra["bucket_mb"],
                          clip_grad="auto" if extra["clip_grad"] is None else extra["clip_grad"],
                          zero_grad=extra["zero_grad"], megatron_step=extra["megatron_step"],
                          microbatches=extra["microbatches"], schedule=extra["schedule"],
                          pipeline_split=extra["pipeline_split"] or "balanced",
                          virtual_stages=extra["virtual_stages"] or 1,
                          tensor_size=extra["tensor_size"] or 1,
                          pipeline_size=extra["pipeline_size"],
                          sequence_parallel=extra["sequence_parallel"], options=opts, **program)
