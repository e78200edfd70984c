# cython: language_level=3
"""Record batches (magic 2), compiled: the twin of ``kwire.codec._records_py``.

Same names, same results, same errors at the same offsets.  What is compiled:

- the header reads and the CRC-32C (``_crc32c.h``: SSE4.2 or the ARMv8 CRC32
  extension where the CPU has them, tables elsewhere);
- the record walk, which checks every record of a batch without creating an
  object (``read_batch_infos(check_records=True)`` is nothing else);
- the objects: a decode checks each record whole, then makes its
  :class:`Record` with every field; the fields are slots that the interpreter
  reads without a call (see ``_member``);
- encoding, straight into one buffer.

Compression is a library call in both twins (``_records_common.decompress``
and ``compress``, over cramjam and zlib).
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_Append, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLongLong
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from libc.limits cimport LLONG_MAX, LLONG_MIN

from libc.string cimport memcmp, memcpy, memset

include "_records_wire.pxi"

cdef extern from "Python.h":
    Py_ssize_t PY_SSIZE_T_MAX
    object PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL
    long long PyLong_AsLongLongAndOverflow(object, int*) except? -1
    Py_ssize_t refcount "Py_REFCNT"(PyObject*)
    PyObject* type_of "Py_TYPE"(PyObject*)
    void PyObject_GC_UnTrack(object)
    object PyByteArray_FromStringAndSize(const char*, Py_ssize_t)
    object PyMemoryView_FromMemory(char*, Py_ssize_t, int)
    int PyBUF_READ

cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
        int flags
        const char* doc
    int T_OBJECT_EX

cdef extern from "Python.h":
    ctypedef struct _TypeFields "PyTypeObject":
        Py_ssize_t tp_basicsize
        PyObject* tp_dict
        PyObject* (*tp_alloc)(_TypeFields*, Py_ssize_t) except NULL
        void (*tp_free)(void*) noexcept
        void (*tp_dealloc)(PyObject*) noexcept
    object PyDescr_NewMember(_TypeFields*, PyMemberDef*)
    void PyType_Modified(_TypeFields*)

cdef extern from "_crc32c.h":
    uint32_t kw_crc32c(uint32_t crc, const unsigned char* p, size_t n) nogil
    void kw_crc32c_init()
    void kw_crc32c_force_portable(int on)
    int kw_crc32c_hw

# The names the object classes need are imported by _records_objects.pxi, beside them.
from kwire.codec._records_common import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    TWIN_NAMES,
    BatchInfo,
    check_int,
    check_limit,
    cramjam_module,
    decompress,
    offset_delta,
    SNAPPY_MAX_RATIO,
    zstd_with_context,
    unknown_codec,
    unsupported_magic,
)
from kwire.errors import ArgumentTypeError, ArgumentValueError, CorruptRecordError, EncodeError, RecordCrcError

__all__ = [*TWIN_NAMES]  # the same names in both twins

kw_crc32c_init()

cdef enum:
    LOG_OVERHEAD = 12
    HEADER_SIZE = 61
    MAGIC_OFFSET = 16
    CRC_OFFSET = 17
    ATTRIBUTES_OFFSET = 21
    COUNT_OFFSET = 57
    MAGIC = 2
    MIN_RECORD_SIZE = 7
    COMPRESSION_MASK = 7
    TIMESTAMP_TYPE_MASK = 0x08
    TRANSACTIONAL_FLAG = 0x10
    CONTROL_FLAG = 0x20
    DELETE_HORIZON_FLAG = 0x40
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# --- CRC-32C -------------------------------------------------------------------------------------------------------

cdef class _View:
    """A read-only byte view of any bytes-like object, released when dropped."""
    cdef Py_buffer buf
    cdef bint held
    cdef const unsigned char* p
    cdef Py_ssize_t n

    def __cinit__(self, obj, int flags=PyBUF_SIMPLE):
        try:
            PyObject_GetBuffer(obj, &self.buf, flags)
        except (TypeError, BufferError):  # not bytes-like, or not one contiguous run of bytes
            raise ArgumentTypeError(f"records must be contiguous bytes-like, not {type(obj).__name__}") from None
        self.held = True
        self.p = <const unsigned char*>self.buf.buf
        self.n = self.buf.len

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.buf)


cdef uint32_t _crc(const unsigned char* p, Py_ssize_t n, uint32_t crc=0):
    if n >= 65536:  # long enough to be worth letting other threads run
        with nogil:
            crc = kw_crc32c(crc, p, n)
        return crc
    return kw_crc32c(crc, p, n)


def crc32c(data, crc=0):
    """CRC-32C of ``data`` (bytes-like), continuing from ``crc``: the checksum of a record batch."""
    cdef _View v = _View(data)
    if not isinstance(crc, int) or not 0 <= crc <= 0xFFFFFFFF:
        raise ArgumentValueError(f"crc must be an int in [0, 2**32), not {crc!r}")
    return _crc(v.p, v.n, <uint32_t>crc)


def crc32c_backend():
    """How :func:`crc32c` computes: "hardware" (SSE4.2 or the ARMv8 CRC32 extension) or "table"."""
    return "hardware" if kw_crc32c_hw else "table"


def _crc32c_use_tables(bint on):
    """Tests only: force the portable tables (True), or restore the CPU's choice (False)."""
    kw_crc32c_force_portable(on)


