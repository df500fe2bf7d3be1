"""Rendering helpers for multi-device output: `analyze hw list --links` and the training and
scaling rows of `analyze MODEL --train / --devices ...` (formatting only; the library computes
every number; the options themselves are ``cli.scaling_options``)."""

from __future__ import annotations

import io
import json

from analyzer.errors import InputSpecError
from analyzer.render import safe
from analyzer.render.layout import wrap


def _fmt(v) -> str:
    return "—" if v is None else f"{v:g}"


def render_links(links, fmt: str, nodes=()) -> str:
    """The links table, then the node designs (per-node topology). JSON: one list, each entry
    with ``"type"`` link or node."""
    if fmt == "json":
        return json.dumps([{"type": "link", **l.to_dict()} for l in links]
                          + [{"type": "node", **n.to_dict()} for n in nodes], indent=2) + "\n"
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from cli.hwview import _console, width

    cols = width()
    boxed = box.SIMPLE_HEAD if cols < 120 else box.HEAVY_HEAD
    t = Table(title="interconnect links (--link ID; GB/s per direction, after line coding)",
              box=boxed)
    for col in ("id", "kind", "name", "GB/s per dir", "latency µs"):
        t.add_column(col, justify="right" if col[0].isupper() or "µs" in col else "left",
                     no_wrap=col == "id")
    for l in links:
        t.add_row(escape(l.id), escape(l.kind), escape(l.name), _fmt(l.gbs_per_direction),
                  _fmt(l.latency_us))
    buf = io.StringIO()
    con = _console(buf, cols)
    con.print(t)
    if nodes:
        # a narrow terminal gives up the node's long name first (its id names it)
        heads = ["id", *(["name"] if cols >= 150 else []), "GPUs", "link inside", "NVSwitch",
                 "NVLS", "NVLink domain", "NICs x link", "network GB/s per dir"]
        short = {"link inside": "inside", "NVLink domain": "domain", "NICs x link": "NICs",
                 "network GB/s per dir": "net GB/s"} if cols < 150 else {}
        n_t = Table(title="nodes (--node ID; per-node topology"
                    + ("; net GB/s per direction)" if short else ")"), box=boxed,
                    pad_edge=not short, padding=(0, 0) if short else (0, 1))
        for col in heads:
            head = short.get(col, col)
            n_t.add_column(head, no_wrap=col != "name", min_width=len(head) if short else None,
                           justify="right" if col in (
                "GPUs", "NVLink domain", "network GB/s per dir") else "left")
        for n in nodes:
            nic = "—" if n.nics is None else f"{n.nics} x {escape(n.nic_link)}"
            cells = {"id": escape(n.id), "name": escape(n.name), "GPUs": str(n.gpus),
                     "link inside": escape(n.intra_link), "NVSwitch": "yes" if n.nvswitch else "no",
                     "NVLS": "yes" if n.nvls else "no", "NVLink domain": str(n.nvlink_domain),
                     "NICs x link": nic, "network GB/s per dir": _fmt(n.nic_gbs)}
            n_t.add_row(*(cells[c] for c in heads))
        con.print(n_t)
    return buf.getvalue()



def _ms(s: float) -> str:
    return f"{s * 1e3:.3g}"


def _backward_lines(steps) -> list[str]:
    """How each step's backward was priced (``training.step``: the kernel plan or the ratio method)."""
    plan = [s for s in steps if s.backward_method == "kernel plan"]
    ratio = [s.hardware for s in steps if s.backward_method != "kernel plan"]
    out = []
    if plan:
        s = plan[0]
        out.append(f"backward: the {s.backward_kernels} kernels PyTorch's autograd launches"
                   + (f" ({s.backward_fallback} nodes without a rule by the FLOP/byte ratio)"
                      if s.backward_fallback else "")
                   + ("" if not ratio else f"; {', '.join(ratio)}: the FLOP/byte ratio method"))
    elif ratio:
        out.append("backward: forward kernels scaled by the FLOP/byte ratio (not a PyTorch runtime)")
    return [safe.text(x) for x in out]   # (profile ids may come from a user's file)


def render_rows(report, fmt: str, width: int | None = None) -> str:
    """Training and scaling rows after the table / markdown report ('' for other formats);
    ``width``: the terminal's columns (prose wrapped, a wide table split into column groups
    that each repeat the row's key), None: one line per row."""
    if fmt not in ("table", "markdown"):
        return ""
    lines = _rows_lines(report, fmt)
    if fmt == "markdown":
        return "".join(_md_line(x) + "\n" for x in lines)
    out = []
    for x in lines:
        if isinstance(x, _Grid):
            out += x.layout(width)
        else:   # a stage's or a collective's line keeps its indent and hangs under it
            out += wrap(x, width, "      " if x.startswith("  ") else "    ")
    return "".join(y + "\n" for y in out)


