"""The pure-Python codec: a reference interpreter of kwire's schema tables.

It walks ``kwire/codec/_schema.py`` at run time.  The compiled codec is generated
from the same tables, so the two agree by construction; keeping this one a
plain interpreter (instead of a second generated file) also gives the
differential tests two genuinely different code paths to compare.

Selected by ``KWIRE_NO_EXTENSIONS=1``; the public names match ``_codec_c``.
"""

import struct as _struct
import sys as _sys
from operator import index as _index

from kwire.codec import _schema
from kwire.codec._codec_common import check_response_key as _check_response_key
from kwire.codec._codec_common import rebuild as _rebuild
from kwire.codec._codec_common import refuse_deletion as _refuse_deletion
from kwire.errors import ArgumentTypeError, ArgumentValueError, DecodeError, EncodeError, UnsupportedVersionError
# Underscored: tests copy every public class name of a codec onto kwire.
from kwire.errors import LimitExceededError as _LimitExceededError

__all__ = []  # filled in below with every generated class name

_MAX_STRING = 0x7FFF
_UINT32_MAX = 0xFFFFFFFF

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}
_FIXED = {
    "int8": _struct.Struct(">b"),
    "int16": _struct.Struct(">h"),
    "uint16": _struct.Struct(">H"),
    "int32": _struct.Struct(">i"),
    "int64": _struct.Struct(">q"),
    "float64": _struct.Struct(">d"),
}


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------

class _Reader:
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
            raise _LimitExceededError(f"{n} {what} exceed the max_elements limit ({self.budget} left)", start)
        self.budget -= n

    def need(self, n):
        if n > self.end - self.pos:
            raise DecodeError(f"truncated: needs {n} more bytes, {self.end - self.pos} left", self.pos)

    def fixed(self, kind):
        s = _FIXED[kind]
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
        if value > _UINT32_MAX:
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
        if n > _MAX_STRING:
            raise DecodeError(f"string length {n} exceeds {_MAX_STRING}", start)
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


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------

def _w_uvarint(out, v):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _check_int(v, kind):
    if isinstance(v, float) or not hasattr(type(v), "__index__"):
        raise EncodeError(f"expected an integer for {kind}, got {type(v).__name__}")
    v = _index(v)
    lo, hi = _INT_RANGES[kind]
    if not lo <= v <= hi:
        raise EncodeError(f"{v} is out of range for {kind}")
    return v


def _utf8(v):
    if not isinstance(v, str):
        raise EncodeError(f"expected str, got {type(v).__name__}")
    try:
        # str.encode, not v.encode: a subclass's own encode() does not change
        # what its characters are (the compiled twin reads them directly).
        b = str.encode(v, "utf-8")
    except UnicodeEncodeError:
        raise EncodeError("string is not encodable as UTF-8") from None
    if len(b) > _MAX_STRING:
        raise EncodeError(f"string of {len(b)} UTF-8 bytes exceeds {_MAX_STRING}")
    return b


def _w_length(out, n, compact, wide):
    if compact:
        _w_uvarint(out, n + 1)
    elif wide:
        out += _FIXED["int32"].pack(n)
    else:
        out += _FIXED["int16"].pack(n)


def _flat(v):
    """The bytes of a bytes-like value, uncopied (a flat memoryview unless it is bytes)."""
    if isinstance(v, bytes):
        return v
    try:
        return memoryview(v).cast("B")
    except TypeError:
        raise EncodeError(f"expected a bytes-like object, got {type(v).__name__}") from None


# ---------------------------------------------------------------------------
# Plans: one per (struct, version), built from the tables on first use
# ---------------------------------------------------------------------------

class _FieldPlan:
    __slots__ = ("field", "attr", "present", "nullable", "compact", "tagged", "min_size", "sub")

    def __init__(self, field, version, flexible):
        self.field = field
        self.attr = field.attr
        self.present = version in field.versions
        self.nullable = version in field.nullable
        self.compact = _schema.is_compact(field, version, flexible)
        self.tagged = flexible and version in field.tagged
        self.min_size = _schema.element_min_size(field, version, flexible) if self.present else 0
        self.sub = _StructPlan(field.fields, version, flexible) if field.is_struct and self.present else None


