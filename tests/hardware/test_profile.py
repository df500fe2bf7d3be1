"""hardware_db.profile: the frozen HardwareProfile (values, peak_flops, to_dict, immutability) and
spot checks of shipped figures.

Spot checks hard-code the datasheet figure beside each value (as recorded in the project's
hardware reference, hardware_specs.md); the tests do not read that reference themselves.
"""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest
from hwdb_helpers import SCALARS, SECTIONS_TOML, USER_TOML, write

import hardware_db
from analyzer.errors import HardwareError

# Spot checks: value in the file == the datasheet figure written beside it.
SPOT_CHECKS = [
    ("a100-80gb-sxm", "mem_bw_gbs", 2039.0),  # A100 80GB SXM datasheet: 2,039 GB/s HBM2e
    ("a100-80gb-sxm", ("matrix", "bf16"), 312.0),  # A100 datasheet: BF16 tensor 312 TF dense (624 sparse)
    ("a100-80gb-sxm", ("vector", "fp32"), 19.5),  # A100 datasheet: FP32 (CUDA cores) 19.5 TF
    ("a100-80gb-sxm", ("matrix", "fp64"), 19.5),  # A100 datasheet: FP64 tensor core 19.5 TF
    ("a100-40gb-sxm", "mem_bw_gbs", 1555.0),  # A100 40GB: 1,555 GB/s
    ("h100-sxm", ("matrix", "bf16"), 989.4),  # Hopper whitepaper: BF16 989.4 TF dense (1979 sparse)
    ("h100-sxm", ("matrix", "fp8"), 1978.9),  # Hopper whitepaper: FP8 1978.9 TF dense
    ("h100-sxm", "mem_bw_gbs", 3350.0),  # H100 SXM: 3.35 TB/s HBM3
    ("h100-sxm", "interconnect_gbs", 900.0),  # NVLink 4: 18 links x 25 GB/s x 2 directions
    ("h100-pcie", ("matrix", "bf16"), 756.5),  # H100 PCIe: 1513 TF sparse / 2 (derived)
    ("h200-sxm", "mem_gb", 141.0),  # H200: 141 GB HBM3e
    ("h200-sxm", "mem_bw_gbs", 4800.0),  # H200: 4.8 TB/s
    ("b200-hgx", ("matrix", "fp4"), 9000.0),  # Blackwell brief: FP4 9 PF dense (HGX B200)
    ("v100-sxm2-32gb", ("matrix", "fp16"), 125.0),  # V100 SXM2: 125 TF tensor
    ("v100-sxm2-32gb", "mem_bw_gbs", 900.0),  # V100: 900 GB/s HBM2
    ("t4", ("matrix", "int8"), 130.0),  # T4: 130 TOPS INT8
    ("t4", "tdp_w", 70.0),  # T4 datasheet: 70 W
    ("l4", "mem_bw_gbs", 300.0),  # L4: 300 GB/s GDDR6
    ("rtx-4090", "mem_bw_gbs", 1008.0),  # RTX 4090: 1,008 GB/s GDDR6X
    ("mi300x", ("matrix", "bf16"), 1307.4),  # ROCm MI300X table: BF16 1307.4 TF dense
    ("mi300x", "mem_bw_gbs", 5300.0),  # MI300X: 5.3 TB/s HBM3
    ("tpu-v4", ("matrix", "bf16"), 275.0),  # GCP TPU v4: 275 TFLOP/s bf16
    ("tpu-v5e", ("matrix", "bf16"), 197.0),  # GCP TPU v5e: 197 TFLOP/s bf16
    ("tpu-v5e", ("matrix", "int8"), 394.0),  # GCP TPU v5e: 394 TOP/s int8
    ("tpu-v5e", "mem_bw_gbs", 819.0),  # GCP TPU v5e: 819 GB/s HBM2
    ("tpu-v5p", ("matrix", "bf16"), 459.0),  # GCP TPU v5p: 459 TFLOP/s bf16
    ("tpu-v6e", ("matrix", "bf16"), 918.0),  # GCP TPU v6e: 918 TFLOP/s bf16
    ("tpu-v6e", "mem_bw_gbs", 1638.0),  # GCP TPU v6e: 1640 GB/s class (1638 in the reference)
    # HBM capacities in GiB (GCP's tables, JAX's TPU table in bytes), written in GB (1e9 bytes)
    ("tpu7x", "mem_gb", 192 * 2**30 / 1e9),  # GCP TPU7x: 'HBM capacity per chip (GiB) 192'; JAX 206e9
    ("tpu-v6e", "mem_gb", 32 * 2**30 / 1e9),  # GCP TPU7x page's table: v6e 32 GiB; JAX 34.4e9
    ("tpu-v5p", "mem_gb", 95 * 2**30 / 1e9),  # GCP TPU v5p: 'HBM capacity per chip (GiB) 95'; JAX 103e9
    ("tpu-v5e", "mem_gb", 16 * 2**30 / 1e9),  # scaling book: 'TPU v5e has 16GiB of HBM'; JAX 17.2e9
    ("tpu-v5p", "onchip_mb", 2 * 64 * 2**20 / 1e6),  # JAX's TPU table: VMEM 64 MiB per TensorCore, 2 per chip
    ("tpu-v5e", "onchip_mb", 128 * 2**20 / 1e6),  # JAX's TPU table, scaling book: VMEM 128 MiB
    ("edge-tpu", ("matrix", "int8"), 4.0),  # Coral Edge TPU: 4 TOPS INT8
    ("edge-tpu", "onchip_mb", 8.0),  # Edge TPU: 8 MB SRAM
    ("ethos-u55", ("matrix", "int8"), 0.5),  # Ethos-U55: 256 MACs x 2 x 1 GHz = 0.5 TOPS
    ("raspberry-pi-5", "mem_bw_gbs", 17.0),  # Pi 5: 32-bit LPDDR4X-4267, ~17 GB/s
    ("xeon-spr-56c", "mem_bw_gbs", 307.2),  # 8 ch x 4800 MT/s x 8 B = 307.2 GB/s (derived)
]


