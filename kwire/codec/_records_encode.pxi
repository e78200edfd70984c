# Encoding a batch: RecordBatch.encode's work (included by _records_c.pyx after _records_objects.pxi).
#
# A small uncompressed batch is written straight into the bytes object it returns (then shrunk to its size by
# _PyBytes_Resize, a realloc); any other is written into a scratch buffer, which the compressor reads or the
# result copies.  Not a large batch straight into its result: its guessed size, then shrunk, would be freed at a
# size below the next guess, and glibc's malloc, which raises its threshold for mapping fresh pages to the size of
# a mapping freed, would then map and fault in every large result anew (three times slower at 10,000 records).
# Each record's fields are read once, into C (_Blob), when they have the plain types a producer gives; anything
# else goes through ``check_record``, the checks both twins share.

cdef extern from "Python.h":
    long long _as_ll "PyLong_AsLongLongAndOverflow"(object, int*) noexcept  # never fails for an exact int
    int _PyBytes_Resize(PyObject**, Py_ssize_t) noexcept  # -1 with MemoryError set: the object is then dropped


cdef struct _Out:
    unsigned char* p
    Py_ssize_t n, cap
    PyObject* obj  # the bytes object written into (an uncompressed batch; a reference of ours), or NULL


# The last scratch buffer (up to 4 MiB) is kept for the next encode: a fresh one of a megabyte or more comes from
# memory the allocator maps anew, and touching its pages was, beside a compressor's own working memory, most of a
# zstd encode of 10,000 records.
# It is taken and given back by atomic exchanges (kw_take, kw_keep): two encodes at once never share it, the
# second makes its own.  A kept buffer holds its capacity in its first bytes.
cdef enum:
    SCRATCH_KEPT = 4 << 20
    DIRECT_MAX = 64 << 10  # the largest batch (guessed from its first record) written straight into its result
    RESERVE_AHEAD_MAX = 64 << 20  # the most reserved from the first record's size for the others (see below)
    FAST_HEADERS = 16  # the most headers of a record read into C; a record with more takes check_record's path


cdef inline void _take_scratch(_Out* o) noexcept:
    o.p = <unsigned char*>kw_take(&kw_scratch)
    o.cap = (<Py_ssize_t*>o.p)[0] if o.p != NULL else 0
    o.n = 0
    o.obj = NULL


cdef inline void _give_back(_Out* o) noexcept:
    if o.obj != NULL:
        Py_XDECREF(o.obj)
        o.obj = NULL
        return
    if o.p == NULL:
        return
    if o.cap <= SCRATCH_KEPT:
        (<Py_ssize_t*>o.p)[0] = o.cap  # _reserve makes 256 bytes at least
        if kw_keep(&kw_scratch, o.p):
            return
    PyMem_Free(o.p)


cdef int _reserve(_Out* o, Py_ssize_t extra) except -1:
    cdef Py_ssize_t cap
    cdef unsigned char* p
    if o.n + extra <= o.cap:
        return 0
    cap = max(o.cap * 2, o.n + extra, 256)
    if o.obj != NULL:
        return _resize(o, cap)
    p = <unsigned char*>PyMem_Realloc(o.p, cap)
    if p == NULL:
        raise MemoryError()
    o.p, o.cap = p, cap
    return 0


cdef int _to_scratch(_Out* o) except -1:
    """Moves what ``o`` has written from its bytes object into the scratch buffer."""
    cdef _Out s
    _take_scratch(&s)
    try:
        _reserve(&s, o.cap)
    except MemoryError:
        _give_back(&s)
        raise
    memcpy(s.p, o.p, o.n)
    s.n = o.n
    _give_back(o)
    o[0] = s
    return 0


cdef int _resize(_Out* o, Py_ssize_t cap) except -1:
    """The bytes object ``o`` writes into made ``cap`` bytes long."""
    if _PyBytes_Resize(&o.obj, cap) < 0:  # the object is gone (o.obj is NULL): nothing left to give back
        o.p, o.n, o.cap = NULL, 0, 0
        return -1
    o.p, o.cap = <unsigned char*>PyBytes_AS_STRING(<object>o.obj), cap
    return 0


