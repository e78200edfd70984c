# Part of _wire.pxi (included by the generated _codec_c.pyx): the Reader, bounds-checked reads of every
# wire type.  Every read checks the bytes remaining *before* it allocates anything.

ctypedef struct Reader:
    const uint8_t* p
    Py_ssize_t pos
    Py_ssize_t end
    # Array elements and tagged-field entries still allowed (max_elements);
    # PY_SSIZE_T_MAX when the caller set no limit, so the check never fires.
    Py_ssize_t budget
    # The field an element struct is reading (-1: none): element readers run
    # without a try of their own, and whoever called one names the field.
    int field
    # decode(..., views=True): a memoryview over the bytes object the reader
    # reads (borrowed: the decode's ``keep`` holds it), and where that
    # object's storage starts; bytes fields are then slices of it, not
    # copies.  NULL: copies.
    PyObject* views
    const uint8_t* views_base


cdef int _raise_truncated(Reader* r, Py_ssize_t n) except -1:
    raise DecodeError(f"truncated: needs {n} more bytes, {r.end - r.pos} left", r.pos)


cdef inline int r_need(Reader* r, Py_ssize_t n) except -1:
    if n > r.end - r.pos:
        return _raise_truncated(r, n)
    return 0


cdef inline int8_t r_int8(Reader* r) except? -1:
    r_need(r, 1)
    cdef int8_t v = <int8_t>r.p[r.pos]
    r.pos += 1
    return v


cdef inline bint r_bool(Reader* r) except? -1:
    r_need(r, 1)
    cdef uint8_t v = r.p[r.pos]
    r.pos += 1
    return v != 0


cdef inline int16_t r_int16(Reader* r) except? -1:
    r_need(r, 2)
    cdef const uint8_t* p = r.p + r.pos
    r.pos += 2
    return <int16_t>get_be16(p)


cdef inline uint16_t r_uint16(Reader* r) except? 0xFFFF:
    r_need(r, 2)
    cdef const uint8_t* p = r.p + r.pos
    r.pos += 2
    return get_be16(p)


cdef inline int32_t r_int32(Reader* r) except? -1:
    r_need(r, 4)
    cdef const uint8_t* p = r.p + r.pos
    r.pos += 4
    return <int32_t>get_be32(p)


cdef inline int64_t r_int64(Reader* r) except? -1:
    r_need(r, 8)
    cdef const uint8_t* p = r.p + r.pos
    r.pos += 8
    return <int64_t>get_be64(p)


cdef inline double r_float64(Reader* r) except? -1:
    cdef int64_t bits = r_int64(r)
    cdef double d
    memcpy(&d, &bits, 8)
    return d


