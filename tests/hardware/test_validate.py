"""hardware_db.validate: every shipped file against schema.json and the sources rule, and the one-line
error messages for malformed user files (each names the file and the field)."""

from __future__ import annotations

import json
import tomllib

import pytest
from hwdb_helpers import (
    PROFILE_FILES,
    SCALAR_PATH,
    SCALARS,
    SECTIONS_TOML,
    USER_TOML,
    load_error,
    write,
)

import hardware_db


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
    needed += ["compute.units"] if prof.units is not None else []
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




def test_malformed_bad_number(tmp_path):
    msg = load_error(tmp_path, USER_TOML.replace("mem_bw_gbs = 50.0", 'mem_bw_gbs = "fast"'))
    assert "field 'memory.mem_bw_gbs' must be a number, got 'fast'" in msg


def test_malformed_bool_is_not_a_number(tmp_path):
    msg = load_error(tmp_path, USER_TOML.replace("int8 = 10.0", "int8 = true"))
    assert "'matrix_tflops.int8' must be a number" in msg


def test_malformed_missing_source(tmp_path):
    msg = load_error(tmp_path, USER_TOML.replace('"memory.mem_bw_gbs" = "LPDDR5 x32 @ 6400 MT/s, derived"\n', ""))
    assert "field 'memory.mem_bw_gbs' has no entry in [sources]" in msg


def test_malformed_source_for_absent_field(tmp_path):
    msg = load_error(tmp_path, USER_TOML + '"matrix_tflops.bf61" = "typo"\n')
    assert "'matrix_tflops.bf61'" in msg


def test_malformed_unknown_key_in_table(tmp_path):
    msg = load_error(tmp_path, USER_TOML.replace("mem_bw_gbs = 50.0", "mem_bw_gbs = 50.0\nmem_bw = 3.0"))
    assert "unknown field 'memory.mem_bw'" in msg and "mem_bw_gbs" in msg


# (what the user's file gets wrong: old text -> new text, what the error must say)
MALFORMED = [
    ("int8 = 10.0", "int8 = 10.0\nfloat16 = 3.0", "unknown field 'matrix_tflops.float16'"),
    ("[memory]", "[peak_tflops]\nbf16 = 1.0\n\n[memory]", "unknown top-level table 'peak_tflops'"),
    ('vendor = "Me"', 'vendor = "Me"\ncolour = "red"', "unknown top-level key 'colour'"),
    *[("mem_bw_gbs = 50.0", f"mem_bw_gbs = {bad}", "field 'memory.mem_bw_gbs' must be")
      for bad in ("-5.0", "0.0", "0", "inf", "nan")],
    ('kind = "npu"\n', "", "missing required field 'kind'"),
    ('kind = "npu"', 'kind = "fpga"', "field 'kind' must be one of gpu, tpu, npu, dsp, cpu"),
    ("schema_version = 1", "schema_version = 2", "field 'schema_version' must be 1"),
    ('id = "my-npu"', 'id = "My NPU"', "field 'id'"),
]


@pytest.mark.parametrize("old, new, says", MALFORMED)
def test_malformed_field(tmp_path, old, new, says):
    assert old in USER_TOML
    msg = load_error(tmp_path, USER_TOML.replace(old, new))
    assert says in msg


def test_malformed_table_given_as_scalar(tmp_path):
    text = USER_TOML.replace("[memory]\nmem_bw_gbs = 50.0\n", "").replace('"memory.mem_bw_gbs" = "LPDDR5 x32 @ 6400 MT/s, derived"\n', "")
    msg = load_error(tmp_path, text.replace('vendor = "Me"', 'vendor = "Me"\nmemory = 4'))
    assert "field 'memory' must be a table" in msg


def test_malformed_toml_syntax(tmp_path):
    msg = load_error(tmp_path, USER_TOML.replace("int8 = 10.0", "int8 = = 10"))
    assert "invalid TOML" in msg


def test_schema_json_matches_loader():
    schema = json.loads(hardware_db.SCHEMA_PATH.read_text(encoding="utf-8"))
    props = schema["properties"]
    assert set(props["matrix_tflops"]["properties"]) == set(hardware_db.DTYPES)
    assert set(props["vector_tflops"]["properties"]) == set(hardware_db.DTYPES)
    assert props["kind"]["enum"] == list(hardware_db.KINDS)
    scalars = {k for t in ("memory", "interconnect", "overhead", "power") for k in props[t]["properties"]}
    # [compute] holds the integer units and a label besides its one float
    scalars |= set(props["compute"]["properties"]) - {"units", "unit_name"}
    assert scalars == set(SCALARS)


