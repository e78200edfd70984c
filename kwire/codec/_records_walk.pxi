# The record walk of the compiled twin (included by _records_c.pyx): each record checked whole (_walk), and
# _Records, the walker a decode's list and a lazy loop step through, which makes each record's objects.

cdef enum:
    KEYS_MAX = 8  # header keys and values of a batch remembered (see _read_headers); the walk stays a small object


cdef struct _Rec:
    int8_t attributes
    int64_t ts_delta
    int32_t offset_delta
    Py_ssize_t key_pos, key_len, value_pos, value_len, hdr_pos, hdr_end
    int32_t hdr_count
    # Where the first KEYS_MAX headers' keys and values are, and their lengths (-1: a null value): _read_headers
    # then reads no varint again.
    Py_ssize_t hk_pos[KEYS_MAX]
    Py_ssize_t hv_pos[KEYS_MAX]
    int32_t hk_len[KEYS_MAX]
    int32_t hv_len[KEYS_MAX]


# What _walk finds wrong with a record (0: nothing), and where: _walk_error makes its CorruptRecordError.  The walk
# itself builds no error, so it holds no Python object and runs without the GIL; it makes its checks once, and the
# error of a record it refuses comes from the same check that refused it.
cdef enum:
    VARINT_SHORT = 1  # rd_varint's and rd_varlong's own codes: the bound cuts the varint short,
    VARINT_LONG = 2   # or it runs past 5 bytes
    VARLONG_LONG = 3  # rd_varlong's 2: past 10 bytes
    RECORD_BEYOND_BATCH = 4
    ATTRIBUTES_SHORT = 5
    KEY_BEYOND = 6
    VALUE_BEYOND = 7
    HEADER_VALUE_BEYOND = 8
    HEADER_COUNT_NEGATIVE = 9
    HEADER_KEY_NEGATIVE = 10
    HEADER_KEY_BEYOND = 11
    LENGTH_DISAGREES = 12


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define kw_fault(x) __builtin_expect(!!(x), 0)
    #else
    #define kw_fault(x) (x)
    #endif
    """
    # A fault, which whole records never take: the compiler then keeps the walk's reads inline and its faults
    # out of the way.  Without it, it took the walk's early returns for even odds, judged the reads that follow
    # many of them rare, and left some of them calls.
    bint kw_fault(bint) noexcept nogil


cdef struct _Bad:
    Py_ssize_t at  # the offset the error names
    int32_t n  # the length or count at fault
    Py_ssize_t fields  # LENGTH_DISAGREES: the bytes the record's fields took


cdef inline int _bad(_Bad* bad, int fault, Py_ssize_t at, int32_t n) noexcept nogil:
    """``fault``, with where it is and the length or count at fault written into ``bad``."""
    bad.at = at
    bad.n = n
    return fault


cdef inline int _blob(const unsigned char* b, Py_ssize_t* p, Py_ssize_t limit, Py_ssize_t* at, Py_ssize_t* n,
                      int beyond, _Bad* bad) noexcept nogil:
    """A key's or value's length and bytes (-1: null), which must fit before ``limit``: 0, or the fault
    (``beyond`` when the bytes do not fit)."""
    cdef Py_ssize_t start = p[0]
    cdef int32_t v = 0
    cdef int rc = rd_varint(b, p, limit, &v)
    if kw_fault(rc):
        return _bad(bad, rc, start, 0)
    at[0] = p[0]
    if v < 0:
        n[0] = -1
        return 0
    if kw_fault(v > limit - p[0]):
        return _bad(bad, beyond, start, v)
    n[0] = v
    p[0] += v
    return 0


cdef inline int _walk(const unsigned char* b, Py_ssize_t* pos_out, Py_ssize_t end, _Rec* r,
                      _Bad* bad) noexcept nogil:
    """One record (DefaultRecord.readFrom), checked whole: 0, its fields' positions in ``r`` and ``pos_out``
    moved past it; or the fault, with ``bad`` saying where, and ``pos_out`` left at the record.  The position is a
    local until the record is read: through the caller's pointer, every store into ``r`` (which might alias it) made
    the compiler load it again.  A varint that fails leaves ``p`` at its start, the offset its error names; the
    record's own start is ``pos_out[0]``, read again only by a fault."""
    cdef Py_ssize_t p = pos_out[0], limit, kat, at = 0, n = 0
    cdef int32_t size = 0, count = 0, i, hklen = 0
    cdef int rc = rd_varint(b, &p, end, &size)
    if kw_fault(rc):
        return _bad(bad, rc, p, 0)
    if kw_fault(size < 1 or size > end - p):
        if size == 0:  # never beyond the batch: the varint was read before ``end``
            return _bad(bad, ATTRIBUTES_SHORT, p, 0)
        return _bad(bad, RECORD_BEYOND_BATCH, pos_out[0], size)
    limit = p + size
    r.attributes = <int8_t>b[p]
    p += 1
    rc = rd_varlong(b, &p, limit, &r.ts_delta)
    if kw_fault(rc):
        return _bad(bad, VARLONG_LONG if rc == VARINT_LONG else rc, p, 0)
    rc = rd_varint(b, &p, limit, &r.offset_delta)
    if kw_fault(rc):
        return _bad(bad, rc, p, 0)
    rc = _blob(b, &p, limit, &r.key_pos, &r.key_len, KEY_BEYOND, bad)
    if kw_fault(rc):
        return rc
    rc = _blob(b, &p, limit, &r.value_pos, &r.value_len, VALUE_BEYOND, bad)
    if kw_fault(rc):
        return rc
    r.hdr_pos = p
    rc = rd_varint(b, &p, limit, &count)
    if kw_fault(rc):
        return _bad(bad, rc, p, 0)
    if kw_fault(count < 0):
        return _bad(bad, HEADER_COUNT_NEGATIVE, r.hdr_pos, count)
    r.hdr_count = count
    for i in range(count):
        kat = p
        rc = rd_varint(b, &p, limit, &hklen)
        if kw_fault(rc):
            return _bad(bad, rc, p, 0)
        if kw_fault(hklen < 0 or hklen > limit - p):
            return _bad(bad, HEADER_KEY_NEGATIVE if hklen < 0 else HEADER_KEY_BEYOND, kat, hklen)
        if i < KEYS_MAX:
            r.hk_pos[i], r.hk_len[i] = p, hklen
        p += hklen
        rc = _blob(b, &p, limit, &at, &n, HEADER_VALUE_BEYOND, bad)
        if kw_fault(rc):
            return rc
        if i < KEYS_MAX:
            r.hv_pos[i], r.hv_len[i] = at, <int32_t>n
    r.hdr_end = p
    if kw_fault(p != limit):
        bad.fields = p - (limit - size)
        return _bad(bad, LENGTH_DISAGREES, pos_out[0], size)
    pos_out[0] = p
    return 0


