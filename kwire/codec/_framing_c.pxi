# The compiled framing: size prefix, request/response header, body, in one pass over one buffer.
#
# Included by the generated _codec_c.pyx, after the generated tables it uses
# (_REQUEST_KEYS, _REQUEST_CLASSES, _check_request_version, _r_request_body,
# _w_request_body, _request_header_version, and the same for responses).  It lives inside the codec
# module rather than in a module of its own because a frame costs little more
# than its body only when the header and the body are read by the same Reader
# and written by the same Writer: a separate module would reach the codec
# through Python calls, slices and memoryviews, which cost more than a
# Heartbeat body does.
#
# The pure twin is the "Framing" section of kwire/codec/_codec_py.py; every
# error text, offset and ``max_elements`` count matches it.  Offsets: errors in
# the size prefix are at 0; errors in the header are relative to the byte after
# the size prefix (as the header class's own decode_prefix reports them); errors
# in the body are relative to the frame.


cdef int _check_message(int exact_key, object msg, dict keys, str kind) except -1:
    """The api key of ``msg`` if it is a kwire ``kind`` message of this codec (or a subclass of one);
    ``exact_key`` is the key of its exact class (-1 if none)."""
    if exact_key >= 0:
        return exact_key
    for cls, api_key in keys.items():
        if isinstance(msg, cls):
            return api_key
    raise EncodeError(f"expected a kwire {kind} message, got {type(msg).__name__}")


cdef int _w_correlation_id(Writer* w, object correlation_id) except -1:
    """The header's correlation id, an error in it named as the header's field.  A plain int is written without
    the try block, whose entry costs every call."""
    cdef int overflow = 0
    cdef long long x
    if PyLong_CheckExact(correlation_id):
        x = PyLong_AsLongLongAndOverflow(correlation_id, &overflow)
        if not overflow and -0x80000000 <= x <= 0x7FFFFFFF:
            return w_be32(w, <uint32_t><int32_t>x)
    try:
        w_int32(w, correlation_id)
    except EncodeError as e:
        raise e.prepend_path("correlation_id")
    return 0


cdef int _w_client_id(Writer* w, object client_id) except -1:
    """The header's client id (a classic nullable string), an error in it named as the header's field.  None and a
    str that w_string would take are written here without the try block; anything else goes through it."""
    cdef Py_ssize_t n
    cdef const char* p
    if client_id is None:
        return w_length(w, -1, 0, 0)
    if PyUnicode_Check(client_id):
        p = _utf8_or_null(client_id, &n)
        if p != NULL and n <= MAX_STRING:
            w_length(w, n, 0, 0)
            return w_raw(w, p, n)
        if p == NULL:
            PyErr_Clear()  # w_string meets the same error below and reports it
    try:
        w_string(w, client_id, 0, 1)
    except EncodeError as e:
        raise e.prepend_path("client_id")
    return 0


cdef bytes _finish_frame(Writer* w):
    """The frame in ``w``, whose first 4 bytes were reserved for the size."""
    cdef Py_ssize_t size = w.len - 4
    if size > 0x7FFFFFFF:
        raise EncodeError(f"frame of {size} bytes exceeds the int32 size prefix")
    w.buf[0] = <uint8_t>(size >> 24)
    w.buf[1] = <uint8_t>(size >> 16)
    w.buf[2] = <uint8_t>(size >> 8)
    w.buf[3] = <uint8_t>size
    return w_bytes(w)


# Both encoders check, in this order: the message's class, the version, the
# header's values, the body's; the pure twin does the same.  The header is
# written field by field rather than through a RequestHeader object and
# _w_RequestHeader: the object would cost as much as a small body.  Its layout
# is Kafka's (api key, api version, correlation id, then a classic nullable
# client id, then an empty tag section when flexible), the errors those of
# _w_RequestHeader (tests/test_framing.py compares them).  The two encoders
# share their outline (checks, Writer, header, body, size) and differ in the
# header and the body tables; passing those in as function pointers would cost
# an indirect call per frame for the sake of six lines, so both are spelled out.
def encode_request(msg, version, correlation_id, client_id=None):
    """A complete request frame: size prefix, request header, body."""
    cdef int api_key = _check_message(_request_key(msg), msg, _REQUEST_KEYS, "request")
    _check_request_version(api_key, version)
    cdef int c_version = version
    cdef Writer w
    w_init(&w, 128)
    try:
        w.len = 4
        w_be16(&w, <uint16_t><int16_t>api_key)
        w_be16(&w, <uint16_t><int16_t>c_version)
        _w_correlation_id(&w, correlation_id)
        _w_client_id(&w, client_id)
        if _request_header_version(api_key, c_version) >= 2:
            w_u8(&w, 0)
        _w_request_body(&w, api_key, msg, c_version)
        return _finish_frame(&w)
    finally:
        w_free(&w)


