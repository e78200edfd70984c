# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of ``_leader_py``: a JoinGroupResponse's members grouped by
their metadata bytes, the members' ``ConsumerProtocolSubscription``
bytes and eager sticky userData read into columns, and each member's ``ConsumerProtocolAssignment``
bytes written straight from an assignment's CSR arrays into one bytes object
per member (layout in ``_leader_common``).  The two must return identical
results.  No Python object is made per partition, per owned entry or per
topic run."""

import numpy as np

cimport cython
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from .. import codec
from ..errors import AssignmentError
from . import _leader_common
from ._leader_common import ClaimColumns, StickyUserDataColumns, SubscriptionColumns, metadata_type_error

cdef extern from "Python.h":
    bint PyMemoryView_Check(object)
    Py_buffer* PyMemoryView_GET_BUFFER(object)
    bint PyBuffer_IsContiguous(const Py_buffer*, char)
    object PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL


cdef inline void _put16(uint8_t* out, int32_t v) noexcept nogil:
    out[0] = <uint8_t>((v >> 8) & 0xFF)
    out[1] = <uint8_t>(v & 0xFF)


cdef inline void _put32(uint8_t* out, int32_t v) noexcept nogil:
    out[0] = <uint8_t>((v >> 24) & 0xFF)
    out[1] = <uint8_t>((v >> 16) & 0xFF)
    out[2] = <uint8_t>((v >> 8) & 0xFF)
    out[3] = <uint8_t>(v & 0xFF)


cdef inline bint _span(object data, const uint8_t** p, Py_ssize_t* n) noexcept:
    """Point ``p``/``n`` at the bytes of ``data`` when it is bytes or a
    read-only, contiguous memoryview of single bytes (what
    ``decode(..., views=True)`` gives): the metadata kept as it came, with no
    copy.  0 for anything else, which is copied to bytes first."""
    cdef Py_buffer* view
    if PyBytes_CheckExact(data):
        p[0], n[0] = <const uint8_t*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)
        return 1
    if not PyMemoryView_Check(data):
        return 0
    view = PyMemoryView_GET_BUFFER(data)
    # Read-only: the view is hashable (a dict key below) and its bytes
    # cannot change while the group is read.  Format "B": it hashes and
    # compares as the bytes it holds.
    if (not view.readonly or view.itemsize != 1 or view.ndim != 1 or view.format == NULL
            or view.format[0] != b"B" or view.format[1] != 0 or not PyBuffer_IsContiguous(view, b"C")):
        return 0
    p[0], n[0] = <const uint8_t*>view.buf, view.len
    return 1


def member_rows(list members):
    cdef Py_ssize_t n = len(members), i, k, size, tail, last_k = -1, last_size = -1
    cdef const uint8_t* raw
    cdef const uint8_t* last_raw = NULL
    cdef list member_ids = [None] * n
    cdef list instance_ids = [None] * n
    cdef list keys = []
    cdef list firsts = []
    cdef dict seen = {}
    which_arr = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[:] which = which_arr
    cdef object metadata, last_metadata = None, key, sketch, found
    for i in range(n):
        m = members[i]
        metadata = getattr(m, "metadata", None)
        if not isinstance(metadata, (bytes, bytearray, memoryview)):
            raise AssignmentError(metadata_type_error(i, metadata))
        member_ids[i] = getattr(m, "member_id", None)
        instance_ids[i] = getattr(m, "group_instance_id", None)
        if metadata is last_metadata:
            which[i] = last_k
            continue
        key = metadata
        if not _span(key, &raw, &size):
            key = bytes(metadata)
            _span(key, &raw, &size)
        # The common case, every member sending equal bytes: one memcmp, no
        # rich comparison.
        if last_raw != NULL and size == last_size and memcmp(raw, last_raw, size) == 0:
            which[i] = last_k
            continue
        # The sketch (length, head, tail) only decides which dict lookups
        # find a row, never the grouping, which compares whole bytes: see
        # _leader_py for why not the bytes alone.  Here it is one int hashed
        # in C, not a tuple of two slices: a second generation (every
        # member's bytes differ) makes one per member.
        tail = size - 96 if size > 96 else 0
        sketch = (_name_hash(raw, <int32_t>(32 if size > 32 else size))
                  ^ (_name_hash(raw + tail, <int32_t>(size - tail)) * 31) ^ <uint64_t>size)
        found = seen.get(sketch)
        if found is not None and not _same_bytes(keys[<Py_ssize_t>found], raw, size):
            found = seen.get(key)
        if found is None:
            k = len(keys)
            seen[key if sketch in seen else sketch] = k
            keys.append(key)
            firsts.append(i)
        else:
            k = found
        which[i] = last_k = k
        last_metadata = metadata
        # The row's own bytes, which ``keys`` keeps alive (``key`` may be a
        # copy that is dropped when the row was found).
        _span(keys[k], &last_raw, &last_size)
    return member_ids, instance_ids, which_arr, keys, firsts


cdef bint _same_bytes(object key, const uint8_t* raw, Py_ssize_t size) noexcept:
    """Whether ``key`` (bytes or a view :func:`_span` takes) holds ``raw[:size]``."""
    cdef const uint8_t* p
    cdef Py_ssize_t n
    _span(key, &p, &n)
    return n == size and memcmp(p, raw, size) == 0


cdef struct _Runs:
    # One member's partitions grouped by topic, in order of the topic's first
    # appearance: which group each topic is (group_of_topic, valid where
    # stamp holds the member's grouping stamp, so the arrays are never
    # cleared; see _assignment_size), each
    # group's topic and size, and where its next partition goes while writing.
    int64_t* stamp
    # Added to the member in stamps: a second pass over the same members
    # (sizes first, then bytes) must not take the first pass's stamps as its own.
    int64_t stamp_base
    int32_t* group_of_topic
    int32_t* group_topic
    int32_t* group_size
    int64_t* group_cursor
    Py_ssize_t groups
    # The member's partitions come topic by topic, each topic in one run (as
    # range's and roundrobin's lists always do): the groups are the runs, so
    # the bytes are written in list order in one pass, with no grouping.
    bint contiguous
    # Each topic's entry head (int16 length, then the name) in a 16-byte
    # slot, for names of up to HEAD_NAME_MAX bytes, and the head's size: the
    # writer stores a whole slot with one move and steps by one byte it
    # loads, where the length and the name were two stores, a copy sized at
    # run time and two loads of name_offsets that every next entry's
    # position waited for (4.5 -> 3.7 ms for a 1M-partition frame).  The
    # slot's bytes past the head land where the count and partitions are
    # written next, so a slot is only stored where 16 bytes remain before ``end``.
    uint8_t* heads
    uint8_t* head_size  # per topic: its head's bytes when it has a slot, else 0
    const uint8_t* end


cdef enum:
    HEAD_SLOT = 16
    HEAD_NAME_MAX = HEAD_SLOT - 2


cdef void _runs_heads(_Runs* runs, Py_ssize_t num_topics, const int64_t* name_offsets,
                      const uint8_t* names) noexcept nogil:
    """Fill each topic's head slot (see ``_Runs.heads``)."""
    cdef Py_ssize_t t
    cdef int64_t name_len
    memset(runs.heads, 0, max(num_topics, 1) * HEAD_SLOT)
    for t in range(num_topics):
        name_len = name_offsets[t + 1] - name_offsets[t]
        runs.head_size[t] = 0
        if name_len <= HEAD_NAME_MAX:
            runs.head_size[t] = <uint8_t>(2 + name_len)
            _put16(runs.heads + t * HEAD_SLOT, <int32_t>name_len)
            memcpy(runs.heads + t * HEAD_SLOT + 2, names + name_offsets[t], name_len)


