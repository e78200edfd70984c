# The compiled twin's Header, Record and RecordBatch, and the encoder (included by _records_c.pyx).

from kwire.codec._codec_common import refuse_deletion
from kwire.codec._records_common import (
    BATCH_FIELDS,
    HEADER_FIELDS,
    RECORD_FIELDS,
    as_headers,
    batch_defaults,
    check_batch,
    check_record,
    compress,
    fields_eq,
    fields_repr,
    rebuild,
    wrap64,
)

# Header and Record stay out of the cycle collector (no_gc): a decode makes one of each per record and header,
# and tracking them made the collector's passes most of a 10,000-record decode.  They hold bytes, str, ints and
# tuples of Headers; only a caller storing a container that refers back to the record could build a cycle, which
# would then be kept rather than collected.
@cython.no_gc
@cython.freelist(256)
cdef class Header:
    """A record header: ``key`` (str) and ``value`` (bytes or None).  Unpacks as ``key, value = header``."""

    cdef public object key
    cdef public object value

    def __init__(self, key, value=None):
        self.key = key
        self.value = value

    def __iter__(self):
        return iter((self.key, self.value))

    def __eq__(self, other):
        return fields_eq(self, other, HEADER_FIELDS)

    def __ne__(self, other):
        eq = fields_eq(self, other, HEADER_FIELDS)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __repr__(self):
        return fields_repr(self, HEADER_FIELDS)

    def __reduce__(self):
        return (rebuild, (Header, {"key": self.key, "value": self.value}))

    def __delattr__(self, name):
        refuse_deletion(self, name)


cdef object _read_headers(const unsigned char* b, Py_ssize_t pos, Py_ssize_t limit, int32_t count, tuple keys):
    """The headers of a record the walk has already checked: a tuple of Header.

    ``keys`` holds the header keys of the batch's first record that has headers, as str: a producer usually
    sends the same keys in the same order on every record, so the i-th key is first compared with the i-th of
    those, and the str is shared when the bytes are the same (str is immutable)."""
    cdef int32_t i, n = 0
    cdef Py_ssize_t klen = 0
    cdef const char* kp
    cdef Header h
    cdef object key
    if count == 0:
        return ()
    out = PyTuple_New(count)
    rd_varint(b, &pos, limit, &n)  # the count
    for i in range(count):
        rd_varint(b, &pos, limit, &n)
        h = Header.__new__(Header)
        key = None
        if keys is not None and i < PyTuple_GET_SIZE(keys):
            key = <object>PyTuple_GET_ITEM(keys, i)
            kp = PyUnicode_AsUTF8AndSize(key, &klen)  # ASCII keys: the str's own bytes, nothing made
            if klen != n or memcmp(kp, b + pos, n) != 0:
                key = None
        h.key = key if key is not None else PyUnicode_DecodeUTF8(<const char*>b + pos, n, "surrogateescape")
        pos += n
        rd_varint(b, &pos, limit, &n)
        if n < 0:
            h.value = None
        else:
            h.value = PyBytes_FromStringAndSize(<const char*>b + pos, n)
            pos += n
        Py_INCREF(h)
        PyTuple_SET_ITEM(out, i, h)
    # Headers are outside the cycle collector, so a tuple of them can hold no cycle: untracked now rather than
    # at the collector's next pass (what CPython does for such tuples anyway).
    PyObject_GC_UnTrack(out)
    return out


cdef tuple _batch_keys(const unsigned char* b, Py_ssize_t pos, Py_ssize_t limit, int32_t count):
    """The keys of one record's headers (checked by the walk), as str: the batch's guess at its header keys."""
    cdef int32_t i, n = 0
    cdef list out = []
    rd_varint(b, &pos, limit, &n)
    for i in range(min(count, 16)):
        rd_varint(b, &pos, limit, &n)
        key = PyUnicode_DecodeUTF8(<const char*>b + pos, n, "surrogateescape")
        try:
            PyUnicode_AsUTF8AndSize(key, NULL)  # a key with a lone surrogate has no UTF-8: not shared
        except UnicodeEncodeError:
            break
        out.append(key)
        pos += n
        rd_varint(b, &pos, limit, &n)
        if n > 0:
            pos += n
    return tuple(out)


