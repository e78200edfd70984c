# Building the objects a producer fills (included by _records_c.pyx after _records_objects.pxi): a record's
# headers from pairs, and a new batch's defaults, in C for the usual shapes.  Anything unusual takes the path the
# pure twin takes, which gives the same objects and the same errors.

cdef extern from "Python.h":
    PyObject* _fast_item "PySequence_Fast_GET_ITEM"(object, Py_ssize_t) noexcept  # of an exact list or tuple
    Py_ssize_t _size_of "Py_SIZE"(object) noexcept


cdef object _headers_of(object headers):
    """``_records_common.as_headers(Header, headers)``: the tuple of Header a Record holds.  A tuple of anything,
    or a list of Headers and (key, value) tuples, is converted here, the pairs without a Python call; anything else
    takes as_headers' own steps (a list whose items run code could change while it is read)."""
    cdef Py_ssize_t i, n
    cdef Header h
    if type(headers) is not tuple and not (type(headers) is list and _pairs_only(<list>headers)):
        return as_headers(Header, headers)
    n = _size_of(headers)  # an exact list or tuple: its own size
    if n == 0:
        return ()
    out = PyTuple_New(n)
    for i in range(n):
        if i >= _size_of(headers):  # a list emptied by a header's own code: start again the slow way
            return as_headers(Header, headers)
        item = <object>_fast_item(headers, i)
        if type(item) is Header:
            h = <Header>item
        elif type(item) is tuple and PyTuple_GET_SIZE(item) == 2:  # Header(key, value): it sets both fields
            h = Header.__new__(Header)
            h.key = <object>PyTuple_GET_ITEM(item, 0)
            h.value = <object>PyTuple_GET_ITEM(item, 1)
        else:
            h = Header(*item)
        Py_INCREF(h)
        PyTuple_SET_ITEM(out, i, h)
    if type(headers) is list and _size_of(headers) != n:  # changed meanwhile: what the pure twin builds instead
        return as_headers(Header, headers)
    # Headers are outside the cycle collector (no_gc), so a tuple of them can hold no cycle.
    PyObject_GC_UnTrack(out)
    return out


cdef bint _pairs_only(list headers) noexcept:
    for item in headers:
        if not (type(item) is Header or (type(item) is tuple and PyTuple_GET_SIZE(item) == 2)):
            return False
    return True


cdef tuple _CODEC_NAMES = COMPRESSION_NAMES


cdef int _codec_id(object compression) noexcept:
    """``compression_id`` for the values it takes without a doubt (an int 0-4 or a codec's name), else -1."""
    cdef int i
    if type(compression) is int:
        return <int>compression if 0 <= compression <= 4 else -1
    if type(compression) is str:
        for i in range(5):  # a name written in the caller's code is the interned str: the same object
            if compression is <object>PyTuple_GET_ITEM(_CODEC_NAMES, i):
                return i
        for i in range(5):
            if compression == <object>PyTuple_GET_ITEM(_CODEC_NAMES, i):
                return i
    return -1


cdef int _producer_defaults(RecordBatch self, list records, object base_offset) except -1:
    """``batch_defaults``' last offset delta, base timestamp and max timestamp of a batch a producer builds (no
    field given), into ``self``: in C over Records whose offsets and timestamps fit an int64 (Java's long
    arithmetic, as wrap64), else by the same Python expressions as batch_defaults."""
    cdef Py_ssize_t i, n = len(records)
    cdef int overflow = 0
    cdef long long ts, top = LLONG_MIN
    cdef int64_t offset, base
    cdef object top_o = None
    if n == 0:
        self.last_offset_delta, self.base_timestamp, self.max_timestamp = 0, -1, -1
        return 0
    last = records[n - 1]
    if type(last) is Record and _int64_of((<Record>last).offset, &offset) and _int64_of(base_offset, &base):
        self.last_offset_delta = <int64_t>(<uint64_t>offset - <uint64_t>base)
    else:
        self.last_offset_delta = wrap64(last.offset - base_offset)
    self.base_timestamp = records[0].timestamp
    for i in range(n):
        rec = records[i]
        if type(rec) is not Record or type((<Record>rec).timestamp) is not int:
            self.max_timestamp = max([r.timestamp for r in records])
            return 0
        ts = PyLong_AsLongLongAndOverflow((<Record>rec).timestamp, &overflow)
        if overflow:
            self.max_timestamp = max([r.timestamp for r in records])
            return 0
        if top_o is None or ts > top:
            top, top_o = ts, (<Record>rec).timestamp
    self.max_timestamp = top_o
    return 0


# --- Record(...) and RecordBatch(...) as a producer calls them ---------------------------------------------------
# A producer makes one Record per message, with its fields as arguments: ``Record(key, value, headers,
# offset=..., timestamp=...)``, then ``RecordBatch(records, compression=...)``.  Cython's own call of a type parses
# the arguments against every name __init__ takes (seventeen for a batch); these take the usual ones, matched by
# identity (the interned names a call site passes), and hand any other call (other names or values, a subclass)
# to Cython's, which gives the same object or the same error.