cdef int _runs_init(_Runs* runs, Py_ssize_t num_topics, const int64_t* name_offsets,
                    const uint8_t* names) except -1:
    """Room for ``num_topics`` topics, named by ``name_offsets`` into
    ``names``; on failure nothing is left to free."""
    cdef Py_ssize_t n = max(num_topics, 1), t
    runs.stamp = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
    runs.stamp_base = 0
    runs.group_of_topic = <int32_t*>PyMem_Malloc(n * sizeof(int32_t))
    runs.group_topic = <int32_t*>PyMem_Malloc(n * sizeof(int32_t))
    runs.group_size = <int32_t*>PyMem_Malloc(n * sizeof(int32_t))
    runs.group_cursor = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
    runs.heads = <uint8_t*>PyMem_Malloc(n * HEAD_SLOT)
    runs.head_size = <uint8_t*>PyMem_Malloc(n)
    runs.end = NULL
    if (runs.stamp == NULL or runs.group_of_topic == NULL or runs.group_topic == NULL or runs.group_size == NULL
            or runs.group_cursor == NULL or runs.heads == NULL or runs.head_size == NULL):
        _runs_free(runs)
        raise MemoryError()
    for t in range(n):
        runs.stamp[t] = -1
    _runs_heads(runs, num_topics, name_offsets, names)
    return 0


cdef void _runs_free(_Runs* runs) noexcept:
    """Free what ``runs`` holds; a second call frees nothing."""
    PyMem_Free(runs.stamp)
    PyMem_Free(runs.group_of_topic)
    PyMem_Free(runs.group_topic)
    PyMem_Free(runs.group_size)
    PyMem_Free(runs.group_cursor)
    PyMem_Free(runs.heads)
    PyMem_Free(runs.head_size)
    runs.stamp = runs.group_of_topic = runs.group_topic = runs.group_size = NULL
    runs.group_cursor = NULL
    runs.heads = runs.head_size = NULL