cdef object _walk_error(int fault, const _Bad* bad, Py_ssize_t where):
    """The CorruptRecordError of a record _walk refused with ``fault``."""
    cdef str reason
    if fault == VARINT_SHORT:
        reason = "varint is cut short by the end of its record"
    elif fault == VARINT_LONG:
        reason = "varint longer than 5 bytes"
    elif fault == VARLONG_LONG:
        reason = "varint longer than 10 bytes"
    elif fault == RECORD_BEYOND_BATCH:
        reason = f"record length {bad.n} is beyond its batch"
    elif fault == ATTRIBUTES_SHORT:
        reason = "record attributes are cut short by the end of its record"
    elif fault == KEY_BEYOND:
        reason = f"key length {bad.n} is beyond its record"
    elif fault == VALUE_BEYOND:
        reason = f"value length {bad.n} is beyond its record"
    elif fault == HEADER_VALUE_BEYOND:
        reason = f"header value length {bad.n} is beyond its record"
    elif fault == HEADER_COUNT_NEGATIVE:
        reason = f"negative header count {bad.n}"
    elif fault == HEADER_KEY_NEGATIVE:
        reason = f"negative header key length {bad.n}"
    elif fault == HEADER_KEY_BEYOND:
        reason = f"header key length {bad.n} is beyond its record"
    else:
        reason = f"record length {bad.n} disagrees with its fields ({bad.fields} bytes)"
    return _fail(reason, bad.at, where)


cdef struct _Keys:
    # The batch's remembered header keys (str, owned) and their UTF-8: the bytes a str keeps with it, valid while
    # the str lives.
    int n
    bint learned  # a key was decoded into it since it was last kept (see _keep_keys)
    PyObject* obj[KEYS_MAX]
    const char* p[KEYS_MAX]
    Py_ssize_t len[KEYS_MAX]