class _StructPlan:
    __slots__ = ("fields", "flexible", "tagged", "untagged")

    def __init__(self, fields, version, flexible):
        self.fields = [_FieldPlan(f, version, flexible) for f in fields]
        self.flexible = flexible
        self.untagged = [p for p in self.fields if p.present and not p.tagged]
        self.tagged = sorted((p for p in self.fields if p.present and p.tagged), key=lambda p: p.field.tag)


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


def _read_value(r, plan):
    f = plan.field
    if f.is_array:
        n = r.count(plan.compact, plan.nullable, plan.min_size)
        if n is None:
            return None
        out = []
        for i in range(n):
            try:
                out.append(_read_struct(r, plan.sub) if f.is_struct else _read_scalar(r, plan, f.element_type))
            except DecodeError as e:
                raise e.prepend_path(i)
        return out
    if f.is_struct:
        # Kafka marks a nullable struct with an int8: -1 null, 1 present.
        if plan.nullable and r.fixed("int8") < 0:
            return None
        return _read_struct(r, plan.sub)
    return _read_scalar(r, plan, f.type)


def _read_struct(r, splan):
    obj = _CLASSES[id(splan.fields[0].field)].__new__(_CLASSES[id(splan.fields[0].field)])
    values = {}
    for p in splan.untagged:
        try:
            values[p.attr] = _read_value(r, p)
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
        sub = _Reader(b"")
        sub.buf, sub.pos, sub.end, sub.budget, sub.views = r.buf, r.pos, end, r.budget, r.views
        try:
            values[p.attr] = _read_value(sub, p)
        except DecodeError as e:
            raise e.prepend_path(p.attr)
        r.budget = sub.budget
        if sub.pos != end:
            raise DecodeError(f"tagged field {tag} has {end - sub.pos} bytes left over", sub.pos, [p.attr])
        r.pos = end
    return unknown


def _w_null(out, plan, wide):
    if not plan.nullable:
        raise EncodeError("null in a non-nullable field")
    _w_length(out, -1, plan.compact, wide)


def _write_scalar(out, v, plan, t):
    if t == "string":
        if v is None:
            _w_null(out, plan, False)
            return
        b = _utf8(v)
        _w_length(out, len(b), plan.compact, False)
        out += b
    elif t in ("bytes", "records"):
        if v is None:
            _w_null(out, plan, True)
            return
        b = _flat(v)
        if len(b) > 0x7FFFFFFF:
            raise EncodeError("bytes longer than 2^31-1")
        _w_length(out, len(b), plan.compact, True)
        out += b
    elif t == "bool":
        if isinstance(v, float) or not hasattr(type(v), "__index__") or _index(v) not in (0, 1):
            raise EncodeError(f"expected a bool, got {v!r}")
        out.append(1 if v else 0)
    elif t == "uuid":
        b = _flat(v)
        if len(b) != 16:
            raise EncodeError("a uuid is 16 bytes")
        out += b
    elif t == "float64":
        if not isinstance(v, (int, float)):
            raise EncodeError(f"expected a float, got {type(v).__name__}")
        out += _FIXED[t].pack(v)
    else:
        out += _FIXED[t].pack(_check_int(v, t))


def _write_value(out, v, plan):
    f = plan.field
    if f.is_array:
        if v is None:
            _w_null(out, plan, True)
            return
        if isinstance(v, (str, bytes, bytearray, dict)) or not hasattr(v, "__len__"):
            raise EncodeError(f"expected a list, got {type(v).__name__}")
        # A snapshot: an element's own code may change the list while it is
        # written, and the count written first must stay true (as compiled).
        items = list(v)
        _w_length(out, len(items), plan.compact, True)
        for i, item in enumerate(items):
            try:
                if f.is_struct:
                    _write_struct(out, item, plan.sub, f)
                else:
                    _write_scalar(out, item, plan, f.element_type)
            except EncodeError as e:
                raise e.prepend_path(i)
        return
    if f.is_struct:
        if plan.nullable:
            if v is None:
                out.append(0xFF)
                return
            out.append(1)
        _write_struct(out, v, plan.sub, f)
        return
    _write_scalar(out, v, plan, f.type)