cdef inline void _copy_name(uint8_t* out, const uint8_t* name, int64_t size) noexcept nogil:
    """``memcpy`` for topic names, most of which are a few bytes: at a
    million runs a frame, the library call's dispatch cost more than the
    copy.  Fixed-size copies compile to plain moves; two that overlap cover
    any size between them."""
    if size > 16:
        memcpy(out, name, size)
    elif size >= 8:
        memcpy(out, name, 8)
        memcpy(out + size - 8, name + size - 8, 8)
    elif size >= 4:
        memcpy(out, name, 4)
        memcpy(out + size - 4, name + size - 4, 4)
    elif size > 0:
        out[0] = name[0]
        out[size // 2] = name[size // 2]
        out[size - 1] = name[size - 1]


cdef int64_t _assignment_size(_Runs* runs, Py_ssize_t m, const int64_t* indptr, const int32_t* topic,
                              const int64_t* name_offsets) noexcept nogil:
    """The size of member ``m``'s Assignment; groups its partitions into
    ``runs`` unless they are contiguous (see ``_Runs.contiguous``)."""
    cdef int64_t i, size = 2 + 4 + 4, start = indptr[m], end = indptr[m + 1]
    cdef int32_t t, last = -1
    runs.contiguous = True
    # Topics in ascending order (range's and roundrobin's lists always are)
    # are contiguous with no stamp read or written: half the work of a
    # million-entry frame's sizing pass.
    for i in range(start, end):
        t = topic[i]
        if t != last:
            if t < last:
                return _stamped_size(runs, m, indptr, topic, name_offsets)
            last = t
            # a head's size from its slot (one byte load) when it has one
            size += (runs.head_size[t] if runs.head_size[t] else 2 + (name_offsets[t + 1] - name_offsets[t])) + 4
    return size + 4 * (end - start)


cdef int64_t _stamped_size(_Runs* runs, Py_ssize_t m, const int64_t* indptr, const int32_t* topic,
                           const int64_t* name_offsets) noexcept nogil:
    """_assignment_size of a member whose topics are not in ascending order:
    a topic seen again after another one makes it not contiguous."""
    cdef int64_t i, size = 2 + 4 + 4
    # Two stamps per member: one for the contiguity walk, one for grouping.
    cdef int64_t walked = 2 * (runs.stamp_base + m)
    cdef int32_t t, last = -1
    runs.contiguous = True
    for i in range(indptr[m], indptr[m + 1]):
        t = topic[i]
        if t != last:
            if runs.stamp[t] == walked:  # the topic comes back after another one
                runs.contiguous = False
                return _grouped_size(runs, m, indptr, topic, name_offsets, walked + 1)
            runs.stamp[t] = walked
            last = t
            size += 2 + (name_offsets[t + 1] - name_offsets[t]) + 4
        size += 4
    return size


cdef int64_t _grouped_size(_Runs* runs, Py_ssize_t m, const int64_t* indptr, const int32_t* topic,
                           const int64_t* name_offsets, int64_t grouping) noexcept nogil:
    """Group member ``m``'s partitions into ``runs`` (``grouping``: this
    member's stamp); the size of its Assignment."""
    cdef int64_t i, size = 2 + 4 + 4
    cdef int32_t t
    runs.groups = 0
    for i in range(indptr[m], indptr[m + 1]):
        t = topic[i]
        if runs.stamp[t] != grouping:
            runs.stamp[t] = grouping
            runs.group_of_topic[t] = <int32_t>runs.groups
            runs.group_topic[runs.groups] = t
            runs.group_size[runs.groups] = 0
            runs.groups += 1
            size += 2 + (name_offsets[t + 1] - name_offsets[t]) + 4
        runs.group_size[runs.group_of_topic[t]] += 1
        size += 4
    return size


cdef void _write_assignment(uint8_t* buf, _Runs* runs, Py_ssize_t m, const int64_t* indptr,
                            const int32_t* topic, const int32_t* partition, const int64_t* name_offsets,
                            const uint8_t* names, int version) noexcept nogil:
    """Member ``m``'s Assignment (as the last _assignment_size of ``m`` found it) at ``buf``."""
    cdef Py_ssize_t g
    cdef int64_t i, run_end, end = indptr[m + 1], at = 6, name_len, head_size
    cdef int32_t t, runs_written = 0
    _put16(buf, version)
    if runs.contiguous:
        i = indptr[m]
        while i < end:
            t = topic[i]
            run_end = i + 1
            while run_end < end and topic[run_end] == t:
                run_end += 1
            head_size = runs.head_size[t]
            if head_size and buf + at + HEAD_SLOT <= runs.end:
                memcpy(buf + at, runs.heads + t * HEAD_SLOT, HEAD_SLOT)
                at += head_size
            else:
                name_len = name_offsets[t + 1] - name_offsets[t]
                _put16(buf + at, <int32_t>name_len)
                _copy_name(buf + at + 2, names + name_offsets[t], name_len)
                at += 2 + name_len
            _put32(buf + at, <int32_t>(run_end - i))
            at += 4
            while i < run_end:
                _put32(buf + at, partition[i])
                at += 4
                i += 1
            runs_written += 1
        _put32(buf + 2, runs_written)
        _put32(buf + at, -1)
        return
    _put32(buf + 2, <int32_t>runs.groups)
    for g in range(runs.groups):
        t = runs.group_topic[g]
        name_len = name_offsets[t + 1] - name_offsets[t]
        _put16(buf + at, <int32_t>name_len)
        _copy_name(buf + at + 2, names + name_offsets[t], name_len)
        at += 2 + name_len
        _put32(buf + at, runs.group_size[g])
        at += 4
        runs.group_cursor[g] = at
        at += 4 * <int64_t>runs.group_size[g]
    for i in range(indptr[m], indptr[m + 1]):
        g = runs.group_of_topic[topic[i]]
        _put32(buf + runs.group_cursor[g], partition[i])
        runs.group_cursor[g] += 4
    _put32(buf + at, -1)


def assignment_bytes(const int64_t[::1] indptr, const int32_t[::1] topic, const int32_t[::1] partition,
                     const int64_t[::1] name_offsets, bytes name_blob, int version):
    cdef Py_ssize_t members = indptr.shape[0] - 1, m
    cdef const uint8_t* names = <const uint8_t*>PyBytes_AS_STRING(name_blob)
    cdef list out = [None] * members
    cdef int64_t size
    cdef bytes blob
    cdef uint8_t* buf
    # Raw pointers for the per-member helpers: a memoryview passed to a cdef
    # function is a struct copied per call, and its indexing multiplies by a stride.
    cdef const int64_t* indptr_p = &indptr[0]
    cdef const int32_t* topic_p = &topic[0] if topic.shape[0] else NULL
    cdef const int32_t* partition_p = &partition[0] if partition.shape[0] else NULL
    cdef const int64_t* name_offsets_p = &name_offsets[0]
    cdef _Runs runs
    _runs_init(&runs, name_offsets.shape[0] - 1, name_offsets_p, names)
    try:
        for m in range(members):
            size = _assignment_size(&runs, m, indptr_p, topic_p, name_offsets_p)
            blob = PyBytes_FromStringAndSize(NULL, size)
            buf = <uint8_t*>PyBytes_AS_STRING(blob)
            runs.end = buf + size
            with nogil:
                _write_assignment(buf, &runs, m, indptr_p, topic_p, partition_p, name_offsets_p, names, version)
            out[m] = blob
    finally:
        _runs_free(&runs)
    return out


cdef inline int _uvarint_size(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline int64_t _put_uvarint(uint8_t* out, uint64_t v) noexcept nogil:
    cdef int64_t n = 0
    while v >= 0x80:
        out[n] = <uint8_t>((v & 0x7F) | 0x80)
        v >>= 7
        n += 1
    out[n] = <uint8_t>v
    return n + 1


cdef extern from *:
    """
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    static void kwire_advise_huge_pages(void* start, size_t length) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        (void)madvise(start, length, MADV_HUGEPAGE);
    #else
        (void)start; (void)length;
    #endif
    }
    """
    void kwire_advise_huge_pages(void* start, size_t length) nogil


cdef void _ask_for_huge_pages(uint8_t* buf, int64_t size) noexcept nogil:
    """Ask the kernel to back a big, fresh output with huge pages.

    A leader's frame for 1M partitions is ~20 MB written once into fresh
    memory: with 4 KiB pages that is ~5000 page faults, a third of the
    write.  As NumPy does for its big arrays, the 2 MiB-aligned interior is
    marked MADV_HUGEPAGE (Linux); where the kernel has none, or on another
    system, the advice is ignored and nothing else changes."""
    cdef size_t huge = 2 * 1024 * 1024
    if size < 4 * <int64_t>huge:
        return
    cdef size_t start = (<size_t>buf + huge - 1) & ~(huge - 1)
    cdef size_t end = (<size_t>buf + <size_t>size) & ~(huge - 1)
    if end > start:
        kwire_advise_huge_pages(<void*>start, end - start)


def sync_frame(const int64_t[::1] indptr, const int32_t[::1] topic, const int32_t[::1] partition,
               const int64_t[::1] name_offsets, bytes name_blob, int version, list member_ids, bint flexible,
               bytes head, bytes tail):
    cdef Py_ssize_t members = indptr.shape[0] - 1, m, id_len
    cdef const uint8_t* names = <const uint8_t*>PyBytes_AS_STRING(name_blob)
    cdef int64_t total, size, at
    cdef uint8_t* buf
    cdef Py_ssize_t max_id_bytes = _leader_common.MAX_NAME_BYTES
    # Our own list: the strs whose UTF-8 is read without the GIL stay alive
    # whatever another thread does to the caller's.
    cdef list ids = list(member_ids)
    if len(ids) != members:
        return None
    cdef const char** id_at = <const char**>PyMem_Malloc(max(members, 1) * sizeof(const char*))
    cdef int64_t* id_size = <int64_t*>PyMem_Malloc(max(members, 1) * sizeof(int64_t))
    cdef int64_t* assignment_size = <int64_t*>PyMem_Malloc(max(members, 1) * sizeof(int64_t))
    # Raw pointers for the per-member helpers: a memoryview passed to a cdef
    # function is a struct copied per call, and its indexing multiplies by a stride.
    cdef const int64_t* indptr_p = &indptr[0]
    cdef const int32_t* topic_p = &topic[0] if topic.shape[0] else NULL
    cdef const int32_t* partition_p = &partition[0] if partition.shape[0] else NULL
    cdef const int64_t* name_offsets_p = &name_offsets[0]
    cdef _Runs runs
    runs.stamp = runs.group_of_topic = runs.group_topic = runs.group_size = NULL
    runs.group_cursor = NULL
    runs.heads = runs.head_size = NULL
    try:
        if id_at == NULL or id_size == NULL or assignment_size == NULL:
            raise MemoryError()
        total = PyBytes_GET_SIZE(head) + PyBytes_GET_SIZE(tail)
        total += _uvarint_size(<uint64_t>members + 1) if flexible else 4
        # Member ids as UTF-8 (a str's own cached copy: nothing is made per
        # ASCII id); anything the codec would treat otherwise is left to it.
        for m in range(members):
            if type(ids[m]) is not str:
                return None
            try:
                id_at[m] = PyUnicode_AsUTF8AndSize(ids[m], &id_len)
            except UnicodeEncodeError:
                return None
            if id_len > max_id_bytes:
                return None
            id_size[m] = id_len
            total += id_len + ((_uvarint_size(<uint64_t>id_len + 1) + 1) if flexible else 2 + 4)
        _runs_init(&runs, name_offsets.shape[0] - 1, name_offsets_p, names)
        with nogil:
            for m in range(members):
                size = _assignment_size(&runs, m, indptr_p, topic_p, name_offsets_p)
                total += size + (_uvarint_size(<uint64_t>size + 1) if flexible else 0)
                # A contiguous member is written without measuring it again;
                # the others are grouped again while writing (negative size).
                assignment_size[m] = size if runs.contiguous else -size
        if total - 4 > 0x7FFFFFFF:
            return None  # past the size prefix: the codec refuses it with its own error
        runs.stamp_base = members
        frame = PyBytes_FromStringAndSize(NULL, total)
        buf = <uint8_t*>PyBytes_AS_STRING(frame)
        runs.end = buf + total
        _ask_for_huge_pages(buf, total)
        memcpy(buf, PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head))
        at = PyBytes_GET_SIZE(head)
        with nogil:
            if flexible:
                at += _put_uvarint(buf + at, <uint64_t>members + 1)
            else:
                _put32(buf + at, <int32_t>members)
                at += 4
            for m in range(members):
                if flexible:
                    at += _put_uvarint(buf + at, <uint64_t>id_size[m] + 1)
                else:
                    _put16(buf + at, <int32_t>id_size[m])
                    at += 2
                memcpy(buf + at, id_at[m], id_size[m])
                at += id_size[m]
                size = assignment_size[m]
                runs.contiguous = size > 0
                if not runs.contiguous:
                    size = _assignment_size(&runs, m, indptr_p, topic_p, name_offsets_p)
                if flexible:
                    at += _put_uvarint(buf + at, <uint64_t>size + 1)
                else:
                    _put32(buf + at, <int32_t>size)
                    at += 4
                _write_assignment(buf + at, &runs, m, indptr_p, topic_p, partition_p, name_offsets_p, names, version)
                at += size
                if flexible:
                    buf[at] = 0  # the assignment's empty tag section
                    at += 1
        memcpy(buf + at, PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail))
        _put32(buf, <int32_t>(total - 4))
        return frame
    finally:
        PyMem_Free(id_at)
        PyMem_Free(id_size)
        PyMem_Free(assignment_size)
        _runs_free(&runs)


