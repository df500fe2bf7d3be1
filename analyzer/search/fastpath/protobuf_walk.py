"""A candidate's ONNX structure read at the protobuf wire level, weight bytes skipped.

``skeleton(data)`` walks a serialized ``ModelProto`` field by field (tag, length, skip) and
returns the model without its initializers (parsed by protobuf: a few kB instead of megabytes)
plus, per initializer, its name, dtype code, dims and the bytes that identify its value
(its bytes less its name).  Nothing is decoded that a search does not need; anything the
walk does not expect (a malformed varint, a group wire type, an initializer in an unusual
encoding) returns None and the caller takes the full frontend.
"""

from __future__ import annotations

from typing import Any, NamedTuple

# field numbers (onnx.proto)
_MODEL_GRAPH = 7
_GRAPH_NODE, _GRAPH_INITIALIZER = 1, 5
_T_DIMS, _T_DTYPE, _T_NAME, _T_LOCATION = 1, 2, 8, 14


class Init(NamedTuple):
    """One initializer as the wire holds it; ``value_key()`` is its bytes less its name (equal
    bytes: equal tensor), built on request only (weights are never copied).  ``structure`` also
    makes them for a ModelProto candidate's initializers: ``data`` the TensorProto, ``span``
    None (``structure.value`` and ``structure.tensor`` read either)."""

    name: str
    dtype: int
    dims: tuple[int, ...]
    external: bool
    data: Any                         # the model's bytes (or a ModelProto's TensorProto)
    span: tuple[int, int, int, int] | None   # tensor start, name start, name end, tensor end

    def value_key(self) -> bytes:
        a, n0, n1, b = self.span
        return self.data[a:n0] + self.data[n1:b]


_new = tuple.__new__


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


def _length(data, i: int) -> tuple[int, int]:
    """``_varint`` unrolled for the 2- to 4-byte lengths of tensors and nodes."""
    b1 = data[i + 1]
    if b1 < 0x80:
        return (data[i] & 0x7F) | (b1 << 7), i + 2
    b2 = data[i + 2]
    if b2 < 0x80:
        return (data[i] & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14), i + 3
    b3 = data[i + 3]
    if b3 < 0x80:
        return (data[i] & 0x7F) | ((b1 & 0x7F) << 7) | ((b2 & 0x7F) << 14) | (b3 << 21), i + 4
    return _varint(data, i)


# a tensor's fields before its raw_data (the usual layout: raw_data last) -> what they say:
# (name, dtype code, dims, name field start, name field end; offsets from the tensor's start).
# A search's candidates repeat tensor headers byte for byte; reading one is most of a walk.
_HEADS: dict[bytes, tuple] = {}
_HEADS_CAP = 100_000   # (~15 MB at most; cleared when full)


def _tensor(data: bytes, start: int, end: int) -> Init:
    """A TensorProto's name, dtype, dims and location; its data fields are stepped over.

    A header seen before is looked up: the bytes up to the first 0x4A (raw_data's tag) are
    a known header only if they were one (a walk stored them), and then that byte is the
    raw_data tag, whose field must end the tensor.  Else the usual encoding (one-byte tags of
    unpacked dims, dtype, name, raw data, in any order) is read inline; any other field takes
    the general walk (``_tensor_fields``)."""
    p = data.find(b"J", start, end)
    if p > start:
        h = _HEADS.get(data[start:p])
        if h is not None:
            n = data[p + 1]
            if n < 0x80:
                q = p + 2
            else:
                n, q = _length(data, p + 1)
            if q + n == end:
                name, dtype, dims, r0, r1 = h
                return _new(Init, (name, dtype, dims, False, data, (start, start + r0,
                                                                    start + r1, end)))
    name = None
    raw = -1   # where a raw_data field that ends the tensor starts
    n0 = n1 = start
    dtype = 0
    dims: list[int] = []
    i = start
    while i < end:
        tag = data[i]
        if tag == 0x08 or tag == 0x10:       # dims / data_type (varint)
            v = data[i + 1]
            if v < 0x80:
                i += 2
            elif data[i + 2] < 0x80:         # (two bytes: a dim of 128..16383)
                v = (v & 0x7F) | (data[i + 2] << 7)
                i += 3
            else:
                v, i = _varint(data, i + 1)
                if v >= 1 << 63:
                    raise _Bad
            if tag == 0x08:
                dims.append(v)
            else:
                dtype = v
        elif tag == 0x42 or tag == 0x4A:     # name / raw_data (length-delimited)
            n = data[i + 1]
            if n < 0x80:
                a = i + 2
            else:
                n, a = _length(data, i + 1)
            if tag == 0x42:
                name = data[a:a + n].decode("utf-8")   # invalid UTF-8: the full frontend decides
                n0, n1 = i, a + n
            elif a + n == end:
                raw = i
            i = a + n
        else:
            return _tensor_fields(data, start, end)
    if i != end or name is None:
        raise _Bad
    if raw > start:
        if len(_HEADS) >= _HEADS_CAP:
            _HEADS.clear()
        _HEADS[data[start:raw]] = (name, dtype, tuple(dims), n0 - start, n1 - start)
    # (tuple.__new__: a NamedTuple's own __new__ is Python code, one per initializer)
    return _new(Init, (name, dtype, tuple(dims), False, data, (start, n0, n1, end)))


def _tensor_fields(data: bytes, start: int, end: int) -> Init:
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


def _field(data, f0: int) -> tuple[int, int, int, int]:
    """(tag, wire type, value start, field end) of the field starting at ``f0``."""
    i = f0 + 1
    tag = data[f0]
    if tag >= 0x80:
        tag, i = _varint(data, f0)
    wt = tag & 7
    if wt == 2:
        n = data[i]
        i += 1
        if n >= 0x80:
            n, i = _varint(data, i - 1)
        return tag, wt, i, i + n
    if wt == 0:
        return tag, wt, i, i + 1 if data[i] < 0x80 else _varint(data, i)[1]
    if wt == 5:
        return tag, wt, i, i + 4
    if wt == 1:
        return tag, wt, i, i + 8
    raise _Bad


def _fields(data: bytes, start: int, end: int):
    """(field number, wire type, value start, value end, field start) of each field."""
    out = []
    i = start
    while i < end:
        tag, wt, a, j = _field(data, i)
        out.append((tag >> 3, wt, a, j, i))
        i = j
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
        i, end = graph
        while i < end:   # (``_fields`` inline for a graph's one-byte-tag node/initializer fields)
            tag = data[i]
            if tag == 0x0A or tag == 0x2A:    # node / initializer (field 1 / 5, length-delimited)
                n = data[i + 1]
                if n < 0x80:
                    a = i + 2
                else:
                    n, a = _length(data, i + 1)
                b = a + n
                if b > end:
                    raise _Bad
                if tag == 0x2A:
                    inits.append(_tensor(data, a, b))
                else:
                    nodes.append(data[a:b])
                i = b
            else:
                b = _field(data, i)[3]
                if b > end:
                    raise _Bad
                kept.append(data[i:b])
                i = b
        if i != end:
            raise _Bad
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
