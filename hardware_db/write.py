"""Writing a profile document (a calibrated machine) as TOML that ``hardware_db`` loads."""

from __future__ import annotations

import os
from typing import Any, Mapping


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("TOML has no NaN/inf in profiles")
        return repr(float(v))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else toml_value(k)


def to_toml(doc: Mapping[str, Any]) -> str:
    """A small TOML writer for profile documents (scalars, arrays, nested tables)."""
    lines: list[str] = []

    def table(d: Mapping[str, Any], prefix: str):
        scalars = [(k, v) for k, v in d.items() if not isinstance(v, Mapping)]
        subs = [(k, v) for k, v in d.items() if isinstance(v, Mapping) and not k.startswith("_")]
        if prefix and (scalars or not subs):
            lines.append(f"\n[{prefix}]")
        for k, v in scalars:
            if not k.startswith("_"):
                lines.append(f"{toml_key(k)} = {toml_value(v)}")
        for k, v in subs:
            table(v, f"{prefix}.{toml_key(k)}" if prefix else toml_key(k))

    lines.append("# opcost hardware profile, written by analyze hw calibrate")
    table(doc, "")
    return "\n".join(lines) + "\n"


def write_profile(doc: Mapping[str, Any], path: str | os.PathLike) -> str:
    """Write ``doc`` as TOML at ``path``; returns the path."""
    text = to_toml(doc)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return os.fspath(path)


def calibration_sources(cal: dict, head: str) -> dict[str, str]:
    """One ``[sources]`` entry per number under ``[calibration]`` (the profile schema's sources
    rule holds for calibrated numbers too): table entries name the fit that produced them, the
    rest the calibration run."""
    from hardware_db.validate import number_paths

    out = {}
    for path in number_paths({"calibration": cal}):
        parts = path.split(".")
        if len(parts) == 4 and parts[1] == "tables":
            cls, key = parts[2], parts[3]
            what = {"rows": "number of calibration rows", "fit_mape": "fit error (MAPE %) on its rows"
                    }.get(key, "fitted constant")
            out[path] = (f"{head}: {what} of the '{cls}' class, least-squares log-error fit of "
                         f"cpu_model.fit_class to its synthetic single-op models' wall-clock rows")
        else:
            out[path] = f"{head}: {_CALIBRATION_TEXTS.get(path.split('.', 1)[1], 'calibration run setting')}"
    return out


_PROBE = ("wall-clock at 1 thread / at the calibration's threads of a 12-block MatMul + LayerNorm "
          "probe (thread_state.probe_model)")
# what each calibrated number is (``calibration_sources``; table entries and run settings aside)
_CALIBRATION_TEXTS = {
    "run_overhead_us": "wall-clock of a 1-node model minus its node's cost",
    "trans_weight": ("vector FLOPs per transcendental: of calibrate_xla.TRANS_WEIGHTS, the one whose fit of "
                     "the elementwise class's rows (fused adds, GELUs, norms, softmaxes) has the lowest error"),
    "passes": "passes over the calibration rows (each row keeps its fastest)",
    "core_bw_share": ("one core's share of mem_bw (a kernel split over p cores streams at min(p x it, 1) of "
                      "mem_bw: analyzer/prediction/cpu/xla_partition.py), fitted (analyzer.measure.xla.fit.fit_share)"),
    "own_result_us": ("a 1x8x8 dot's wall-clock alone less the run overhead, less its time per link of a chain of "
                      "200 (calibrate_xla.own_result_s): what a kernel costs more as a program's result"),
    "loop_launch_us": ("a scan's time per trip, less the trip's predicted work, over the launches opcost plans a "
                       "trip (analyzer.measure.xla.rows.scan_program at two trip counts): one launch inside a loop body"),
    "program_launch_us": ("((a chain of 200 dependent 1x8x8 dots + tanh - a chain of 1) / 199 - a link's predicted "
                          "work) / the launches opcost plans a link (analyzer.measure.xla.loop_scan.launches_per_link: 2): one more kernel in a "
                          "program outside a loop; a class floor's excess over it is charged once a run"),
    "dot_trip_us": ("a YNNPACK dot's cost per trip inside a loop body, fitted with dot_loop_us on scans holding one "
                    "(analyzer.measure.xla.dot_scans)"),
    "dot_loop_us": ("a YNNPACK dot's cost once per execution of its loop, fitted with dot_trip_us on scans holding one "
                    "(analyzer.measure.xla.dot_scans)"),
    "llc_bytes": "last-level cache (sysfs cpu0 cache index of level 3)",
    "cold_weight_bw_gbs": "weight bytes / wall-clock kernel time of a 1-row MatMul whose weights are twice "
                          "the last-level cache (streamed from DRAM every run)",
    "llc_effective_bytes": "cold_cache.fit_capacity of the wall-clock of chains of 1 x 1024 @ 1024 x 512 GEMVs "
                           "holding 0.25-2x llc_bytes of weights (time per byte = h/hot + (1-h)/cold, "
                           "h = 1/(1 + (W/llc_effective_bytes)^llc_step_power))",
    "clip_epilogue_ns": "(wall-clock of a convolution + a fused Clip - without it) / output elements, "
                        "median of 4 convolutions (cpu_epilogue.pair_models)",
    "scalar_span_ns": "(wall-clock of x[1, C, 1, 1] + a rank-0 scalar - the same with a [1, 1, 1, 1] constant) / "
                      "elements, median of 3 shapes (cpu_broadcast.pair_models)",
    "channel_span_ns": "(wall-clock of x[1, C, h, w] * s[1, C, 1, 1] - the same with s[1, 1, 1, 1]) / C, median of "
                       "3 shapes (cpu_broadcast.channel_pair_models)",
    "divide_ns": "(wall-clock of Div(x, c) - Mul(x, c)) / elements, median of 4 shapes (cpu_op_rates.pair_models)",
    "clip_ns": "(wall-clock of Clip(x, 0, 6) - Relu(x)) / elements, median of 4 shapes (cpu_op_rates.pair_models)",
    "thread_speedup_passes_min": "the smallest speed-up of the thread_mode probe (wall-clock at 1 thread / "
                                 "at the calibration's threads) of those timed before each row pass "
                                 "(calibrate.time_rows)",
    "row_passes": "passes over the calibration rows (5, and up to calibrate.EXTRA_PASSES more where none "
                  "ran in the fast thread state)",
    "thread_speedup_start": f"{_PROBE}, timed at the start of the calibration",
    "thread_speedup_reorders": f"{_PROBE}, the last of those timed (up to calibrate.STATE_TRIES, until one "
                               "read fast) before the NCHWc reorders around the rows were profiled",
    "thread_speedup_cache": f"{_PROBE}, the smaller of the two timed around the effective-cache sweep (swept "
                            "again, up to calibrate.STATE_TRIES times, until both read fast)",
    "cache_bytes": "L2 cache per core (sysfs cpu0 cache index of level 2) x threads: the working-set size "
                   "of the tables' l2_gain step",
}
_CALIBRATION_TEXTS.update({
    "llc_step_power": _CALIBRATION_TEXTS["llc_effective_bytes"],
    "thread_speedup_passes_max": _CALIBRATION_TEXTS["thread_speedup_passes_min"].replace("smallest", "largest"),
    "thread_speedup_end": _CALIBRATION_TEXTS["thread_speedup_start"].replace("start", "end"),
})
