"""Text views of hardware profiles for `analyze hw list` / `analyze hw show` (formatting only)."""

from __future__ import annotations

import io
import shutil

from analyzer.report.finite_json import dumps

from analyzer.render import safe

_SHOWN_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")


def _fmt(v) -> str:
    return "—" if v is None else f"{v:g}"


# a profile field's unit, from its name's suffix: (suffix, scale to the base unit, base unit)
_FIELD_UNITS = (("tflops", 1e12, "FLOP/s"), ("_gbs", 1e9, "B/s"), ("_mb", 1e6, "B"), ("_gb", 1e9, "B"),
                ("_w", 1.0, "W"), ("_ghz", 1e9, "Hz"))


def _human(v, scale: float, unit: str) -> str:
    """A figure in its field's unit (``scale`` to the base unit) as 3 digits and a prefix
    (``19.5 TFLOP/s``, ``2.04 TB/s``, ``447 GFLOP/s``); an unknown one (None) as a dash."""
    from analyzer.render.pieces import human

    if v is None:
        return "—"
    return human(v * scale, unit) if v else f"0 {unit}"


def _field_value(key: str, v) -> str:
    """``hw show``'s value cell: a figure whose field name says its unit in human units (the
    field keeps the file's spelling); a count, a constant or a calibration figure as it is."""
    from analyzer.render.headline import human_time

    if v is None:
        return "—"
    if key.endswith("_us"):
        return human_time(v * 1e-6)
    dtype = key.rsplit(".", 1)[-1]
    for suffix, scale, unit in _FIELD_UNITS:
        if key.split(".")[0].endswith(suffix) or key.endswith(suffix):
            return _human(v, scale, "OP/s" if unit == "FLOP/s" and dtype.startswith("int") else unit)
    return _fmt(v)


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


_TEXT_COLUMNS = ("id", "kind", "name", "aliases")


def _list_cells(p) -> dict[str, str]:
    """One profile's ``hw list`` cells: text as text, figures in human units, unknowns a dash."""
    cells = {"id": p.id, "kind": p.kind, "name": p.name, "aliases": ", ".join(p.aliases[:3])}
    cells = {k: safe.cell(v) for k, v in cells.items()}
    cells["memory BW"] = _human(p.mem_bw_gbs, 1e9, "B/s")
    cells["launch"] = _field_value("overhead.launch_overhead_us", p.launch_overhead_us)
    cells.update({d: _human(p.matrix_tflops.get(d, p.vector_tflops.get(d)), 1e12,
                            "OP/s" if d.startswith("int") else "FLOP/s") for d in _SHOWN_DTYPES})
    return cells


def _list_widths(shown: list[str], rows: list[dict], cols: int) -> dict[str, int]:
    """Each shown column's width in a ``cols``-wide ``hw list``: its widest cell, but the name and
    aliases share what the others leave (aliases at most a third; a column left under 8 goes)."""
    natural = {c: max(len(c), *(len(r[c]) for r in rows)) for c in shown}
    # rich draws a column's cells with a space each side and a rule between columns; the edge
    # padding is off below 120 columns
    room = cols - 3 * (len(shown) - 1) - 2 - (2 if cols >= 120 else 0)
    room -= sum(w for c, w in natural.items() if c not in ("name", "aliases"))
    out = {c: w for c, w in natural.items() if c not in ("name", "aliases")}
    if "aliases" in shown:
        out["aliases"] = min(natural["aliases"], room // 3)
        room -= out["aliases"] + 3
    if "name" in shown:
        out["name"] = min(natural["name"], room)
    return {c: w for c, w in out.items() if c not in ("name", "aliases") or w >= min(8, natural[c])}


def render_list(profiles, fmt: str) -> str:
    if fmt == "json":
        return dumps([p.to_dict() for p in profiles], indent=2) + "\n"
    from rich import box
    from rich.table import Table

    cols = width()
    # narrower terminals give up the columns a person needs least, in this order
    shown = ["id", "kind", "name", "aliases", *_SHOWN_DTYPES, "memory BW", "launch"]
    for gone, below in (("aliases", 200), ("tf32", 170), ("int8", 150), ("fp8", 135),
                        ("launch", 120), ("name", 105), ("kind", 90)):
        if cols < below:
            shown.remove(gone)
    rows = [_list_cells(p) for p in profiles]
    widths = _list_widths(shown, rows, cols)
    shown = [c for c in shown if c in widths]
    t = Table(title="hardware profiles (dense peak per second, matrix engine, else vector)",
              box=box.SIMPLE_HEAD if cols < 120 else box.HEAVY_HEAD, pad_edge=cols >= 120)
    for col in shown:   # one line per profile: every cell whole, but a long name or alias list
        t.add_column(col, justify="left" if col in _TEXT_COLUMNS else "right", no_wrap=True,
                     width=widths[col], overflow="ellipsis")
    for r in rows:
        t.add_row(*(r[c] for c in shown))
    buf = io.StringIO()
    c = _console(buf, cols)
    c.print(t)
    c.print("— = unknown (no sourced figure); `analyze hw show ID`: every number's source.")
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
        t.add_row(safe.cell(key), _field_value(key, v), safe.cell(p.sources.get(key, "unknown" if v is None else "")))
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
