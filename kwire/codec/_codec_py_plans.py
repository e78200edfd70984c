"""The pure codec's plans: what each field of a struct does at one version, built from the schema tables on first use.

Both the reader (``_codec_py_read``) and the writer (``_codec_py_write``) walk these; ``CLASSES`` maps a
struct's fields to the class ``_codec_py_classes`` made for it."""

import struct as _struct

from kwire.codec import _schema

MAX_STRING = 0x7FFF
UINT32_MAX = 0xFFFFFFFF

INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}
FIXED = {
    "int8": _struct.Struct(">b"),
    "int16": _struct.Struct(">h"),
    "uint16": _struct.Struct(">H"),
    "int32": _struct.Struct(">i"),
    "int64": _struct.Struct(">q"),
    "float64": _struct.Struct(">d"),
}

# ---------------------------------------------------------------------------


class FieldPlan:
    __slots__ = ("field", "attr", "present", "nullable", "compact", "tagged", "min_size", "sub")

    def __init__(self, field, version, flexible):
        self.field = field
        self.attr = field.attr
        self.present = version in field.versions
        self.nullable = version in field.nullable
        self.compact = _schema.is_compact(field, version, flexible)
        self.tagged = flexible and version in field.tagged
        self.min_size = _schema.element_min_size(field, version, flexible) if self.present else 0
        self.sub = StructPlan(field.fields, version, flexible) if field.is_struct and self.present else None


class StructPlan:
    __slots__ = ("fields", "flexible", "tagged", "untagged")

    def __init__(self, fields, version, flexible):
        self.fields = [FieldPlan(f, version, flexible) for f in fields]
        self.flexible = flexible
        self.untagged = [p for p in self.fields if p.present and not p.tagged]
        self.tagged = sorted((p for p in self.fields if p.present and p.tagged), key=lambda p: p.field.tag)


CLASSES = {}   # id(first Field of a struct) -> class (filled by _codec_py_classes)