@cython.no_gc
@cython.freelist(256)
cdef class Record:
    """One record: its absolute ``offset`` and ``timestamp`` (the batch's base plus the record's deltas, wrapping
    as Java's long arithmetic does), ``key`` and ``value`` (bytes or None), ``headers`` (a tuple of
    :class:`Header`; pairs are converted) and ``attributes`` (unused by Kafka, kept).

    A decoded record creates each field's object when it is first read."""

    cdef object buf_owner  # the bytes the positions below point into (None once every field has its object)
    cdef const unsigned char* buf
    cdef int64_t offset_c, timestamp_c
    cdef Py_ssize_t key_pos, value_pos, hdr_pos  # the end of the headers is not kept: the walk checked them
    cdef int32_t key_len, value_len, hdr_count
    cdef int have
    cdef tuple keys  # the batch's header keys, shared (see _read_headers)
    cdef object offset_o, timestamp_o, key_o, value_o, headers_o
    cdef public object attributes

    def __init__(self, key=None, value=None, headers=(), *, offset=0, timestamp=0, attributes=0):
        self.offset_o = offset
        self.timestamp_o = timestamp
        self.key_o = key
        self.value_o = value
        # as_headers, in C: this runs once per record a producer builds.
        self.headers_o = tuple([h if type(h) is Header else Header(*h) for h in headers]) if headers else ()
        self.attributes = attributes
        self.have = HAVE_ALL
        self.buf_owner = None

    cdef inline void got(self, int field):
        self.have |= field
        if self.have & (HAVE_KEY | HAVE_VALUE | HAVE_HEADERS) == HAVE_KEY | HAVE_VALUE | HAVE_HEADERS:
            self.buf_owner = None
            self.buf = NULL
            self.keys = None

    # A first read creates and stores the field's object: under a critical section, so that two threads of a
    # free-threaded interpreter reading one record at once cannot both replace it (no cost with the GIL).
    @property
    def offset(self):
        with cython.critical_section(self):
            return self.offset_o if self.have & HAVE_OFFSET else PyLong_FromLongLong(self.offset_c)

    @offset.setter
    def offset(self, value):
        with cython.critical_section(self):
            self.offset_o = value
            self.have |= HAVE_OFFSET

    @property
    def timestamp(self):
        with cython.critical_section(self):
            return self.timestamp_o if self.have & HAVE_TIMESTAMP else PyLong_FromLongLong(self.timestamp_c)

    @timestamp.setter
    def timestamp(self, value):
        with cython.critical_section(self):
            self.timestamp_o = value
            self.have |= HAVE_TIMESTAMP

    @property
    def key(self):
        with cython.critical_section(self):
            if not self.have & HAVE_KEY:
                self.key_o = None if self.key_len < 0 else PyBytes_FromStringAndSize(
                    <const char*>self.buf + self.key_pos, self.key_len)
                self.got(HAVE_KEY)
            return self.key_o

    @key.setter
    def key(self, value):
        with cython.critical_section(self):
            self.key_o = value
            self.got(HAVE_KEY)

    @property
    def value(self):
        with cython.critical_section(self):
            if not self.have & HAVE_VALUE:
                self.value_o = None if self.value_len < 0 else PyBytes_FromStringAndSize(
                    <const char*>self.buf + self.value_pos, self.value_len)
                self.got(HAVE_VALUE)
            return self.value_o

    @value.setter
    def value(self, value):
        with cython.critical_section(self):
            self.value_o = value
            self.got(HAVE_VALUE)

    @property
    def headers(self):
        with cython.critical_section(self):
            if not self.have & HAVE_HEADERS:
                self.headers_o = _read_headers(self.buf, self.hdr_pos, PY_SSIZE_T_MAX, self.hdr_count, self.keys)
                self.got(HAVE_HEADERS)
            return self.headers_o

    @headers.setter
    def headers(self, value):
        with cython.critical_section(self):
            self.headers_o = value
            self.got(HAVE_HEADERS)

    def __eq__(self, other):
        return fields_eq(self, other, RECORD_FIELDS)

    def __ne__(self, other):
        eq = fields_eq(self, other, RECORD_FIELDS)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __repr__(self):
        return fields_repr(self, RECORD_FIELDS)

    def __reduce__(self):
        return (rebuild, (Record, {f: getattr(self, f) for f in RECORD_FIELDS}))

    def __delattr__(self, name):
        refuse_deletion(self, name)