@pytest.mark.parametrize("pid, what, expected", SPOT_CHECKS)
def test_spot_check_against_datasheet(pid, what, expected):
    prof = hardware_db.get(pid)
    if isinstance(what, tuple):
        engine, dtype = what
        table = prof.matrix_tflops if engine == "matrix" else prof.vector_tflops
        assert table[dtype] == expected
    else:
        assert getattr(prof, what) == expected


def test_unknown_figures_are_none_not_guesses():
    assert hardware_db.get("h100-pcie").clock_ghz is None  # reference gives no H100 PCIe clock
    assert hardware_db.get("tpu-v5e").tdp_w is None  # no TDP published for v5e in the reference
    assert hardware_db.get("rtx-4090").interconnect_gbs is None  # PCIe link not confirmed
    assert hardware_db.get("h100").peak_flops("matrix", "int4") is None  # Hopper lists no INT4
    assert hardware_db.get("v100").peak_flops("matrix", "bf16") is None  # Volta has no BF16
    q8 = hardware_db.get("vision-q8")  # IP core: no vendor MAC count or clock, so no numbers at all
    assert not q8.matrix_tflops and not q8.vector_tflops and q8.mem_bw_gbs is None


def test_derived_and_uncertain_markers_are_carried_into_sources():
    assert "derived" in hardware_db.get("h100-pcie").sources["matrix_tflops.bf16"]  # 1513 / 2
    assert "uncertain" in hardware_db.get("b200").sources["memory.mem_gb"]  # 180 vs 192 GB
    assert "derived" in hardware_db.get("xeon-spr-56c").sources["memory.mem_bw_gbs"]
    assert "uncertain" in hardware_db.get("a100").sources["overhead.launch_overhead_us"]
    assert "another NVIDIA GPU" in hardware_db.get("a100").sources["overhead.launch_overhead_us"]


def test_gpu_engine_assignment():
    h100 = hardware_db.get("h100")
    assert h100.vector_tflops["fp32"] == 66.9  # CUDA-core FP32
    assert h100.vector_tflops["fp64"] == 33.5  # CUDA-core FP64
    assert h100.matrix_tflops["fp64"] == 66.9  # FP64 tensor core
    assert "fp32" not in h100.matrix_tflops
    mi250x = hardware_db.get("mi250x")
    assert mi250x.matrix_tflops["fp32"] == 95.7  # MFMA FP32 matrix
    assert mi250x.vector_tflops["fp32"] == 47.9


def test_peak_flops_is_in_flops_not_tflops():
    a100 = hardware_db.get("a100")
    assert a100.peak_flops("matrix", "bf16") == 312e12  # 312 TFLOP/s
    assert a100.peak_flops("vector", "fp32") == 19.5e12
    assert hardware_db.get("h100").peak_flops("matrix", "bf16") == 989.4e12  # exact decimal scaling
    assert a100.peak_flops("matrix", "fp8") is None  # Ampere has no FP8
    with pytest.raises(HardwareError, match="engine"):
        a100.peak_flops("tensor", "bf16")
    with pytest.raises(HardwareError, match="dtype"):
        a100.peak_flops("matrix", "float16")


