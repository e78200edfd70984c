# Part of _wire.pxi (included by the generated _codec_c.pyx): the Writer, a growable buffer over raw
# memory, and the checked writes of every wire type.

ctypedef struct Writer:
    uint8_t* buf
    Py_ssize_t len
    Py_ssize_t cap
    # NULL, or the bytes object whose storage ``buf`` is (see _w_grow).
    PyObject* obj


# Past this size the Writer writes into a bytes object's own storage, which
# w_bytes then hands over shrunk in place.  A big message (a leader's
# SyncGroupRequest for 1M partitions is ~20 MB) is then written once instead
# of written and then copied, which also halves the fresh pages it touches;
# a small one keeps the cheaper malloc'd buffer and its one short copy.
cdef enum:
    BYTES_BACKED_FROM = 1 << 20


cdef int w_init(Writer* w, Py_ssize_t cap) except -1:
    w.obj = NULL
    w.buf = <uint8_t*>PyMem_Malloc(cap)
    if w.buf == NULL:
        raise MemoryError()
    w.len = 0
    w.cap = cap
    return 0


cdef void w_free(Writer* w) noexcept:
    if w.obj != NULL:
        Py_XDECREF(w.obj)
        w.obj = NULL
    else:
        PyMem_Free(w.buf)
    w.buf = NULL


cdef int _w_grow(Writer* w, Py_ssize_t n) except -1:
    cdef Py_ssize_t cap = w.cap * 2
    while cap < w.len + n:
        cap *= 2
    cdef uint8_t* nb
    if cap < BYTES_BACKED_FROM:
        nb = <uint8_t*>PyMem_Realloc(w.buf, cap)
        if nb == NULL:
            raise MemoryError()
        w.buf = nb
        w.cap = cap
        return 0
    cdef object first
    if w.obj == NULL:
        first = PyBytes_FromStringAndSize(NULL, cap)
        memcpy(PyBytes_AS_STRING(first), w.buf, w.len)
        PyMem_Free(w.buf)
        Py_INCREF(first)
        w.obj = <PyObject*>first
    else:
        # On failure the resize frees the object and leaves NULL: w_free then has nothing to free.
        w.buf = NULL
        _PyBytes_Resize(&w.obj, cap)
    w.buf = <uint8_t*>PyBytes_AS_STRING(<object>w.obj)
    w.cap = cap
    return 0


cdef inline int w_reserve(Writer* w, Py_ssize_t n) except -1:
    if w.len + n > w.cap:
        return _w_grow(w, n)
    return 0


cdef inline object w_bytes(Writer* w):
    """What ``w`` wrote, as bytes; the Writer's last use before w_free."""
    if w.obj == NULL:
        return PyBytes_FromStringAndSize(<const char*>w.buf, w.len)
    w.buf = NULL
    _PyBytes_Resize(&w.obj, w.len)
    out = <object>w.obj
    Py_XDECREF(w.obj)
    w.obj = NULL
    return out


cdef inline int w_u8(Writer* w, uint8_t v) except -1:
    w_reserve(w, 1)
    w.buf[w.len] = v
    w.len += 1
    return 0


cdef inline int w_be16(Writer* w, uint16_t v) except -1:
    w_reserve(w, 2)
    put_be16(w.buf + w.len, v)
    w.len += 2
    return 0


cdef inline int w_be32(Writer* w, uint32_t v) except -1:
    w_reserve(w, 4)
    put_be32(w.buf + w.len, v)
    w.len += 4
    return 0


cdef inline int w_be64(Writer* w, uint64_t v) except -1:
    w_reserve(w, 8)
    put_be64(w.buf + w.len, v)
    w.len += 8
    return 0


cdef inline int w_uvarint(Writer* w, uint32_t v) except -1:
    w_reserve(w, 5)
    if v < 0x80:
        # Nearly every length and count is below 128: one byte, no loop.
        w.buf[w.len] = <uint8_t>v
        w.len += 1
        return 0
    w.len += put_uvarint(w.buf + w.len, v)
    return 0


cdef inline int w_raw(Writer* w, const void* p, Py_ssize_t n) except -1:
    w_reserve(w, n)
    memcpy(w.buf + w.len, p, n)
    w.len += n
    return 0


cdef inline int w_length(Writer* w, Py_ssize_t n, bint compact, bint wide) except -1:
    if compact:
        return w_uvarint(w, <uint32_t>(n + 1))
    if wide:
        return w_be32(w, <uint32_t><int32_t>n)
    return w_be16(w, <uint16_t><int16_t>n)


cdef int64_t _int_slow(object v, int64_t lo, int64_t hi, str kind) except? -1:
    if isinstance(v, float) or not PyIndex_Check(v):
        raise EncodeError(f"expected an integer for {kind}, got {type(v).__name__}")
    v = PyNumber_Index(v)
    cdef int overflow = 0
    cdef long long x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow or x < lo or x > hi:
        raise EncodeError(f"{v} is out of range for {kind}")
    return x