cdef class RecordBatch:
    """A record batch (magic 2) and its records.

    The fields are the wire header's; ``attributes`` holds the codec and the flags, which the properties
    (``compression``, ``timestamp_type``, ``is_transactional``, ``is_control``, ``delete_horizon_ms``) read.
    The constructor fills what it is not given as Java's producer does (see ``batch_defaults``)."""

    cdef public object base_offset, partition_leader_epoch, magic, crc, attributes, last_offset_delta
    cdef public object base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, records

    def __init__(self, records=(), *, base_offset=0, partition_leader_epoch=-1, compression=0, timestamp_type=0,
                 is_transactional=False, is_control=False, delete_horizon_ms=None, attributes=None,
                 last_offset_delta=None, base_timestamp=None, max_timestamp=None, producer_id=-1, producer_epoch=-1,
                 base_sequence=-1, magic=MAGIC, crc=0):
        cdef Py_ssize_t n
        if (type(records) is list and attributes is None and type(compression) is int and 0 <= compression <= 4
                and not timestamp_type and not is_transactional and not is_control and delete_horizon_ms is None
                and last_offset_delta is None and base_timestamp is None and max_timestamp is None
                and type(base_offset) is int):
            # What a producer builds: batch_defaults' answer without its Python-level work.
            self.records = list(<list>records)
            self.attributes = compression
            n = len(<list>records)
            self.last_offset_delta = wrap64(self.records[n - 1].offset - base_offset) if n else 0
            self.base_timestamp = self.records[0].timestamp if n else -1
            self.max_timestamp = max([r.timestamp for r in self.records]) if n else -1
        else:
            (self.records, self.attributes, self.last_offset_delta, self.base_timestamp,
             self.max_timestamp) = batch_defaults(records, base_offset, compression, timestamp_type,
                                                  is_transactional, is_control, delete_horizon_ms, attributes,
                                                  last_offset_delta, base_timestamp, max_timestamp)
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence

    @property
    def compression(self):
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self):
        """0 CreateTime, 1 LogAppendTime."""
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self):
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self):
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def delete_horizon_ms(self):
        """The delete horizon a compacted batch carries in its base timestamp, or None."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG else None

    def __eq__(self, other):
        return fields_eq(self, other, BATCH_FIELDS)

    def __ne__(self, other):
        eq = fields_eq(self, other, BATCH_FIELDS)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __repr__(self):
        return fields_repr(self, BATCH_FIELDS)

    def __reduce__(self):
        return (rebuild, (RecordBatch, {f: getattr(self, f) for f in BATCH_FIELDS}))

    def __delattr__(self, name):
        refuse_deletion(self, name)

    @classmethod
    def decode(cls, data, *, check_crc=True, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE):
        """The one batch ``data`` holds; bytes after it are an error (:func:`decode_record_batches` reads many)."""
        batches = decode_record_batches(data, check_crc=check_crc, max_decompressed_size=max_decompressed_size)
        if len(batches) != 1:
            raise CorruptRecordError(f"expected one record batch, found {len(batches)}",
                                     0 if not batches else _first_size(data))
        return batches[0]

    def encode(self):
        """The batch's bytes, with its length and CRC-32C written (``self.crc`` is not read)."""
        if not _batch_plain(self):
            check_batch(self)  # raises the EncodeError both twins give
        cdef int64_t base_offset = self.base_offset, base_ts = self.base_timestamp
        cdef int codec = self.attributes & COMPRESSION_MASK
        cdef _Out out
        cdef Py_ssize_t j = 0
        cdef unsigned char* h
        cdef bytes result
        records = self.records
        out.p = NULL
        out.n = out.cap = 0
        try:
            _reserve(&out, HEADER_SIZE + 160 * len(records))
            out.n = HEADER_SIZE
            for rec in records:
                _encode_record(&out, rec, j, base_offset, base_ts)
                j += 1
            if codec:
                payload = compress(codec, PyBytes_FromStringAndSize(<const char*>out.p + HEADER_SIZE,
                                                                   out.n - HEADER_SIZE))
                result = PyBytes_FromStringAndSize(NULL, HEADER_SIZE + len(payload))
                memcpy(PyBytes_AS_STRING(result) + HEADER_SIZE, PyBytes_AS_STRING(payload), len(payload))
            else:
                result = PyBytes_FromStringAndSize(<const char*>out.p, out.n)
        finally:
            PyMem_Free(out.p)
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