def _is_default(field, v):
    d = field.default
    if isinstance(d, list):
        return v is not None and not isinstance(v, (str, bytes)) and hasattr(v, "__len__") and len(v) == 0
    if d is None:
        return v is None
    return v is not None and v == d


def decodes_to_default(field, version, flexible, raw):
    """Whether ``raw``, one encoded value of ``field``, reads back as the field's
    default: what the writer asks before it writes a tagged field.  Public for
    fuzz/differential.py, which asks it of the bytes it canonicalises."""
    return _is_default(field, _read_value(_Reader(raw), _FieldPlan(field, version, flexible)))


def _write_struct(out, obj, splan, field=None):
    cls = _CLASSES[id(splan.fields[0].field)]
    if not isinstance(obj, cls):
        raise EncodeError(f"expected {cls.__name__}, got {type(obj).__name__}")
    for p in splan.fields:
        if not p.present:
            v = getattr(obj, p.attr)
            if not p.field.ignorable and not _is_default(p.field, v):
                raise UnsupportedVersionError(
                    f"{cls.__name__}.{p.attr} = {v!r} cannot be written at this version "
                    f"(the field exists in versions {p.field.versions!r})")
    for p in splan.untagged:
        try:
            _write_value(out, getattr(obj, p.attr), p)
        except EncodeError as e:
            raise e.prepend_path(p.attr)
    if splan.flexible:
        _write_tagged(out, obj, splan)


def _write_tagged(out, obj, splan):
    fields = {}
    for p in splan.tagged:
        v = getattr(obj, p.attr)
        if _is_default(p.field, v):
            continue
        buf = bytearray()
        try:
            _write_value(buf, v, p)
        except EncodeError as e:
            raise e.prepend_path(p.attr)
        fields[p.field.tag] = bytes(buf)
    unknown = obj.unknown_tagged_fields
    if unknown:
        for tag, raw in unknown.items():
            # A tag is an unsigned varint: anything a decoder accepted must write back.
            tag = _check_int(tag, "uint32")
            if tag in fields:
                raise EncodeError(f"unknown tagged field {tag} collides with a known field")
            fields[tag] = bytes(_flat(raw))
    _w_uvarint(out, len(fields))
    for tag in sorted(fields):
        _w_uvarint(out, tag)
        _w_uvarint(out, len(fields[tag]))
        out += fields[tag]


# ---------------------------------------------------------------------------
# Classes
# ---------------------------------------------------------------------------

_MISSING = object()
_CLASSES = {}   # id(first Field of a struct) -> class