@cython.final
@cython.no_gc
@cython.freelist(8)  # one per loop alive at a time, usually: a one-record batch's loop skips malloc and free
cdef class _Records:
    """The records of one batch, walked one at a time: each step checks one record whole (``_walk``) and,
    asked, makes its :class:`Record`.  A decode's list and a lazily read batch's loop both step through one.

    ``owner`` keeps the bytes ``b`` points into alive (the caller's bytes, or a view of the decompressed records).
    It holds bytes, str and ints only (no_gc: nothing here can be part of a cycle)."""
    cdef object owner
    cdef const unsigned char* b
    cdef Py_ssize_t pos, end, where, index
    cdef int32_t count, j
    cdef int64_t base_offset, base_ts, last_ts
    # The int of the last timestamp made (records of one batch often share a millisecond); it starts as the
    # batch's base timestamp, whose int the batch already holds (see shares_base).
    cdef object last_ts_o
    # The header keys of the batch's first record with headers (see _read_headers), and the header values of the
    # record before, shared with the next record when its bytes are the same (bytes are immutable).
    cdef bint keys_read
    cdef _Keys k
    cdef PyObject* values[KEYS_MAX]
    # The loop's last two records (see recycled).
    cdef PyObject* ring[2]
    cdef int turn
    cdef bint done
    cdef bint loop  # the walk of a lazy loop (see failed)
    cdef bint big  # a record of more than SPARE_MAX bytes of fields was made (see release)

    cdef inline void shares_base(self, object base_ts) noexcept:
        """Starts the walk with ``base_ts``, the batch's base timestamp as an int, when it is one equal to the
        header's: a record whose timestamp delta is 0 (every one-record batch's) then shares it."""
        cdef int overflow = 0
        if type(base_ts) is int and PyLong_AsLongLongAndOverflow(base_ts, &overflow) == self.base_ts and not overflow:
            self.last_ts_o = base_ts
            self.last_ts = self.base_ts

    def __dealloc__(self):
        cdef int i
        cdef PyObject* last = self.ring[self.turn ^ 1]
        for i in range(KEYS_MAX):
            Py_XDECREF(self.values[i])
        # The loop's last record is kept for the next loop (see recycled) when at most the caller's loop variable
        # still holds it and its fields are small (a kept record keeps them alive until then).
        if last != NULL and refcount(last) <= 2 and _small(<Record>last) and kw_keep(&kw_spare, last):
            self.ring[self.turn ^ 1] = NULL
        Py_XDECREF(self.ring[0])
        Py_XDECREF(self.ring[1])
        for i in range(self.k.n):
            Py_XDECREF(self.k.obj[i])

    def __iter__(self):
        return self

    def __next__(self):
        # The lazy loop (RecordBatch.__iter__, which sets ``loop``): see failed for its errors.
        if self.j < self.count:
            return self.step(True, True)
        if not self.done:
            self.done = True
            self.finish()
        raise StopIteration

    cdef object failed(self, exc):
        """``exc``, raised by the walk: in the lazy loop it gets the batch's index, as decode_record_batches gives
        it, and the loop ends (the records it gave before stay the caller's).  Decided where the error is made,
        so that the loop's step needs no try (saving and restoring the exception state on every record)."""
        self.release()
        if self.loop:
            self.j = self.count
            self.done = True
            return exc.prepend_path(self.index)
        return exc

    cdef inline Record recycled(self):
        """A record for the loop's next step: the one it gave two steps ago when nothing but this walk holds it any
        more, else a new one.  A caller's ``for record in batch`` holds the last record while the loop makes the
        next, and has dropped the one before: reusing it (and its headers, see _read_headers) saves a third of a
        step's allocations and frees.  Nothing outside can tell: a record, tuple or header anyone else holds has a
        reference count above 1 and is never reused, and every field is set again."""
        cdef PyObject* old = self.ring[self.turn]
        cdef Record rec
        if old == NULL:
            # The loop's first two steps: the record the last loop kept (see __dealloc__), when nothing else holds
            # it any more.  A reader of one-record batches, each its own loop, then reuses its record too.
            old = <PyObject*>kw_take(&kw_spare)
            if old != NULL and refcount(old) != 1:
                Py_XDECREF(old)
                old = NULL
            self.ring[self.turn] = old
        if old != NULL and refcount(old) == 1:
            rec = <Record>old
        else:
            rec = Record.__new__(Record)
            Py_INCREF(rec)
            Py_XDECREF(old)
            self.ring[self.turn] = <PyObject*>rec
        self.turn ^= 1
        return rec

    cdef inline int advance(self, _Rec* r) except -1:
        """Walks the next record, checked whole, into ``r``; the caller checks that ``j < count``."""
        cdef _Bad bad
        cdef int fault
        if self.pos >= self.end:
            raise self.failed(_fail(f"record count {self.count} but only {self.j} records are present", self.pos,
                                    self.where)) from None
        fault = _walk(self.b, &self.pos, self.end, r, &bad)
        if fault:
            self.refused(fault, &bad)
        self.j += 1
        return 0

    cdef int refused(self, int fault, const _Bad* bad) except -1:
        """Raises the error of the record _walk refused: a CorruptRecordError with the record's index and
        ``records`` before its path.  Its cause and context are suppressed, as the pure twin's are."""
        raise self.failed(_walk_error(fault, bad, self.where).prepend_path(self.j).prepend_path("records")) from None

    cdef int check(self) except -1:
        """Walks every record, checked, without making one (read_batch_infos' check_records).  The position is
        a local here, which the compiler keeps in a register: the walk of a server checking what a producer sent."""
        cdef _Rec r
        cdef _Bad bad
        cdef int fault
        cdef Py_ssize_t pos = self.pos
        while self.j < self.count:
            if pos >= self.end:
                self.pos = pos
                return self.advance(&r)  # raises the count's error
            fault = _walk(self.b, &pos, self.end, &r, &bad)
            if fault:
                self.pos = pos
                return self.refused(fault, &bad)
            self.j += 1
        self.pos = pos
        return self.finish()

    cdef Record step(self, bint build, bint recycle):
        """The next record (None without ``build``); the caller checks that ``j < count``.  ``recycle``: the
        loop's step, which may reuse a record the caller has dropped (see recycled)."""
        cdef _Rec r
        cdef Record rec
        cdef int64_t ts
        self.advance(&r)
        if not build:
            return None
        rec = self.recycled() if recycle else Record.__new__(Record)
        rec.offset = _reint(<PyObject*>rec.offset,
                            <int64_t>(<uint64_t>self.base_offset + <uint64_t><int64_t>r.offset_delta), recycle)
        ts = <int64_t>(<uint64_t>self.base_ts + <uint64_t>r.ts_delta)
        if self.last_ts_o is None or ts != self.last_ts:  # records of one batch often share a millisecond: one int
            self.last_ts_o = _reint(<PyObject*>rec.timestamp, ts, recycle)
            self.last_ts = ts
        if <PyObject*>rec.timestamp != <PyObject*>self.last_ts_o:  # else written over in place (see _reint)
            rec.timestamp = self.last_ts_o
        if not (recycle and _rewrite(<PyObject*>rec.key, self.b + r.key_pos, r.key_len)):
            rec.key = None if r.key_len < 0 else PyBytes_FromStringAndSize(
                <const char*>self.b + r.key_pos, r.key_len)
        if not (recycle and _rewrite(<PyObject*>rec.value, self.b + r.value_pos, r.value_len)):
            rec.value = None if r.value_len < 0 else PyBytes_FromStringAndSize(
                <const char*>self.b + r.value_pos, r.value_len)
        if r.hdr_count:
            if self.keys_read:
                _read_headers(self, &r, recycle and _reusable(<PyObject*>rec.headers, r.hdr_count), rec, False)
            else:
                # The batch's first record with headers: its keys are the batch's guess (see _read_headers).  The
                # walker's last batch's keys, or for a new walker the last batch's, are compared first.
                if not self.k.n:
                    _keys_from_last_batch(&self.k)
                _read_headers(self, &r, recycle and _reusable(<PyObject*>rec.headers, r.hdr_count), rec, True)
                self.keys_read = True
                if self.k.learned:
                    self.k.learned = False
                    _keep_keys(&self.k)
        else:
            rec.headers = ()
        if r.attributes < -5 or <PyObject*>rec.attributes != PyTuple_GET_ITEM(_SMALL, r.attributes + 5):
            rec.attributes = _int(r.attributes)
        if r.key_len + r.value_len + (r.hdr_end - r.hdr_pos) > SPARE_MAX:
            self.big = True
        return rec

    cdef void release(self) noexcept:
        """The walk is over: the bytes are let go, and what the kept walker (see _records_at) holds past its walk is
        bounded as __dealloc__ bounds a kept record: a record the caller may have filled since it was made (it
        still holds it) is dropped unless _small; when a record of the walk held more than SPARE_MAX bytes of
        fields, so are the records kept that are not _small, and the header keys and values remembered."""
        cdef int i
        cdef PyObject* o
        self.owner = None
        self.b = NULL
        for i in range(2):
            o = self.ring[i]
            if o != NULL and (refcount(o) > 1 or self.big) and not _small(<Record>o):
                self.ring[i] = NULL
                Py_XDECREF(o)
        if not self.big:
            return
        self.big = False
        for i in range(KEYS_MAX):
            o = self.values[i]
            self.values[i] = NULL
            Py_XDECREF(o)
        _keys_drop(&self.k, 0)

    cdef int finish(self) except -1:
        self.release()
        if self.pos != self.end:
            raise self.failed(_fail(f"bytes after the {self.count} records the batch declares", self.pos,
                                    self.where)) from None
        return 0

    cdef list fill(self):
        """Every record, in a list; checked whole before the list is returned."""
        cdef Record rec
        cdef list out
        # A count the bytes can hold: one list of that size.  Beyond it, the walk raises before its end.
        cdef bint sized = self.count <= (self.end - self.pos) // MIN_RECORD_SIZE
        out = PyList_New(self.count) if sized else []
        while self.j < self.count:
            rec = self.step(True, False)
            if sized:
                Py_INCREF(rec)
                PyList_SET_ITEM(out, self.j - 1, rec)
            else:
                out.append(rec)
        self.finish()
        return out