def test_to_dict_is_exact_and_json_serializable():
    prof = hardware_db.get("tpu-v5e")
    d = prof.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["schema_version"] == 1
    assert d["id"] == "tpu-v5e" and d["kind"] == "tpu"
    assert d["matrix_tflops"] == {"bf16": 197.0, "int8": 394.0}
    assert d["mem_bw_gbs"] == 819.0
    assert d["tdp_w"] is None and d["launch_overhead_us"] is None
    for name in SCALARS:
        assert name in d
    assert set(d["sources"]) == {"matrix_tflops.bf16", "matrix_tflops.int8", "memory.mem_gb",
                                 "memory.mem_bw_gbs", "memory.onchip_mb", "interconnect.interconnect_gbs",
                                 "power.clock_ghz", "compute.units", "compute.mxu_dim"}
    assert d["units"] == 1 and d["family"] == "google-tpu-v5e" and d["mxu_dim"] == 128.0


def test_profiles_are_immutable_hashable_and_picklable():
    prof = hardware_db.get("h100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        prof.mem_gb = 1.0  # frozen
    with pytest.raises(TypeError):
        prof.matrix_tflops["bf16"] = 1.0  # read-only mapping
    assert hash(prof) == hash(hardware_db.get("h100-sxm"))
    clone = pickle.loads(pickle.dumps(prof))
    assert clone == prof and hash(clone) == hash(prof)
    assert clone.peak_flops("matrix", "bf16") == 989.4e12


# --------------------------------------------------------------------------- optional sections


def test_optional_sections_absent_read_none_or_empty(tmp_path):
    prof = hardware_db.load_file(write(tmp_path, USER_TOML))
    assert prof.family is None and prof.default_runtime is None
    assert prof.units is None and prof.unit_name is None
    assert dict(prof.links) == {} and dict(prof.efficiency) == {} and dict(prof.calibration) == {}
    d = prof.to_dict()
    assert d["family"] is None and d["links"] == {} and d["calibration"] == {}


def test_optional_sections_load_and_are_exposed(tmp_path):
    prof = hardware_db.load_file(write(tmp_path, SECTIONS_TOML))
    assert prof.family == "acme-npu"
    assert prof.default_runtime == "onnxruntime"
    assert prof.units == 16 and isinstance(prof.units, int) and prof.unit_name == "core"
    assert set(prof.links) == {"pcie", "eth"}
    pcie = prof.links["pcie"]
    assert (pcie.kind, pcie.gbs, pcie.latency_us) == ("pcie", 64.0, 1.5)
    assert prof.links["eth"].gbs is None and prof.links["eth"].latency_us is None  # unknown, not 0
    assert prof.efficiency["matmul"] == 0.75 and prof.efficiency["conv"]["int8"] == 0.5
    cal = prof.calibration
    assert cal["measured_on"] == "2025-06-01" and cal["runtime"] == "onnxruntime" and cal["host"] == "bench-7"
    assert cal["tables"]["matmul"] == {"int8": 0.71, "method": "median of 20 runs"}
    assert prof.sources["links.pcie.gbs"] == "PCIe 4.0 x16, both directions"
    # the existing fields are untouched by the new sections
    assert prof.peak_flops("matrix", "int8") == 10e12 and prof.mem_bw_gbs == 50.0


def test_optional_sections_are_read_only_and_serialize(tmp_path):
    prof = hardware_db.load_file(write(tmp_path, SECTIONS_TOML))
    with pytest.raises(TypeError):
        prof.calibration["tables"]["matmul"]["int8"] = 1.0  # nested maps are read-only too
    with pytest.raises(TypeError):
        prof.links["pcie"] = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        prof.links["pcie"].gbs = 1.0
    d = prof.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["links"]["pcie"] == {"kind": "pcie", "gbs": 64.0, "latency_us": 1.5}
    assert d["calibration"]["tables"]["matmul"]["int8"] == 0.71
    assert d["units"] == 16 and d["default_runtime"] == "onnxruntime"
    clone = pickle.loads(pickle.dumps(prof))
    assert clone == prof and hash(clone) == hash(prof) and clone.links["pcie"].gbs == 64.0


def test_profile_built_in_python_checks_the_new_fields():
    base = {"id": "x", "name": "X", "vendor": "V", "kind": "gpu"}
    assert hardware_db.HardwareProfile(**base, default_runtime="xla").default_runtime == "xla"
    with pytest.raises(HardwareError, match="default_runtime"):
        hardware_db.HardwareProfile(**base, default_runtime="jit")
    with pytest.raises(HardwareError, match="link kind"):
        hardware_db.HardwareProfile(**base, links={"a": {"kind": "token-ring"}})
    with pytest.raises(HardwareError, match="units"):
        hardware_db.HardwareProfile(**base, units=0)


@pytest.mark.parametrize("pid, family, units, unit_name", [
    ("a100", "nvidia-ampere", 108, "SM"),  # A100 whitepaper: 108 SMs
    ("a10", "nvidia-ampere-ga10x", 72, "SM"),  # A10: GA102, 72 SMs
    ("h100", "nvidia-hopper", 132, "SM"),  # H100 SXM5: 132 SMs
    ("h100-pcie", "nvidia-hopper", 114, "SM"),  # H100 PCIe: 114 SMs
    ("b200", "nvidia-blackwell", 148, "SM"),  # B200: 148 SMs
    ("rtx-4090", "nvidia-ada", 128, "SM"),  # AD102 as shipped on the 4090: 128 SMs
    ("l4", "nvidia-ada", 58, "SM"),  # reference: 58-60 SMs; 58 agrees with 30.29 TF FP32 at 2.04 GHz
    ("t4", "nvidia-turing", 40, "SM"),  # T4: 40 SMs
    ("v100", "nvidia-volta", 80, "SM"),  # V100: 80 SMs
    ("mi300x", "amd-cdna3", 304, "CU"),  # MI300X: 304 CUs (38 x 8 XCDs)
    ("mi250x", "amd-cdna2", 220, "CU"),  # MI250X: 220 CUs (110 per GCD)
    ("tpu-v5e", "google-tpu-v5e", 1, "TensorCore"),  # v5e: 1 TensorCore per chip
    ("tpu-v4", "google-tpu-v4", 2, "TensorCore"),  # v4: 2 TensorCores (megacore)
    ("xeon-spr-56c", "x86-cpu", 56, "core"),
    ("raspberry-pi-5", "arm-cpu", 4, "core"),  # 4x Cortex-A76
    ("hifi5", None, None, None),  # IP DSP: no family, no unit count
])
def test_shipped_family_and_units(pid, family, units, unit_name):
    prof = hardware_db.get(pid)
    assert (prof.family, prof.units, prof.unit_name) == (family, units, unit_name)
    if units is not None:
        assert f"{units}" in prof.sources["compute.units"]  # cites the reference entry's count


def test_every_shipped_gpu_tpu_cpu_has_a_family_except_where_the_notes_do_not_say():
    missing = [p.id for p in hardware_db.list_profiles() if p.kind in ("gpu", "tpu", "cpu") and p.family is None]
    assert missing == ["jetson-agx-orin-64gb"]  # its name and notes do not name the architecture


def test_every_shipped_accelerator_names_its_default_runtime():
    """Issue 34: a TPU, NPU or DSP profile names the runtime it predicts with (not its kind's
    default by omission); TPUs run XLA, the Edge TPU its own compiler's, the ANE Core ML."""
    acc = {p.id: p.default_runtime for p in hardware_db.list_profiles() if p.kind in ("tpu", "npu", "dsp")}
    assert [pid for pid, rt in acc.items() if rt is None] == []
    assert {pid for pid, rt in acc.items() if rt == "xla"} == {
        "tpu-v2", "tpu-v3", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x"}
    assert acc["edge-tpu"] == "edgetpu" and acc["ane-a16"] == "coreml"


def test_profile_family_agrees_with_the_file_that_lists_it():
    """A profile named under an efficiency file's ``devices`` states that file's family (or none):
    the profile's own ``family`` wins at prediction time, so a mismatch would silently give the
    device another family's constants (the GA102 A10 and RTX 3090 once took the A100's HBM sets)."""
    import json
    import os

    from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR

    listed = {}
    for name in sorted(os.listdir(EFFICIENCY_DIR)):
        if name.endswith(".json") and name != "schema.json":
            with open(os.path.join(EFFICIENCY_DIR, name), encoding="utf-8") as f:
                data = json.load(f)
            for dev in data.get("devices", ()):
                listed[dev] = data["family"]
    assert listed, "no efficiency file lists devices"
    for dev, family in listed.items():
        prof = hardware_db.get(dev)
        assert prof.family in (None, family), (dev, prof.family, family)