def encode_response(msg, version, correlation_id):
    """A complete response frame: size prefix, response header, body."""
    cdef int api_key = _check_message(_response_key(msg), msg, _RESPONSE_KEYS, "response")
    _check_response_version(api_key, version)
    cdef int c_version = version
    cdef Writer w
    w_init(&w, 128)
    try:
        w.len = 4
        _w_correlation_id(&w, correlation_id)
        if _response_header_version(api_key, c_version) >= 1:
            w_u8(&w, 0)
        _w_response_body(&w, api_key, msg, c_version)
        return _finish_frame(&w)
    finally:
        w_free(&w)


cdef object _open_frame(Reader* r, object frame, bint views=False):
    """Point ``r`` at the bytes after the size prefix, checked against it; returns what must stay alive.
    ``views`` as for :func:`r_open_views` (slices are of the whole frame)."""
    keep = r_open_views(r, frame, views)
    cdef Py_ssize_t n = r.end
    if n < 4:
        raise DecodeError(f"truncated: a frame needs 4 size bytes, {n} given", 0)
    cdef int32_t size = r_int32(r)
    if size != n - 4:
        raise DecodeError(f"size prefix says {size} bytes but the frame has {n - 4}", 0)
    r.p += 4
    r.pos = 0
    r.end = n - 4
    return keep


cdef object _read_request_header(Reader* r, object max_elements):
    if r.end < 4:
        raise DecodeError("truncated request header", 4)
    cdef int16_t api_key = <int16_t>((<uint16_t>r.p[0] << 8) | r.p[1])
    cdef int16_t api_version = <int16_t>((<uint16_t>r.p[2] << 8) | r.p[3])
    cdef int header_version = _request_header_version(api_key, api_version)
    if header_version < 0:
        # Not a message kwire knows: every api since Kafka 2.4 uses header v2
        # exactly when it is flexible, which cannot be told from here; v1 is
        # what the fixed part of both looks like, so read that much.
        header_version = 1
    if max_elements is not None:
        r_set_limit(r, max_elements)
    return _r_RequestHeader(r, header_version)


cdef object _read_body(Reader* r, bint request, int api_key, int version):
    """The body after the header (its version already checked), error offsets made relative to the frame."""
    try:
        if request:
            msg = _r_request_body(r, api_key, version)
        else:
            msg = _r_response_body(r, api_key, version)
        r_finish(r)
    except DecodeError as e:
        if e.offset is not None:
            e.offset += 4
        raise
    return msg


def decode_request(frame, *, max_elements=None, views=False):
    """``(RequestHeader, message)`` from a complete request frame.

    ``max_elements`` caps the array elements and tagged fields built from the
    whole frame, header included, and ``views`` makes bytes fields read-only
    memoryviews of the frame, as for the message classes' ``decode``."""
    cdef Reader r
    keep = _open_frame(&r, frame, views)
    header = _read_request_header(&r, max_elements)
    # Decoded just now, so both are C values (no overflow to look at).
    cdef int api_key = (<RequestHeader>header).c_request_api_key
    version = (<RequestHeader>header).c_request_api_version
    _check_request_version(api_key, version)
    return header, _read_body(&r, True, api_key, version)


def decode_response(frame, api_key, version, *, max_elements=None, views=False):
    """``(ResponseHeader, message)`` from a complete response frame.

    Responses do not say what they answer: pass the api key and version of the
    request with the same correlation id.  ``max_elements`` and ``views`` as
    for :func:`decode_request`."""
    # The api key and version come from the caller, not the frame: check them before reading it.
    _check_response_key(api_key, _RESPONSE_CLASSES)
    _check_response_version(api_key, version)
    cdef Reader r
    keep = _open_frame(&r, frame, views)
    if max_elements is not None:
        r_set_limit(&r, max_elements)
    header = _r_ResponseHeader(&r, _response_header_version(api_key, version))
    return header, _read_body(&r, False, api_key, version)


def split_request(frame):
    """``(RequestHeader, body)`` of a request frame; ``body`` is a memoryview.

    Works for any api key, so a proxy or capture tool can read the header of
    requests kwire has no body codec for."""
    cdef Reader r
    keep = _open_frame(&r, frame)
    header = _read_request_header(&r, None)
    return header, memoryview(frame).cast("B")[4 + r.pos:]


def decode_request_header(frame):
    """The :class:`RequestHeader` of a request frame, of any api key."""
    cdef Reader r
    keep = _open_frame(&r, frame)
    return _read_request_header(&r, None)