class _Row(str):
    """A markdown table row (``_grid``): as it is."""


def _md_line(x) -> str:
    """A line of the rows in markdown: table rows as they are, an indented line (a stage, a
    collective) a list item, prose escaped (names in it are data)."""
    if isinstance(x, _Row) or not x:
        return str(x)
    if x.startswith("  "):
        return "- " + safe.md_text(x.strip())
    return safe.md_text(x)


def _rows_lines(report, fmt: str) -> list[str]:
    """The training and scaling lines (``_Row``: a table row)."""
    lines: list[str] = []
    tr = report.training
    if tr is not None:
        c = tr.counts
        what = "forward + backward, no update" if c.optimizer == "none" else c.optimizer
        lines += ["", f"Training step ({what}, batch {tr.batch}): MAC FLOPs forward "
                  f"{c.forward_mac:,} + backward {c.backward_mac:,}; optimizer update "
                  f"{c.optimizer_vector + c.optimizer_transcendental:,} FLOPs, "
                  f"{c.optimizer_bytes:,} bytes"]
        head = ["hardware", "forward ms", "backward ms", "update ms", "step ms", "memory GB",
                "capacity GB", "fits", "max batch"]
        rows = [[s.hardware, _ms(s.forward_s), _ms(s.backward_s), _ms(s.optimizer_s),
                 _ms(s.step_s), f"{s.memory.total / 1e9:.3g}",
                 "—" if s.capacity_bytes is None else f"{s.capacity_bytes / 1e9:.3g}",
                 {True: "yes", False: "NO", None: "—"}[s.fits],
                 "—" if s.max_batch is None else str(s.max_batch)] for s in tr.steps]
        if tr.dropout is not None:
            d = tr.dropout
            where = ", ".join(f"{k} {v}" for k, v in d["by_where"].items()) or "none"
            lines += [f"Dropout (p={d['p']}): {d['placed']} placed ({where}); one forward "
                      "kernel each (in forward ms) and one backward kernel each (in backward ms)"]
        bn = next((s for s in tr.steps if s.bn_train), None)
        if bn is not None:
            lines += [f"BatchNorm in training mode: {bn.bn_train} BatchNorms, their training "
                      f"kernels in forward ms (rule bn-train; {bn.forward_kernels} forward launches "
                      f"on {safe.text(bn.hardware)})"]
        lines += _grid(head, rows, fmt)
        lines += [""] + _backward_lines(tr.steps)
    sc = report.scaling
    if sc is not None:
        d = sc.to_dict()
        # (link ids and notes may come from a user's links file: escaped like every name)
        lines += ["", safe.text(f"Scaling ({sc.parallel} parallel over {sc.link}; " + "; ".join(sc.notes) + ")")]
        head = ["hardware", "devices", "step ms", "compute ms", "comm ms", "exposed ms",
                "bubble ms", "bubble", "speed-up", "efficiency", "serial share", "GB/device"]
        rows = [[p.hardware, str(p.devices), _ms(p.step_s), _ms(p.compute_s),
                 _ms(p.communication_s), _ms(p.exposed_communication_s), _ms(p.bubble_s),
                 f"{p.bubble_share:.1%}", "—" if p.speedup is None else f"{p.speedup:.3g}",
                 "—" if p.efficiency is None else f"{p.efficiency:.1%}",
                 "—" if p.serial_fraction is None else f"{p.serial_fraction:.3g}",
                 "—" if not p.memory else f"{p.memory['total'] / 1e9:.3g}"]
                for p in sc.points]
        lines += _grid(head, rows, fmt)
        lines += _part_lines(sc.points, fmt)
        lines += _pass_lines(sc.points, sc.setup, fmt)
        lines += _collective_lines(sc.points, sc.setup.get("collectives") or (), fmt)
        lines += _overlap_lines(sc.setup.get("tensor_plans") or ())
        stages = _stage_lines(sc.setup.get("pipeline_plans") or ())
        lines += ([""] + stages if stages else []) + [""]   # (markdown: not a table row)
        for h, n in d["crossover_devices"].items():
            lines.append(f"{h}: communication exceeds compute from {n} devices" if n else
                         f"{h}: communication stays below compute at every device count given")
    return lines