def _frame_size_guess(int codec, data):
    """Tests only: frame_size_guess over ``data``, to check it against _records_common._frame_content_size."""
    cdef _View v = _View(data)
    return frame_size_guess(codec, v.p, v.n)


def _lz4_records(data, limit):
    """Tests only: the LZ4 frame ``data`` as the compiled twin reads it itself, or None where cramjam reads it."""
    cdef _View v = _View(data)
    cdef _View out = _unlz4(v.p, 0, v.n, limit)
    return None if out is None else PyBytes_FromStringAndSize(<const char*>out.p, out.n)


def _zstd_capacity(data, limit):
    """Tests only: zstd_capacity over ``data``, to check it against _records_common.zstd_capacity."""
    cdef _View v = _View(data)
    return zstd_capacity(v.p, v.n, limit)


# --- Errors --------------------------------------------------------------------------------------------------------

cdef object _fail(str reason, Py_ssize_t pos, Py_ssize_t where):
    # ``where`` < 0: positions are offsets in the caller's input; otherwise the records were decompressed and
    # errors name the compressed payload's offset, ``where``, as the pure twin's _Reader.fail does.
    if where < 0:
        return CorruptRecordError(reason, pos)
    return CorruptRecordError(f"{reason} (byte {pos} of the decompressed records)", where)



# --- The record walk -----------------------------------------------------------------------------------------------

include "_records_walk.pxi"


# --- Batches -------------------------------------------------------------------------------------------------------

cdef struct _Head:
    int64_t base_offset
    int32_t length, epoch
    int8_t magic
    uint32_t crc
    int16_t attributes
    int32_t last_delta
    int64_t base_ts, max_ts, producer_id
    int16_t producer_epoch
    int32_t base_sequence, count


cdef int _header(const unsigned char* b, Py_ssize_t pos, Py_ssize_t end, bint check_crc, bint allow_partial_tail,
                 _Head* h) except -1:
    """The header of the batch at ``pos`` into ``h``: 1, or 0 for an incomplete last batch the caller skips."""
    cdef Py_ssize_t left = end - pos
    cdef int32_t length
    cdef uint32_t computed
    cdef int magic, codec
    if left < LOG_OVERHEAD:
        if allow_partial_tail:
            return 0
        raise CorruptRecordError(f"record batch is cut short: {left} bytes left, its prefix needs 12", pos)
    length = <int32_t>rd_u32(b + pos + 8)
    if length < 0:
        raise CorruptRecordError(f"negative record batch length {length}", pos + 8)
    if length > left - LOG_OVERHEAD:
        if allow_partial_tail:
            return 0
        raise CorruptRecordError(
            f"record batch is cut short: length {length}, {left - LOG_OVERHEAD} bytes present", pos + 8)
    if length < MAGIC_OFFSET + 1 - LOG_OVERHEAD:
        raise CorruptRecordError(f"record batch length {length} leaves no room for its magic", pos + 8)
    magic = <int8_t>b[pos + MAGIC_OFFSET]
    if magic != MAGIC:
        raise unsupported_magic(magic, pos + MAGIC_OFFSET)
    if length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(
            f"record batch length {length} is below the {HEADER_SIZE - LOG_OVERHEAD} bytes of its header", pos + 8)
    h.base_offset = <int64_t>rd_u64(b + pos)
    h.length = length
    h.epoch = <int32_t>rd_u32(b + pos + 12)
    h.magic = magic
    h.crc = rd_u32(b + pos + CRC_OFFSET)
    h.attributes = <int16_t>rd_u16(b + pos + ATTRIBUTES_OFFSET)
    h.last_delta = <int32_t>rd_u32(b + pos + 23)
    h.base_ts = <int64_t>rd_u64(b + pos + 27)
    h.max_ts = <int64_t>rd_u64(b + pos + 35)
    h.producer_id = <int64_t>rd_u64(b + pos + 43)
    h.producer_epoch = <int16_t>rd_u16(b + pos + 51)
    h.base_sequence = <int32_t>rd_u32(b + pos + 53)
    h.count = <int32_t>rd_u32(b + pos + COUNT_OFFSET)
    if check_crc:
        computed = _crc(b + pos + ATTRIBUTES_OFFSET, LOG_OVERHEAD + length - ATTRIBUTES_OFFSET)
        if computed != h.crc:
            raise RecordCrcError(
                f"record batch CRC-32C mismatch: stored {h.crc:#010x}, computed {computed:#010x}", pos + CRC_OFFSET)
    codec = h.attributes & COMPRESSION_MASK
    if codec > 4:
        raise unknown_codec(codec, pos + ATTRIBUTES_OFFSET)
    if h.count < 0:
        raise CorruptRecordError(f"negative record count {h.count}", pos + COUNT_OFFSET)
    if not codec and h.count > (length + LOG_OVERHEAD - HEADER_SIZE) // MIN_RECORD_SIZE:
        raise CorruptRecordError(
            f"record count {h.count} cannot fit in the batch's {length + LOG_OVERHEAD - HEADER_SIZE} bytes of records",
            pos + COUNT_OFFSET)
    return 1