cdef int r_uvarint(Reader* r, uint32_t* out) except -1:
    cdef Py_ssize_t start = r.pos
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if r.pos >= r.end:
            raise DecodeError("truncated varint", start)
        b = r.p[r.pos]
        r.pos += 1
        value |= (<uint64_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
        if shift >= 35:
            raise DecodeError("varint longer than 5 bytes", start)
    if value > 0xFFFFFFFF:
        raise DecodeError("varint exceeds 32 bits", start)
    out[0] = <uint32_t>value
    return 0


cdef inline int r_uvarint_fast(Reader* r, uint32_t* out) except -1:
    # Nearly every length and count is below 128: one byte, no loop.
    if r.pos < r.end and r.p[r.pos] < 0x80:
        out[0] = r.p[r.pos]
        r.pos += 1
        return 0
    return r_uvarint(r, out)


cdef inline Py_ssize_t r_length(Reader* r, bint compact, bint wide, bint nullable) except -2:
    """A length or count; -1 for null."""
    cdef Py_ssize_t start = r.pos
    cdef uint32_t u
    cdef int64_t n
    if compact:
        r_uvarint_fast(r, &u)
        n = <int64_t>u - 1
    elif wide:
        n = r_int32(r)
    else:
        n = r_int16(r)
    if n == -1:
        if not nullable:
            raise DecodeError("null in a non-nullable field", start)
        return -1
    if n < 0:
        raise DecodeError(f"negative length {n}", start)
    return <Py_ssize_t>n


cdef inline uint8_t* ascii_data(object s) noexcept:
    """The characters of ``s``, a str just made by ``PyUnicode_New(n, 127)``: a compact ASCII string's
    one byte per character follow its header (what PyUnicode_DATA answers after testing both flags)."""
    return <uint8_t*>((<PyASCIIObject*><PyObject*>s) + 1)


cdef extern from *:
    """
    #if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
    #include <emmintrin.h>
    #define KWIRE_SSE2 1
    #endif

    /* Copy src[:n] to dst; whether every byte was ASCII.  With SSE2 (every
       x86-64) 16 and more bytes go 16 at a time, the last block overlapping
       the one before; otherwise, and below 16, 8 bytes at a time the same
       way, so that only lengths under 8 take a byte loop. */
    static CYTHON_INLINE int kwire_copy_if_ascii(uint8_t* dst, const uint8_t* src, Py_ssize_t n) {
        Py_ssize_t i = 0;
    #ifdef KWIRE_SSE2
        if (n >= 16) {
            __m128i v, high = _mm_setzero_si128();
            for (; i + 16 < n; i += 16) {
                v = _mm_loadu_si128((const __m128i*)(src + i));
                _mm_storeu_si128((__m128i*)(dst + i), v);
                high = _mm_or_si128(high, v);
            }
            v = _mm_loadu_si128((const __m128i*)(src + n - 16));
            _mm_storeu_si128((__m128i*)(dst + n - 16), v);
            high = _mm_or_si128(high, v);
            return _mm_movemask_epi8(high) == 0;
        }
    #endif
        uint64_t word, high = 0;
        if (n >= 8) {
            for (; i + 8 < n; i += 8) {
                memcpy(&word, src + i, 8);
                memcpy(dst + i, &word, 8);
                high |= word;
            }
            memcpy(&word, src + n - 8, 8);
            memcpy(dst + n - 8, &word, 8);
            high |= word;
        } else {
            for (; i < n; i++) {
                dst[i] = src[i];
                high |= src[i];
            }
        }
        return (high & 0x8080808080808080ULL) == 0;
    }
    """
    bint copy_if_ascii "kwire_copy_if_ascii"(uint8_t* dst, const uint8_t* src, Py_ssize_t n) noexcept


cdef inline Py_ssize_t r_compact_length_byte(Reader* r, bint nullable) noexcept:
    """The length of a compact string or bytes when it is one varint byte, -2 otherwise.

    Member ids, names and metadata are shorter than 127 bytes, so their length
    is one byte; reading it here, in a function the C compiler inlines into
    every caller, spares three calls per group member that r_length (which
    gcc keeps out of line) costs.  -2 sends every other case, null in a
    non-nullable field included, to r_length and its errors."""
    cdef uint8_t b
    if r.pos < r.end:
        b = r.p[r.pos]
        if b < 0x80 and (b != 0 or nullable):
            r.pos += 1
            return <Py_ssize_t>b - 1
    return -2


cdef inline object new_ascii(const uint8_t* p, Py_ssize_t n):
    """A str of ``p[:n]`` (``n`` at most 64) when every byte is ASCII; None otherwise.

    An ASCII str is one byte per character, so it is made by copying the bytes
    while checking them, in one pass, which skips the UTF-8 decoder's set-up
    and its guess at the string's size."""
    s = PyUnicode_New(n, 127)
    if copy_if_ascii(ascii_data(s), p, n):
        return s
    return None


cdef inline object r_string(Reader* r, bint compact, bint nullable):
    # The common string (a member id, a topic or group name: compact, one
    # length byte, at most 64 bytes, ASCII) and the null one (a static
    # member's absent instance id, a null error message) are read here, in a
    # function inlined into every reader, as new_ascii is into it: the one call
    # left is PyUnicode_New's.  Everything else (longer, wider lengths, bytes missing,
    # a null where none may be) goes to _r_string_slow and its errors.
    cdef Py_ssize_t n
    if compact:
        if r.pos < r.end:
            n = <Py_ssize_t>r.p[r.pos] - 1
            if 0 <= n <= 64 and n < r.end - r.pos:
                r.pos += 1
                s = new_ascii(r.p + r.pos, n)
                if s is None:
                    # The rare non-ASCII name takes the decoder.
                    return _r_utf8(r, n)
                r.pos += n
                return s
            if n == -1 and nullable:
                r.pos += 1
                return None
    elif nullable and r.pos + 1 < r.end and r.p[r.pos] == 0xFF and r.p[r.pos + 1] == 0xFF:
        r.pos += 2
        return None
    return _r_string_slow(r, compact, nullable)


cdef object _r_utf8(Reader* r, Py_ssize_t n):
    """The ``n`` bytes at ``r.pos`` (known to be there) decoded as UTF-8; steps past them."""
    try:
        s = PyUnicode_DecodeUTF8(<const char*>(r.p + r.pos), n, NULL)
    except UnicodeDecodeError:
        raise DecodeError("invalid UTF-8", r.pos) from None
    r.pos += n
    return s


cdef object _r_string_slow(Reader* r, bint compact, bint nullable):
    cdef Py_ssize_t start = r.pos
    cdef Py_ssize_t n = r_length(r, compact, 0, nullable)
    if n == -1:
        return None
    if n > MAX_STRING:
        raise DecodeError(f"string length {n} exceeds {MAX_STRING}", start)
    r_need(r, n)
    cdef const uint8_t* p = r.p + r.pos
    cdef object s
    if n <= 64:
        s = new_ascii(p, n)
        if s is not None:
            r.pos += n
            return s
    elif is_ascii(p, n):
        s = PyUnicode_New(n, 127)
        memcpy(ascii_data(s), p, n)
        r.pos += n
        return s
    return _r_utf8(r, n)


cdef inline object r_bytes(Reader* r, bint compact, bint nullable, PyObject* before=NULL):
    """A bytes field; ``before`` itself when it is bytes equal to what follows.

    An array's elements often carry equal bytes (every member of a group
    sending the same Subscription): passing the previous element's value
    keeps one shared immutable object instead of a copy per element.
    ``before`` is borrowed (NULL: none), so passing it costs no reference."""
    cdef Py_ssize_t n = r_compact_length_byte(r, nullable) if compact else -2
    if n == -2:
        n = r_length(r, compact, 1, nullable)
    if n == -1:
        return None
    r_need(r, n)
    if r.views != NULL:
        return _r_view(r, n)
    # The first byte is compared inline so that bytes which differ (the common
    # case when they do) skip the memcmp call.
    if (before != NULL and PyBytes_CheckExact(<object>before) and PyBytes_GET_SIZE(<object>before) == n
            and (n == 0 or (<const uint8_t*>PyBytes_AS_STRING(<object>before))[0] == r.p[r.pos])
            and memcmp(PyBytes_AS_STRING(<object>before), r.p + r.pos, n) == 0):
        r.pos += n
        return <object>before
    b = PyBytes_FromStringAndSize(<const char*>(r.p + r.pos), n)
    r.pos += n
    return b


cdef object _r_view(Reader* r, Py_ssize_t n):
    """The ``n`` bytes at ``r.pos`` (known to be there) as a slice of ``r.views``; steps past them."""
    cdef Py_ssize_t start = (r.p + r.pos) - r.views_base
    v = PySequence_GetSlice(<object>r.views, start, start + n)
    r.pos += n
    return v


cdef object r_uuid(Reader* r):
    r_need(r, 16)
    b = PyBytes_FromStringAndSize(<const char*>(r.p + r.pos), 16)
    r.pos += 16
    return b


cdef int _raise_limit(Reader* r, Py_ssize_t n, str what, Py_ssize_t start) except -1:
    raise _LimitExceededError(f"{n} {what} exceed the max_elements limit ({r.budget} left)", start)


cdef Py_ssize_t r_count(Reader* r, bint compact, bint nullable, Py_ssize_t min_size) except -2:
    """An array count, refused unless that many elements could fit in what is left."""
    cdef Py_ssize_t start = r.pos
    cdef Py_ssize_t n = r_length(r, compact, 1, nullable)
    if n > 0:
        if n > (r.end - r.pos) // min_size:
            raise DecodeError(f"array of {n} elements cannot fit in {r.end - r.pos} bytes", start)
        if n > r.budget:
            return _raise_limit(r, n, "array elements", start)
        r.budget -= n
    return n


cdef inline Py_ssize_t r_tag_count(Reader* r) except -1:
    # Nearly every struct has an empty tag section: one zero byte.
    if r.pos < r.end and r.p[r.pos] == 0:
        r.pos += 1
        return 0
    return _r_tag_count(r)


cdef Py_ssize_t _r_tag_count(Reader* r) except -1:
    cdef Py_ssize_t start = r.pos
    cdef uint32_t count
    r_uvarint_fast(r, &count)
    if count:
        if <Py_ssize_t>count * 2 > r.end - r.pos:
            raise DecodeError(f"{count} tagged fields cannot fit in {r.end - r.pos} bytes", start)
        if <Py_ssize_t>count > r.budget:
            return _raise_limit(r, count, "tagged fields", start)
        r.budget -= count
    return count


cdef int r_tag_header(Reader* r, int64_t* last, uint32_t* tag, uint32_t* size) except -1:
    cdef Py_ssize_t at = r.pos
    r_uvarint(r, tag)
    if <int64_t>tag[0] <= last[0]:
        raise DecodeError(f"tagged field {tag[0]} out of order or repeated", at)
    last[0] = tag[0]
    r_uvarint(r, size)
    r_need(r, size[0])
    return 0


cdef inline bint r_no_tags(Reader* r) noexcept:
    """Whether a tagged-field section is empty (one zero byte), which it then steps past."""
    if r.pos < r.end and r.p[r.pos] == 0:
        r.pos += 1
        return True
    return False


cdef object _r_unknown_tags(Reader* r):
    """The tagged-field section of a struct with no known tags: all preserved raw (None when empty)."""
    cdef Py_ssize_t count = _r_tag_count(r)
    if count == 0:
        return None
    cdef int64_t last = -1
    cdef uint32_t tag, size
    cdef dict unknown = {}
    cdef Py_ssize_t i
    for i in range(count):
        r_tag_header(r, &last, &tag, &size)
        unknown[tag] = PyBytes_FromStringAndSize(<const char*>(r.p + r.pos), size)
        r.pos += size
    return unknown


cdef int r_check_tag_consumed(Reader* r, Py_ssize_t end, uint32_t tag, str attr) except -1:
    if r.pos != end:
        raise DecodeError(f"tagged field {tag} has {end - r.pos} bytes left over", r.pos, [attr])
    return 0


cdef int r_finish(Reader* r) except -1:
    if r.pos != r.end:
        raise DecodeError(f"{r.end - r.pos} trailing bytes after the body", r.pos)
    return 0


cdef class _Input:
    """Read-only view of any bytes-like object for the lifetime of a decode."""
    cdef Py_buffer view
    cdef bint held

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)


