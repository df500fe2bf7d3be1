"""Shared data for tests/hardware: the shipped profile files, a valid user profile, and helpers that
write a profile to a temporary folder and return the one-line error it raises."""

from __future__ import annotations

from pathlib import Path

import pytest

import hardware_db
from analyzer.errors import HardwareError

REPO = Path(__file__).resolve().parents[2]
PROFILE_FILES = sorted(hardware_db.PROFILE_DIR.glob("*.toml"))
SCALARS = ("mem_gb", "mem_bw_gbs", "onchip_mb", "npu_onchip_mb", "interconnect_gbs", "launch_overhead_us", "tdp_w", "clock_ghz",
           "sustained_clock_ghz", "boost_window_s", "fp32_datapath_factor", "mxu_dim")
SCALAR_PATH = {
    "mem_gb": "memory.mem_gb",
    "mem_bw_gbs": "memory.mem_bw_gbs",
    "onchip_mb": "memory.onchip_mb",
    "npu_onchip_mb": "memory.npu_onchip_mb",
    "interconnect_gbs": "interconnect.interconnect_gbs",
    "launch_overhead_us": "overhead.launch_overhead_us",
    "tdp_w": "power.tdp_w",
    "clock_ghz": "power.clock_ghz",
    "sustained_clock_ghz": "power.sustained_clock_ghz",
    "boost_window_s": "power.boost_window_s",
    "fp32_datapath_factor": "compute.fp32_datapath_factor",
    "mxu_dim": "compute.mxu_dim",
}


USER_TOML = """\
schema_version = 1
id = "my-npu"
name = "My NPU"
vendor = "Me"
kind = "npu"
aliases = ["mine"]

[matrix_tflops]
int8 = 10.0

[vector_tflops]
fp16 = 1

[memory]
mem_bw_gbs = 50.0

[sources]
"matrix_tflops.int8" = "vendor brief p.3"
"vector_tflops.fp16" = "vendor brief p.3"
"memory.mem_bw_gbs" = "LPDDR5 x32 @ 6400 MT/s, derived"
"""


def write(tmp_path: Path, text: str, name: str = "hw.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def load_error(tmp_path, text) -> str:
    """The message of the HardwareError that loading ``text`` raises: one line, starting with the file."""
    p = write(tmp_path, text)
    with pytest.raises(HardwareError) as info:
        hardware_db.load_file(p)
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert msg.startswith(str(p)), msg  # names the file
    return msg


# USER_TOML with every optional section; a calibrated profile as `analyze hw calibrate` would write it.
SECTIONS = """\
[compute]
units = 16
unit_name = "core"

[links.pcie]
kind = "pcie"
gbs = 64.0
latency_us = 1.5

[links.eth]
kind = "ethernet"

[efficiency]
matmul = 0.75

[efficiency.conv]
int8 = 0.5

[calibration]
measured_on = "2025-06-01"
runtime = "onnxruntime"
host = "bench-7"

[calibration.tables.matmul]
int8 = 0.71
method = "median of 20 runs"

"""
SECTION_SOURCES = """\
"compute.units" = "vendor brief p.2"
"links.pcie.gbs" = "PCIe 4.0 x16, both directions"
"links.pcie.latency_us" = "measured ping-pong"
"efficiency.matmul" = "calibration run 2025-06-01"
"efficiency.conv.int8" = "calibration run 2025-06-01"
"calibration.tables.matmul.int8" = "calibration run 2025-06-01"
"""
SECTIONS_TOML = (USER_TOML.replace('kind = "npu"\n', 'kind = "npu"\nfamily = "acme-npu"\ndefault_runtime = "onnxruntime"\n')
                 .replace("[sources]\n", SECTIONS + "[sources]\n") + SECTION_SOURCES)