cdef struct _Blob:
    const char* p
    Py_ssize_t n  # -1: null


cdef inline bint _blob_of(object v, _Blob* b) noexcept:
    """Whether ``v`` is None or bytes, read into ``b``."""
    if v is None:
        b.p, b.n = NULL, -1
        return True
    if type(v) is bytes:
        b.p, b.n = PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v)
        return True
    return False


cdef inline Py_ssize_t _blob_size(const _Blob* b) noexcept nogil:
    return 1 if b.n < 0 else varint_size(b.n) + b.n


cdef inline void _put(_Out* o, const _Blob* b) noexcept nogil:
    if b.n < 0:
        o.p[o.n] = 1  # zigzag(-1)
        o.n += 1
        return
    o.n += wr_varint(o.p + o.n, b.n)
    memcpy(o.p + o.n, b.p, b.n)
    o.n += b.n


cdef inline bint _int64_of(object v, int64_t* out) noexcept:
    cdef int overflow = 0
    if type(v) is not int:
        return False
    out[0] = _as_ll(v, &overflow)
    return overflow == 0


cdef struct _Fields:
    int64_t offset, timestamp
    int attributes
    Py_ssize_t headers
    _Blob blob[2 + 2 * FAST_HEADERS]  # the key, the value, then each header's key (its UTF-8) and value


cdef bint _plain_fields(Record rec, _Fields* f) except -1:
    """Whether every field of ``rec`` has the type this path writes without a check (ints in range, bytes or
    None, a tuple of at most FAST_HEADERS Headers with str keys that UTF-8 encodes strictly), read into ``f``."""
    cdef Py_ssize_t i, klen = 0
    cdef _Blob* b
    cdef int64_t attributes
    cdef const char* kp
    headers = rec.headers
    if not (_int64_of(rec.offset, &f.offset) and _int64_of(rec.timestamp, &f.timestamp)
            and _int64_of(rec.attributes, &attributes) and -128 <= attributes <= 127
            and _blob_of(rec.key, &f.blob[0]) and _blob_of(rec.value, &f.blob[1])
            and type(headers) is tuple and PyTuple_GET_SIZE(headers) <= FAST_HEADERS):
        return False
    f.attributes = <int>attributes
    f.headers = PyTuple_GET_SIZE(headers)
    for i in range(f.headers):
        h = <object>PyTuple_GET_ITEM(headers, i)
        if type(h) is not Header or type((<Header>h).key) is not str:
            return False
        b = &f.blob[2 + 2 * i]
        try:  # a lone surrogate has no strict UTF-8: check_record writes it (surrogateescape)
            kp = PyUnicode_AsUTF8AndSize((<Header>h).key, &klen)
        except UnicodeEncodeError:
            return False
        b.p, b.n = kp, klen  # the str keeps its UTF-8 as long as the str lives, which the record holds
        if not _blob_of((<Header>h).value, b + 1):
            return False
    return True


cdef int _encode_record(_Out* o, object obj, Py_ssize_t index, int64_t base_offset, int64_t base_ts) except -1:
    """Appends one record: a compiled Record of plain fields from C (_plain_fields), anything else through
    ``check_record``, the checks both twins share, and written from its result."""
    cdef _Fields f
    cdef int64_t delta, ts_delta
    cdef Py_ssize_t size, i, nblobs
    if not (type(obj) is Record and _plain_fields(<Record>obj, &f)):
        return _encode_checked(o, obj, index, base_offset, base_ts)
    delta = <int64_t>(<uint64_t>f.offset - <uint64_t>base_offset)
    if delta < -2147483648 or delta > 2147483647:
        offset_delta(f.offset, base_offset, index)  # raises the pure twin's EncodeError
    ts_delta = <int64_t>(<uint64_t>f.timestamp - <uint64_t>base_ts)
    nblobs = 2 + 2 * f.headers
    # The body's size first: it is written before the body.
    size = 1 + varint_size(ts_delta) + varint_size(delta) + varint_size(f.headers)
    for i in range(nblobs):
        size += _blob_size(&f.blob[i])
    _reserve(o, size + 10)
    o.n += wr_varint(o.p + o.n, size)
    o.p[o.n] = <unsigned char>f.attributes
    o.n += 1
    o.n += wr_varint(o.p + o.n, ts_delta)
    o.n += wr_varint(o.p + o.n, delta)
    _put(o, &f.blob[0])
    _put(o, &f.blob[1])
    o.n += wr_varint(o.p + o.n, f.headers)
    for i in range(2, nblobs):
        _put(o, &f.blob[i])
    return 0