# --------------------------------------------------------------------------- optional sections


def test_schema_is_valid_draft_2020_12_and_lists_the_new_sections():
    from jsonschema import Draft202012Validator

    schema = json.loads(hardware_db.SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert {"family", "default_runtime", "compute", "links", "efficiency", "calibration"} <= set(schema["properties"])
    assert schema["$defs"]["runtime"]["enum"] == ["kernel", "eager", "onnxruntime", "xla", "coreml", "edgetpu", "qnn"]
    assert schema["properties"]["schema_version"]["const"] == 1  # additions: version 1 files stay valid


def test_calibrated_profile_validates(tmp_path):
    assert hardware_db.load_file(write(tmp_path, SECTIONS_TOML)).calibration["runtime"] == "onnxruntime"


def test_bad_default_runtime_names_the_field(tmp_path):
    msg = load_error(tmp_path, SECTIONS_TOML.replace('default_runtime = "onnxruntime"', 'default_runtime = "jit"'))
    assert "field 'default_runtime' must be one of kernel, eager, onnxruntime, xla, coreml, edgetpu, qnn" in msg and "'jit'" in msg


def test_link_number_without_source_is_rejected(tmp_path):
    msg = load_error(tmp_path, SECTIONS_TOML.replace('"links.pcie.gbs" = "PCIe 4.0 x16, both directions"\n', ""))
    assert "field 'links.pcie.gbs' has no entry in [sources]" in msg


@pytest.mark.parametrize("old, new, expected", [
    ('kind = "pcie"', 'kind = "pci"', "field 'links.pcie.kind' must be one of nvlink, pcie, ici"),
    ('[links.eth]\nkind = "ethernet"\n', "[links.eth]\n", "missing required field 'links.eth.kind'"),
    ("latency_us = 1.5", "latency_us = 1.5\nlatency = 2.0", "unknown field 'links.pcie.latency'"),
    ("gbs = 64.0", "gbs = -64.0", "field 'links.pcie.gbs' must be >= 0.001"),
    ("[links.eth]", "[links.Eth]", "table name 'links.Eth'"),
    ("units = 16", "units = 16.0", "field 'compute.units' must be an integer"),
    ('unit_name = "core"', 'unit_name = "core"\nclock_ghz = 1.0', "unknown field 'compute.clock_ghz'"),
    ('family = "acme-npu"', 'family = "Acme NPU"', "field 'family'"),
    ('runtime = "onnxruntime"\nhost', 'runtime = "torch"\nhost', "field 'calibration.runtime' must be one of"),
    ("int8 = 0.71", "int8 = true", "field 'calibration.tables.matmul.int8' must be a number, a string or a table"),
    ("matmul = 0.75", "matmul = inf", "field 'efficiency.matmul' must be a finite number"),
    ('"efficiency.matmul" = "calibration run 2025-06-01"\n', "", "field 'efficiency.matmul' has no entry"),
    ('"compute.units" = "vendor brief p.2"\n', "", "field 'compute.units' has no entry"),
])
def test_malformed_optional_sections_name_the_field(tmp_path, old, new, expected):
    assert old in SECTIONS_TOML
    assert expected in load_error(tmp_path, SECTIONS_TOML.replace(old, new))


def test_source_for_an_absent_link_number_is_rejected(tmp_path):
    msg = load_error(tmp_path, SECTIONS_TOML + '"links.eth.gbs" = "no such number"\n')
    assert "[sources] entry 'links.eth.gbs' names no number" in msg


def test_family_and_strings_need_no_source(tmp_path):
    prof = hardware_db.load_file(write(tmp_path, SECTIONS_TOML))
    assert not {"family", "compute.unit_name", "links.pcie.kind", "calibration.measured_on"} & set(prof.sources)


def test_integer_fields_reject_floats(tmp_path):
    msg = load_error(tmp_path, USER_TOML.replace("schema_version = 1", "schema_version = 1.0"))
    assert "field 'schema_version' must be an integer" in msg