# ---------------------------------------------------------------------------
# ConsumerProtocolSubscription bytes -> columns
# ---------------------------------------------------------------------------
# A second reader of the Subscription layout beside the codec's, because the
# codec builds a str per topic and an int per owned partition, and on a
# second-generation cooperative group (every member's bytes differ) that is
# most of the leader's time.  This one writes ints straight into columns and
# makes a str only the first time a topic name's bytes are seen.  It decides
# only *whether* the bytes are good: on bad bytes it hands them to the codec,
# so the error (type, text, offset, path) is the codec's own.  The layout is
# the codec schema's ConsumerProtocolSubscription, never flexible:
#
#     int16  version (a newer one is read with the v3 layout, bytes after it ignored)
#     int32  topic count, then per topic an int16 length and UTF-8 bytes
#     int32  userData length (-1: null), then the bytes
#     v1+: int32 owned entry count, then per entry: int16 length + topic,
#          int32 partition count, then each partition as int32
#     v2+: int32 generationId        v3+: int16 rackId length (-1: null) + UTF-8
#
# tests/test_leader_path.py holds the schema to this list and both twins'
# columns to the codec's decode of random and broken bytes at every version.

cdef enum:
    NEWEST_LAYOUT = 3


@cython.final  # its methods are called per owned entry: direct calls, not through a vtable
cdef class _Growing:
    """An int32 or int64 column of unknown final length.

    Its storage is a bytearray that becomes the NumPy array's buffer when
    the column is done: a second generation's owned-partition columns are
    millions of entries at 1M partitions, and copying them into fresh arrays
    cost the leader path the copy plus a page fault per 4 KB it touched."""
    cdef bytearray storage
    cdef char* data
    cdef Py_ssize_t used, capacity, itemsize

    def __cinit__(self, Py_ssize_t itemsize):
        self.itemsize = itemsize
        self.storage = bytearray()

    cdef char* extend(self, Py_ssize_t items) except NULL:
        """Room for ``items`` more, counted as used; the caller fills it."""
        cdef Py_ssize_t need = (self.used + items) * self.itemsize
        if need > self.capacity or self.data == NULL:  # NULL would read as an error to the caller
            self._resize(max(need, 2 * self.capacity, 256))
        cdef char* at = self.data + self.used * self.itemsize
        self.used += items
        return at

    cdef int _resize(self, Py_ssize_t size) except -1:
        PyByteArray_Resize(self.storage, size)
        self.data, self.capacity = PyByteArray_AS_STRING(self.storage), size
        return 0

    cdef int push32(self, int32_t value) except -1:
        (<int32_t*>self.extend(1))[0] = value
        return 0

    cdef int push64(self, int64_t value) except -1:
        (<int64_t*>self.extend(1))[0] = value
        return 0

    cdef object array(self):
        """The column as a NumPy array on this column's storage (the column is done with it)."""
        self._resize(self.used * self.itemsize)
        return np.frombuffer(self.storage, dtype=np.int32 if self.itemsize == 4 else np.int64)