class _Struct:
    """Behaviour shared by every message and nested struct class."""

    __slots__ = ()
    _attrs = ()

    def __init__(self, **kwargs):
        for attr, field in zip(self._attrs, self._field_objs):
            v = kwargs.pop(attr, _MISSING)
            setattr(self, attr, field.default if v is _MISSING else v)
        self.unknown_tagged_fields = kwargs.pop("unknown_tagged_fields", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword argument(s) {', '.join(sorted(kwargs))}")

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        for attr in self._attrs:
            if getattr(self, attr) != getattr(other, attr):
                return False
        return (self.unknown_tagged_fields or None) == (other.unknown_tagged_fields or None)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __delattr__(self, name):
        _refuse_deletion(self, name)

    def __repr__(self):
        parts = [f"{a}={getattr(self, a)!r}" for a in self._attrs]
        if self.unknown_tagged_fields:
            parts.append(f"unknown_tagged_fields={self.unknown_tagged_fields!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __reduce__(self):
        state = {a: getattr(self, a) for a in self._attrs}
        state["unknown_tagged_fields"] = self.unknown_tagged_fields
        return (_rebuild, (type(self), state))


class _Message(_Struct):
    __slots__ = ()

    @classmethod
    def _plan(cls, version):
        if not isinstance(version, int) or isinstance(version, bool) or version not in cls._schema.valid:
            raise UnsupportedVersionError(
                f"{cls.__name__} version {version!r} is not supported (valid: {cls._schema.valid!r})")
        plan = cls._plans.get(version)
        if plan is None:
            plan = cls._plans[version] = _StructPlan(cls._schema.fields, version, version in cls._schema.flexible)
        return plan

    def _encode_body(self, version):
        plan = self._plan(version)
        out = bytearray()
        _write_struct(out, self, plan)
        return bytes(out)

    @classmethod
    def _decode_body(cls, r, version, allow_trailing=False):
        obj = _read_struct(r, cls._plan(version))
        if r.pos != r.end and not allow_trailing:
            raise DecodeError(f"{r.end - r.pos} trailing bytes after the body", r.pos)
        return obj

    def encode(self, version):
        """The message body at ``version`` (no size prefix, no header)."""
        return self._encode_body(version)

    @classmethod
    def decode(cls, data, version, *, max_elements=None, views=False):
        """Decode a body written at ``version`` from any bytes-like object.

        ``max_elements`` caps the array elements and tagged fields built in total
        (LimitExceededError past it); None means no cap.  ``views``: bytes fields
        are read-only memoryviews of ``data`` (of a copy unless it is bytes)."""
        cls._plan(version)
        r = _Reader(data, views)
        r.set_limit(max_elements)
        return cls._decode_body(r, version)

    @classmethod
    def decode_prefix(cls, data, version, *, max_elements=None, views=False):
        """``(message, end)``: decode from the start of ``data``, which may go on."""
        cls._plan(version)
        r = _Reader(data, views)
        r.set_limit(max_elements)
        obj = cls._decode_body(r, version, allow_trailing=True)
        return obj, r.pos


class _PrefixedMessage(_Message):
    """Consumer-protocol data: an int16 version, then the body.

    ``version`` is the version a decoded instance was read at (None on one
    built by hand); not a field: it takes no part in equality, and encode()
    writes the newest version unless told."""

    __slots__ = ()  # each class adds "version" after its fields (see _make_class)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.version = None

    def __reduce__(self):
        rebuild, (cls, state) = super().__reduce__()
        state["version"] = self.version
        return rebuild, (cls, state)

    def encode(self, version=None):
        if version is None:
            version = self._schema.valid.hi
        body = self._encode_body(version)
        return _FIXED["int16"].pack(version) + body

    @classmethod
    def decode(cls, data, *, max_elements=None, views=False):
        r = _Reader(data, views)
        r.set_limit(max_elements)
        version = r.fixed("int16")
        if version < 0:
            raise DecodeError(f"negative version {version}", 0)
        # A newer writer may add fields at the end; like Java, read the
        # newest layout we know and ignore what follows it.
        newer = version > cls._schema.valid.hi
        obj = cls._decode_body(r, cls._schema.valid.hi if newer else version, allow_trailing=newer)
        obj.version = version
        return obj


def _make_class(name, fields, base, schema=None):
    attrs = tuple(f.attr for f in fields)
    prefixed = base is _PrefixedMessage
    ns = {
        "__slots__": attrs + ("unknown_tagged_fields",) + (("version",) if prefixed else ()),
        "_attrs": attrs,
        "_field_objs": tuple(fields),
        "__module__": "kwire",
        "__qualname__": name,
    }
    if schema is not None:
        ns["_schema"] = schema
        ns["_plans"] = {}
        ns["kafka_name"] = schema.name
        ns["kind"] = schema.kind
        ns["api_key"] = schema.api_key
        ns["min_version"] = schema.valid.lo
        ns["max_version"] = schema.valid.hi
        ns["flexible_from"] = schema.flexible.lo if not schema.flexible.empty else None
    cls = type(name, (base,), ns)
    _CLASSES[id(fields[0])] = cls
    return cls


def struct_class(fields):
    """This twin's class for the struct whose schema fields are ``fields``
    (nested structs have no name of their own to look up; fuzz/make_corpus.py
    builds them from the schema)."""
    return _CLASSES[id(fields[0])]


def _build_all():
    classes = {}
    for msg in _schema.ALL_MESSAGES:
        nested = {}
        for cname, kname, fields, _rng in msg.structs():
            nested[kname] = classes[cname] = _make_class(cname, fields, _Struct)
        base = _PrefixedMessage if msg.version_prefixed else _Message
        cls = classes[msg.class_name] = _make_class(msg.class_name, msg.fields, base, msg)
        for kname, ncls in nested.items():
            setattr(cls, kname, ncls)
            if ncls.__name__ != kname:
                setattr(cls, ncls.__name__, ncls)
    return classes


_ALL = _build_all()
globals().update(_ALL)
__all__ = sorted(_ALL)  # the framing functions join them at the end of the module


# ---------------------------------------------------------------------------
# Framing: size prefix, header, body (the compiled twin is _framing_c.pxi)
# ---------------------------------------------------------------------------
# Offsets in errors: the size prefix's are at 0; the header's are relative to
# the byte after the size prefix (as its own decode_prefix reports them); the
# body's are relative to the frame.

_REQUEST_CLASSES = {m.api_key: _ALL[m.class_name] for m in _schema.API_MESSAGES if m.kind == "request"}
_RESPONSE_CLASSES = {m.api_key: _ALL[m.class_name] for m in _schema.API_MESSAGES if m.kind == "response"}
_REQUEST_KEYS = {cls: key for key, cls in _REQUEST_CLASSES.items()}
_RESPONSE_KEYS = {cls: key for key, cls in _RESPONSE_CLASSES.items()}


def _check_message(msg, keys, kind):
    """The api key of ``msg`` if it is a kwire ``kind`` message of this codec (or a subclass of one)."""
    api_key = keys.get(type(msg))
    if api_key is not None:
        return api_key
    for cls, api_key in keys.items():
        if isinstance(msg, cls):
            return api_key
    raise EncodeError(f"expected a kwire {kind} message, got {type(msg).__name__}")


def _check_version(cls, version):
    cls._plan(version)


def _encode_frame(cls, header, header_version, msg, version):
    out = bytearray(4)
    out += header.encode(header_version)
    # The class's writer, not msg.encode: a subclass's own encode() does not change its fields' bytes.
    out += cls._encode_body(msg, version)
    size = len(out) - 4
    if size > 0x7FFFFFFF:
        raise EncodeError(f"frame of {size} bytes exceeds the int32 size prefix")
    _FIXED["int32"].pack_into(out, 0, size)
    return bytes(out)


def _header(cls, **values):
    # As the compiled twin does: the attributes set directly, no keyword parsing.
    header = cls.__new__(cls)
    for attr in cls._attrs:
        setattr(header, attr, values[attr])
    header.unknown_tagged_fields = None
    return header


# Both encoders check, in this order: the message's class, the version, the
# header's values, the body's; the compiled twin does the same.
def encode_request(msg, version, correlation_id, client_id=None):
    """A complete request frame: size prefix, request header, body."""
    api_key = _check_message(msg, _REQUEST_KEYS, "request")
    cls = _REQUEST_CLASSES[api_key]
    _check_version(cls, version)
    header = _header(RequestHeader, request_api_key=api_key, request_api_version=version,  # noqa: F821
                     correlation_id=correlation_id, client_id=client_id)
    return _encode_frame(cls, header, _schema.request_header_version(api_key, version), msg, version)


def encode_response(msg, version, correlation_id):
    """A complete response frame: size prefix, response header, body."""
    api_key = _check_message(msg, _RESPONSE_KEYS, "response")
    cls = _RESPONSE_CLASSES[api_key]
    _check_version(cls, version)
    header = _header(ResponseHeader, correlation_id=correlation_id)  # noqa: F821
    return _encode_frame(cls, header, _schema.response_header_version(api_key, version), msg, version)


def _open_frame(frame, views=False):
    """A reader of the bytes after the size prefix, checked against it (``views`` as for ``decode``)."""
    try:
        view = memoryview(frame).cast("B")
    except TypeError:
        raise ArgumentTypeError(f"expected a bytes-like object, not {type(frame).__name__}") from None
    n = len(view)
    if n < 4:
        raise DecodeError(f"truncated: a frame needs 4 size bytes, {n} given", 0)
    (size,) = _FIXED["int32"].unpack_from(view, 0)
    if size != n - 4:
        raise DecodeError(f"size prefix says {size} bytes but the frame has {n - 4}", 0)
    return _Reader(view[4:], views)


def _read_request_header(r, max_elements):
    if r.end < 4:
        raise DecodeError("truncated request header", 4)
    api_key, api_version = _struct.unpack_from(">hh", r.buf, 0)
    try:
        header_version = _schema.request_header_version(api_key, api_version)
    except KeyError:
        # Not a message kwire knows: every api since Kafka 2.4 uses header v2
        # exactly when it is flexible, which cannot be told from here; v1 is
        # what the fixed part of both looks like, so read that much.
        header_version = 1
    r.set_limit(max_elements)
    return _read_header(r, RequestHeader, header_version)  # noqa: F821


def _read_header(r, cls, version):
    """The header at the start of the frame; the body follows it."""
    return cls._decode_body(r, version, allow_trailing=True)


def _read_body(r, cls, version):
    """The body after the header (its version already checked), error offsets made relative to the frame."""
    try:
        return cls._decode_body(r, version)
    except DecodeError as e:
        if e.offset is not None:
            e.offset += 4
        raise


def decode_request(frame, *, max_elements=None, views=False):
    """``(RequestHeader, message)`` from a complete request frame.

    ``max_elements`` caps the array elements and tagged fields built from the
    whole frame, header included, and ``views`` makes bytes fields read-only
    memoryviews of the frame, as for the message classes' ``decode``."""
    r = _open_frame(frame, views)
    header = _read_request_header(r, max_elements)
    cls = _REQUEST_CLASSES.get(header.request_api_key)
    if cls is None:
        raise UnsupportedVersionError(f"api key {header.request_api_key} (request) is not supported by kwire")
    _check_version(cls, header.request_api_version)
    return header, _read_body(r, cls, header.request_api_version)


def decode_response(frame, api_key, version, *, max_elements=None, views=False):
    """``(ResponseHeader, message)`` from a complete response frame.

    Responses do not say what they answer: pass the api key and version of the
    request with the same correlation id.  ``max_elements`` and ``views`` as
    for :func:`decode_request`."""
    # The api key and version come from the caller, not the frame: check them before reading it.
    _check_response_key(api_key, _RESPONSE_CLASSES)
    cls = _RESPONSE_CLASSES[api_key]
    _check_version(cls, version)
    r = _open_frame(frame, views)
    r.set_limit(max_elements)
    header = _read_header(r, ResponseHeader, _schema.response_header_version(api_key, version))  # noqa: F821
    return header, _read_body(r, cls, version)


def split_request(frame):
    """``(RequestHeader, body)`` of a request frame; ``body`` is a memoryview.

    Works for any api key, so a proxy or capture tool can read the header of
    requests kwire has no body codec for."""
    r = _open_frame(frame)
    header = _read_request_header(r, None)
    return header, memoryview(frame).cast("B")[4 + r.pos:]


def decode_request_header(frame):
    """The :class:`RequestHeader` of a request frame, of any api key."""
    return _read_request_header(_open_frame(frame), None)


__all__ += ["decode_request", "decode_request_header", "decode_response", "encode_request", "encode_response",
            "split_request"]
