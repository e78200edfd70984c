# The member level's edges, included by ``_server_c.pyx``: ``member_columns`` reads ``ServerMember`` objects and
# their assignment dicts into the columns the kernels take, and ``member_dicts`` turns a result's columns back
# into dicts, handing back a member's own dict when its target equals it.  Both loops run in C over borrowed
# references (PyDict_Next, PyList_GET_ITEM, the members' slots), because at 10,000 members and 100,000
# partitions these conversions, not the assignment, are most of a call's time.

def member_dicts(list member_ids, list topic_keys, present, const int64_t[::1] indptr,
                 const int32_t[::1] topics, const int64_t[::1] part_indptr, const int32_t[::1] parts,
                 list current=None, tuple read=None):
    """See the twin: the dicts and lists are made here, one C loop, no NumPy
    slice per entry, and a member whose current assignment already equals its
    target gets that dict back.  Each list made holds ints only and each
    member's dict such lists under topic keys, so neither can be part of a
    reference cycle: both are left out of the cyclic collector (as CPython
    does by itself for tuples and dicts of atomic values; a dict given a
    container later is tracked again by CPython).  In a process with millions
    of live objects, the collections that many new containers trigger cost
    several times the build itself (CPython counts allocations, tracked or
    not, towards a full collection), so the collector is also paused while
    they are made."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _member_dicts(member_ids, topic_keys, present, indptr, topics, part_indptr, parts, current, read)
    finally:
        if enabled:
            gc.enable()


cdef bint _same_target(object current, list topic_keys, int64_t e0, int64_t e1, const int32_t[::1] topics,
                       const int64_t[::1] part_indptr, const int32_t[::1] parts) except -1:
    """Whether ``current`` (a member's assignment as the caller gave it) is a
    dict holding exactly entries e0..e1-1 of the target, in that order: each
    key the metadata's key (or an equal one of its type), each value a list
    of exactly those ints, ascending."""
    if type(current) is not dict or PyDict_GET_SIZE(current) != e1 - e0:
        return False
    cdef Py_ssize_t pos = 0, j, n
    cdef int64_t e = e0, a
    cdef PyObject* key_p
    cdef PyObject* value_p
    cdef PyObject* want
    cdef long long v
    while PyDict_Next(current, &pos, &key_p, &value_p):
        if e >= e1:
            return False
        want = PyList_GET_ITEM(topic_keys, topics[e])
        if key_p != want and (Py_TYPE(key_p) != Py_TYPE(want) or not (<object>key_p == <object>want)):
            return False
        if not PyList_CheckExact(<object>value_p):
            return False
        a = part_indptr[e]
        n = PyList_GET_SIZE(<object>value_p)
        if n != part_indptr[e + 1] - a:
            return False
        for j in range(n):
            if not kw_exact_int(PyList_GET_ITEM(<object>value_p, j), &v) or v != parts[a + j]:
                return False
        e += 1
    return e == e1


cdef bint _same_columns(Py_ssize_t m, const int64_t[::1] indptr, const int32_t[::1] topics,
                       const int64_t[::1] part_indptr, const int32_t[::1] parts, const int64_t[::1] cur_indptr,
                       const int32_t[::1] cur_topics, const int64_t[::1] cur_part_indptr,
                       const int32_t[::1] cur_parts) noexcept:
    """Whether member m's target equals its current assignment as read: the
    same topics in the same order, each with the same partitions in the same order."""
    cdef int64_t e, c, a, ca, n
    if indptr[m + 1] - indptr[m] != cur_indptr[m + 1] - cur_indptr[m]:
        return False
    c = cur_indptr[m]
    for e in range(indptr[m], indptr[m + 1]):
        if topics[e] != cur_topics[c]:
            return False
        a = part_indptr[e]
        ca = cur_part_indptr[c]
        n = part_indptr[e + 1] - a
        if n != cur_part_indptr[c + 1] - ca or (n and memcmp(&parts[a], &cur_parts[ca], n * sizeof(int32_t))):
            return False
        c += 1
    return True


cdef dict _member_dicts(list member_ids, list topic_keys, present_a, const int64_t[::1] indptr,
                       const int32_t[::1] topics, const int64_t[::1] part_indptr, const int32_t[::1] parts,
                       list current, tuple read):
    cdef const uint8_t[::1] present = np.ascontiguousarray(present_a).view(np.uint8)
    cdef Py_ssize_t m, e, j, a, b, m_count = len(member_ids)
    if current is not None and len(current) != m_count:
        raise ArgumentValueError(f"{len(current)} current assignments for {m_count} members")
    cdef dict out = {}, entry
    cdef list lst
    cdef object value, cur
    # one int object per partition number, shared by every list (Python
    # caches only -5..256): no allocation per partition
    cdef int32_t p, top = max(np.asarray(parts).max(initial=0), 0)
    cdef list ints = list(range(min(top, 1 << 22) + 1))
    cdef Py_ssize_t n_ints = len(ints)
    cdef const uint8_t[::1] canon
    cdef const int64_t[::1] cur_indptr
    cdef const int32_t[::1] cur_topics
    cdef const int64_t[::1] cur_part_indptr
    cdef const int32_t[::1] cur_parts
    cdef bint by_columns = current is not None and read is not None and read[0] is not None
    if by_columns:
        canon, cur_indptr, cur_topics, cur_part_indptr, cur_parts = read
    for m in range(m_count):
        if not present[m]:
            continue
        if current is not None:
            cur = <object>PyList_GET_ITEM(current, m)
            if (_same_columns(m, indptr, topics, part_indptr, parts, cur_indptr, cur_topics, cur_part_indptr,
                              cur_parts) if by_columns and canon[m] else
                    not by_columns and _same_target(cur, topic_keys, indptr[m], indptr[m + 1], topics, part_indptr,
                                                    parts)):
                # unchanged (most members of an incremental run): the caller's own dict, as equal as a new one
                out[member_ids[m]] = cur
                continue
        entry = {}
        for e in range(indptr[m], indptr[m + 1]):
            a = part_indptr[e]
            b = part_indptr[e + 1]
            lst = PyList_New(b - a)
            for j in range(a, b):
                p = parts[j]
                value = ints[p] if 0 <= p < n_ints else p
                Py_INCREF(value)
                PyList_SET_ITEM(lst, j - a, value)
            PyObject_GC_UnTrack(<void*>lst)
            entry[topic_keys[topics[e]]] = lst
        PyObject_GC_UnTrack(<void*>entry)
        out[member_ids[m]] = entry
    return out


def first_repeat(const int64_t[::1] indptr, const int32_t[::1] values, Py_ssize_t domain):
    """See the twin: one pass, a stamp per value."""
    cdef Py_ssize_t r
    cdef int64_t j
    stamp_a = np.full(max(domain, 1), -1, dtype=np.int64)
    cdef int64_t[::1] stamp = stamp_a
    for r in range(indptr.shape[0] - 1):
        for j in range(indptr[r], indptr[r + 1]):
            if stamp[values[j]] == r:
                return r
            stamp[values[j]] = r
    return -1


@cython.final
cdef class _IntBuf:
    """A growable int32 column; with ``slot`` >= 0 its storage is this
    thread's work array of that slot (see ``_scratch``), kept for the next call."""
    cdef object arr
    cdef int32_t[::1] v
    cdef Py_ssize_t n
    cdef int slot

    def __cinit__(self, Py_ssize_t capacity, int slot=-1):
        self.slot = slot
        if slot >= 0:
            self.arr = _scratch(slot, capacity, np.int32)
            self.arr = _POOL.arrays[slot]           # all of it: the largest group's size
        else:
            self.arr = np.empty(max(capacity, 16), dtype=np.int32)
        self.v = self.arr
        self.n = 0

    cdef void _grow(self, Py_ssize_t extra):
        self.arr = np.concatenate([self.arr[:self.n], np.empty(max(self.n, extra, 16), dtype=np.int32)])
        self.v = self.arr
        if self.slot >= 0:
            _POOL.arrays[self.slot] = self.arr

    cdef inline void push(self, int32_t x):
        if self.n == self.v.shape[0]:
            self._grow(1)
        self.v[self.n] = x
        self.n += 1

    cdef inline void reserve(self, Py_ssize_t extra):
        """Room for ``extra`` more values, so a run of them is written without a check each."""
        if self.n + extra > self.v.shape[0]:
            self._grow(extra)

    cdef object done(self):
        """The values: a view of the work array (valid until this thread's next
        call) when it is one, a copy otherwise."""
        return self.arr[:self.n] if self.slot >= 0 else self.arr[:self.n].copy()


cdef inline int32_t _partition(object p) except? -1:
    cdef long long v
    if type(p) is int:
        try:
            v = p
        except OverflowError:
            v = 1LL << 40
        if v < -2147483648LL or v > 2147483647LL:
            raise ArgumentValueError(f"partition {p} is outside Java's int range")
        return <int32_t>v
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise ArgumentTypeError(f"a partition is an int, not {type(p).__name__}")
    return _partition(int(p))


def member_columns(list member_ids, list members, member_class, topic_index, bint read_assignment=True,
                   bint scratch=False):
    """See the twin: one C loop over the members, their assignment dicts and
    partition lists; a subscription object is looked at once per distinct
    object.  With ``scratch`` the current assignment's columns are views of
    this thread's work arrays (for a caller done with them before its next call).

    ``canon[m]`` (None when the assignments are not read) is 1 when member m's
    assignment is in the form of the result: a dict whose keys are of their
    metadata key's type, whose values are lists of ints.  ``member_dicts`` then
    compares its columns with the target's instead of reading the objects again."""
    cdef Py_ssize_t m_count = len(members), m, j, n
    member_sub_a = np.empty(m_count, dtype=np.int32)
    cdef int32_t[::1] member_sub = member_sub_a
    cur_indptr_a = np.zeros(m_count + 1, dtype=np.int64)
    cdef int64_t[::1] cur_indptr = cur_indptr_a
    cdef _IntBuf cur_topics = _IntBuf(m_count, 20 if scratch else -1)
    cdef _IntBuf cur_counts = _IntBuf(m_count, 21 if scratch else -1)
    cdef _IntBuf cur_parts = _IntBuf(8 * m_count, 22 if scratch else -1)
    cdef dict by_identity = {}, by_content = {}, index = topic_index.index, assignment
    cdef list rows = [], unresolved = [], assignments = PyList_New(m_count), seq, keys = topic_index.keys
    canon_a = np.zeros(m_count, dtype=np.uint8) if read_assignment else None
    cdef uint8_t[::1] canon = canon_a if read_assignment else np.zeros(1, dtype=np.uint8)
    cdef bint in_form
    cdef int32_t ti
    cdef PyObject* want
    cdef object member, subs, unres, prev_subs = None, prev_unres = None, r, t, parts, given
    cdef int32_t row = -1
    cdef Py_ssize_t pos
    cdef PyObject* key_p
    cdef PyObject* value_p
    cdef PyObject* found
    cdef PyObject* item
    cdef long long v
    for m in range(m_count):
        # checked before any member, as the twin does: a C loop instead of one in Python
        if type(member_ids[m]) is not str:
            raise ArgumentTypeError(f"member ids are str, not {type(member_ids[m]).__name__}")
    for m in range(m_count):
        Py_INCREF(None)
        PyList_SET_ITEM(assignments, m, None)
    # the three fields read per member, straight from their slots on instances of the class itself
    cdef Py_ssize_t at_subs = _slot_offset(member_class, "subscribed_topic_ids")
    cdef Py_ssize_t at_unres = _slot_offset(member_class, "unresolved_topic_names")
    cdef Py_ssize_t at_assignment = _slot_offset(member_class, "assignment")
    cdef bint slotted = at_subs >= 0 and at_unres >= 0 and at_assignment >= 0
    for m in range(m_count):
        member = members[m]
        if slotted and type(member) is member_class:
            subs = _slot(member, at_subs, "subscribed_topic_ids")
            unres = _slot(member, at_unres, "unresolved_topic_names")
            given = _slot(member, at_assignment, "assignment")
        elif isinstance(member, member_class):
            subs = member.subscribed_topic_ids
            unres = member.unresolved_topic_names
            given = member.assignment
        else:
            raise ArgumentTypeError(f"member {member_ids[m]!r} is a {type(member).__name__}, not a ServerMember")
        if subs is not prev_subs or unres is not prev_unres:
            # members that subscribe alike mostly share one object: only a change of object costs a lookup
            key = (id(subs), id(unres))
            r = by_identity.get(key)
            if r is None:
                if (row >= 0 and type(subs) is list and type(prev_subs) is list and unres is prev_unres
                        and len(subs) == len(prev_subs)
                        and subs == prev_subs):
                    r = row         # a copy of the previous member's list: its row, without a lookup by content
                else:
                    r = common.content_row(subs, unres, rows, unresolved, by_content)
                by_identity[key] = r
            row = r
            prev_subs = subs
            prev_unres = unres
        member_sub[m] = row
        assignments[m] = given
        if not read_assignment:
            continue
        in_form = type(given) is dict
        assignment = given if in_form else dict(given)
        pos = 0
        # PyDict_Next and borrowed lookups: no tuple per entry, no new reference per topic
        while PyDict_Next(assignment, &pos, &key_p, &value_p):
            found = PyDict_GetItem(index, <object>key_p)
            if found is NULL:
                ti = topic_index(<object>key_p)
                in_form = False
            else:
                ti = <int32_t>(<object>found)
                want = PyList_GET_ITEM(keys, ti)
                if key_p != want and Py_TYPE(key_p) != Py_TYPE(want):
                    in_form = False
            cur_topics.push(ti)
            parts = <object>value_p
            if type(parts) is not list:
                parts = list(parts)
                in_form = False
            seq = parts
            n = len(seq)
            cur_counts.push(<int32_t>n)
            cur_parts.reserve(n)
            for j in range(n):
                item = PyList_GET_ITEM(seq, j)
                # exact ints in Java's range (every partition of a coordinator's own target) need no
                # Python call; anything else goes through the checks of _partition
                if kw_exact_int(item, &v) and -2147483648LL <= v <= 2147483647LL:
                    cur_parts.v[cur_parts.n] = <int32_t>v
                    cur_parts.n += 1
                else:
                    cur_parts.push(_partition(<object>item))
                    in_form = False
        cur_indptr[m + 1] = cur_topics.n
        canon[m] = in_form
    counts = cur_counts.done()
    cur_part_indptr_a = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=cur_part_indptr_a[1:])
    return (member_sub_a, rows, unresolved, assignments, canon_a, cur_indptr_a, cur_topics.done(), cur_part_indptr_a,
            cur_parts.done())