def _part_lines(points, fmt) -> list[str]:
    """The pipeline / hybrid step's parts per row (they sum to the step)."""
    have = [p for p in points if p.parts]
    if not have:
        return []
    head = ["hardware", "devices", "compute ms", "TP comm ms", "bubble ms", "p2p ms",
            "DP exposed ms", "embedding all-reduce ms", "grad-norm all-reduce ms"]
    keys = ("compute", "tensor_comm", "bubble", "p2p", "data_parallel_exposed",
            "embedding_allreduce", "grad_norm_allreduce")
    rows = [[p.hardware, str(p.devices), *(_ms(p.parts[k]) for k in keys)] for p in have]
    return ["", "Step parts (compute + TP comm + bubble + p2p + DP exposed + embedding "
                "all-reduce + grad-norm all-reduce = step):"] + _grid(head, rows, fmt)


def _pass_lines(points, setup: dict, fmt) -> list[str]:
    """Megatron's passes over the gradients per row (``training.grad_passes``): zero, norm,
    scale and divide inside compute, the norm's all-reduce inside the exposed communication;
    on Megatron's step its main-grad adds and fused kernels (``training.megatron_step``)."""
    have = [p for p in points if p.grad_passes]
    if not have:
        return []
    gp = setup.get("grad_passes") or {}
    what = ", ".join(x for x in (
        "buffer zeroed" if gp.get("zero_grad") else "",
        f"clipped at norm {gp['clip_grad']:g}" if gp.get("clip_grad") else "",
        "Megatron's step kernels" if gp.get("megatron_step") else "") if x)
    head = ["hardware", "devices", "zero ms", "norm ms", "scale ms", "norm all-reduce ms"]
    keys = ["zero", "norm", "scale", "norm_allreduce"]
    if gp.get("megatron_step"):
        head += ["divide ms", "main-grad add ms", "fused kernels ms", "vocab-parallel ms"]
        keys += ["divide", "accumulate", "fused", "vocab_parallel"]
    rows = [[p.hardware, str(p.devices), *(_ms(p.grad_passes.get(k, 0.0)) for k in keys)]
            for p in have]
    inside = " + ".join(k for k in ("zero", "norm", "scale", "divide") if k in keys)
    extra = ("; main-grad adds in backward, the fused kernels' change (<= 0) in forward, "
             "Megatron's vocab-parallel kernels (its loss over the graph's, the embedding's masking) "
             "in both" if gp.get("megatron_step") else "")
    return ["", f"Gradient passes ({what}; {inside} inside compute{extra}, on the device "
                "that spends the most on them):"] + _grid(head, rows, fmt)


def _overlap_lines(plans) -> list[str]:
    """Tensor parallel: the part of the communication the async backward all-reduces hide under
    their weight-gradient GEMMs (in comm ms, not in exposed ms), per plan and profile."""
    out = []
    for pl in plans:
        for h, s in (pl.get("backward_allreduce_hidden_s") or {}).items():
            out.append(safe.text(f"{h}, {pl.get('devices')} devices: {s * 1e3:.3f} ms of the "
                                 "backward all-reduces hidden under the weight-gradient GEMMs "
                                 "(Megatron's async column all-reduce)"))
    return [""] + out if out else []


def _collective_lines(points, colls, fmt) -> list[str]:
    """A mesh program's communication per collective kind (per row), then each collective
    node: kind, bytes per device, group, runs and time (escaped names)."""
    from analyzer.scaling.parallel import COMM_KINDS

    have = [p for p in points if p.comm_kinds]
    if not have:
        return []
    head = ["hardware", "devices", "compute ms", *(f"{k} ms" for k in COMM_KINDS)]
    rows = [[p.hardware, str(p.devices), _ms(p.compute_s),
             *(_ms(p.comm_kinds.get(k, 0.0)) for k in COMM_KINDS)] for p in have]
    out = ["", "Step (compute + each collective kind, one after another = step):"]
    out += _grid(head, rows, fmt)
    out += ["", "Collectives (bytes per device, group of devices, runs per step):"]
    for c in colls:
        out.append(safe.text(f"  {c['name']}: {c['kind']} over {'x'.join(c['axes'])}, "
                             f"{c['bytes']:,} B, group {c['group']}, x{c['runs']}, "
                             f"{_ms(c['time_s'])} ms"))
    return out