include "_records_inflate.pxi"


cdef inline _Records _records_plain(object owner, const unsigned char* b, Py_ssize_t pos, _Head* h, Py_ssize_t index,
                                   bint keep):
    """_records_of for uncompressed records, which raises no CorruptRecordError."""
    return _records_at(owner, b, pos + HEADER_SIZE, pos + LOG_OVERHEAD + h.length, h.count, h.base_offset,
                       h.base_ts, -1, index, keep)


cdef _Records _records_of(object owner, const unsigned char* b, Py_ssize_t pos, _Head* h, Py_ssize_t limit,
                         Py_ssize_t index, bint keep=True):
    """The walk over the records of the batch at ``pos`` in ``b`` (which ``owner`` holds), decompressed first
    when they are."""
    cdef Py_ssize_t start = pos + HEADER_SIZE, batch_end = pos + LOG_OVERHEAD + h.length
    cdef int codec = h.attributes & COMPRESSION_MASK
    cdef _View plain_view = None
    if not codec:
        return _records_plain(owner, b, pos, h, index, keep)
    if codec == LZ4:
        plain_view = _unlz4(b, start, batch_end, limit)
    if (codec == LZ4 and plain_view is None) or codec == ZSTD:
        plain_view = _inflate(codec, b, start, batch_end, limit)
    elif codec == SNAPPY:
        plain_view = _unsnappy(b, start, batch_end, limit)
    elif codec == GZIP:
        plain_view = _gunzip(b, start, batch_end, limit)
    if plain_view is None:
        payload = PyBytes_FromStringAndSize(<const char*>b + start, batch_end - start)
        plain_view = _View(decompress(codec, payload, limit, start))
    return _records_at(plain_view, plain_view.p, 0, plain_view.n, h.count, h.base_offset, h.base_ts, start, index,
                       keep)


cdef object _info(Py_ssize_t pos, _Head* h):
    # make_info's BatchInfo, built without the namedtuple's Python __new__ (a third of a one-batch read).
    cdef uint16_t attributes = <uint16_t>h.attributes
    return tuple.__new__(BatchInfo, (
        pos, LOG_OVERHEAD + h.length, h.base_offset, h.epoch, h.magic, h.crc, attributes,
        attributes & COMPRESSION_MASK, (attributes & TRANSACTIONAL_FLAG) != 0, (attributes & CONTROL_FLAG) != 0,
        (attributes & TIMESTAMP_TYPE_MASK) >> 3, h.last_delta, h.base_ts, h.max_ts, h.producer_id,
        h.producer_epoch, h.base_sequence, h.count))


