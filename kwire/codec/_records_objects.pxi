# The compiled twin's Header, Record and RecordBatch, and the encoder (included by _records_c.pyx).

from kwire.codec._codec_common import refuse_deletion
from kwire.codec._records_common import (
    BATCH_FIELDS,
    COMPRESSION_NAMES,
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

# Objects kept from one call to the next, each in a slot that a call empties while it uses the object and fills
# again after, and a call that finds it empty makes its own.  The module runs without the GIL where Python has
# none: there the slot is taken and given back by atomic exchanges.  Where the GIL is held (every caller of these
# holds it) plain loads and stores are enough, and an atomic exchange costs a fifth of a one-record read.
cdef extern from *:
    """
    static void* kw_scratch = NULL;  /* the encoder's buffer, kept for the next encode */
    static void* kw_keys = NULL;  /* the header keys of the last batch read, a tuple of str (see _keep_keys) */
    static void* kw_spare = NULL;  /* the last record a lazy loop made, for the next loop (see _Records.recycled) */
    static void* kw_walker = NULL;  /* the last walker over few bytes, for the next walk (see _records_at) */
    #if !defined(Py_GIL_DISABLED)
    static inline void* kw_take(void** slot) { void* p = *slot; *slot = NULL; return p; }
    static inline int kw_keep(void** slot, void* p) {
        if (*slot != NULL) return 0;
        *slot = p;
        return 1;
    }
    #elif defined(_MSC_VER)
    #include <windows.h>
    static void* kw_take(void** slot) { return InterlockedExchangePointer(slot, NULL); }
    static int kw_keep(void** slot, void* p) { return InterlockedCompareExchangePointer(slot, p, NULL) == NULL; }
    #else
    static void* kw_take(void** slot) { return __atomic_exchange_n(slot, NULL, __ATOMIC_ACQ_REL); }
    static int kw_keep(void** slot, void* p) {
        void* none = NULL;
        return __atomic_compare_exchange_n(slot, &none, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    #endif
    """
    void* kw_scratch
    void* kw_keys
    void* kw_spare
    void* kw_walker
    void* kw_take(void** slot) noexcept nogil
    bint kw_keep(void** slot, void* p) noexcept nogil


# Header and Record stay out of the cycle collector (no_gc): a decode makes one of each per record and header,
# and tracking them made the collector's passes most of a 10,000-record decode.  They hold bytes, str, ints and
# tuples of Headers; only a caller storing a container that refers back to the record could build a cycle, which
# would then be kept rather than collected.
@cython.no_gc
@cython.freelist(256)
cdef class Header:
    """A record header: ``key`` (str) and ``value`` (bytes or None).  Unpacks as ``key, value = header``."""

    cdef object key, value  # read and written from Python through slot descriptors (see _member)

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


cdef bint _reusable(PyObject* t, int32_t count) noexcept:
    """Whether ``t``, a recycled record's headers, can be refilled in place: a tuple of ``count`` Headers that
    nothing but the record holds (see _Records.recycled)."""
    cdef Py_ssize_t i
    if refcount(t) != 1 or type_of(t) != <PyObject*>tuple or PyTuple_GET_SIZE(<object>t) != count:
        return False
    for i in range(count):
        item = PyTuple_GET_ITEM(<object>t, i)
        if refcount(item) != 1 or type_of(item) != <PyObject*>Header:
            return False
    return True


cdef inline int _read_headers(_Records w, _Rec* r, bint reuse, Record rec, bint learn) except -1:
    """The headers of a record the walk has already checked, as ``rec.headers``: a tuple of Header.

    ``w.k`` holds the header keys of the batch's first record that has headers, as str, with their UTF-8 (that
    record's read has ``learn``: see _learn_key): a producer usually sends the same keys in the same order on
    every record, so the i-th key is first compared with the i-th of those, and the str is shared when the bytes
    are the same (str is immutable).  A
    header value with the same bytes as the previous record's i-th is shared the same way (bytes are immutable):
    a producer's fixed headers, such as a source or a content type, then cost no allocation.  With ``reuse``,
    ``rec``'s own headers are refilled (see _reusable), and a field that already holds the object it is given is
    left as it is (no reference counts change)."""
    cdef int32_t i, n = 0, count = r.hdr_count
    cdef Py_ssize_t pos = r.hdr_pos, limit = r.hdr_end
    cdef Header h
    cdef const unsigned char* b = w.b
    cdef _Keys* k = &w.k
    cdef PyObject* prev
    cdef PyObject* shared
    # The headers and each Header through borrowed pointers: ``rec`` holds them (a refilled record's) or ``out``
    # does (a new tuple), and nothing here drops them.
    cdef PyObject* hs
    cdef PyObject* hp
    if reuse:
        hs = <PyObject*>rec.headers
    else:
        out = PyTuple_New(count)
        hs = <PyObject*>out
    for i in range(count):
        # The walk's positions (see _Rec) for the first KEYS_MAX headers; after them the varints are read again.
        if i < KEYS_MAX:
            pos, n = r.hk_pos[i], r.hk_len[i]
        else:
            rd_varint(b, &pos, limit, &n)
        if reuse:
            hp = PyTuple_GET_ITEM(<object>hs, i)
        else:
            h = Header.__new__(Header)
            Py_INCREF(h)
            PyTuple_SET_ITEM(<object>hs, i, h)
            hp = <PyObject*>h
        if i < k.n and k.len[i] == n and same_bytes(k.p[i], b + pos, n):
            if <PyObject*>(<Header>hp).key != k.obj[i]:
                (<Header>hp).key = <object>k.obj[i]
        else:
            (<Header>hp).key = PyUnicode_DecodeUTF8(<const char*>b + pos, n, "surrogateescape")
            if learn and i < KEYS_MAX:
                _learn_key(k, i, (<Header>hp).key)
        pos += n
        if i < KEYS_MAX:
            pos, n = r.hv_pos[i], r.hv_len[i]
        else:
            rd_varint(b, &pos, limit, &n)
        if n < 0:
            (<Header>hp).value = None
        elif i < KEYS_MAX:
            prev = w.values[i]
            if not (prev != NULL and PyBytes_GET_SIZE(<object>prev) == n
                    and same_bytes(PyBytes_AS_STRING(<object>prev), b + pos, n)):
                # A refilled header's own value, when nothing else holds it, is written over (see _rewrite).
                if reuse and _rewrite(<PyObject*>(<Header>hp).value, b + pos, n):
                    shared = <PyObject*>(<Header>hp).value
                    Py_INCREF(<object>shared)
                else:
                    value = PyBytes_FromStringAndSize(<const char*>b + pos, n)
                    Py_INCREF(value)
                    shared = <PyObject*>value
                Py_XDECREF(prev)
                w.values[i] = shared
            shared = w.values[i]
            if <PyObject*>(<Header>hp).value != shared:
                (<Header>hp).value = <object>shared
            pos += n
        else:
            (<Header>hp).value = PyBytes_FromStringAndSize(<const char*>b + pos, n)
            pos += n
    # Headers are outside the cycle collector, so a tuple of them can hold no cycle: untracked now rather than
    # at the collector's next pass (what CPython does for such tuples anyway).
    if not reuse:
        PyObject_GC_UnTrack(out)
        rec.headers = out
    return 0


cdef extern from "Python.h":
    const char* _utf8_or_null "PyUnicode_AsUTF8AndSize"(object, Py_ssize_t*)  # NULL, with an error set, for none
    void PyErr_Clear()


cdef void _learn_key(_Keys* k, int32_t i, object key) noexcept:
    """``key``, just decoded, as the batch's i-th header key: the keys remembered from the i-th on were another
    record's.  A key without UTF-8 (a lone surrogate) is not remembered, nor any after it."""
    cdef Py_ssize_t n = 0
    cdef const char* p
    if i > k.n:
        return  # a key before it was not remembered
    _keys_drop(k, i)
    k.learned = True
    p = _utf8_or_null(key, &n)
    if p == NULL:
        PyErr_Clear()
        return
    Py_INCREF(key)
    k.obj[i], k.p[i], k.len[i], k.n = <PyObject*>key, p, n, i + 1


cdef void _keys_from_last_batch(_Keys* k) noexcept:
    """A new walker's first guess at its header keys: those of the last batch read (kw_keys), which a reader of
    batches too large to keep their walker (see _records_at) then decodes once, not once a batch."""
    cdef PyObject* kept = <PyObject*>kw_take(&kw_keys)  # a tuple of str that all have their UTF-8, or NULL
    cdef Py_ssize_t i
    if kept == NULL:
        return
    for i in range(min(PyTuple_GET_SIZE(<object>kept), KEYS_MAX)):
        o = PyTuple_GET_ITEM(<object>kept, i)
        k.p[i] = _utf8_or_null(<object>o, &k.len[i])  # never NULL: only keys that have their UTF-8 are kept
        Py_INCREF(<object>o)
        k.obj[i] = o
        k.n = i + 1
    if not kw_keep(&kw_keys, kept):
        Py_XDECREF(kept)  # another thread kept its own meanwhile


cdef void _keep_keys(_Keys* k) noexcept:
    """``k`` kept as the next new walker's first guess (see _keys_from_last_batch)."""
    cdef PyObject* old
    cdef Py_ssize_t i
    if not k.n:
        return
    fresh = PyTuple_New(k.n)
    for i in range(k.n):
        Py_INCREF(<object>k.obj[i])
        PyTuple_SET_ITEM(fresh, i, <object>k.obj[i])
    old = <PyObject*>kw_take(&kw_keys)
    Py_XDECREF(old)
    Py_INCREF(fresh)
    if not kw_keep(&kw_keys, <PyObject*>fresh):
        Py_XDECREF(<PyObject*>fresh)


# --- Refilling a record the lazy loop gave before (see _Records.recycled) ---------------------------------------

cdef extern from *:
    """
    /* The bytes layouts whose cached hash kw_rewrite knows how to forget (CPython 3.11 to 3.13). */
    #if PY_VERSION_HEX < 0x030E0000
    #define KW_CAN_REWRITE 1
    static inline void kw_forget_hash(PyObject* o) { ((PyBytesObject*)o)->ob_shash = -1; }
    #else
    #define KW_CAN_REWRITE 0
    static inline void kw_forget_hash(PyObject* o) { (void)o; }
    #endif

    /* kw_int_rewrite: whether the int ``o`` now holds ``v``, written over its digits: the int layout of CPython
       3.11 (a signed digit count in ob_size), with as many digits of the same sign.  Later layouts: never. */
    #if PY_VERSION_HEX < 0x030C0000 && !defined(PYPY_VERSION) && !defined(Py_GIL_DISABLED)
    static inline int kw_int_rewrite(PyObject* o, long long v) {
        unsigned long long a = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        digit d[(64 + PyLong_SHIFT - 1) / PyLong_SHIFT];
        Py_ssize_t n = 0, i;
        if (v > 0 && Py_SIZE(o) == 2 && (a >> PyLong_SHIFT) != 0 && (a >> (2 * PyLong_SHIFT)) == 0) {
            /* two digits: a timestamp in milliseconds (2^30 to 2^60) */
            ((PyLongObject*)o)->ob_digit[0] = (digit)(a & PyLong_MASK);
            ((PyLongObject*)o)->ob_digit[1] = (digit)(a >> PyLong_SHIFT);
            return 1;
        }
        while (a) {
            d[n++] = (digit)(a & PyLong_MASK);
            a >>= PyLong_SHIFT;
        }
        if ((v < 0 ? -n : n) != Py_SIZE(o))
            return 0;
        for (i = 0; i < n; i++)
            ((PyLongObject*)o)->ob_digit[i] = d[i];
        return 1;
    }
    #else
    static inline int kw_int_rewrite(PyObject* o, long long v) { (void)o; (void)v; return 0; }
    #endif
    """
    bint KW_CAN_REWRITE
    void kw_forget_hash(PyObject* o)
    bint kw_int_rewrite(PyObject* o, long long v)


cdef inline object _reint(PyObject* old, int64_t v, bint recycle):
    """``v`` as an int: ``old``, a recycled record's offset or timestamp (see _Records.recycled), written over
    when nothing but the record holds it (no one can see it change), else a new int.  The ints CPython keeps made
    (-5 to 256) are never written over, nor made in their place."""
    if (recycle and (v < -5 or v > 256) and refcount(old) == 1 and type_of(old) == <PyObject*>int
            and kw_int_rewrite(old, v)):
        return <object>old
    return _int(v)


cdef enum:
    SPARE_MAX = 16384  # the most key, value and header value bytes a kept record may hold (see _Records.__dealloc__)


cdef inline bint _sized(PyObject* o, Py_ssize_t* n) noexcept:
    """Whether ``o`` is bytes (its size added to ``n``) or None."""
    if type_of(o) == <PyObject*>bytes:
        n[0] += PyBytes_GET_SIZE(<object>o)
        return True
    return o == <PyObject*>None


cdef Py_ssize_t _HEADER_VALUE_AT = 0  # where a Header keeps its value (see _install_slots)


cdef inline bint _small(Record rec) noexcept:
    """Whether ``rec`` holds what a decode gives it (bytes or None, a tuple of Header) and at most SPARE_MAX bytes.
    Read through borrowed pointers: it runs at the end of every lazy loop (see _Records.release)."""
    cdef Py_ssize_t n = 0, i
    cdef PyObject* t = <PyObject*>rec.headers
    cdef PyObject* h
    if not (_sized(<PyObject*>rec.key, &n) and _sized(<PyObject*>rec.value, &n)) or type_of(t) != <PyObject*>tuple:
        return False
    for i in range(PyTuple_GET_SIZE(<object>t)):
        h = PyTuple_GET_ITEM(<object>t, i)
        if type_of(h) != <PyObject*>Header or not _sized((<PyObject**>(<char*>h + _HEADER_VALUE_AT))[0], &n):
            return False
    return n <= SPARE_MAX


cdef inline void _copy(char* d, const unsigned char* p, Py_ssize_t n) noexcept:
    """memcpy, with the short runs of keys and header values (4 to 16 bytes) copied as two overlapping words,
    without a call."""
    if 8 <= n <= 16:
        memcpy(d, p, 8)
        memcpy(d + n - 8, p + n - 8, 8)
    elif 4 <= n < 8:
        memcpy(d, p, 4)
        memcpy(d + n - 4, p + n - 4, 4)
    else:
        memcpy(d, p, n)


cdef inline bint _rewrite(PyObject* old, const unsigned char* p, Py_ssize_t n) noexcept:
    """Whether ``old``, a recycled record's key or value (see _Records.recycled), now holds ``p[:n]``: when it is
    a bytes of that size that nothing but the record holds, its bytes are written over (no one can see them
    change) and its cached hash forgotten; else the caller makes a new bytes."""
    if not KW_CAN_REWRITE or n < 2 or refcount(old) != 1 or type_of(old) != <PyObject*>bytes:
        return False  # below 2 bytes CPython shares its bytes objects
    if PyBytes_GET_SIZE(<object>old) != n:
        return False
    _copy(PyBytes_AS_STRING(<object>old), p, n)
    kw_forget_hash(old)
    return True


@cython.no_gc
@cython.freelist(256)
cdef class Record:
    """One record: its absolute ``offset`` and ``timestamp`` (the batch's base plus the record's deltas, wrapping
    as Java's long arithmetic does), ``key`` and ``value`` (bytes or None), ``headers`` (a tuple of
    :class:`Header`; pairs are converted) and ``attributes`` (unused by Kafka, kept)."""

    # Read and written from Python through slot descriptors (see _member).  A decode fills every field
    # when it makes the record: reading all of them is the usual case, and a field that is a slot is read by
    # the interpreter's specialised attribute load, far cheaper than a property's call.
    cdef object offset, timestamp, key, value, headers, attributes

    def __init__(self, key=None, value=None, headers=(), *, offset=0, timestamp=0, attributes=0):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = _headers_of(headers)  # as_headers, in C: this runs once per record a producer builds
        self.attributes = attributes

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


# --- Slot descriptors ---------------------------------------------------------------------------------------------
# Cython exposes a cdef class's object fields through properties (getset descriptors), which the interpreter calls
# like a function on every read.  A member descriptor of type T_OBJECT_EX over the same field is what a Python
# class's __slots__ gets, and CPython's specialising interpreter reads such a field straight from the object
# (LOAD_ATTR_SLOT): with five fields read per record, that is a third of a decode.  The fields are never NULL (the
# type's tp_new fills them with None and deletion is refused), so the descriptors behave as the properties did.

# PyMemberDef and _TypeFields are declared in _records_c.pyx, which also reads BatchList's slots.

cdef Py_ssize_t _field_offset(object obj, object marker) except -1:
    """Where in ``obj``'s memory the field holding ``marker`` is (Cython names its struct, not its offsets)."""
    cdef PyObject** p = <PyObject**><PyObject*>obj
    cdef Py_ssize_t i
    cdef type cls = type(obj)
    for i in range(2, (<_TypeFields*><PyObject*>cls).tp_basicsize // <Py_ssize_t>sizeof(PyObject*)):
        if p[i] == <PyObject*>marker:
            return i * <Py_ssize_t>sizeof(PyObject*)
    raise ImportError(f"{type(obj).__name__}: a field's slot was not found")


cdef list _kept = []  # the member definitions' names live as long as the types

ctypedef object (*_DescriptorMaker)(type cls, str name, Py_ssize_t offset)


cdef int _install_fields(type cls, tuple names, object obj, tuple markers, _DescriptorMaker make) except -1:
    """Puts in ``cls``'s dict, under each of ``names``, the descriptor ``make`` gives for the field of ``obj`` (an
    instance whose fields were set to ``markers``, in the same order) that holds the matching marker."""
    cdef dict attributes = <dict><object>(<_TypeFields*><PyObject*>cls).tp_dict
    for name, marker in zip(names, markers):
        attributes[name] = make(cls, name, _field_offset(obj, marker))
    PyType_Modified(<_TypeFields*><PyObject*>cls)
    return 0


cdef object _member(type cls, str name, Py_ssize_t offset):
    """A member descriptor of type T_OBJECT_EX over the field at ``offset``; its definition is never freed."""
    cdef PyMemberDef* d = <PyMemberDef*>PyMem_Malloc(sizeof(PyMemberDef))
    if d == NULL:
        raise MemoryError()
    encoded = name.encode()
    _kept.append(encoded)
    d.name = PyBytes_AS_STRING(encoded)
    d.type = T_OBJECT_EX
    d.offset = offset
    d.flags = 0
    d.doc = NULL
    return PyDescr_NewMember(<_TypeFields*><PyObject*>cls, d)


cdef int _install_slots() except -1:
    cdef Record r = Record.__new__(Record)
    cdef Header h = Header.__new__(Header)
    markers = tuple([object() for _ in RECORD_FIELDS])
    r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes = markers
    _install_fields(Record, RECORD_FIELDS, r, markers, _member)
    h.key, h.value = markers[:2]
    _install_fields(Header, HEADER_FIELDS, h, markers[:2], _member)
    global _HEADER_VALUE_AT
    _HEADER_VALUE_AT = _field_offset(h, markers[1])
    return 0


_install_slots()


@cython.freelist(64)  # a Fetch of many small batches makes and drops one per batch
cdef class RecordBatch:
    """A record batch (magic 2) and its records.

    The fields are the wire header's; ``attributes`` holds the codec and the flags, which the properties
    (``compression``, ``timestamp_type``, ``is_transactional``, ``is_control``, ``delete_horizon_ms``) read.
    The constructor fills what it is not given as Java's producer does (see ``batch_defaults``)."""

    # The header's fields, read and written from Python through _HeadField descriptors (see _install_head).  A
    # batch from read_record_batches makes them from ``lazy_head`` when one is first read or written
    # (``head_unmade``): a loop over its records, what most readers do, reads none of them.
    cdef object base_offset, partition_leader_epoch, magic, attributes, last_offset_delta
    cdef object base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence
    cdef bint head_unmade
    cdef object record_list
    # ``crc``: a decoded batch keeps the CRC it read as a C int and makes its int when it is first read (few
    # readers ask: it belongs to the bytes); a one-record batch then makes one int fewer.
    cdef object crc_int
    cdef uint32_t crc_read
    cdef bint crc_unmade
    # A batch from read_record_batches: the bytes its records are in (None once ``records`` has made them, or
    # for a batch that was never lazy), its header as read (the public fields may be changed), where it is.
    cdef object lazy_data
    cdef _Head lazy_head
    cdef object lazy_ts  # the int of the header's base timestamp that the batch was given (see _walk)
    cdef Py_ssize_t lazy_pos, lazy_index, lazy_limit

    cdef int fill_head(self, _Head* h, object base_ts) except -1:
        """The header's fields from ``h``; ``base_ts`` is h.base_ts as an int."""
        self.base_offset, self.partition_leader_epoch, self.magic = _int(h.base_offset), _int(h.epoch), _int(h.magic)
        self.attributes, self.last_offset_delta = _int(<uint16_t>h.attributes), _int(h.last_delta)
        # One int when the two timestamps are the same (every one-record batch's are).
        self.base_timestamp = base_ts
        self.max_timestamp = base_ts if h.max_ts == h.base_ts else h.max_ts
        self.producer_id, self.producer_epoch = _int(h.producer_id), _int(h.producer_epoch)
        self.base_sequence = _int(h.base_sequence)
        self.lazy_ts = base_ts
        self.head_unmade = False
        return 0

    cdef inline int made(self) except -1:
        """Makes the header's fields, if they are still to be made, before C code reads them."""
        if self.head_unmade:
            self.fill_head(&self.lazy_head, _int(self.lazy_head.base_ts))
        return 0

    def __init__(self, records=(), *, base_offset=0, partition_leader_epoch=-1, compression=0, timestamp_type=0,
                 is_transactional=False, is_control=False, delete_horizon_ms=None, attributes=None,
                 last_offset_delta=None, base_timestamp=None, max_timestamp=None, producer_id=-1, producer_epoch=-1,
                 base_sequence=-1, magic=MAGIC, crc=0):
        cdef int codec = _codec_id(compression)
        if (type(records) is list and attributes is None and codec >= 0 and not timestamp_type
                and not is_transactional and not is_control and delete_horizon_ms is None
                and last_offset_delta is None and base_timestamp is None and max_timestamp is None
                and type(base_offset) is int):
            # What a producer builds: batch_defaults' answer without its Python-level work.
            self.record_list = list(<list>records)
            self.attributes = codec
            _producer_defaults(self, self.record_list, base_offset)
        else:
            (self.record_list, self.attributes, self.last_offset_delta, self.base_timestamp,
             self.max_timestamp) = batch_defaults(records, base_offset, compression, timestamp_type,
                                                  is_transactional, is_control, delete_horizon_ms, attributes,
                                                  last_offset_delta, base_timestamp, max_timestamp)
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc_int = crc
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence

    @property
    def crc(self):
        """The CRC-32C the batch was read with (0 for a batch built here; ``encode`` computes its own)."""
        if self.crc_unmade:
            self.crc_int = self.crc_read
            self.crc_unmade = False
        return self.crc_int

    @crc.setter
    def crc(self, value):
        self.crc_int = value
        self.crc_unmade = False

    @property
    def records(self):
        """The records, a list of :class:`Record`.  A batch from read_record_batches makes them here, on the first
        read, and keeps them."""
        cdef _Records w
        if self.lazy_data is not None:
            w = self._walk()
            try:
                self.record_list = w.fill()
            except CorruptRecordError as exc:
                raise exc.prepend_path(self.lazy_index) from None
            self.lazy_data = None
        return self.record_list

    @records.setter
    def records(self, value):
        self.record_list = value
        self.lazy_data = None

    def __iter__(self):
        """The records, one at a time.  A batch from read_record_batches whose ``records`` has not been read
        decodes each as the loop reaches it, and raises the error decode_record_batches would give at the first
        bad one (the records before it are already the caller's); any other batch iterates ``records``."""
        cdef _Records w
        if self.lazy_data is not None:
            w = self._walk()
            w.loop = True
            return w
        return iter(self.record_list)

    cdef _Records _walk(self):
        cdef _Records w
        cdef const unsigned char* b = <const unsigned char*>PyBytes_AS_STRING(self.lazy_data)
        if not self.lazy_head.attributes & COMPRESSION_MASK:
            w = _records_plain(self.lazy_data, b, self.lazy_pos, &self.lazy_head, self.lazy_index, True)
        else:  # only a decompression raises here: its error gets the batch's index
            try:
                w = _records_of(self.lazy_data, b, self.lazy_pos, &self.lazy_head, self.lazy_limit, self.lazy_index)
            except CorruptRecordError as exc:
                raise exc.prepend_path(self.lazy_index) from None
        if self.head_unmade:
            pass  # no int made for the base timestamp: a record's is its own (see _Records.step)
        elif self.base_timestamp is self.lazy_ts:  # still the int made from the header: shared without a check
            w.last_ts_o, w.last_ts = self.lazy_ts, w.base_ts
        else:
            w.shares_base(self.base_timestamp)
        return w

    @property
    def compression(self):
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        self.made()
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self):
        """0 CreateTime, 1 LogAppendTime."""
        self.made()
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self):
        self.made()
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self):
        self.made()
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def delete_horizon_ms(self):
        """The delete horizon a compacted batch carries in its base timestamp, or None."""
        self.made()
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
        return _encode_batch(self)


