"""ONNX TensorProto data types -> the IR's dtype names (shared by the ONNX frontend modules)."""

from __future__ import annotations

from onnx import TensorProto

DTYPES: dict[int, str] = {}
for _name, _py in [
    ("FLOAT", "float32"), ("DOUBLE", "float64"), ("FLOAT16", "float16"), ("BFLOAT16", "bfloat16"),
    ("FLOAT8E4M3FN", "float8e4m3fn"), ("FLOAT8E4M3FNUZ", "float8e4m3fnuz"),
    ("FLOAT8E5M2", "float8e5m2"), ("FLOAT8E5M2FNUZ", "float8e5m2fnuz"), ("FLOAT8E8M0", "float8e8m0"),
    ("FLOAT4E2M1", "float4e2m1"),
    ("INT64", "int64"), ("INT32", "int32"), ("INT16", "int16"), ("INT8", "int8"), ("INT4", "int4"),
    ("INT2", "int2"), ("UINT64", "uint64"), ("UINT32", "uint32"), ("UINT16", "uint16"),
    ("UINT8", "uint8"), ("UINT4", "uint4"), ("UINT2", "uint2"), ("BOOL", "bool"),
    ("STRING", "string"), ("COMPLEX64", "complex64"), ("COMPLEX128", "complex128"),
]:
    if hasattr(TensorProto, _name):
        DTYPES[getattr(TensorProto, _name)] = _py