cdef extern from *:
    """
    typedef PyObject* (*kw_vc)(PyObject*, PyObject* const*, size_t, PyObject*);
    typedef struct { kw_vc cython, fast; } kw_calls;
    static kw_calls kw_call_of[2];
    static PyObject* kw_dispatch(kw_calls* c, PyObject* t, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
        PyObject* r = c->fast(t, args, nargsf, kwnames);
        if (r != Py_NotImplemented)
            return r;
        Py_DECREF(r);
        return c->cython(t, args, nargsf, kwnames);
    }
    static PyObject* kw_call0(PyObject* t, PyObject* const* a, size_t n, PyObject* k) {
        return kw_dispatch(&kw_call_of[0], t, a, n, k);
    }
    static PyObject* kw_call1(PyObject* t, PyObject* const* a, size_t n, PyObject* k) {
        return kw_dispatch(&kw_call_of[1], t, a, n, k);
    }
    /* Whether ``type``'s call (slot ``i``: 0 or 1) is now ``fast`` before Cython's (not where Cython gave the
       type none). */
    static int kw_install(int i, PyObject* type, void* fast) {
    #if PY_VERSION_HEX >= 0x03090000 && !defined(PYPY_VERSION)
        PyTypeObject* tp = (PyTypeObject*)type;
        if (tp->tp_vectorcall == NULL || kw_call_of[i].fast != NULL)
            return 0;
        kw_call_of[i].cython = (kw_vc)tp->tp_vectorcall;
        kw_call_of[i].fast = (kw_vc)fast;
        tp->tp_vectorcall = i ? kw_call1 : kw_call0;
        return 1;
    #else
        (void)i; (void)type; (void)fast;
        return 0;
    #endif
    }
    """
    bint kw_install(int, object, void*)
    Py_ssize_t PyVectorcall_NARGS(size_t) noexcept nogil

import sys as _sys

cdef object _OFFSET = _sys.intern("offset"), _TIMESTAMP = _sys.intern("timestamp")
cdef object _ATTRIBUTES = _sys.intern("attributes"), _COMPRESSION = _sys.intern("compression")
cdef object _BASE_OFFSET = _sys.intern("base_offset")


cdef object _record_call(PyObject* t, PyObject** args, size_t nargsf, PyObject* kwnames):
    """The Record, or NotImplemented for Cython's call to make it."""
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = 0, i
    cdef PyObject* name
    cdef Record rec
    if t != <PyObject*>Record or nargs > 3:
        return NotImplemented
    if kwnames != NULL:
        nkw = PyTuple_GET_SIZE(<object>kwnames)
    offset = timestamp = attributes = 0
    for i in range(nkw):
        name = <PyObject*>PyTuple_GET_ITEM(<object>kwnames, i)
        if name == <PyObject*>_OFFSET:
            offset = <object>args[nargs + i]
        elif name == <PyObject*>_TIMESTAMP:
            timestamp = <object>args[nargs + i]
        elif name == <PyObject*>_ATTRIBUTES:
            attributes = <object>args[nargs + i]
        else:
            return NotImplemented
    rec = Record.__new__(Record)
    rec.offset = offset
    rec.timestamp = timestamp
    rec.key = <object>args[0] if nargs > 0 else None
    rec.value = <object>args[1] if nargs > 1 else None
    rec.headers = _headers_of(<object>args[2]) if nargs > 2 else ()
    rec.attributes = attributes
    return rec


cdef object _batch_call(PyObject* t, PyObject** args, size_t nargsf, PyObject* kwnames):
    """``RecordBatch(records, compression=..., base_offset=...)`` (each optional) of a list of records: the batch
    __init__'s first branch makes, or NotImplemented for Cython's call to make it."""
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = 0, i
    cdef PyObject* name
    cdef RecordBatch b
    cdef int codec
    if t != <PyObject*>RecordBatch or nargs != 1 or type(<object>args[0]) is not list:
        return NotImplemented
    if kwnames != NULL:
        nkw = PyTuple_GET_SIZE(<object>kwnames)
    compression = base_offset = 0
    for i in range(nkw):
        name = <PyObject*>PyTuple_GET_ITEM(<object>kwnames, i)
        if name == <PyObject*>_COMPRESSION:
            compression = <object>args[1 + i]
        elif name == <PyObject*>_BASE_OFFSET:
            base_offset = <object>args[1 + i]
        else:
            return NotImplemented
    codec = _codec_id(compression)
    if codec < 0 or type(base_offset) is not int:
        return NotImplemented
    b = RecordBatch.__new__(RecordBatch)
    b.record_list = list(<list>args[0])
    b.attributes = codec
    _producer_defaults(b, b.record_list, base_offset)
    b.base_offset = base_offset
    b.partition_leader_epoch = -1
    b.magic = MAGIC
    b.crc_int = 0
    b.producer_id = -1
    b.producer_epoch = -1
    b.base_sequence = -1
    return b


kw_install(0, Record, <void*>_record_call)
kw_install(1, RecordBatch, <void*>_batch_call)