# --- Encoding records ----------------------------------------------------------------------------------------------

cdef struct _Out:
    unsigned char* p
    Py_ssize_t n, cap


cdef int _reserve(_Out* o, Py_ssize_t extra) except -1:
    cdef Py_ssize_t cap
    cdef unsigned char* p
    if o.n + extra <= o.cap:
        return 0
    cap = max(o.cap * 2, o.n + extra, 256)
    p = <unsigned char*>PyMem_Realloc(o.p, cap)
    if p == NULL:
        raise MemoryError()
    o.p, o.cap = p, cap
    return 0


cdef inline bint _is_blob(object v) noexcept:
    return v is None or type(v) is bytes


cdef inline Py_ssize_t _blob_size(object v) noexcept:
    return 1 if v is None else varint_size(PyBytes_GET_SIZE(v)) + PyBytes_GET_SIZE(v)


cdef inline void _put_blob(_Out* o, object v) noexcept:
    cdef Py_ssize_t n
    if v is None:
        o.p[o.n] = 1  # zigzag(-1)
        o.n += 1
        return
    n = PyBytes_GET_SIZE(v)
    o.n += wr_varint(o.p + o.n, n)
    memcpy(o.p + o.n, PyBytes_AS_STRING(v), n)
    o.n += n


cdef inline void _put_raw(_Out* o, const unsigned char* p, Py_ssize_t pos, Py_ssize_t n) noexcept:
    if n < 0:
        o.p[o.n] = 1
        o.n += 1
        return
    o.n += wr_varint(o.p + o.n, n)
    memcpy(o.p + o.n, p + pos, n)
    o.n += n


cdef inline Py_ssize_t _raw_size(Py_ssize_t n) noexcept:
    return 1 if n < 0 else varint_size(n) + n


