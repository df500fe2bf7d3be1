"""Text views of hardware profiles for `analyze hw list` / `analyze hw show` (formatting only)."""

from __future__ import annotations

import io
import shutil

from analyzer.report.finite_json import dumps

from analyzer.render import safe

_SHOWN_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")


def _fmt(v) -> str:
    return "—" if v is None else f"{v:g}"


WIDE = 200   # a pipe without COLUMNS: one line per profile


def width() -> int:
    """The terminal's columns (``COLUMNS`` wins, as shutil reads it), else ``WIDE``; at least 60."""
    return max(shutil.get_terminal_size((WIDE, 24)).columns, 60)


def _console(buf, cols: int | None = None):
    from rich.console import Console

    return Console(file=buf, width=cols or width(), color_system=None, highlight=False)


def _numbers(tree, prefix: str):
    """(dotted path, number) for the numbers of a nested read-only map (efficiency, calibration)."""
    for key, v in tree.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            yield f"{prefix}.{key}", v
        elif hasattr(v, "items"):
            yield from _numbers(v, f"{prefix}.{key}")


def render_list(profiles, fmt: str) -> str:
    if fmt == "json":
        return dumps([p.to_dict() for p in profiles], indent=2) + "\n"
    from rich import box
    from rich.table import Table

    cols = width()
    # narrower terminals give up the columns a person needs least, in this order
    shown = ["id", "kind", "name", "aliases", *_SHOWN_DTYPES, "mem GB/s", "launch µs"]
    for gone, below in (("aliases", 170), ("tf32", 140), ("int8", 130), ("fp8", 120),
                        ("launch µs", 110), ("name", 100), ("kind", 70)):
        if cols < below:
            shown.remove(gone)
    t = Table(title="hardware profiles (dense peak TFLOP/s, matrix engine, else vector)",
              box=box.SIMPLE_HEAD if cols < 120 else box.HEAVY_HEAD)
    for col in shown:
        t.add_column(col, justify="right" if col in _SHOWN_DTYPES or " " in col else "left",
                     no_wrap=col == "id", overflow="ellipsis" if col == "name" else "fold")
    for p in profiles:
        cells = {"id": p.id, "kind": p.kind, "name": p.name, "aliases": ", ".join(p.aliases[:3]),
                 "mem GB/s": _fmt(p.mem_bw_gbs), "launch µs": _fmt(p.launch_overhead_us)}
        cells.update({d: _fmt(p.matrix_tflops.get(d, p.vector_tflops.get(d))) for d in _SHOWN_DTYPES})
        t.add_row(*(safe.cell(cells[c]) if c in ("id", "kind", "name", "aliases") else cells[c]
                    for c in shown))
    buf = io.StringIO()
    c = _console(buf, cols)
    c.print(t)
    c.print("— = unknown (no sourced figure). `analyze hw show ID` gives every number's source.")
    return buf.getvalue()


def render_show(p, fmt: str) -> str:
    if fmt == "json":
        return dumps(p.to_dict(), indent=2) + "\n"
    from rich.table import Table

    buf = io.StringIO()
    c = _console(buf)
    c.print(safe.text(f"{p.name}  (id {p.id}, {p.kind}, {p.vendor})"), markup=False)
    if p.aliases:
        c.print(safe.text(f"aliases: {', '.join(p.aliases)}"), markup=False)
    for label, value in (("family", p.family), ("default runtime", p.default_runtime)):
        if value:
            c.print(safe.text(f"{label}: {value}"), markup=False)
    if p.path:
        c.print(safe.text(f"file: {p.path}"), markup=False)
    t = Table(show_lines=False)
    t.add_column("field")
    t.add_column("value", justify="right")
    t.add_column("source", overflow="fold")
    rows = [(f"matrix_tflops.{d}", v) for d, v in p.matrix_tflops.items()]
    rows += [(f"vector_tflops.{d}", v) for d, v in p.vector_tflops.items()]
    for table, names in (("memory", ("mem_gb", "mem_bw_gbs", "onchip_mb", "npu_onchip_mb")),
                         ("interconnect", ("interconnect_gbs",)), ("overhead", ("launch_overhead_us",)),
                         ("power", ("tdp_w", "clock_ghz"))):
        rows += [(f"{table}.{n}", getattr(p, n)) for n in names]
    if p.units is not None:
        rows.append(("compute.units", p.units))
    if p.mxu_dim is not None:
        rows.append(("compute.mxu_dim", p.mxu_dim))
    for name, link in p.links.items():
        rows += [(f"links.{name}.{n}", getattr(link, n)) for n in ("gbs", "latency_us")]
    for table in ("efficiency", "calibration"):
        rows += [(key, v) for key, v in _numbers(getattr(p, table), table)]
    for key, v in rows:
        t.add_row(safe.cell(key), _fmt(v), safe.cell(p.sources.get(key, "unknown" if v is None else "")))
    c.print(t)
    if p.notes:
        c.print(safe.text(f"notes: {p.notes}"), markup=False)
    return buf.getvalue()


def render_calibration(doc, path: str, seconds: float) -> str:
    """What `analyze hw calibrate` wrote: where, the machine constants, and how to use it."""
    peak = doc.get("matrix_tflops", {}).get("fp32")
    bw = doc.get("memory", {}).get("mem_bw_gbs")
    dispatch = doc.get("overhead", {}).get("launch_overhead_us")
    cal = doc.get("calibration", {})
    if cal.get("runtime") == "xla":
        lines = [safe.text(f"wrote {path} (profile id {doc.get('id')})"),
                 f"  peak {_fmt(None if peak is None else peak * 1e3)} GFLOP/s fp32, memory "
                 f"{_fmt(bw)} GB/s, {_fmt(dispatch)} µs per kernel in a program, "
                 f"{_fmt(cal.get('run_overhead_us'))} µs per call",
                 safe.text(f"  measured in {seconds:.0f} s with JAX {cal.get('jax_version', '?')} (XLA CPU, "
                           f"{cal.get('threads', '?')} cores, async dispatch off)"),
                 safe.text(f"use it: analyze model.py:fn --input x=f32[1,784] --hw {path}   (predicts runtime xla)")]
        return "\n".join(lines) + "\n"
    lines = [safe.text(f"wrote {path} (profile id {doc.get('id')})"),
             f"  peak {_fmt(None if peak is None else peak * 1e3)} GFLOP/s fp32, memory "
             f"{_fmt(bw)} GB/s, dispatch {_fmt(dispatch)} µs per node",
             f"  measured in {seconds:.0f} s with onnxruntime {cal.get('onnxruntime_version', '?')}"
             f" at {cal.get('threads', '?')} threads",
             safe.text(f"use it: analyze model.onnx --hw {path}   (add --measure to compare with a run)")]
    cap, llc = cal.get("llc_effective_bytes"), cal.get("llc_bytes")
    if cap:   # (cpu_cold: the share of a model's weights read from DRAM each run)
        lines.insert(2, f"  weights: a run that moves {cap / 1e6:.1f} MB (its weights and the activations it "
                        "writes) keeps half its weights cached"
                        + (f" (sysfs last-level cache {llc / 1e6:.1f} MB)" if llc else ""))
    lines += [safe.text(f"  warning: {w}") for w in doc.get("_warnings", ())]
    return "\n".join(lines) + "\n"
