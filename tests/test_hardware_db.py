"""Tests for hardware_db: shipped profiles, the loader's validation and its error messages.

Spot checks hard-code the datasheet figure beside each value (as recorded in the project's
hardware reference, hardware_specs.md); the tests do not read that reference themselves.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import hardware_db
from analyzer.errors import AnalyzerError, HardwareError

REPO = Path(__file__).resolve().parents[1]
PROFILE_FILES = sorted(hardware_db.PROFILE_DIR.glob("*.toml"))
SCALARS = ("mem_gb", "mem_bw_gbs", "onchip_mb", "interconnect_gbs", "launch_overhead_us", "tdp_w", "clock_ghz")
SCALAR_PATH = {
    "mem_gb": "memory.mem_gb",
    "mem_bw_gbs": "memory.mem_bw_gbs",
    "onchip_mb": "memory.onchip_mb",
    "interconnect_gbs": "interconnect.interconnect_gbs",
    "launch_overhead_us": "overhead.launch_overhead_us",
    "tdp_w": "power.tdp_w",
    "clock_ghz": "power.clock_ghz",
}


# --------------------------------------------------------------------------- shipped profiles


def test_profiles_directory_has_all_devices():
    # the reference lists 47 devices; every one is shipped
    assert len(PROFILE_FILES) == 47
    assert len(hardware_db.list_profiles()) == 47


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.stem)
def test_every_shipped_file_validates(path):
    prof = hardware_db.load_file(path)
    assert prof.id == path.stem
    assert prof.kind in hardware_db.KINDS
    assert prof.path == str(path.resolve())
    assert prof.name and prof.vendor


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.stem)
def test_every_number_has_a_source(path):
    prof = hardware_db.load_file(path)
    needed = [f"matrix_tflops.{d}" for d in prof.matrix_tflops]
    needed += [f"vector_tflops.{d}" for d in prof.vector_tflops]
    needed += [SCALAR_PATH[n] for n in SCALARS if getattr(prof, n) is not None]
    for name in needed:
        assert prof.sources.get(name, "").strip(), f"{path.name}: {name} has no source"
    # and no source names a field that is absent
    assert set(prof.sources) == set(needed)


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.stem)
def test_shipped_files_write_numbers_as_positive_floats(path):
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    for table in ("matrix_tflops", "vector_tflops", "memory", "interconnect", "overhead", "power"):
        for key, value in data.get(table, {}).items():
            assert isinstance(value, float) and value > 0, f"{path.name}: {table}.{key} = {value!r}"


def test_ids_and_aliases_are_unique():
    names = []
    for prof in hardware_db.list_profiles():
        names.append(prof.id.lower())
        names.extend(a.lower() for a in prof.aliases)
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes


def test_every_alias_resolves_to_its_profile():
    for prof in hardware_db.list_profiles():
        for alias in prof.aliases:
            assert hardware_db.get(alias) is prof
            assert hardware_db.get(alias.upper()) is prof


@pytest.mark.parametrize(
    "name, expected_id",
    [
        ("v100", "v100-sxm2-32gb"),
        ("a100", "a100-80gb-sxm"),
        ("a100-40gb", "a100-40gb-sxm"),
        ("a100-pcie", "a100-80gb-pcie"),
        ("h100", "h100-sxm"),
        ("h100-pcie", "h100-pcie"),
        ("h200", "h200-sxm"),
        ("b200", "b200-hgx"),
        ("l4", "l4"),
        ("t4", "t4"),
        ("4090", "rtx-4090"),
        ("rtx4090", "rtx-4090"),
        ("mi300x", "mi300x"),
        ("tpu-v4", "tpu-v4"),
        ("v5e", "tpu-v5e"),
        ("tpu-v5e", "tpu-v5e"),
        ("v5p", "tpu-v5p"),
        ("v6e", "tpu-v6e"),
        ("edge-tpu", "edge-tpu"),
        ("coral", "edge-tpu"),
        ("hexagon", "hexagon-sd8gen3"),
        ("hifi5", "hifi5"),
        ("vision-q6", "vision-q6"),
        ("ethos-u55", "ethos-u55"),
        ("m2", "apple-m2"),
        ("sapphire-rapids", "xeon-spr-56c"),
        ("pi5", "raspberry-pi-5"),
    ],
)
def test_required_devices_by_common_name(name, expected_id):
    assert hardware_db.get(name).id == expected_id


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
    hifi5 = hardware_db.get("hifi5")  # IP core: no vendor TOPS figure, so no numbers at all
    assert not hifi5.matrix_tflops and not hifi5.vector_tflops and hifi5.mem_bw_gbs is None


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


# --------------------------------------------------------------------------- API


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
                                 "power.clock_ghz"}


def test_profiles_are_immutable_hashable_and_picklable():
    prof = hardware_db.get("h100")
    with pytest.raises(Exception):
        prof.mem_gb = 1.0  # frozen
    with pytest.raises(TypeError):
        prof.matrix_tflops["bf16"] = 1.0  # read-only mapping
    assert hash(prof) == hash(hardware_db.get("h100-sxm"))
    clone = pickle.loads(pickle.dumps(prof))
    assert clone == prof and hash(clone) == hash(prof)
    assert clone.peak_flops("matrix", "bf16") == 989.4e12


def test_list_profiles_sorted_by_kind_then_id():
    profs = hardware_db.list_profiles()
    assert [(p.kind, p.id) for p in profs] == sorted((p.kind, p.id) for p in profs)
    assert len({p.id for p in profs}) == len(profs)


def test_get_by_id_alias_case_and_path():
    a = hardware_db.get("a100-80gb-sxm")
    assert hardware_db.get("A100") is a
    assert hardware_db.get("  a100 ") is a
    path = hardware_db.PROFILE_DIR / "a100-80gb-sxm.toml"
    assert hardware_db.get(str(path)) is a  # parsed once per process: same cached object
    assert hardware_db.get(path) is a
    assert hardware_db.load_file(path) is a
    assert hardware_db.get(a) is a


def test_hardware_error_is_a_usage_error():
    assert issubclass(HardwareError, AnalyzerError)
    assert HardwareError.exit_code == 2


def test_unknown_id_suggests_close_matches():
    with pytest.raises(HardwareError) as info:
        hardware_db.get("a10O")
    msg = str(info.value)
    assert msg.startswith("unknown hardware 'a10O'; did you mean: ")
    assert "a100" in msg and "a10" in msg
    assert "\n" not in msg


def test_unknown_id_without_close_match_says_what_to_do():
    with pytest.raises(HardwareError, match="analyze hw list"):
        hardware_db.get("zzzzqqq")


def test_missing_profile_file():
    with pytest.raises(HardwareError, match="not found"):
        hardware_db.get("no/such/dir/hw.toml")


# --------------------------------------------------------------------------- user files

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


def test_user_profile_from_tmp_path_loads(tmp_path):
    p = write(tmp_path, USER_TOML)
    prof = hardware_db.get(str(p))
    assert prof.id == "my-npu" and prof.kind == "npu"
    assert prof.peak_flops("matrix", "int8") == 10e12  # 10 TOP/s
    assert prof.vector_tflops["fp16"] == 1.0 and isinstance(prof.vector_tflops["fp16"], float)
    assert prof.mem_bw_gbs == 50.0
    assert prof.mem_gb is None and prof.clock_ghz is None
    assert prof.path == str(p.resolve())
    # a user file does not join the registry of shipped ids
    with pytest.raises(HardwareError):
        hardware_db.get("mine")


def test_user_profile_without_numbers_loads(tmp_path):
    p = write(tmp_path, 'schema_version = 1\nid = "x"\nname = "X"\nvendor = "V"\nkind = "cpu"\n')
    prof = hardware_db.load_file(p)
    assert prof.aliases == () and prof.notes == "" and dict(prof.sources) == {}


def test_user_profile_reparsed_after_edit(tmp_path):
    p = write(tmp_path, USER_TOML)
    first = hardware_db.load_file(p)
    assert hardware_db.load_file(p) is first
    p.write_text(USER_TOML.replace("mem_bw_gbs = 50.0", "mem_bw_gbs = 75.25"), encoding="utf-8")
    assert hardware_db.load_file(p).mem_bw_gbs == 75.25


def _error(tmp_path, text) -> str:
    p = write(tmp_path, text)
    with pytest.raises(HardwareError) as info:
        hardware_db.load_file(p)
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert msg.startswith(str(p)), msg  # names the file
    return msg


def test_malformed_bad_number(tmp_path):
    msg = _error(tmp_path, USER_TOML.replace("mem_bw_gbs = 50.0", 'mem_bw_gbs = "fast"'))
    assert "field 'memory.mem_bw_gbs' must be a number, got 'fast'" in msg


def test_malformed_bool_is_not_a_number(tmp_path):
    msg = _error(tmp_path, USER_TOML.replace("int8 = 10.0", "int8 = true"))
    assert "'matrix_tflops.int8' must be a number" in msg


def test_malformed_missing_source(tmp_path):
    msg = _error(tmp_path, USER_TOML.replace('"memory.mem_bw_gbs" = "LPDDR5 x32 @ 6400 MT/s, derived"\n', ""))
    assert "field 'memory.mem_bw_gbs' has no entry in [sources]" in msg


def test_malformed_source_for_absent_field(tmp_path):
    msg = _error(tmp_path, USER_TOML + '"matrix_tflops.bf61" = "typo"\n')
    assert "'matrix_tflops.bf61'" in msg


def test_malformed_unknown_key_in_table(tmp_path):
    msg = _error(tmp_path, USER_TOML.replace("mem_bw_gbs = 50.0", "mem_bw_gbs = 50.0\nmem_bw = 3.0"))
    assert "unknown field 'memory.mem_bw'" in msg and "mem_bw_gbs" in msg


def test_malformed_unknown_dtype(tmp_path):
    msg = _error(tmp_path, USER_TOML.replace("int8 = 10.0", "int8 = 10.0\nfloat16 = 3.0"))
    assert "unknown field 'matrix_tflops.float16'" in msg


def test_malformed_unknown_top_level_table_and_key(tmp_path):
    msg = _error(tmp_path, USER_TOML.replace("[memory]", "[peak_tflops]\nbf16 = 1.0\n\n[memory]"))
    assert "unknown top-level table 'peak_tflops'" in msg
    msg = _error(tmp_path, USER_TOML.replace('vendor = "Me"', 'vendor = "Me"\ncolour = "red"'))
    assert "unknown top-level key 'colour'" in msg


@pytest.mark.parametrize("bad", ["-5.0", "0.0", "0", "inf", "nan"])
def test_malformed_non_positive_or_non_finite(tmp_path, bad):
    msg = _error(tmp_path, USER_TOML.replace("mem_bw_gbs = 50.0", f"mem_bw_gbs = {bad}"))
    assert "field 'memory.mem_bw_gbs' must be" in msg


def test_malformed_missing_required_and_bad_kind(tmp_path):
    msg = _error(tmp_path, USER_TOML.replace('kind = "npu"\n', ""))
    assert "missing required field 'kind'" in msg
    msg = _error(tmp_path, USER_TOML.replace('kind = "npu"', 'kind = "fpga"'))
    assert "field 'kind' must be one of gpu, tpu, npu, dsp, cpu" in msg


def test_malformed_schema_version_and_id(tmp_path):
    msg = _error(tmp_path, USER_TOML.replace("schema_version = 1", "schema_version = 2"))
    assert "field 'schema_version' must be 1" in msg
    msg = _error(tmp_path, USER_TOML.replace('id = "my-npu"', 'id = "My NPU"'))
    assert "field 'id'" in msg


def test_malformed_table_given_as_scalar(tmp_path):
    text = USER_TOML.replace("[memory]\nmem_bw_gbs = 50.0\n", "").replace('"memory.mem_bw_gbs" = "LPDDR5 x32 @ 6400 MT/s, derived"\n', "")
    msg = _error(tmp_path, text.replace('vendor = "Me"', 'vendor = "Me"\nmemory = 4'))
    assert "field 'memory' must be a table" in msg


def test_malformed_toml_syntax(tmp_path):
    msg = _error(tmp_path, USER_TOML.replace("int8 = 10.0", "int8 = = 10"))
    assert "invalid TOML" in msg


# --------------------------------------------------------------------------- schema and imports


def test_schema_json_matches_loader():
    schema = json.loads(hardware_db.SCHEMA_PATH.read_text(encoding="utf-8"))
    props = schema["properties"]
    assert set(props["matrix_tflops"]["properties"]) == set(hardware_db.DTYPES)
    assert set(props["vector_tflops"]["properties"]) == set(hardware_db.DTYPES)
    assert props["kind"]["enum"] == list(hardware_db.KINDS)
    scalars = {k for t in ("memory", "interconnect", "overhead", "power") for k in props[t]["properties"]}
    assert scalars == set(SCALARS)


def test_import_does_not_pull_jax_or_onnx():
    code = (
        "import sys, hardware_db; hardware_db.list_profiles(); hardware_db.get('a100');"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'onnx', 'numpy')];"
        "assert not heavy, heavy"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