cdef Py_ssize_t _arguments(check_crc, allow_partial_tail, limit) except -1:
    """The checks of the keyword arguments, done in C when they are plain; the limit."""
    cdef int overflow = 0
    cdef long long n
    if limit is _DEFAULT_LIMIT_OBJ and check_crc is True and allow_partial_tail is False:
        return _DEFAULT_LIMIT  # what nearly every call passes: checked once, below
    if type(check_crc) is not bool or type(allow_partial_tail) is not bool:
        for name, value in (("check_crc", check_crc), ("allow_partial_tail", allow_partial_tail)):
            if not isinstance(value, bool):
                raise ArgumentTypeError(f"{name} must be a bool, not {type(value).__name__}")
    if type(limit) is int:  # compared in C: comparing with PY_SSIZE_T_MAX in Python would make an int per call
        n = PyLong_AsLongLongAndOverflow(limit, &overflow)
        if not overflow and 0 <= n <= PY_SSIZE_T_MAX:
            return <Py_ssize_t>n
    return min(check_limit(limit), PY_SSIZE_T_MAX)


cdef object _DEFAULT_LIMIT_OBJ = DEFAULT_MAX_DECOMPRESSED_SIZE  # the functions' default, compared by identity
cdef Py_ssize_t _DEFAULT_LIMIT = min(check_limit(DEFAULT_MAX_DECOMPRESSED_SIZE), PY_SSIZE_T_MAX)


cdef class BatchList(list):
    """The batches read from a records blob, in order: the pure twin's ``_records_common.BatchList`` as a compiled
    type, with the same fields, constructor and pickling.  A one-batch read made and freed the Python class's list
    through the generic allocation and deallocation of a class (subtype_dealloc), a tenth of its time."""

    cdef public object end, partial_tail

    def __init__(self, items=(), end=0, partial_tail=0):
        list.__init__(self, items)
        self.end = end
        self.partial_tail = partial_tail

    def __reduce__(self):
        return (BatchList, (list(self), self.end, self.partial_tail))


cdef inline BatchList _batch_list():
    """An empty BatchList, its ``end`` and ``partial_tail`` 0 (the reader sets them when it is done)."""
    cdef BatchList out = BatchList.__new__(BatchList)
    out.end = 0
    out.partial_tail = 0
    if KW_LIST_SLOTS:
        kw_give_items(<PyObject*>out)
    return out


# A read of one batch makes a BatchList that its caller drops before the next read.  Three of BatchList's type
# slots are set here, in C, where the GIL serialises them and on the CPython versions they were checked against
# (elsewhere they stay what Cython and list give):
# - tp_alloc and tp_free: allocating and freeing the list (malloc, the collector's count of new objects, free)
#   cost a one-record read a twentieth of its time, where list keeps the lists it frees for the next.  BatchList
#   keeps the last one freed the same way: tp_free keeps its memory (list's dealloc has untracked the list and
#   freed its items) and tp_alloc fills it again as PyType_GenericAlloc fills new memory;
# - tp_dealloc: Cython's untracks the list, clears its two fields, tracks it again for list's dealloc, which
#   untracks it again: a fortieth of the read.  kw_batch_list_dealloc clears the fields of the untracked list
#   and calls list's, inside the trashcan that bounds the recursion of nested lists' deallocs.  It keeps a small
#   list's item array too, which the next list a reader makes is given (kw_give_items): a one-batch read then
#   allocates and frees no array (another twentieth).
cdef extern from *:
    """
    #if !defined(Py_GIL_DISABLED) && !defined(PYPY_VERSION) && PY_VERSION_HEX < 0x030E0000
    #define KW_LIST_SLOTS 1
    #else
    #define KW_LIST_SLOTS 0
    #endif
    static Py_ssize_t kw_end_at, kw_tail_at;  /* where a BatchList keeps end and partial_tail */
    static destructor kw_list_dealloc;  /* list's own */
    /* The item array of the last BatchList freed with room for at most KW_KEPT_ITEMS, for the next. */
    #define KW_KEPT_ITEMS 8
    static PyObject** kw_kept_items = NULL;
    static Py_ssize_t kw_kept_room = 0;
    static void kw_batch_list_dealloc(PyObject* o) {
        PyListObject* l = (PyListObject*)o;
        PyObject** items = l->ob_item;
        Py_ssize_t i = Py_SIZE(o), room = l->allocated;
        PyObject_GC_UnTrack(o);
        Py_TRASHCAN_BEGIN(o, kw_batch_list_dealloc)
        Py_CLEAR(*(PyObject**)((char*)o + kw_end_at));
        Py_CLEAR(*(PyObject**)((char*)o + kw_tail_at));
        if (items != NULL && room <= KW_KEPT_ITEMS && kw_kept_items == NULL) {
            /* list's dealloc, for the items: the list is emptied first, its array dropped after them (dropping
               them may run code that frees or makes other lists, and takes or keeps an array) */
            l->ob_item = NULL;
            Py_SET_SIZE(o, 0);
            l->allocated = 0;
            while (--i >= 0)
                Py_XDECREF(items[i]);
            if (kw_kept_items == NULL) {
                kw_kept_items = items;
                kw_kept_room = room;
            } else {
                PyMem_Free(items);
            }
        }
        kw_list_dealloc(o);
        Py_TRASHCAN_END
    }
    /* A new, empty BatchList given the kept array. */
    static void kw_give_items(PyObject* o) {
        PyListObject* l = (PyListObject*)o;
        if (kw_kept_items != NULL && l->ob_item == NULL) {
            l->ob_item = kw_kept_items;
            l->allocated = kw_kept_room;
            kw_kept_items = NULL;
        }
    }
    """
    bint KW_LIST_SLOTS
    Py_ssize_t kw_end_at, kw_tail_at
    void (*kw_list_dealloc)(PyObject*) noexcept
    void kw_batch_list_dealloc(PyObject*) noexcept
    void kw_give_items(PyObject*) noexcept