cdef enum:
    WALKER_KEPT_MAX = 64 << 10  # the most bytes a walker kept for the next walk may hold (see _records_at)


cdef void _keys_drop(_Keys* k, int at) noexcept:
    """Forgets the remembered header keys from ``at`` on."""
    cdef int i
    for i in range(at, k.n):
        Py_XDECREF(k.obj[i])
        k.obj[i] = NULL
    k.n = at


cdef _Records _records_at(object owner, const unsigned char* b, Py_ssize_t pos, Py_ssize_t end, int32_t count,
                          int64_t base_offset, int64_t base_timestamp, Py_ssize_t where, Py_ssize_t index,
                          bint keep):
    """A walk over ``b[pos:end]``.  With ``keep``, the last walk over at most WALKER_KEPT_MAX bytes is kept
    (kw_walker) and, when nothing else holds it any more, walks again: a reader of one-record batches then makes
    no walker per batch, and the walker's header keys (see _read_headers), header values and last records (see
    recycled) carry over from one batch to the next.  Its walk over, it holds none of the bytes (see release).
    Without ``keep`` (a walk over the caller's buffer, which a kept walker left by an error would hold exported)
    the walker is the walk's own."""
    cdef PyObject* kept = <PyObject*>kw_take(&kw_walker) if keep else NULL
    cdef _Records w
    cdef Py_ssize_t size = WALKER_KEPT_MAX + 1
    if type(owner) is bytes:
        size = PyBytes_GET_SIZE(owner)
    elif type(owner) is _View:
        size = (<_View>owner).n
    if kept != NULL and refcount(kept) == 1:
        w = <_Records>kept
        Py_XDECREF(kept)  # ``w`` holds it now
        w.j, w.last_ts, w.last_ts_o, w.keys_read, w.done, w.loop = 0, 0, None, False, False, False
    else:
        Py_XDECREF(kept)  # another loop's, still walking: this walk's walker takes its place
        w = _Records.__new__(_Records)
    if keep and size <= WALKER_KEPT_MAX:
        Py_INCREF(w)
        if not kw_keep(&kw_walker, <PyObject*>w):
            Py_XDECREF(<PyObject*>w)
    w.owner, w.b, w.pos, w.end, w.count = owner, b, pos, end, count
    w.base_offset, w.base_ts, w.where, w.index = base_offset, base_timestamp, where, index
    return w
