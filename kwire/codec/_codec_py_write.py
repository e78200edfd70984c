"""The pure codec's writer: field values to bytes, walking a struct's plan (compiled twin: ``_wire.pxi``'s Writer
and the generated ``_w_*`` functions)."""

from operator import index as _index

from kwire.codec._codec_py_plans import CLASSES, FIXED, INT_RANGES, MAX_STRING, FieldPlan
from kwire.codec._codec_py_read import Reader, read_value
from kwire.errors import EncodeError, UnsupportedVersionError


def _w_uvarint(out, v):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def check_int(v, kind):
    if isinstance(v, float) or not hasattr(type(v), "__index__"):
        raise EncodeError(f"expected an integer for {kind}, got {type(v).__name__}")
    v = _index(v)
    lo, hi = INT_RANGES[kind]
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
    if len(b) > MAX_STRING:
        raise EncodeError(f"string of {len(b)} UTF-8 bytes exceeds {MAX_STRING}")
    return b


def _w_length(out, n, compact, wide):
    if compact:
        _w_uvarint(out, n + 1)
    elif wide:
        out += FIXED["int32"].pack(n)
    else:
        out += FIXED["int16"].pack(n)


def _flat(v):
    """The bytes of a bytes-like value, uncopied (a flat memoryview unless it is bytes)."""
    if isinstance(v, bytes):
        return v
    try:
        return memoryview(v).cast("B")
    except TypeError:
        raise EncodeError(f"expected a bytes-like object, got {type(v).__name__}") from None


def length_of(v):
    """``len(v)`` of an array field's value, an EncodeError where its ``__len__`` gives no count (negative,
    past the largest index, not an int), as the compiled twin's ``length_of``."""
    try:
        return len(v)
    except (ValueError, OverflowError, TypeError) as e:
        raise EncodeError(f"the length of a {type(v).__name__} is not a count: {e}") from None


def snapshot(v):
    """The elements of an array field's value, collected by iterating: ``list(v)`` sizes its first allocation
    by ``__len__``, which a subclass may make say 2**62.  A count that disagrees with the elements is refused."""
    if type(v) is list:
        return list(v)  # an exact list's length is its own
    n = length_of(v)
    items = [item for item in v]
    if len(items) != n:
        raise EncodeError(f"a {type(v).__name__} says it has {n} elements but holds {len(items)}")
    return items


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
        out += FIXED[t].pack(v)
    else:
        out += FIXED[t].pack(check_int(v, t))


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
        items = snapshot(v)
        _w_length(out, len(items), plan.compact, True)
        for i, item in enumerate(items):
            try:
                if f.is_struct:
                    write_struct(out, item, plan.sub, f)
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
        write_struct(out, v, plan.sub, f)
        return
    _write_scalar(out, v, plan, f.type)


def is_default(field, v):
    d = field.default
    if isinstance(d, list):
        return v is not None and not isinstance(v, (str, bytes)) and hasattr(v, "__len__") and length_of(v) == 0
    if d is None:
        return v is None
    return v is not None and v == d


def decodes_to_default(field, version, flexible, raw):
    """Whether ``raw``, one encoded value of ``field``, reads back as the field's
    default: what the writer asks before it writes a tagged field.  Public for
    fuzz/differential.py, which asks it of the bytes it canonicalises."""
    return is_default(field, read_value(Reader(raw), FieldPlan(field, version, flexible)))


def write_struct(out, obj, splan, field=None):
    cls = CLASSES[id(splan.fields[0].field)]
    if not isinstance(obj, cls):
        raise EncodeError(f"expected {cls.__name__}, got {type(obj).__name__}")
    for p in splan.fields:
        if not p.present:
            v = getattr(obj, p.attr)
            if not p.field.ignorable and not is_default(p.field, v):
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
        if is_default(p.field, v):
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
            tag = check_int(tag, "uint32")
            if tag in fields:
                raise EncodeError(f"unknown tagged field {tag} collides with a known field")
            fields[tag] = bytes(_flat(raw))
    _w_uvarint(out, len(fields))
    for tag in sorted(fields):
        _w_uvarint(out, tag)
        _w_uvarint(out, len(fields[tag]))
        out += fields[tag]