def _stage_lines(plans) -> list[str]:
    """Each pipeline plan's stages (chunks): the nodes they run (escaped names), the device,
    times, the send; the tied embedding when there is one."""
    out = []
    for pl in plans:
        lay = (f" (tensor {pl['tensor']} x pipeline {pl['pipeline']} x data {pl['data']}"
               + (f", {pl['virtual_stages']} chunks per device" if pl["virtual_stages"] > 1
                  else "") + ")") if "tensor" in pl else ""
        out.append(safe.text(f"{pl['hardware']}, {pl['devices']} devices{lay}, "
                             f"{pl['microbatches']} micro-batches:"))
        chunked = pl.get("virtual_stages", 1) > 1
        for i, st in enumerate(pl["stages"]):
            out.append(safe.text(
                f"  {'chunk' if chunked else 'stage'} {i}"
                f"{' on device ' + str(st['device']) if chunked else ''}: "
                f"{st['first_name']} .. {st['last_name']}  forward "
                f"{_ms(st['forward_s'])} ms, backward {_ms(st['backward_s'])} ms, update "
                f"{_ms(st['update_s'])} ms, {st['params']:,} params, sends "
                f"{st['send_bytes']:,} B per batch"))
        tie = pl.get("tied_embedding")
        if tie:
            out.append(safe.text(
                f"  tied embedding {tie['table']} ({tie['elements']:,} elements): "
                + (f"gradient all-reduced between stages {tie['stages'][0]} and "
                   f"{tie['stages'][1]}, {tie['allreduce_bytes']:,} B"
                   if tie["allreduce_bytes"] else "embedding and head on one stage, no "
                   "all-reduce")))
    return out


def _grid(head, rows, fmt) -> list[str]:
    """The rows as a markdown table, or as aligned text: the hardware column on the left, the
    numbers right-aligned (``_split``: the same rows in column groups for a narrow terminal)."""
    if fmt == "markdown":
        return [_Row(x) for x in ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                + ["| " + " | ".join(r) + " |" for r in rows]]
    return [_Grid(head, rows)]


class _Grid:
    """A text table, laid out once the width is known (``layout``)."""

    def __init__(self, head: list[str], rows: list[list[str]]):
        self.head, self.rows = head, rows

    def layout(self, width: int | None) -> list[str]:
        """Aligned rows; wider than ``width``: the columns in groups, each with the key
        columns (hardware, devices) again."""
        head, rows = self.head, self.rows
        w = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
        key = 2 if len(head) > 1 and head[1] == "devices" else 1
        groups, cur = [], list(range(key))
        for i in range(key, len(head)):
            if width is not None and len(cur) > key and sum(w[j] + 2 for j in cur + [i]) - 2 > width:
                groups.append(cur)
                cur = list(range(key))
            cur.append(i)
        groups.append(cur)
        out = []
        for n, g in enumerate(groups):
            out += [""] if n else []
            for r in [head, *rows]:
                out.append("  ".join(r[j].ljust(w[j]) if j == 0 else r[j].rjust(w[j])
                                     for j in g).rstrip())
        return out


def plot(report, path: str) -> None:
    """Speed-up and efficiency against devices, one line per profile (matplotlib, lazily)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputSpecError("--plot-scaling needs matplotlib: pip install 'opcost[plot]'") from None
    sc = report.scaling
    if any(p.speedup is None for p in sc.points):
        raise InputSpecError("--plot-scaling draws speed-up against devices: a program over a "
                             "device mesh runs on its mesh's device count only, with no "
                             "one-device run to compare with")
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    by: dict[str, list] = {}
    for p in sc.points:
        by.setdefault(p.hardware, []).append(p)
    for h, pts in by.items():
        n = [p.devices for p in pts]
        a.plot(n, [p.speedup for p in pts], marker="o", label=h)
        b.plot(n, [p.efficiency for p in pts], marker="o", label=h)
    # The references: ideal speed-up S = N and ideal efficiency S/N = 1. The x axis is log2 and
    # y linear, so S = N is a curve there: drawn through every device count of the curve and a
    # geometric fill between them (one segment from (1, 1) to (top, top) would show
    # 1 + (top - 1) * log2(N) / log2(top) at N: 3.33 at N = 2 of a 1..8 curve).
    top = max(p.devices for p in sc.points)
    ns = sorted({p.devices for p in sc.points} | {top ** (i / 64) for i in range(65)})
    a.plot(ns, ns, "k:", label="linear")
    b.plot([min(ns), top], [1.0, 1.0], "k:", label="ideal")
    for ax, t in ((a, "speed-up"), (b, "parallel efficiency")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("devices")
        ax.set_title(t)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(f"{sc.parallel} parallel over {sc.link}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
