"""A calibrate()-shaped CPU profile document for tests (a source for every number, so that
hardware_db loads it; the real calibration takes about a minute)."""

from __future__ import annotations


def calibrated_doc(threads: int = 2) -> dict:
    from hardware_db.validate import number_paths

    doc = {
        "schema_version": 1, "id": f"calibrated-test-{threads}t",
        "name": f"test cpu ({threads} threads, calibrated)",
        "vendor": "AMD", "kind": "cpu", "family": "x86-cpu", "default_runtime": "onnxruntime",
        "matrix_tflops": {"fp32": 0.25}, "vector_tflops": {"fp32": 0.25},
        "memory": {"mem_bw_gbs": 12.5}, "overhead": {"launch_overhead_us": 1.5},
        "calibration": {"runtime": "onnxruntime", "onnxruntime_version": "1.32.0",
                        "threads": threads, "level": "default"},
    }
    doc["sources"] = {k: "measured by the test" for k in number_paths(doc)}
    doc["_rows"] = {}   # calibrate()'s measured rows: not written to TOML
    return doc


TINY_CPU_TOML = """\
schema_version = 1
id = "tiny"
name = "Tiny"
vendor = "me"
kind = "cpu"
[matrix_tflops]
fp32 = 1.0
[memory]
mem_bw_gbs = {bw}
[overhead]
launch_overhead_us = {launch}
{extra}
[sources]
"matrix_tflops.fp32" = "guess"
"memory.mem_bw_gbs" = "guess"
"overhead.launch_overhead_us" = "guess"
"""


def tiny_cpu_toml(bw="100.0", launch="5.0", extra="") -> str:
    """A minimal hand-written CPU profile (every number sourced as 'guess') for CLI/IO tests."""
    return TINY_CPU_TOML.format(bw=bw, launch=launch, extra=extra)


def gemm_table_doc(profile_id: str = "calibrated-test-2t", run_overhead_us: float | None = None,
                   rows: dict | None = None) -> dict:
    """A calibrated CPU profile document with one fitted class table (gemm) and round figures:
    0.5 TFLOP/s, 38 GB/s, 0.2 us launch; ``run_overhead_us`` adds the per-run fixed cost."""
    cal = {"measured_on": "2026-11-24", "runtime": "onnxruntime", "threads": 2,
           "tables": {"gemm": {"floor_us": 1.0, "e_c": 0.9, "e_bw": 1.2,
                               "b_half_bytes": -100.0, "rows": 29, "fit_mape": 9.5}}}
    if run_overhead_us is not None:
        cal["run_overhead_us"] = run_overhead_us
    return {
        "schema_version": 1, "id": profile_id, "name": "test cpu", "vendor": "AMD",
        "kind": "cpu", "family": "x86-cpu", "default_runtime": "onnxruntime",
        "matrix_tflops": {"fp32": 0.5}, "vector_tflops": {"fp32": 0.5},
        "memory": {"mem_bw_gbs": 38.0}, "overhead": {"launch_overhead_us": 0.2},
        "sources": {"matrix_tflops.fp32": "measured", "vector_tflops.fp32": "measured",
                    "memory.mem_bw_gbs": "measured", "overhead.launch_overhead_us": "measured"},
        "calibration": cal,
        "_rows": {} if rows is None else rows,
    }
