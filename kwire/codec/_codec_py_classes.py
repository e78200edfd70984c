"""The pure codec's classes: one per message and nested struct of the schema tables, made at import."""

from kwire.codec import _schema
from kwire.codec._codec_common import rebuild as _rebuild
from kwire.codec._codec_common import refuse_deletion as _refuse_deletion
from kwire.codec._codec_py_plans import CLASSES, FIXED, StructPlan
from kwire.codec._codec_py_read import Reader, read_struct
from kwire.codec._codec_py_write import write_struct
from kwire.errors import DecodeError, UnsupportedVersionError


_MISSING = object()


class Struct:
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


class Message(Struct):
    __slots__ = ()

    @classmethod
    def _plan(cls, version):
        if not isinstance(version, int) or isinstance(version, bool) or version not in cls._schema.valid:
            raise UnsupportedVersionError(
                f"{cls.__name__} version {version!r} is not supported (valid: {cls._schema.valid!r})")
        plan = cls._plans.get(version)
        if plan is None:
            plan = cls._plans[version] = StructPlan(cls._schema.fields, version, version in cls._schema.flexible)
        return plan

    def _encode_body(self, version):
        plan = self._plan(version)
        out = bytearray()
        write_struct(out, self, plan)
        return bytes(out)

    @classmethod
    def _decode_body(cls, r, version, allow_trailing=False):
        obj = read_struct(r, cls._plan(version))
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
        r = Reader(data, views)
        r.set_limit(max_elements)
        return cls._decode_body(r, version)

    @classmethod
    def decode_prefix(cls, data, version, *, max_elements=None, views=False):
        """``(message, end)``: decode from the start of ``data``, which may go on."""
        cls._plan(version)
        r = Reader(data, views)
        r.set_limit(max_elements)
        obj = cls._decode_body(r, version, allow_trailing=True)
        return obj, r.pos


class PrefixedMessage(Message):
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
        return FIXED["int16"].pack(version) + body

    @classmethod
    def decode(cls, data, *, max_elements=None, views=False):
        r = Reader(data, views)
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
    prefixed = base is PrefixedMessage
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
    CLASSES[id(fields[0])] = cls
    return cls


def struct_class(fields):
    """This twin's class for the struct whose schema fields are ``fields``
    (nested structs have no name of their own to look up; fuzz/make_corpus.py
    builds them from the schema)."""
    return CLASSES[id(fields[0])]


def _build_all():
    classes = {}
    for msg in _schema.ALL_MESSAGES:
        nested = {}
        for cname, kname, fields, _rng in msg.structs():
            nested[kname] = classes[cname] = _make_class(cname, fields, Struct)
        base = PrefixedMessage if msg.version_prefixed else Message
        cls = classes[msg.class_name] = _make_class(msg.class_name, msg.fields, base, msg)
        for kname, ncls in nested.items():
            setattr(cls, kname, ncls)
            if ncls.__name__ != kname:
                setattr(cls, ncls.__name__, ncls)
    return classes


ALL = _build_all()
