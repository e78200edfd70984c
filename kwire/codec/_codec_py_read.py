"""The pure codec's reader: bytes to field values, walking a struct's plan (compiled twin: ``_wire.pxi``'s Reader
and the generated ``_r_*`` functions)."""

import sys as _sys

from kwire.codec._codec_py_plans import CLASSES, FIXED, MAX_STRING, UINT32_MAX
from kwire.errors import ArgumentTypeError, ArgumentValueError, DecodeError, LimitExceededError


class Reader:
    # budget: array elements and tagged-field entries still allowed (max_elements).
    # views: a memoryview of buf when bytes fields are read as its slices
    # (decode(..., views=True)), else None.
    __slots__ = ("buf", "pos", "end", "budget", "views")

    def __init__(self, data, views=False):
        if isinstance(data, bytes):
            self.buf = data
        else:
            try:
                self.buf = memoryview(data).cast("B").tobytes()
            except TypeError:
                raise ArgumentTypeError(f"expected a bytes-like object, not {type(data).__name__}") from None
        self.pos = 0
        self.end = len(self.buf)
        self.budget = _sys.maxsize
        self.views = memoryview(self.buf) if views else None

    def set_limit(self, max_elements):
        if max_elements is None:
            return
        if isinstance(max_elements, bool) or not isinstance(max_elements, int):
            raise ArgumentTypeError(f"max_elements must be an int or None, not {type(max_elements).__name__}")
        if max_elements < 0:
            raise ArgumentValueError(f"max_elements must be >= 0, got {max_elements}")
        self.budget = min(max_elements, _sys.maxsize)

    def spend(self, n, what, start):
        if n > self.budget:
            raise LimitExceededError(f"{n} {what} exceed the max_elements limit ({self.budget} left)", start)
        self.budget -= n

    def need(self, n):
        if n > self.end - self.pos:
            raise DecodeError(f"truncated: needs {n} more bytes, {self.end - self.pos} left", self.pos)

    def fixed(self, kind):
        s = FIXED[kind]
        self.need(s.size)
        (v,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return v

    def bool(self):
        self.need(1)
        v = self.buf[self.pos]
        self.pos += 1
        return v != 0

    def uvarint(self):
        start = self.pos
        value = 0
        shift = 0
        while True:
            if self.pos >= self.end:
                raise DecodeError("truncated varint", start)
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift >= 35:
                raise DecodeError("varint longer than 5 bytes", start)
        if value > UINT32_MAX:
            raise DecodeError("varint exceeds 32 bits", start)
        return value

    def raw(self, n):
        self.need(n)
        v = self.buf[self.pos:self.pos + n]
        self.pos += n
        return v

    def length(self, compact, wide, nullable):
        """A string/bytes/array length; None for null.

        Classic lengths are int16 (strings) or int32 (bytes, arrays) with -1
        for null; compact ones are uvarint N+1 with 0 for null."""
        start = self.pos
        if compact:
            n = self.uvarint() - 1
        else:
            n = self.fixed("int32" if wide else "int16")
        if n == -1:
            if not nullable:
                raise DecodeError("null in a non-nullable field", start)
            return None
        if n < 0:
            raise DecodeError(f"negative length {n}", start)
        return n

    def string(self, compact, nullable):
        start = self.pos
        n = self.length(compact, False, nullable)
        if n is None:
            return None
        # Kafka caps strings at 32767 UTF-8 bytes in both encodings.
        if n > MAX_STRING:
            raise DecodeError(f"string length {n} exceeds {MAX_STRING}", start)
        self.need(n)
        try:
            v = self.buf[self.pos:self.pos + n].decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError("invalid UTF-8", self.pos) from None
        self.pos += n
        return v

    def bytes(self, compact, nullable):
        n = self.length(compact, True, nullable)
        if n is None:
            return None
        if self.views is not None:
            self.need(n)
            v = self.views[self.pos:self.pos + n]
            self.pos += n
            return v
        return bytes(self.raw(n))

    def count(self, compact, nullable, min_size):
        start = self.pos
        n = self.length(compact, True, nullable)
        if n is not None and n > 0:
            if n > (self.end - self.pos) // min_size:
                raise DecodeError(f"array of {n} elements cannot fit in {self.end - self.pos} bytes", start)
            self.spend(n, "array elements", start)
        return n


def _read_scalar(r, plan, t):
    if t == "string":
        return r.string(plan.compact, plan.nullable)
    if t in ("bytes", "records"):
        return r.bytes(plan.compact, plan.nullable)
    if t == "bool":
        return r.bool()
    if t == "uuid":
        return r.raw(16)
    return r.fixed(t)


def read_value(r, plan):
    f = plan.field
    if f.is_array:
        n = r.count(plan.compact, plan.nullable, plan.min_size)
        if n is None:
            return None
        out = []
        for i in range(n):
            try:
                out.append(read_struct(r, plan.sub) if f.is_struct else _read_scalar(r, plan, f.element_type))
            except DecodeError as e:
                raise e.prepend_path(i)
        return out
    if f.is_struct:
        # Kafka marks a nullable struct with an int8: -1 null, 1 present.
        if plan.nullable and r.fixed("int8") < 0:
            return None
        return read_struct(r, plan.sub)
    return _read_scalar(r, plan, f.type)


def read_struct(r, splan):
    obj = CLASSES[id(splan.fields[0].field)].__new__(CLASSES[id(splan.fields[0].field)])
    values = {}
    for p in splan.untagged:
        try:
            values[p.attr] = read_value(r, p)
        except DecodeError as e:
            raise e.prepend_path(p.attr)
    unknown = None
    if splan.flexible:
        unknown = _read_tagged(r, splan, values)
    for p in splan.fields:
        setattr(obj, p.attr, values[p.attr] if p.attr in values else p.field.default)
    obj.unknown_tagged_fields = unknown
    return obj


def _read_tagged(r, splan, values):
    start = r.pos
    count = r.uvarint()
    if count * 2 > r.end - r.pos:
        raise DecodeError(f"{count} tagged fields cannot fit in {r.end - r.pos} bytes", start)
    if count:
        r.spend(count, "tagged fields", start)
    known = {p.field.tag: p for p in splan.tagged}
    unknown = None
    last = -1
    for _ in range(count):
        at = r.pos
        tag = r.uvarint()
        if tag <= last:
            raise DecodeError(f"tagged field {tag} out of order or repeated", at)
        last = tag
        size = r.uvarint()
        r.need(size)
        p = known.get(tag)
        if p is None:
            if unknown is None:
                unknown = {}
            unknown[tag] = bytes(r.raw(size))
            continue
        end = r.pos + size
        sub = Reader(b"")
        sub.buf, sub.pos, sub.end, sub.budget, sub.views = r.buf, r.pos, end, r.budget, r.views
        try:
            values[p.attr] = read_value(sub, p)
        except DecodeError as e:
            raise e.prepend_path(p.attr)
        r.budget = sub.budget
        if sub.pos != end:
            raise DecodeError(f"tagged field {tag} has {end - sub.pos} bytes left over", sub.pos, [p.attr])
        r.pos = end
    return unknown