cdef int _encode_record(_Out* o, object obj, Py_ssize_t index, int64_t base_offset, int64_t base_ts) except -1:
    """Appends one record.  A compiled Record whose fields are untouched or plain (int, bytes or None, a tuple of
    Header with str keys) is written here, its untouched fields straight from the bytes it was decoded from;
    anything else goes through ``check_record``, the checks both twins share, and is written from its result."""
    cdef Record rec
    cdef int64_t offset, ts
    cdef int attributes
    cdef Py_ssize_t size, klen = 0, hpos
    cdef int32_t hcount = 0, i, n = 0
    cdef const unsigned char* p = NULL
    cdef const char* kp
    cdef int have
    cdef bint p_plain = type(obj) is Record and _plain(<Record>obj)
    key = value = headers = None
    if p_plain:
        rec = <Record>obj
        p = rec.buf
        offset = rec.offset_o if rec.have & HAVE_OFFSET else rec.offset_c
        ts = rec.timestamp_o if rec.have & HAVE_TIMESTAMP else rec.timestamp_c
        attributes = rec.attributes
        key, value, headers = rec.key_o, rec.value_o, rec.headers_o
        have = rec.have
    else:
        offset, ts, key, value, headers, attributes = check_record(obj, ("records", index))
        have = HAVE_ALL
    delta64 = <int64_t>(<uint64_t>offset - <uint64_t>base_offset)
    if delta64 < -2147483648 or delta64 > 2147483647:
        offset_delta(offset, base_offset, index)  # raises the pure twin's EncodeError
    # The body's size first: it is written before the body.
    size = 1 + varint_size(<int64_t>(<uint64_t>ts - <uint64_t>base_ts)) + varint_size(delta64)
    size += _blob_size(key) if have & HAVE_KEY else _raw_size(rec.key_len)
    size += _blob_size(value) if have & HAVE_VALUE else _raw_size(rec.value_len)
    if have & HAVE_HEADERS:
        size += varint_size(len(headers))
        for h in headers:
            if p_plain:  # Header objects whose str keys _plain has checked: their UTF-8 is cached in the str
                PyUnicode_AsUTF8AndSize((<Header>h).key, &klen)
                size += varint_size(klen) + klen + _blob_size((<Header>h).value)
            else:  # check_record's (bytes, bytes or None) pairs
                size += _blob_size(h[0]) + _blob_size(h[1])
    else:
        hpos = rec.hdr_pos
        rd_varint(p, &hpos, PY_SSIZE_T_MAX, &hcount)
        size += varint_size(hcount)
        for i in range(hcount):
            rd_varint(p, &hpos, PY_SSIZE_T_MAX, &n)
            size += _raw_size(n)
            hpos += n
            rd_varint(p, &hpos, PY_SSIZE_T_MAX, &n)
            size += _raw_size(n)
            if n > 0:
                hpos += n
    _reserve(o, size + 10)
    o.n += wr_varint(o.p + o.n, size)
    o.p[o.n] = <unsigned char>attributes
    o.n += 1
    o.n += wr_varint(o.p + o.n, <int64_t>(<uint64_t>ts - <uint64_t>base_ts))
    o.n += wr_varint(o.p + o.n, delta64)
    if have & HAVE_KEY:
        _put_blob(o, key)
    else:
        _put_raw(o, p, rec.key_pos, rec.key_len)
    if have & HAVE_VALUE:
        _put_blob(o, value)
    else:
        _put_raw(o, p, rec.value_pos, rec.value_len)
    if have & HAVE_HEADERS:
        o.n += wr_varint(o.p + o.n, len(headers))
        for h in headers:
            if p_plain:
                kp = PyUnicode_AsUTF8AndSize((<Header>h).key, &klen)
                o.n += wr_varint(o.p + o.n, klen)
                memcpy(o.p + o.n, kp, klen)
                o.n += klen
                _put_blob(o, (<Header>h).value)
            else:
                _put_blob(o, h[0])
                _put_blob(o, h[1])
    else:
        hpos = rec.hdr_pos
        rd_varint(p, &hpos, PY_SSIZE_T_MAX, &hcount)
        o.n += wr_varint(o.p + o.n, hcount)
        for i in range(hcount):
            rd_varint(p, &hpos, PY_SSIZE_T_MAX, &n)
            _put_raw(o, p, hpos, n)
            hpos += n
            rd_varint(p, &hpos, PY_SSIZE_T_MAX, &n)
            _put_raw(o, p, hpos, n)
            if n > 0:
                hpos += n
    return 0


cdef inline bint _fits64(object v):
    cdef int overflow = 0
    if type(v) is not int:
        return False
    PyLong_AsLongLongAndOverflow(v, &overflow)
    return overflow == 0


cdef bint _utf8_ok(object key):
    """Whether ``key`` is a str that UTF-8 encodes strictly (a lone surrogate needs surrogateescape: slow path)."""
    cdef Py_ssize_t n
    if type(key) is not str:
        return False
    try:
        PyUnicode_AsUTF8AndSize(key, &n)
    except UnicodeEncodeError:
        return False
    return True


cdef inline bint _in(object v, long long lo, long long hi):
    cdef int overflow = 0
    cdef long long x
    if type(v) is not int:
        return False
    x = PyLong_AsLongLongAndOverflow(v, &overflow)
    return overflow == 0 and lo <= x <= hi


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
            and _in(b.magic, MAGIC, MAGIC) and (type(b.records) is list or type(b.records) is tuple))


cdef bint _plain(Record rec):
    """Whether every field ``rec`` holds as an object has the type the fast path writes without a check."""
    cdef int have = rec.have
    if have & HAVE_OFFSET and not _fits64(rec.offset_o):
        return False
    if have & HAVE_TIMESTAMP and not _fits64(rec.timestamp_o):
        return False
    if not (type(rec.attributes) is int and -128 <= rec.attributes <= 127):
        return False
    if have & HAVE_KEY and not _is_blob(rec.key_o):
        return False
    if have & HAVE_VALUE and not _is_blob(rec.value_o):
        return False
    if have & HAVE_HEADERS:
        if type(rec.headers_o) is not tuple:
            return False
        for h in rec.headers_o:
            if type(h) is not Header or not _utf8_ok((<Header>h).key) or not _is_blob((<Header>h).value):
                return False
    return True


cdef Py_ssize_t _first_size(data):
    cdef _View v = _View(data)
    return LOG_OVERHEAD + rd_u32(v.p + 8)