cdef int r_set_limit(Reader* r, object max_elements) except -1:
    """Apply a caller's ``max_elements`` (None: no limit)."""
    if max_elements is None:
        return 0
    if isinstance(max_elements, bool) or not isinstance(max_elements, int):
        raise ArgumentTypeError(f"max_elements must be an int or None, not {type(max_elements).__name__}")
    if max_elements < 0:
        raise ArgumentValueError(f"max_elements must be >= 0, got {max_elements}")
    r.budget = <Py_ssize_t>max_elements if max_elements < PY_SSIZE_T_MAX else PY_SSIZE_T_MAX
    return 0


cdef object r_open(Reader* r, object data):
    """Point ``r`` at ``data``; returns whatever must stay alive while reading."""
    r.budget = PY_SSIZE_T_MAX
    r.field = -1
    r.views = NULL
    # bytes is by far the common input: take its storage directly.
    if PyBytes_CheckExact(data):
        r.p = <const uint8_t*>PyBytes_AS_STRING(data)
        r.pos = 0
        r.end = PyBytes_GET_SIZE(data)
        return None
    cdef _Input inp = _Input.__new__(_Input)
    try:
        PyObject_GetBuffer(data, &inp.view, PyBUF_SIMPLE)
    except (TypeError, BufferError, ValueError):
        # ValueError: NumPy's refusal of a non-contiguous array.
        raise ArgumentTypeError(f"expected a bytes-like object, not {type(data).__name__}") from None
    inp.held = True
    r.p = <const uint8_t*>inp.view.buf
    r.pos = 0
    r.end = inp.view.len
    return inp


cdef object r_open_views(Reader* r, object data, bint views):
    """:func:`r_open`, and with ``views`` bytes fields read as read-only
    memoryviews of one bytes object: ``data`` itself when it is bytes (no
    copy), else one copy of it, as the pure twin makes of any input, so
    that no view can change under its reader.  Returns what must stay alive."""
    if not views:
        return r_open(r, data)
    if not PyBytes_CheckExact(data):
        keep = r_open(r, data)
        data = PyBytes_FromStringAndSize(<const char*>r.p, r.end)
        del keep
    base = PyMemoryView_FromObject(data)
    r_open(r, data)
    r.views = <PyObject*>base
    r.views_base = r.p
    return data, base