cdef extern from "Python.h":
    PyObject* PyType_GenericAlloc(_TypeFields*, Py_ssize_t) except NULL
    PyObject* PyObject_Init(PyObject*, _TypeFields*) except NULL
    void PyObject_GC_Track(PyObject*)
    void PyObject_GC_Del(void*)

cdef PyObject* _kept_list = NULL  # the memory of the last BatchList freed: no object, untracked


cdef PyObject* _list_alloc(_TypeFields* t, Py_ssize_t n) except NULL:
    global _kept_list
    cdef PyObject* o = _kept_list
    if o == NULL or n or <PyObject*>t != <PyObject*>BatchList:
        return PyType_GenericAlloc(t, n)
    _kept_list = NULL
    memset(o, 0, t.tp_basicsize)
    PyObject_Init(o, t)
    PyObject_GC_Track(o)
    return o


cdef void _list_free(void* p) noexcept:
    global _kept_list
    if _kept_list == NULL and type_of(<PyObject*>p) == <PyObject*>BatchList:
        _kept_list = <PyObject*>p
    else:
        PyObject_GC_Del(p)


cdef int _install_list_slots() except -1:
    cdef _TypeFields* t = <_TypeFields*><PyObject*>BatchList
    cdef BatchList probe = BatchList.__new__(BatchList)
    global kw_end_at, kw_tail_at, kw_list_dealloc
    if not KW_LIST_SLOTS:
        return 0
    end, tail = object(), object()
    probe.end, probe.partial_tail = end, tail
    kw_end_at, kw_tail_at = _field_offset(probe, end), _field_offset(probe, tail)
    kw_list_dealloc = (<_TypeFields*><PyObject*>list).tp_dealloc
    t.tp_alloc, t.tp_free, t.tp_dealloc = _list_alloc, _list_free, kw_batch_list_dealloc
    return 0


_install_list_slots()


def read_batch_infos(data, *, check_crc=True, allow_partial_tail=False, check_records=False,
                     max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE):
    """The header of every batch in ``data`` (0 or more concatenated batches), as a :class:`BatchList` of
    :data:`BatchInfo`, without a Python object per record.  ``check_records`` also walks each batch's records
    (decompressing them, up to ``max_decompressed_size`` bytes) and checks them and their count."""
    cdef _View v = _View(data)
    cdef _Head h
    cdef Py_ssize_t pos = 0, index = 0
    cdef Py_ssize_t limit = _arguments(check_crc, allow_partial_tail, max_decompressed_size)
    cdef bint walk = check_records
    cdef _Records w
    cdef BatchList out = _batch_list()
    while pos < v.n:
        try:
            if not _header(v.p, pos, v.n, check_crc, allow_partial_tail, &h):
                out.partial_tail = v.n - pos
                break
            if walk:
                _records_of(v, v.p, pos, &h, limit, index, False).check()  # v: the caller's buffer, exported
        except CorruptRecordError as exc:
            raise exc.prepend_path(index) from None
        PyList_Append(out, _info(pos, &h))  # BatchList keeps list's append: no method lookup per batch
        pos += LOG_OVERHEAD + h.length
        index += 1
    out.end = pos
    return out


cdef tuple _SMALL = tuple(range(-5, 257))  # the ints CPython keeps made