cdef inline int64_t as_int(object v, int64_t lo, int64_t hi, str kind) except? -1:
    cdef int overflow = 0
    cdef long long x
    if PyLong_Check(v):
        x = PyLong_AsLongLongAndOverflow(v, &overflow)
        if not overflow and lo <= x <= hi:
            return x
    return _int_slow(v, lo, hi, kind)


cdef inline int w_int8(Writer* w, object v) except -1:
    return w_u8(w, <uint8_t><int8_t>as_int(v, -0x80, 0x7F, "int8"))


cdef inline int w_int16(Writer* w, object v) except -1:
    return w_be16(w, <uint16_t><int16_t>as_int(v, -0x8000, 0x7FFF, "int16"))


cdef inline int w_uint16(Writer* w, object v) except -1:
    return w_be16(w, <uint16_t>as_int(v, 0, 0xFFFF, "uint16"))


cdef inline int w_int32(Writer* w, object v) except -1:
    return w_be32(w, <uint32_t><int32_t>as_int(v, -0x80000000, 0x7FFFFFFF, "int32"))


cdef inline int w_int64(Writer* w, object v) except -1:
    return w_be64(w, <uint64_t>as_int(v, INT64_MIN, INT64_MAX, "int64"))


cdef int w_bool(Writer* w, object v) except -1:
    if v is True:
        return w_u8(w, 1)
    if v is False:
        return w_u8(w, 0)
    if isinstance(v, float) or not PyIndex_Check(v) or PyNumber_Index(v) not in (0, 1):
        raise EncodeError(f"expected a bool, got {v!r}")
    return w_u8(w, 1 if v else 0)


cdef int w_float64(Writer* w, object v) except -1:
    if not isinstance(v, (int, float)):
        raise EncodeError(f"expected a float, got {type(v).__name__}")
    cdef double d = v
    cdef uint64_t bits
    memcpy(&bits, &d, 8)
    return w_be64(w, bits)


cdef int w_null(Writer* w, bint nullable, bint compact, bint wide) except -1:
    if not nullable:
        raise EncodeError("null in a non-nullable field")
    return w_length(w, -1, compact, wide)


cdef int w_string(Writer* w, object v, bint compact, bint nullable) except -1:
    if v is None:
        return w_null(w, nullable, compact, 0)
    if not PyUnicode_Check(v):
        raise EncodeError(f"expected str, got {type(v).__name__}")
    cdef Py_ssize_t n
    cdef const char* p = _utf8_or_null(v, &n)
    if p == NULL:
        return _w_string_failed()
    if n > MAX_STRING:
        raise EncodeError(f"string of {n} UTF-8 bytes exceeds {MAX_STRING}")
    w_length(w, n, compact, 0)
    return w_raw(w, p, n)


cdef int _w_string_failed() except -1:
    # PyUnicode_AsUTF8AndSize's error: a str with a lone surrogate has no UTF-8 (the value's fault); any other
    # error (MemoryError) is left to propagate.
    if PyErr_ExceptionMatches(UnicodeEncodeError):
        PyErr_Clear()
        raise EncodeError("string is not encodable as UTF-8") from None
    return -1


cdef int w_bytes_raw(Writer* w, const void* p, Py_ssize_t n, bint compact) except -1:
    # The one length check of every bytes field, whichever way its bytes were reached.
    if n > 0x7FFFFFFF:
        raise EncodeError("bytes longer than 2^31-1")
    w_length(w, n, compact, 1)
    return w_raw(w, p, n)


cdef int w_bytes_value(Writer* w, object v, bint compact, bint nullable) except -1:
    if v is None:
        return w_null(w, nullable, compact, 1)
    cdef Py_buffer view
    if PyBytes_CheckExact(v):
        return w_bytes_raw(w, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), compact)
    try:
        PyObject_GetBuffer(v, &view, PyBUF_SIMPLE)
    except (TypeError, BufferError, ValueError):
        # ValueError: NumPy's refusal of a non-contiguous array.
        raise EncodeError(f"expected a bytes-like object, got {type(v).__name__}") from None
    try:
        w_bytes_raw(w, view.buf, view.len, compact)
    finally:
        PyBuffer_Release(&view)
    return 0


cdef int w_uuid(Writer* w, object v) except -1:
    cdef Py_buffer view
    try:
        PyObject_GetBuffer(v, &view, PyBUF_SIMPLE)
    except (TypeError, BufferError, ValueError):
        raise EncodeError(f"expected a bytes-like object, got {type(v).__name__}") from None
    try:
        if view.len != 16:
            raise EncodeError("a uuid is 16 bytes")
        w_raw(w, view.buf, 16)
    finally:
        PyBuffer_Release(&view)
    return 0
