"""Names that are not valid UTF-8: decoded once, when the model is read, so that no later stage
sees ``bytes`` where the ONNX schema promises text.

ONNX declares its names ``string`` in a proto2 file, so protobuf parses a node name, tensor
name or ``dim_param`` holding bytes that are not UTF-8 without complaint (the ONNX checker and
onnxruntime accept such a model too) and Python's protobuf (upb) hands them back as ``bytes``
instead of ``str``.  ``check(data)`` finds such fields at C speed: it parses the bytes a second
time as a *twin* of ``onnx.proto`` in proto3 form that keeps only the string and message fields
(proto3 validates UTF-8 on parse; everything else is skipped as unknown fields).  Only when it
fails does ``fix(model)`` walk the proto and replace every such field by its text decoded with
``errors="backslashreplace"`` (``b"a\\xff"`` -> ``"a\\\\xff"``): the same bytes give the same
name everywhere, so the edges of the graph still join.
"""

from __future__ import annotations

from typing import Any

_TWIN = None


def _twin_model():
    """The proto3 twin of ``onnx.ModelProto``: string and message fields only."""
    global _TWIN
    if _TWIN is None:
        import onnx
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        F = descriptor_pb2.FieldDescriptorProto
        fd = descriptor_pb2.FileDescriptorProto(name="opcost_onnx_names.proto",
                                                package="opcost_onnx_names", syntax="proto3")
        todo = [onnx.ModelProto.DESCRIPTOR]
        seen: set[str] = set()
        twin = lambda d: d.full_name.replace(".", "_")   # noqa: E731 - nested types flattened
        while todo:
            d = todo.pop()
            if d.full_name in seen:
                continue
            seen.add(d.full_name)
            msg = fd.message_type.add(name=twin(d))
            for f in d.fields:
                if f.type not in (f.TYPE_STRING, f.TYPE_MESSAGE):
                    continue
                repeated = _repeated(f)
                g = msg.field.add(name=f.name, number=f.number,
                                  label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
                if f.type == f.TYPE_STRING:
                    g.type = F.TYPE_STRING
                else:
                    g.type = F.TYPE_MESSAGE
                    g.type_name = f".opcost_onnx_names.{twin(f.message_type)}"
                    todo.append(f.message_type)
        pool = descriptor_pool.DescriptorPool()
        pool.Add(fd)
        _TWIN = message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"opcost_onnx_names.{twin(onnx.ModelProto.DESCRIPTOR)}"))
    return _TWIN


def check(data: bytes) -> bool:
    """True when every string field of the serialized model ``data`` is valid UTF-8."""
    from google.protobuf.message import DecodeError

    twin = _twin_model()
    try:
        twin.FromString(data)
    except DecodeError:  # "String field had bad UTF-8"
        return False
    return True


def fix(message: Any) -> int:
    """Replace every string field of ``message`` (recursively) that holds non-UTF-8 bytes by its
    text decoded with ``errors="backslashreplace"``; returns how many fields changed."""
    changed = 0
    for f, v in message.ListFields():
        if f.type == f.TYPE_STRING:
            if _repeated(f):
                if any(type(x) is bytes for x in v):
                    new = [_text(x) for x in v]
                    del v[:]
                    v.extend(new)
                    changed += 1
            elif type(v) is bytes:
                setattr(message, f.name, _text(v))
                changed += 1
        elif f.type == f.TYPE_MESSAGE:
            if _repeated(f):
                for x in v:
                    changed += fix(x)
            else:
                changed += fix(v)
    return changed


def _repeated(f) -> bool:
    rep = getattr(f, "is_repeated", None)   # protobuf >= 6; older ones have only ``label``
    return bool(rep) if rep is not None else f.label == f.LABEL_REPEATED


def _text(x: str | bytes) -> str:
    return x.decode("utf-8", "backslashreplace") if type(x) is bytes else x