cdef inline object _int(int64_t v):
    """``v`` as an int, read from _SMALL without a call when it is one of them: a batch header's fields are mostly
    -1 (no producer id, epoch or sequence), 0 and 2."""
    if -5 <= v <= 256:
        return <object>PyTuple_GET_ITEM(_SMALL, v + 5)
    return PyLong_FromLongLong(v)


cdef object _decode(data, check_crc, allow_partial_tail, max_decompressed_size, bint lazy):
    """decode_record_batches, or with ``lazy`` read_record_batches: each batch's records are then left in the
    bytes, for its loop (RecordBatch.__iter__) or its ``records`` to decode."""
    cdef _Head h
    cdef Py_ssize_t pos = 0, index = 0, n
    cdef const unsigned char* p
    cdef RecordBatch batch
    cdef _Records w
    cdef _View copy
    cdef BatchList out
    cdef object base_ts = None  # an object: as a C int (what Cython would infer) each field set would make its own
    cdef Py_ssize_t limit = _arguments(check_crc, allow_partial_tail, max_decompressed_size)
    if type(data) is not bytes:
        copy = _View(data)
        data = PyBytes_FromStringAndSize(<const char*>copy.p, copy.n)
        copy = None
    p = <const unsigned char*>PyBytes_AS_STRING(data)
    n = PyBytes_GET_SIZE(data)
    out = _batch_list()
    while pos < n:
        try:
            if not _header(p, pos, n, check_crc, allow_partial_tail, &h):
                out.partial_tail = n - pos
                break
            if lazy:
                records = None
            else:
                base_ts = _int(h.base_ts)
                w = _records_of(data, p, pos, &h, limit, index)
                w.shares_base(base_ts)
                records = w.fill()
        except CorruptRecordError as exc:
            raise exc.prepend_path(index) from None
        batch = RecordBatch.__new__(RecordBatch)
        batch.crc_read, batch.crc_unmade = h.crc, True
        if lazy:
            batch.lazy_data, batch.lazy_head, batch.lazy_pos, batch.head_unmade = data, h, pos, True
            batch.lazy_index, batch.lazy_limit = index, limit
        else:
            batch.fill_head(&h, base_ts)
            batch.record_list = records
        PyList_Append(out, batch)
        pos += LOG_OVERHEAD + h.length
        index += 1
    out.end = pos
    return out


def decode_record_batches(data, *, check_crc=True, allow_partial_tail=False,
                          max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE):
    """Every batch in ``data`` decoded to a :class:`RecordBatch`, as a :class:`BatchList`; every record is
    checked and made before it returns.

    Input that is not ``bytes`` (and could change while it is read) is copied once first."""
    return _decode(data, check_crc, allow_partial_tail, max_decompressed_size, False)


def read_record_batches(data, *, check_crc=True, allow_partial_tail=False,
                        max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE):
    """Every batch in ``data`` as a :class:`RecordBatch` whose records are decoded as its loop reaches them
    (``for record in batch``), each checked as :func:`decode_record_batches` checks it; ``batch.records``
    decodes them all.  The headers and CRCs of every batch are checked before it returns.

    Input that is not ``bytes`` is copied once first; the batches keep the bytes until their records are made."""
    return _decode(data, check_crc, allow_partial_tail, max_decompressed_size, True)


def set_base_offset(buf, position, base_offset):
    """Rewrite the base offset of the batch at ``position`` in the writable ``buf``, in place.

    The CRC does not cover the base offset, so the batch stays valid: this is how a broker assigns offsets to a
    batch it stores as received."""
    cdef Py_buffer view
    try:
        PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    except (TypeError, BufferError):
        try:
            memoryview(buf)
        except TypeError:
            raise ArgumentTypeError(f"buf must be a writable bytes-like object, not {type(buf).__name__}") from None
        raise ArgumentTypeError(f"buf must be writable ({type(buf).__name__} is read-only)") from None
    try:
        check_int("position", position, 0, view.len - 8 if view.len >= 8 else -1, ArgumentValueError)
        check_int("base_offset", base_offset, -(1 << 63), (1 << 63) - 1, ArgumentValueError)
        wr_u64(<unsigned char*>view.buf + <Py_ssize_t>position, <uint64_t><int64_t>base_offset)
    finally:
        PyBuffer_Release(&view)


def encode_record_batches(batches):
    """Concatenated encodings of ``batches``: a records blob as Produce carries it."""
    return b"".join([b.encode() for b in batches])


include "_records_objects.pxi"
include "_records_build.pxi"
include "_records_encode.pxi"
