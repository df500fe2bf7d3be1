"""Options: everything about one analysis that is not the model (nor the hardware to predict on).

One frozen ``Options`` value travels through the library.  ``analyze``, ``analyze_jax`` and
``sweep`` take it as ``options=`` and/or build it from their keywords (``build``: keywords
override the fields of ``options``); each stage reads the subset it needs: the frontends
``inputs``/``dims``/``values`` (ONNX) or ``params_argnums``/``report_name`` (JAX), counting
``counting()`` (``loop_trips``, ``causal``), prediction ``precision``, ``overlap`` and ``l2``.

    opts = analyzer.Options(dims={"batch": 8}, precision="bf16")
    analyzer.analyze("m.onnx", "h100", options=opts)
    analyzer.analyze("m.onnx", "h100", options=opts, causal=True)   # a keyword overrides a field
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from analyzer.errors import Hint, InputSpecError

if TYPE_CHECKING:
    from analyzer.counting import engine


@dataclass(frozen=True, slots=True)
class Options:
    """How to analyse a model (frozen; ``dataclasses.replace`` gives a changed copy).

    ``inputs``: ONNX input shapes, ``{"x": (1, 3, 224, 224)}`` or ``{"x": "1x3x224x224"}``.
    ``dims``: ``{"batch": 8}`` binds symbolic dims (ONNX).
    ``values``: ``{"axes": [1]}`` makes graph inputs constants, for inputs whose value decides
    shapes (ONNX).
    ``precision``: deploy precision for predictions (fp32, tf32, bf16, fp16, fp8, int8); None:
    the model's own dtypes under its framework's defaults (PyTorch on an NVIDIA GPU: fp32
    convolutions in TF32); "fp32": every product on the FMA units (``allow_tf32`` off).
    ``overlap``: per-layer ``max(compute, memory)`` (True) or seed 003's sum (False).
    ``loop_trips``: trip count of Loop/while bodies whose count is not a constant.
    ``causal``: fused attention ops are costed as causal kernels (they skip the masked half).
    ``params_argnums``: JAX: positions (or parameter names) of the args that are weights.
    ``report_name``: JAX: the report's model path (default: the function's name).
    ``runtime``: what runs the model (``kernel``, ``eager``, ``onnxruntime``, ``xla``): which
    nodes fuse, what each kernel pays to launch or dispatch, and which time is predicted
    (``analyzer.prediction.runtimes``); None: xla for a JAX program, else the profile's default.
    ``batch``: ONNX: the global batch (dim 0 of every graph input; the shapes a static export
    fixed at its own batch follow: ``analyzer.frontends.onnx.batch``); ``analyzer.sweep`` takes
    a list of them (one point each).
    ``train``: add one training step (forward + backward + optimizer update: counts, times per
    profile, memory fit; ``analyzer.training.step``). ``optimizer``: sgd (default), momentum,
    adam, adamw, none (forward + backward only, no update).  ``dropout``: with ``train``, the
    probability of the dropouts placed where PyTorch code conventionally puts ``nn.Dropout``
    (attention probabilities, residual branches, the embedding output:
    ``analyzer.training.dropout``), one forward and one backward kernel each; None: none (a
    training-mode export's own Dropout nodes are honoured either way).
    ``l2``: the L2 state each GPU kernel starts in, part of the time predicted
    (``analyzer.prediction.l2_state``): "warm" (None, the default) finds in the L2 what the kernel
    before it left there (a kernel inside a model, an op re-run back to back); "cold" has the L2
    flushed before each kernel, every byte from DRAM (a single-op benchmark with a flush: Triton's
    ``do_bench``, nvbench).  GPU kernels only: other kinds warn and keep their own terms.
    ``host``: whose per-op host figures the ``eager`` runtime charges (a name of
    ``analyzer.prediction.runtimes.EAGER_HOSTS``): None, the default "llmcompass-a100"
    (LLMCompass's A100 host: 21 us per matrix op, 12 us other); "torch2.11-h200" (the H200
    host with torch 2.11, fitted on its whole models: 42 us per convolution, 28 us per other
    matrix op, 10 us other, backward kernels 2.25 x; and under ``eager-op`` its per-call
    medians, ``runtimes.H200_OP_CALL_US``).  ONNX only: ``analyze_jax`` refuses it
    (``refuse_host_for_jax``).

    Mappings are copied when an Options is made (a caller's later change does not reach it);
    treat them as read-only.
    """

    inputs: Mapping[str, Any] | None = None
    dims: Mapping[str, int] | None = None
    values: Mapping[str, Any] | None = None
    precision: str | None = None
    overlap: bool = True
    loop_trips: int | None = None
    causal: bool = False
    params_argnums: Any = None
    report_name: str | None = None
    runtime: str | None = None
    batch: int | None = None
    train: bool | None = None
    optimizer: str | None = None
    dropout: float | None = None
    l2: str | None = None
    host: str | None = None

    def __post_init__(self) -> None:
        for name in ("inputs", "dims", "values"):
            if (v := getattr(self, name)) is not None:
                object.__setattr__(self, name, dict(v))
        check_l2(self.l2)
        if self.host is not None and self.host not in EAGER_HOST_NAMES:
            raise InputSpecError(f"unknown host '{self.host}' for {{host}}; choose from "
                                 f"{', '.join(EAGER_HOST_NAMES)}", hints=(Hint("host"),))

    def counting(self) -> "engine.Options":
        """The subset counting needs (``analyzer.counting.engine.Options``)."""
        from analyzer.counting.engine import Options as CountingOptions

        return CountingOptions(loop_trips=self.loop_trips, causal=self.causal)


def refuse_host_for_jax(options: Options | None) -> None:
    """Raises ``InputSpecError`` naming ``host`` where ``options`` sets it for a JAX program
    (``analyze_jax``). The host tables (``EAGER_HOST_NAMES``) are eager PyTorch's per-op host
    dispatch, fitted on PyTorch runs; a JAX program runs under XLA unless a runtime is asked, and
    even under ``eager`` its prediction keeps the default table. Refused, not ignored: a host that
    changed nothing would read as a prediction made with it."""
    if options is not None and options.host is not None:
        raise InputSpecError("{host} does not apply to a JAX program: the host tables are eager PyTorch's per-op "
                             "dispatch (a PyTorch export's ONNX model under the eager runtime); leave it unset",
                             hints=(Hint("host", options.host),))


def check_l2(state: str | None) -> str:
    """``state`` as one of ``L2_STATES`` (None: "warm"); raises ``InputSpecError`` naming the
    choices for anything else."""
    if state is None:
        return "warm"
    if state not in L2_STATES:
        raise InputSpecError(f"unknown L2 state {state!r} for {{l2}}; choose from {', '.join(L2_STATES)} (warm: "
                             "a kernel finds its inputs in the L2 where they fit; cold: the L2 flushed "
                             "before each kernel)", hints=(Hint("l2"),))
    return state


FIELDS = tuple(f.name for f in fields(Options))
# the fields each entry point takes as keywords
ONNX_KEYWORDS = ("inputs", "dims", "values", "precision", "overlap", "loop_trips", "causal",
                 "runtime", "batch", "train", "optimizer", "dropout", "l2", "host")
JAX_KEYWORDS = ("precision", "overlap", "loop_trips", "causal", "params_argnums", "report_name",
                "runtime")
# the hosts whose per-op figures the eager stream has (``Options.host``; their tables:
# ``analyzer.prediction.runtimes.EAGER_HOSTS``, the first the default)
EAGER_HOST_NAMES = ("llmcompass-a100", "torch2.11-h200")
# the L2 states a GPU kernel may start in (``Options.l2``; ``analyzer.prediction.l2_state``)
L2_STATES = ("warm", "cold")
# Options fields a JAX program takes through ``options=`` only (a keyword ``train=`` or ``l2=`` is the
# traced function's own, as it always was)
JAX_OPTIONS_ONLY = ("train", "optimizer", "l2")
_DEFAULT = Options()


def build(entry: str, options: Options | None, keywords: Mapping[str, Any],
          valid: Iterable[str]) -> Options:
    """``options`` (default: ``Options()``) with ``keywords`` overriding its fields, for the
    entry point named ``entry``.

    Raises ``TypeError`` naming the valid keywords for a keyword not in ``valid``, and for a
    field of ``options`` set (not its default) that ``entry`` does not use (never ignored
    silently)."""
    valid = tuple(valid)
    if options is not None and not isinstance(options, Options):
        raise TypeError(f"{entry}() options must be an analyzer.Options, not "
                        f"{type(options).__name__}")
    unknown = [k for k in keywords if k not in valid]
    if unknown:
        raise TypeError(f"{entry}() got an unexpected keyword argument '{unknown[0]}'; "
                        f"valid keywords: {', '.join(valid)}, options")
    base = options or _DEFAULT
    # the fields one entry point does not use all default to None
    unused = [f for f in FIELDS if f not in valid and getattr(base, f) is not None]
    if unused:
        raise TypeError(f"{entry}() does not use Options.{unused[0]} "
                        f"(it uses {', '.join(valid)})")
    return replace(base, **keywords) if keywords else base