@cython.final
cdef class _HeadField:
    """A RecordBatch header field, as Python reads and writes it: the object in the batch's field at ``at``, the
    header's fields made first when the batch has not made them (see RecordBatch.made)."""
    cdef Py_ssize_t at

    def __get__(self, obj, owner):
        if obj is None:
            return self
        (<RecordBatch?>obj).made()
        return <object>(<PyObject**>(<char*><PyObject*>obj + self.at))[0]

    def __set__(self, obj, value):
        (<RecordBatch?>obj).made()
        cdef PyObject** p = <PyObject**>(<char*><PyObject*>obj + self.at)
        cdef PyObject* old = p[0]
        Py_INCREF(value)
        p[0] = <PyObject*>value
        Py_XDECREF(old)


cdef object _head_field(type cls, str name, Py_ssize_t offset):
    cdef _HeadField d = _HeadField.__new__(_HeadField)
    d.at = offset
    return d


cdef int _install_head() except -1:
    cdef RecordBatch b = RecordBatch.__new__(RecordBatch)
    names = ("base_offset", "partition_leader_epoch", "magic", "attributes", "last_offset_delta", "base_timestamp",
             "max_timestamp", "producer_id", "producer_epoch", "base_sequence")
    markers = tuple([object() for _ in names])
    (b.base_offset, b.partition_leader_epoch, b.magic, b.attributes, b.last_offset_delta, b.base_timestamp,
     b.max_timestamp, b.producer_id, b.producer_epoch, b.base_sequence) = markers
    _install_fields(RecordBatch, names, b, markers, _head_field)
    return 0


_install_head()


cdef Py_ssize_t _first_size(data):
    cdef _View v = _View(data)
    return LOG_OVERHEAD + rd_u32(v.p + 8)
