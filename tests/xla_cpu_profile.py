"""A calibrated CPU profile for the xla runtime's launch-pricing tests (``cpu.loop_launch``):
one size table per class with the given floor, the run overhead, and the optional launch figures."""

from __future__ import annotations

from hardware_db.write import calibration_sources, write_profile


def calibrated_xla_doc(floors: dict[str, float], run_us: float, *, eff: float = 1.0,
                       tflops: float = 0.5, bw_gbs: float = 38.0, pid: str = "calibrated-launch-test",
                       **figures: float | None) -> dict:
    """The profile document: one size table per class of ``floors`` (class -> floor_us) at
    e_c = e_bw = ``eff``, no ramp; fp32 peaks ``tflops`` (matrix and vector), DRAM ``bw_gbs``;
    ``figures``: ``program_launch_us`` / ``loop_launch_us`` (None: left out)."""
    table = {"e_c": eff, "e_bw": eff, "b_half_bytes": 0.0, "l2_gain": 0.0, "rows": 10, "fit_mape": 5.0}
    cal = {"measured_on": "2026-12-02", "runtime": "xla", "threads": 2, "run_overhead_us": run_us,
           "tables": {c: {**table, "floor_us": f} for c, f in floors.items()}}
    cal.update({k: v for k, v in figures.items() if v is not None})
    doc = {"schema_version": 1, "id": pid, "name": "test cpu", "vendor": "AMD",
           "kind": "cpu", "family": "x86-cpu", "default_runtime": "xla",
           "matrix_tflops": {"fp32": tflops}, "vector_tflops": {"fp32": tflops},
           "memory": {"mem_bw_gbs": bw_gbs}, "overhead": {"launch_overhead_us": 0.2},
           "sources": {"matrix_tflops.fp32": "test", "vector_tflops.fp32": "test",
                       "memory.mem_bw_gbs": "test", "overhead.launch_overhead_us": "test"},
           "calibration": cal}
    doc["sources"].update(calibration_sources(cal, "test"))
    return doc


def calibrated_xla_profile(path, floors: dict[str, float], run_us: float, **figures: float | None) -> str:
    """Write ``calibrated_xla_doc(floors, run_us, **figures)`` to ``path`` (a .toml); returns the path."""
    return write_profile(calibrated_xla_doc(floors, run_us, **figures), path)
