"""hardware_db.loader: the registry of shipped ids and aliases, get / list_profiles / load_file, the
file cache, suggestions for unknown ids, and the import cost."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hwdb_helpers import PROFILE_FILES, REPO, USER_TOML, write

import hardware_db
from analyzer.errors import AnalyzerError, HardwareError


def test_profiles_directory_has_all_devices():
    # the reference lists 47 devices, every one shipped; plus the A40 (its public kernel
    # measurements are scored on it: bench/accuracy.py), the A16's ANE (Apple's public Core ML
    # latencies are fitted on it: bench/fit_ane.py), B300, GB300, RTX PRO 6000 (the quantize
    # fit's systems: bench/fit_aic_elementwise.py) and NeuSight's four devices opcost lacked
    # (A100 PCIe 40GB, V100 PCIe 32GB, P100 PCIe 16GB, P4: bench/fit_neusight.py)
    assert len(PROFILE_FILES) == 59
    assert len(hardware_db.list_profiles()) == 59


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


@pytest.mark.machine
def test_import_does_not_pull_jax_or_onnx():
    code = (
        "import sys, hardware_db; hardware_db.list_profiles(); hardware_db.get('a100');"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'onnx', 'numpy')];"
        "assert not heavy, heavy"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
