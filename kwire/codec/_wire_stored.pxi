# Part of _wire.pxi (included by the generated _codec_c.pyx): what decoded instances keep instead of
# objects (empty arrays, integers in C slots), and the helpers the generated writers share over them.


#: What a decoded empty array holds until it is read: then the field's property makes it a list of its own.
#: A decode of many elements with empty arrays (OffsetFetch's topics) would otherwise build a list each.
cdef object EMPTY_ARRAY = object()


cdef inline object as_read(object v):
    """The value a field holding ``v`` reads as, for comparing without keeping a list in the field."""
    return [] if v is EMPTY_ARRAY else v


cdef bint int_fits(object v, int64_t lo, int64_t hi, int64_t* out) noexcept:
    """Whether ``v`` can live in an integer field's C slot: an exact int (a bool or an int subclass reads
    back as itself, as in the pure twin) in the slot's range."""
    cdef int overflow = 0
    cdef long long x
    if not PyLong_CheckExact(v):
        return False
    x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow or x < lo or x > hi:
        return False
    out[0] = x
    return True


cdef dict over_keep(dict over, str name, object v):
    if over is None:
        over = {}
    over[name] = v
    return over


cdef dict over_drop(dict over, str name):
    del over[name]
    return over or None


cdef enum:
    HELD_INT8, HELD_INT16, HELD_UINT16, HELD_INT32, HELD_INT64


# What an integer field keeps in ``overflow`` is written, or refused, as the boxed field was.  One function
# for the rare path, so the generated writers carry a call per field instead of an inlined int check.
cdef int w_held(Writer* w, dict overflow, str name, int kind) except -1:
    v = overflow[name]
    if kind == HELD_INT8:
        return w_int8(w, v)
    if kind == HELD_INT16:
        return w_int16(w, v)
    if kind == HELD_UINT16:
        return w_uint16(w, v)
    if kind == HELD_INT32:
        return w_int32(w, v)
    return w_int64(w, v)


cdef bint held_is(dict overflow, str name, object default) except -1:
    """Whether an integer field's value kept in ``overflow`` is its default (see _default_test)."""
    v = overflow[name]
    return v is not None and v == default


cdef list _NO_ITEMS = []


cdef Py_ssize_t length_of(object v) except -1:
    """``len(v)`` of an array field's value, an EncodeError where its ``__len__`` gives no count (negative,
    past Py_ssize_t, not an int).  The pure twin's ``length_of`` says the same."""
    try:
        return len(v)
    except (ValueError, OverflowError, TypeError) as e:
        raise EncodeError(f"the length of a {type(v).__name__} is not a count: {e}") from None


cdef list as_list(object v):
    """A snapshot of the elements of an array field (None is handled by the caller).

    Always a copy: an element's own code (an ``__index__``, a ``__str__``) may
    change the list while it is written, and the count written first must stay
    true.  The pure twin takes the same snapshot."""
    if PyList_CheckExact(v):
        return PyList_GetSlice(v, 0, PY_SSIZE_T_MAX)
    if v is EMPTY_ARRAY:
        return _NO_ITEMS  # only read: the writers take its length and elements
    if isinstance(v, (str, bytes, bytearray, dict)) or not hasattr(v, "__len__"):
        raise EncodeError(f"expected a list, got {type(v).__name__}")
    cdef Py_ssize_t n = length_of(v)
    # Collected by iterating, not by list(v): list() sizes its first allocation by __len__, and a subclass's
    # __len__ may say 2**62.  A count that disagrees with the elements is refused, not written.
    cdef list items = [item for item in v]
    if len(items) != n:
        raise EncodeError(f"a {type(v).__name__} says it has {n} elements but holds {len(items)}")
    return items


cdef bint is_empty_list(object v) except -1:
    if v is EMPTY_ARRAY:
        return True
    if v is None or isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
        return False
    return length_of(v) == 0


cdef int w_tags(Writer* w, object unknown, dict known) except -1:
    """The tagged-field section: known non-default fields plus preserved unknown ones, by tag."""
    cdef dict fields = known if known is not None else {}
    if unknown:
        for tag, raw in unknown.items():
            # A tag is an unsigned varint: anything a decoder accepted must write back.
            tag = as_int(tag, 0, 0xFFFFFFFF, "uint32")
            if tag in fields:
                raise EncodeError(f"unknown tagged field {tag} collides with a known field")
            if not PyBytes_CheckExact(raw):
                try:
                    raw = memoryview(raw).cast("B").tobytes()
                except (TypeError, ValueError):
                    raise EncodeError(f"expected a bytes-like object, got {type(raw).__name__}") from None
            fields[tag] = raw
    w_uvarint(w, <uint32_t>len(fields))
    cdef bytes b
    for tag in sorted(fields):
        b = fields[tag]
        w_uvarint(w, <uint32_t>tag)
        w_uvarint(w, <uint32_t>PyBytes_GET_SIZE(b))
        w_raw(w, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))
    return 0


cdef inline int w_no_tags(Writer* w, object unknown) except -1:
    if unknown is None:
        return w_u8(w, 0)
    return w_tags(w, unknown, None)


cdef int check_version(object version, int lo, int hi, str name, str valid) except -1:
    if type(version) is int:
        if lo <= version <= hi:
            return 0
    elif isinstance(version, int) and not isinstance(version, bool) and lo <= version <= hi:
        return 0
    raise UnsupportedVersionError(f"{name} version {version!r} is not supported (valid: {valid})")