cdef inline Py_ssize_t _obj_size(object v) noexcept:
    return 1 if v is None else varint_size(PyBytes_GET_SIZE(v)) + PyBytes_GET_SIZE(v)


cdef inline void _put_obj(_Out* o, object v) noexcept:
    cdef _Blob b
    b.p, b.n = NULL, -1
    _blob_of(v, &b)  # always: check_record gives bytes or None
    _put(o, &b)


cdef int _encode_checked(_Out* o, object obj, Py_ssize_t index, int64_t base_offset, int64_t base_ts) except -1:
    """Appends one record of any shape, as ``check_record`` gives its fields: bytes or None, and (key bytes, value
    bytes or None) header pairs, in a list."""
    cdef int64_t offset, ts, delta, ts_delta
    cdef int attributes
    cdef Py_ssize_t size
    offset, ts, key, value, headers, attributes = check_record(obj, ("records", index))
    delta = <int64_t>(<uint64_t>offset - <uint64_t>base_offset)
    if delta < -2147483648 or delta > 2147483647:
        offset_delta(offset, base_offset, index)  # raises the pure twin's EncodeError
    ts_delta = <int64_t>(<uint64_t>ts - <uint64_t>base_ts)
    size = 1 + varint_size(ts_delta) + varint_size(delta)
    size += _obj_size(key) + _obj_size(value) + varint_size(len(<list>headers))
    for h in <list>headers:
        size += _obj_size(h[0]) + _obj_size(h[1])
    _reserve(o, size + 10)
    o.n += wr_varint(o.p + o.n, size)
    o.p[o.n] = <unsigned char>attributes
    o.n += 1
    o.n += wr_varint(o.p + o.n, ts_delta)
    o.n += wr_varint(o.p + o.n, delta)
    _put_obj(o, key)
    _put_obj(o, value)
    o.n += wr_varint(o.p + o.n, len(<list>headers))
    for h in <list>headers:
        _put_obj(o, h[0])
        _put_obj(o, h[1])
    return 0


