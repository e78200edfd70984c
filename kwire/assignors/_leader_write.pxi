# Included by _leader_c.pyx: each member's ConsumerProtocolAssignment bytes, and the whole SyncGroupRequest
# frame, written from an assignment's CSR arrays with no Python object per partition.

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
            put_be16(runs.heads + t * HEAD_SLOT, <int32_t>name_len)
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
    put_be16(buf, version)
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
                put_be16(buf + at, <int32_t>name_len)
                _copy_name(buf + at + 2, names + name_offsets[t], name_len)
                at += 2 + name_len
            put_be32(buf + at, <int32_t>(run_end - i))
            at += 4
            while i < run_end:
                put_be32(buf + at, partition[i])
                at += 4
                i += 1
            runs_written += 1
        put_be32(buf + 2, runs_written)
        put_be32(buf + at, -1)
        return
    put_be32(buf + 2, <int32_t>runs.groups)
    for g in range(runs.groups):
        t = runs.group_topic[g]
        name_len = name_offsets[t + 1] - name_offsets[t]
        put_be16(buf + at, <int32_t>name_len)
        _copy_name(buf + at + 2, names + name_offsets[t], name_len)
        at += 2 + name_len
        put_be32(buf + at, runs.group_size[g])
        at += 4
        runs.group_cursor[g] = at
        at += 4 * <int64_t>runs.group_size[g]
    for i in range(indptr[m], indptr[m + 1]):
        g = runs.group_of_topic[topic[i]]
        put_be32(buf + runs.group_cursor[g], partition[i])
        runs.group_cursor[g] += 4
    put_be32(buf + at, -1)


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
        total += uvarint_size(<uint64_t>members + 1) if flexible else 4
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
            total += id_len + ((uvarint_size(<uint64_t>id_len + 1) + 1) if flexible else 2 + 4)
        _runs_init(&runs, name_offsets.shape[0] - 1, name_offsets_p, names)
        with nogil:
            for m in range(members):
                size = _assignment_size(&runs, m, indptr_p, topic_p, name_offsets_p)
                total += size + (uvarint_size(<uint64_t>size + 1) if flexible else 0)
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
                at += put_uvarint(buf + at, <uint64_t>members + 1)
            else:
                put_be32(buf + at, <int32_t>members)
                at += 4
            for m in range(members):
                if flexible:
                    at += put_uvarint(buf + at, <uint64_t>id_size[m] + 1)
                else:
                    put_be16(buf + at, <int32_t>id_size[m])
                    at += 2
                memcpy(buf + at, id_at[m], id_size[m])
                at += id_size[m]
                size = assignment_size[m]
                runs.contiguous = size > 0
                if not runs.contiguous:
                    size = _assignment_size(&runs, m, indptr_p, topic_p, name_offsets_p)
                if flexible:
                    at += put_uvarint(buf + at, <uint64_t>size + 1)
                else:
                    put_be32(buf + at, <int32_t>size)
                    at += 4
                _write_assignment(buf + at, &runs, m, indptr_p, topic_p, partition_p, name_offsets_p, names, version)
                at += size
                if flexible:
                    buf[at] = 0  # the assignment's empty tag section
                    at += 1
        memcpy(buf + at, PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail))
        put_be32(buf, <int32_t>(total - 4))
        return frame
    finally:
        PyMem_Free(id_at)
        PyMem_Free(id_size)
        PyMem_Free(assignment_size)
        _runs_free(&runs)