cdef inline uint64_t _load64(const uint8_t* p) noexcept nogil:
    cdef uint64_t word
    memcpy(&word, p, 8)  # a fixed-size copy: one unaligned load
    return word


cdef inline uint64_t _load32(const uint8_t* p) noexcept nogil:
    cdef uint32_t word
    memcpy(&word, p, 4)
    return word


cdef inline uint64_t _name_hash(const uint8_t* name, int32_t length) noexcept nogil:
    """A hash of a topic name read a word at a time.  A second generation
    looks up a name per owned entry (900k at 1M partitions), and a byte at a
    time (FNV) cost more than the rest of its reading.  Words may overlap
    (the last one ends at the name's end): the hash is still a function of
    the bytes and the length."""
    cdef uint64_t h = <uint64_t>length * 0x9E3779B97F4A7C15ULL
    cdef int32_t i
    if length >= 8:
        for i in range(0, length - 8, 8):
            h = (h ^ _load64(name + i)) * 0xFF51AFD7ED558CCDULL
            h ^= h >> 32
        h = (h ^ _load64(name + length - 8)) * 0xFF51AFD7ED558CCDULL
    elif length >= 4:
        h = (h ^ ((_load32(name) << 32) | _load32(name + length - 4))) * 0xFF51AFD7ED558CCDULL
    elif length > 0:
        h = (h ^ ((<uint64_t>name[0] << 16) | (<uint64_t>name[length // 2] << 8) | name[length - 1])) \
            * 0xFF51AFD7ED558CCDULL
    # The table takes the low bits: fold the high ones in.
    h ^= h >> 33
    h *= 0xC4CEB9FE1A85EC53ULL
    h ^= h >> 33
    return h


cdef inline bint _same_name(const uint8_t* a, const uint8_t* b, int32_t length) noexcept nogil:
    """``memcmp(a, b, length) == 0``, names of up to 16 bytes compared in
    (overlapping) words rather than through the library call."""
    if length > 16:
        return memcmp(a, b, length) == 0
    if length >= 8:
        return _load64(a) == _load64(b) and _load64(a + length - 8) == _load64(b + length - 8)
    if length >= 4:
        return _load32(a) == _load32(b) and _load32(a + length - 4) == _load32(b + length - 4)
    return length == 0 or (a[0] == b[0] and a[length // 2] == b[length // 2] and a[length - 1] == b[length - 1])


@cython.final
cdef class _TopicIds:
    """Topic name bytes -> topic id, ids in order of first appearance.

    Keyed by the bytes (pointers into the caller's metadata, alive for the
    read, or into a given name's UTF-8, alive with the str), so a name seen
    before costs a hash and a memcmp, and no str."""
    cdef list names
    cdef const uint8_t** name_at
    cdef int32_t* name_length
    cdef int32_t* slots  # topic id, or -1 for an empty slot
    cdef Py_ssize_t mask, count, room

    def __cinit__(self):
        self.names = []
        self.mask = 255
        self.slots = <int32_t*>PyMem_Malloc((self.mask + 1) * sizeof(int32_t))
        if self.slots == NULL:
            raise MemoryError()
        memset(self.slots, 0xFF, (self.mask + 1) * sizeof(int32_t))

    def __dealloc__(self):
        PyMem_Free(self.slots)
        PyMem_Free(self.name_at)
        PyMem_Free(self.name_length)

    cdef int32_t id_of(self, const uint8_t* name, int32_t length) except -2:
        """The id of ``name``, or -1 if it is not UTF-8 (the codec refuses it)."""
        cdef Py_ssize_t slot = self._slot(name, length)
        if self.slots[slot] >= 0:
            return self.slots[slot]
        try:
            text = PyUnicode_DecodeUTF8(<const char*>name, length, NULL)
        except UnicodeDecodeError:
            return -1
        return self._add(text, name, length, slot)

    cdef int seed(self, str text) except -1:
        """Give ``text`` the next id, as if its UTF-8 had been read (its bytes
        live as long as the str, which ``names`` holds).  A name given twice
        takes a second id that no lookup finds, so ids stay positions in ``names``."""
        cdef Py_ssize_t length
        cdef const uint8_t* name = <const uint8_t*>PyUnicode_AsUTF8AndSize(text, &length)
        cdef Py_ssize_t slot = self._slot(name, <int32_t>length)
        self._add(text, name, <int32_t>length, slot if self.slots[slot] < 0 else -1)
        return 0

    cdef inline Py_ssize_t _slot(self, const uint8_t* name, int32_t length) noexcept:
        """The slot holding ``name``'s id, or the empty slot where it would go."""
        cdef int32_t t
        cdef Py_ssize_t slot = <Py_ssize_t>(_name_hash(name, length) & <uint64_t>self.mask)
        while True:
            t = self.slots[slot]
            if t < 0 or (self.name_length[t] == length and _same_name(self.name_at[t], name, length)):
                return slot
            slot = (slot + 1) & self.mask

    cdef int32_t _add(self, str text, const uint8_t* name, int32_t length, Py_ssize_t slot) except -1:
        """The next id for ``text`` (whose UTF-8 is ``name``), put in ``slot`` (-1: in none)."""
        cdef int32_t t = <int32_t>self.count
        if self.count == self.room:
            self._grow_names()
        self.name_at[t] = name
        self.name_length[t] = length
        self.names.append(text)
        self.count += 1
        if slot >= 0:
            self.slots[slot] = t
        if 2 * self.count > self.mask:
            self._rehash(2 * self.mask + 1)
        return t

    cdef int truncate(self, Py_ssize_t count) except -1:
        """Forget every id from ``count`` on (names read from bytes that turned out bad)."""
        if count == self.count:
            return 0
        del self.names[count:]
        self.count = count
        return self._rehash(self.mask)

    cdef int _grow_names(self) except -1:
        cdef Py_ssize_t room = max(2 * self.room, 64)
        cdef const uint8_t** at = <const uint8_t**>PyMem_Realloc(self.name_at, room * sizeof(uint8_t*))
        if at == NULL:
            raise MemoryError()
        self.name_at = at
        cdef int32_t* lengths = <int32_t*>PyMem_Realloc(self.name_length, room * sizeof(int32_t))
        if lengths == NULL:
            raise MemoryError()
        self.name_length = lengths
        self.room = room
        return 0

    cdef int _rehash(self, Py_ssize_t mask) except -1:
        """The ids in a table of ``mask + 1`` slots, made anew."""
        cdef int32_t* slots = <int32_t*>PyMem_Malloc((mask + 1) * sizeof(int32_t))
        if slots == NULL:
            raise MemoryError()
        memset(slots, 0xFF, (mask + 1) * sizeof(int32_t))
        cdef Py_ssize_t t, slot
        for t in range(self.count):
            slot = <Py_ssize_t>(_name_hash(self.name_at[t], self.name_length[t]) & <uint64_t>mask)
            while slots[slot] >= 0:
                slot = (slot + 1) & mask
            slots[slot] = <int32_t>t
        PyMem_Free(self.slots)
        self.slots, self.mask = slots, mask
        return 0


cdef inline int32_t _be32(const uint8_t* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


cdef inline int16_t _be16(const uint8_t* p) noexcept nogil:
    return <int16_t>((<uint16_t>p[0] << 8) | p[1])


cdef int _refuse(object raw) except -1:
    """Raise the codec's error for bytes this reader found bad."""
    codec.Subscription.decode(raw)
    raise AssertionError(f"kwire bug: the Subscription reader refused bytes the codec reads: {raw!r}")


ctypedef struct _Cursor:
    const uint8_t* p
    Py_ssize_t pos
    Py_ssize_t end


cdef inline int64_t _fitting_count(_Cursor* c, Py_ssize_t min_size) noexcept nogil:
    """An int32 array count, the cursor moved past it; -1 when truncated,
    null, negative, or more elements of ``min_size`` bytes than are left."""
    if c.end - c.pos < 4:
        return -1
    cdef int64_t n = _be32(c.p + c.pos)
    c.pos += 4
    if n < 0 or n > (c.end - c.pos) // min_size:
        return -1
    return n


cdef inline int64_t _count(_Cursor* c, Py_ssize_t min_size, object raw) except -1:
    """An int32 array count; refused (the codec's error) where :func:`_fitting_count` finds none."""
    cdef int64_t n = _fitting_count(c, min_size)
    if n < 0:
        _refuse(raw)
    return n


cdef inline int64_t _length(_Cursor* c, bint wide, object raw) except -2:
    """A nullable string's (int16) or bytes' (``wide``: int32) length, -1
    for null, the cursor moved to its content; refused where the codec refuses it."""
    if c.end - c.pos < (4 if wide else 2):
        _refuse(raw)
    cdef int64_t n = _be32(c.p + c.pos) if wide else _be16(c.p + c.pos)
    c.pos += 4 if wide else 2
    if n < -1 or n > c.end - c.pos:
        _refuse(raw)
    return n


cdef inline int32_t _topic(_Cursor* c, _TopicIds ids, object raw) except -1:
    """The id of the topic name at the cursor; refused where the codec refuses it."""
    cdef int64_t n = _length(c, 0, raw)
    if n < 0:  # null is no topic name either
        _refuse(raw)
    c.pos += n
    cdef int32_t t = ids.id_of(c.p + c.pos - n, <int32_t>n)
    if t < 0:
        _refuse(raw)
    return t


cdef inline int _partitions(_Cursor* c, int32_t t, int64_t count, _Growing topic, _Growing partition) except -1:
    """The ``count`` int32 partitions at the cursor (known to be there) onto
    the columns, each with topic ``t``."""
    cdef int32_t* topic_out = <int32_t*>topic.extend(count)
    cdef int32_t* partition_out = <int32_t*>partition.extend(count)
    cdef int64_t j
    for j in range(count):
        topic_out[j] = t
        partition_out[j] = _be32(c.p + c.pos)
        c.pos += 4
    return 0


def subscription_columns(list metadata):
    """Each byte string of ``metadata`` (bytes, or views :func:`_span` takes) read into
    :class:`SubscriptionColumns`; bad bytes raise the codec's error."""
    cdef Py_ssize_t rows = len(metadata)
    cdef _TopicIds ids = _TopicIds()
    cdef _Growing version = _Growing(4), topic_list = _Growing(4), generation = _Growing(4)
    cdef _Growing list_ptr = _Growing(8), list_topic = _Growing(4)
    cdef _Growing entry_ptr = _Growing(8), entry_topic = _Growing(4)
    cdef _Growing owned_ptr = _Growing(8), owned_topic = _Growing(4), owned_partition = _Growing(4)
    cdef list racks = [None] * rows, user_data = [None] * rows
    # The previous row's topics array (count and names, as bytes): a row that
    # starts with the same bytes has the same topics, so nothing in it is read.
    cdef const uint8_t* last_topics = NULL
    cdef Py_ssize_t last_topics_size = -1
    cdef Py_ssize_t k, i, start
    cdef int64_t n
    cdef int32_t t, layout
    cdef int16_t written_version
    cdef _Cursor c
    cdef object raw
    cdef Py_ssize_t size
    list_ptr.push64(0)
    entry_ptr.push64(0)
    owned_ptr.push64(0)
    for k in range(rows):
        raw = metadata[k]
        if not _span(raw, &c.p, &size):
            raw = bytes(raw)
            _span(raw, &c.p, &size)
        c.pos, c.end = 2, size
        if c.end < 2:
            _refuse(raw)
        written_version = _be16(c.p)
        if written_version < 0:
            _refuse(raw)
        layout = min(<int32_t>written_version, <int32_t>NEWEST_LAYOUT)
        if (last_topics != NULL and c.end - c.pos >= last_topics_size
                and memcmp(c.p + c.pos, last_topics, last_topics_size) == 0):
            c.pos += last_topics_size
        else:
            start = c.pos
            for i in range(_count(&c, 2, raw)):
                list_topic.push32(_topic(&c, ids, raw))
            list_ptr.push64(list_topic.used)
            last_topics, last_topics_size = c.p + start, c.pos - start
        topic_list.push32(<int32_t>(list_ptr.used - 2))
        n = _length(&c, 1, raw)
        if n >= 0:
            user_data[k] = PyBytes_FromStringAndSize(<const char*>(c.p + c.pos), n)
            c.pos += n
        if layout >= 1:
            for i in range(_count(&c, 6, raw)):
                t = _topic(&c, ids, raw)
                entry_topic.push32(t)
                _partitions(&c, t, _count(&c, 4, raw), owned_topic, owned_partition)
        entry_ptr.push64(entry_topic.used)
        owned_ptr.push64(owned_topic.used)
        if layout >= 2:
            if c.end - c.pos < 4:
                _refuse(raw)
            generation.push32(_be32(c.p + c.pos))
            c.pos += 4
        else:
            generation.push32(-1)
        if layout >= 3:
            n = _length(&c, 0, raw)
            if n >= 0:
                try:
                    racks[k] = PyUnicode_DecodeUTF8(<const char*>(c.p + c.pos), n, NULL)
                except UnicodeDecodeError:
                    _refuse(raw)
                c.pos += n
        if c.pos != c.end and written_version <= NEWEST_LAYOUT:
            _refuse(raw)
        version.push32(written_version)
    return SubscriptionColumns(
        ids.names, version.array(), topic_list.array(), list_ptr.array(), list_topic.array(),
        entry_ptr.array(), entry_topic.array(), owned_ptr.array(), owned_topic.array(), owned_partition.array(),
        generation.array(), racks, user_data,
    )


# ---------------------------------------------------------------------------
# Eager sticky userData -> claim columns
# ---------------------------------------------------------------------------
# Java reads StickyAssignorUserData leniently (_userdata: V1 then V0, bytes
# after the message ignored, a topic that is not UTF-8 read with replacement
# characters).  What every Java member sends is exactly one V1 message, and
# for those bytes every reading agrees: that case alone is read here, one
# int32 pair per claimed partition and no str but a topic's first.  A row is
# read only if the codec would decode all of it as V1; any other row is left
# unread, its claims and names undone, for the lenient reader.  The layout
# is the codec schema's StickyAssignorUserData at V1, never flexible:
#
#     int32  entry count, then per entry: int16 length + UTF-8 topic,
#            int32 partition count, then each partition as int32
#     int32  generation, then nothing


cdef int _sticky_v1(_Cursor* c, _TopicIds ids, _Growing topic, _Growing partition,
                    int32_t* generation) except -1:
    """1 if ``c`` holds exactly one V1 message, read into the columns; 0
    where the codec would refuse the bytes (what was written stays for the
    caller to undo)."""
    cdef int64_t entries, length, count, i
    cdef int32_t t
    entries = _fitting_count(c, 6)  # an entry takes at least 6 bytes
    if entries < 0:
        return 0
    for i in range(entries):
        if c.end - c.pos < 2:
            return 0
        length = _be16(c.p + c.pos)
        c.pos += 2
        if length < 0 or length > c.end - c.pos:
            return 0
        t = ids.id_of(c.p + c.pos, <int32_t>length)
        if t < 0:
            return 0
        c.pos += length
        count = _fitting_count(c, 4)
        if count < 0:
            return 0
        _partitions(c, t, count, topic, partition)
    if c.end - c.pos != 4:
        return 0
    generation[0] = _be32(c.p + c.pos)
    return 1


def sticky_userdata_columns(list user_data, list names):
    """Each userData of ``user_data`` that is exactly one V1 message, read
    into :class:`StickyUserDataColumns`, topic ids continuing ``names``
    (distinct, as ``subscription_columns`` gives them)."""
    cdef Py_ssize_t rows = len(user_data), k, topics_before, names_before
    cdef _TopicIds ids = _TopicIds()
    cdef _Growing ptr = _Growing(8), topic = _Growing(4), partition = _Growing(4)
    read_arr = np.zeros(rows, dtype=bool)
    generation_arr = np.full(rows, -1, dtype=np.int32)
    cdef uint8_t[::1] read = read_arr.view(np.uint8)
    cdef int32_t[::1] generation = generation_arr
    cdef _Cursor c
    cdef object raw
    for name in names:
        ids.seed(name)
    ptr.push64(0)
    for k in range(rows):
        raw = user_data[k]
        if isinstance(raw, bytes):
            c.p, c.pos, c.end = <const uint8_t*>PyBytes_AS_STRING(raw), 0, PyBytes_GET_SIZE(raw)
            topics_before, names_before = topic.used, ids.count
            if _sticky_v1(&c, ids, topic, partition, &generation[k]):
                read[k] = 1
            else:
                topic.used = partition.used = topics_before
                ids.truncate(names_before)
        ptr.push64(topic.used)
    return StickyUserDataColumns(
        read_arr, generation_arr, ClaimColumns(ids.names, ptr.array(), topic.array(), partition.array()))