cdef bytes _encode_batch(RecordBatch self):
    self.made()
    if not _batch_plain(self):
        check_batch(self)  # raises the EncodeError both twins give
    cdef int64_t base_offset = self.base_offset, base_ts = self.base_timestamp
    cdef int codec = self.attributes & COMPRESSION_MASK
    cdef _Out out
    cdef Py_ssize_t j = 0, n, first, ahead
    cdef unsigned char* h
    cdef bytes result
    records = _batch_records(self)
    # A list or tuple (checked above): its real size, never a subclass's __len__, which may say anything; the
    # count written is the records written, as in the pure twin.
    n = _size_of(records)
    if codec:
        _take_scratch(&out)  # the buffer the last encode left, if any (see kw_scratch)
    else:
        fresh = PyBytes_FromStringAndSize(NULL, HEADER_SIZE + 256)
        Py_INCREF(fresh)
        out.obj, out.p, out.n = <PyObject*>fresh, <unsigned char*>PyBytes_AS_STRING(fresh), 0
        out.cap = HEADER_SIZE + 256
        fresh = None  # _PyBytes_Resize wants the only reference: out.obj's
    try:
        _reserve(&out, HEADER_SIZE + 256)
        out.n = HEADER_SIZE
        for rec in records:
            _encode_record(&out, rec, j, base_offset, base_ts)
            if j == 0 and n > 1:  # room for the others, guessed from the first (the rest grows as it must)
                first = min(out.n - HEADER_SIZE, <Py_ssize_t>RESERVE_AHEAD_MAX)
                ahead = min((first + first // 4 + 16) * min(n - 1, <Py_ssize_t>RESERVE_AHEAD_MAX),
                            <Py_ssize_t>RESERVE_AHEAD_MAX)
                if out.obj != NULL and out.n + ahead > DIRECT_MAX:
                    _to_scratch(&out)
                _reserve(&out, ahead)
            j += 1
        if out.obj != NULL:
            _resize(&out, out.n)
            result = <bytes>out.obj
        elif codec:
            # zlib, snappy's blocks and zstd read the records where they are; cramjam's LZ4 compressor wants bytes.
            # The view is released before the buffer is reused, even if a traceback keeps it.
            raw = PyMemoryView_FromMemory(<char*>out.p + HEADER_SIZE, out.n - HEADER_SIZE, PyBUF_READ)
            try:
                payload = compress(codec, bytes(raw) if codec == LZ4 else raw)
            finally:
                raw.release()
            result = PyBytes_FromStringAndSize(NULL, HEADER_SIZE + len(payload))
            memcpy(PyBytes_AS_STRING(result) + HEADER_SIZE, PyBytes_AS_STRING(payload), len(payload))
        else:
            result = PyBytes_FromStringAndSize(<const char*>out.p, out.n)
    finally:
        _give_back(&out)
    # A new bytes object that nothing else has seen yet: writing its header in place is safe.
    h = <unsigned char*>PyBytes_AS_STRING(result)
    wr_u64(h, <uint64_t>base_offset)
    wr_u32(h + 8, <uint32_t>(PyBytes_GET_SIZE(result) - LOG_OVERHEAD))
    wr_u32(h + 12, <uint32_t><int32_t>self.partition_leader_epoch)
    h[MAGIC_OFFSET] = MAGIC
    wr_u16(h + ATTRIBUTES_OFFSET, <uint16_t>self.attributes)
    wr_u32(h + 23, <uint32_t><int32_t>self.last_offset_delta)
    wr_u64(h + 27, <uint64_t>base_ts)
    wr_u64(h + 35, <uint64_t><int64_t>self.max_timestamp)
    wr_u64(h + 43, <uint64_t><int64_t>self.producer_id)
    wr_u16(h + 51, <uint16_t><int16_t>self.producer_epoch)
    wr_u32(h + 53, <uint32_t><int32_t>self.base_sequence)
    wr_u32(h + COUNT_OFFSET, <uint32_t>j)
    wr_u32(h + CRC_OFFSET, _crc(h + ATTRIBUTES_OFFSET, PyBytes_GET_SIZE(result) - ATTRIBUTES_OFFSET))
    return result


cdef inline bint _in(object v, long long lo, long long hi) noexcept:
    cdef int64_t x
    return _int64_of(v, &x) and lo <= x <= hi


cdef bint _batch_plain(RecordBatch b):
    """Whether check_batch would pass ``b``, decided in C for the usual case (any doubt: check_batch decides)."""
    return (_in(b.base_offset, LLONG_MIN, LLONG_MAX)
            and _in(b.partition_leader_epoch, -2147483648, 2147483647)
            and _in(b.attributes, 0, 0xFFFF) and (<long long>b.attributes & COMPRESSION_MASK) <= 4
            and _in(b.last_offset_delta, -2147483648, 2147483647)
            and _in(b.base_timestamp, LLONG_MIN, LLONG_MAX)
            and _in(b.max_timestamp, LLONG_MIN, LLONG_MAX)
            and _in(b.producer_id, LLONG_MIN, LLONG_MAX)
            and _in(b.producer_epoch, -32768, 32767) and _in(b.base_sequence, -2147483648, 2147483647)
            and _in(b.magic, MAGIC, MAGIC) and (type(_batch_records(b)) is list or type(_batch_records(b)) is tuple))


cdef inline object _batch_records(RecordBatch b):
    """``b.records`` without the property's Python call when the batch is not lazy."""
    return b.record_list if b.lazy_data is None else b.records
