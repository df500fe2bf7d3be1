"""Saving committed test fixtures the way every generator script in samples/ does.

Initializers above ``EXTERNAL_THRESHOLD`` bytes go to external data and the .data file is then
deleted: the committed .onnx holds the graph, the small tensors, and the dims/dtype of the big
ones (``data_location=EXTERNAL``) without their bytes, because opcost never reads weight
bytes.  Only onnx is needed (the generators import this from their own venvs).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import onnx
from onnx import external_data_helper

EXTERNAL_THRESHOLD = 1024  # bytes


def save_fixture(model: onnx.ModelProto, out_dir: Path, name: str,
                 max_bytes: int = 2 * 1024 * 1024) -> dict:
    """Write ``out_dir/name.onnx`` with big initializers external (the .data file deleted),
    check it loads and infers without the data, and describe it for a reference json."""
    path = out_dir / f"{name}.onnx"
    location = f"{name}.onnx.data"
    data_path = out_dir / location
    for p in (path, data_path):
        if p.exists():
            p.unlink()
    m = onnx.ModelProto()
    m.CopyFrom(model)
    external_data_helper.convert_model_to_external_data(
        m, all_tensors_to_one_file=True, location=location, size_threshold=EXTERNAL_THRESHOLD)
    onnx.save(m, str(path))
    if data_path.exists():
        data_path.unlink()
    size = path.stat().st_size
    if size >= max_bytes:
        raise RuntimeError(f"{path} is {size} bytes (limit {max_bytes})")
    check = onnx.load(str(path), load_external_data=False)
    onnx.shape_inference.infer_shapes(check)
    n_ext = sum(1 for t in check.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    return {
        "file": path.name,
        "onnx_file_bytes": size,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "num_external_initializers": n_ext,
        "external_data_location": location,
        "external_data_committed": False,
        "shape_inference_ok": True,
    }
