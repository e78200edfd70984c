# Included by _leader_c.pyx: a JoinGroupResponse's members grouped by their metadata bytes.

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
