"""A candidate's ONNX structure read at the protobuf wire level, weight bytes skipped.

``skeleton(data)`` walks a serialized ``ModelProto`` field by field (tag, length, skip) and
returns the model without its initializers (parsed by protobuf: a few kB instead of megabytes)
plus, per initializer, its name, dtype code, dims and the bytes that identify its value
(its bytes less its name).  Nothing is decoded that a search does not need; anything the
walk does not expect (a malformed varint, a group wire type, an initializer in an unusual
encoding) returns None and the caller takes the full frontend.
"""

from __future__ import annotations

from typing import NamedTuple

# field numbers (onnx.proto)
_MODEL_GRAPH = 7
_GRAPH_NODE, _GRAPH_INITIALIZER = 1, 5
_T_DIMS, _T_DTYPE, _T_NAME, _T_LOCATION = 1, 2, 8, 14


class Init(NamedTuple):
    """One initializer as the wire holds it; ``value_key()`` is its bytes less its name (equal
    bytes: equal tensor), built on request only (weights are never copied)."""

    name: str
    dtype: int
    dims: tuple[int, ...]
    external: bool
    data: bytes
    span: tuple[int, int, int, int]   # tensor start, name field start, name field end, tensor end

    def value_key(self) -> bytes:
        a, n0, n1, b = self.span
        return self.data[a:n0] + self.data[n1:b]


class _Bad(Exception):
    pass


def _varint(data, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise _Bad


def _tensor(data: bytes, start: int, end: int) -> Init:
    """A TensorProto's name, dtype, dims and location; its data fields are stepped over."""
    name = None
    n0 = n1 = start
    dtype = 0
    dims: list[int] = []
    external = False
    for f, wt, a, i, f0 in _fields(data, start, end):
        if wt == 2:
            if f == _T_NAME:
                name = data[a:i].decode("utf-8")   # invalid UTF-8: the full frontend decides
                n0, n1 = f0, i
            elif f == _T_DIMS:  # packed
                while a < i:
                    v, a = _varint(data, a)
                    dims.append(v)
        elif wt == 0 and f in (_T_DIMS, _T_DTYPE, _T_LOCATION):
            v = data[a] if data[a] < 0x80 else _varint(data, a)[0]
            if f == _T_DIMS:
                dims.append(v)
            elif f == _T_DTYPE:
                dtype = v
            else:
                external = v != 0
    if name is None or any(d >= 1 << 63 for d in dims):
        raise _Bad
    return Init(name, dtype, tuple(dims), external, data, (start, n0, n1, end))


def _fields(data: bytes, start: int, end: int):
    """(field number, wire type, value start, value end, field start) of each field."""
    out = []
    i = start
    while i < end:
        f0 = i
        tag = data[i]
        i += 1
        if tag >= 0x80:
            tag, i = _varint(data, f0)
        wt = tag & 7
        if wt == 2:
            n = data[i]
            i += 1
            if n >= 0x80:
                n, i = _varint(data, i - 1)
            a, i = i, i + n
        elif wt == 0:
            a = i
            if data[i] < 0x80:
                i += 1
            else:
                _, i = _varint(data, i)
        elif wt == 5:
            a, i = i, i + 4
        elif wt == 1:
            a, i = i, i + 8
        else:
            raise _Bad
        out.append((tag >> 3, wt, a, i, f0))
    if i != end:
        raise _Bad
    return out


def skeleton(data) -> tuple[bytes, list[bytes], list[Init]] | None:
    """(the model serialized without its nodes and initializers, each node's serialized
    ``NodeProto``, the initializers) or None when the bytes are not a ModelProto this walk
    understands (the full frontend then reports why)."""
    try:
        if type(data) is not bytes:
            data = bytes(data)
        model_parts = []
        graph = None
        for f, wt, a, b, f0 in _fields(data, 0, len(data)):
            if f == _MODEL_GRAPH and wt == 2:
                if graph is not None:
                    return None   # a repeated singular field: protobuf merges; leave it to it
                graph = (a, b)
            else:
                model_parts.append(data[f0:b])
        if graph is None:
            return None
        kept = []
        nodes = []
        inits: list[Init] = []
        for f, wt, a, b, f0 in _fields(data, *graph):
            if f == _GRAPH_INITIALIZER and wt == 2:
                inits.append(_tensor(data, a, b))
            elif f == _GRAPH_NODE and wt == 2:
                nodes.append(data[a:b])
            else:
                kept.append(data[f0:b])
        body = b"".join(kept)
        model_parts.append(_tag_len(_MODEL_GRAPH, len(body)) + body)
        return b"".join(model_parts), nodes, inits
    except (_Bad, IndexError, UnicodeDecodeError):
        return None


def _tag_len(field: int, n: int) -> bytes:
    out = bytearray()
    for v in ((field << 3) | 2, n):
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)
