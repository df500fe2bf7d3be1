"""Hardware profiles as data: one TOML file per device, validated, with a source for every number.

    >>> import hardware_db
    >>> hw = hardware_db.get("a100")            # id or alias (case-insensitive) or a path to a .toml file
    >>> hw.mem_bw_gbs, hw.peak_flops("matrix", "bf16")
    (2039.0, 312000000000000.0)

Units are SI and written into the field names (GB = 1e9 bytes, TFLOP/s = 1e12 FLOP/s). Peaks are dense.
A figure the reference does not give is omitted from the file and reads as ``None`` here: never a guess.

Modules (each imports only the ones above it; none imports jax or onnx):

    profile.py    the frozen ``HardwareProfile`` model, ``peak_flops``, the read-only ``FrozenMap``,
                  the vocabulary (``DTYPES``, ``ENGINES``, ``KINDS``, ``SCHEMA_VERSION``) and
                  ``from_document`` (validated TOML document -> profile)
    validate.py   a parsed document against ``schema.json`` (``jsonschema``, Draft 2020-12, imported
                  on first use) plus what a schema cannot say: finite numbers, the sources rule
    loader.py     files, cache, ids and aliases: ``get``, ``list_profiles``, ``load_file``,
                  ``clear_cache``, did-you-mean suggestions; ``PROFILE_DIR``
    schema.json   the file format; profiles/<id>.toml the shipped devices
"""

from __future__ import annotations

from hardware_db.loader import PROFILE_DIR, clear_cache, get, list_profiles, load_file
from hardware_db.profile import DTYPES, ENGINES, KINDS, SCHEMA_VERSION, HardwareProfile
from hardware_db.validate import SCHEMA_PATH

__all__ = [
    "DTYPES",
    "ENGINES",
    "KINDS",
    "PROFILE_DIR",
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "HardwareProfile",
    "clear_cache",
    "get",
    "list_profiles",
    "load_file",
]
