# Included by _sticky_c.pyx: many groups in one call (sticky_pair_many).
#
# The what-if runs the sticky pair on thousands of groups of a few members,
# where a run's loops take a few microseconds and what surrounds them (a
# NumPy array per column and fact, the Java orderings in Python, an answer's
# arrays) took ten times that.  Here the columns of every group are stacked
# once, the facts _Run takes from Python per group (HashMap order, id rank,
# topic hashes, assignable topics) are computed for the whole stack at once,
# each group's run takes slices of them, and both answers are written end to
# end into one pair of buffers.

from ._arrays import fast_string_hashes as _string_hashes
from ._javaorder import stacked_hashmap_positions as _stacked_hashmap_positions, stacked_name_order as _stacked_name_order
from ._sticky_repair import is_valid as _is_valid

cdef enum:
    # Groups below this size cannot crowd a HashMap bucket into growing the
    # table (``_javaorder.hashmap_capacity``); larger ones take _member_order.
    _PLAIN_HASHMAP_MEMBERS = 9
    # Up to this many members _member_classes compares each member with each
    # class; larger groups take _classes, which keys a dict.
    _C_CLASSES_MEMBERS = 64


cdef class _Answers:
    """Answers end to end: a count per member and each entry's topic and number."""
    cdef int64_t[::1] counts
    cdef int32_t[::1] topic, number
    cdef int64_t n_members, n_entries

    def __init__(self, int64_t n_members, int64_t capacity):
        self.counts = np.zeros(max(n_members, 1), dtype=np.int64)
        self.topic = np.empty(max(capacity, 16), dtype=np.int32)
        self.number = np.empty(max(capacity, 16), dtype=np.int32)

    cdef void reserve(self, int64_t extra) except *:
        cdef int64_t size = self.topic.shape[0]
        if self.n_entries + extra <= size:
            return
        size = max(2 * size, self.n_entries + extra)
        topic = np.empty(size, dtype=np.int32)
        number = np.empty(size, dtype=np.int32)
        topic[:self.n_entries] = np.asarray(self.topic)[:self.n_entries]
        number[:self.n_entries] = np.asarray(self.number)[:self.n_entries]
        self.topic = topic
        self.number = number

    cdef void skip(self, int64_t members) noexcept:
        """``members`` members with nothing (their counts are zero already)."""
        self.n_members += members

    cdef void rewind(self, int64_t n_members, int64_t n_entries) noexcept:
        """Forget what came after ``n_members`` members and ``n_entries`` entries."""
        cdef int64_t member
        for member in range(n_members, self.n_members):
            self.counts[member] = 0
        self.n_members = n_members
        self.n_entries = n_entries

    cdef tuple arrays(self, int64_t n_members):
        indptr = np.zeros(n_members + 1, dtype=np.int64)
        np.cumsum(np.asarray(self.counts)[:n_members], out=indptr[1:])
        return (indptr, np.asarray(self.topic)[:self.n_entries].copy(),
                np.asarray(self.number)[:self.n_entries].copy())


cdef class _Stack:
    """Every group's columns laid end to end, each group's arrays as they
    are (so a slice is that group's own array), with the bases of each
    group's slices and the facts _Run needs, computed for all groups."""
    cdef int64_t[::1] topic_base, member_base, sub_base, owned_base
    cdef const int32_t[::1] partition_counts, sub_topics, owned_topic, owned_partition
    cdef const int32_t[::1] generation, subscription_generation, hashmap_order, id_rank, topic_hash
    cdef const int64_t[::1] topic_offset, sub_indptr, owned_indptr
    cdef uint8_t[::1] assignable


def _bases(lengths):
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


cdef object _stacked(list groups, str name, object dtype):
    """``np.concatenate`` of each group's array ``name``.  ArrayGroup keeps
    its columns 1-d, C-contiguous and of their kernel dtype, so each is one
    memcpy here: NumPy's checks per array cost several times the copy of a
    small group's column.  Any other array takes np.concatenate itself."""
    cdef int type_num = np.dtype(dtype).num
    cdef int64_t total = 0, used = 0, n
    cdef cnp.ndarray a
    cdef list columns = [getattr(g, name) for g in groups]
    for column in columns:
        if type(column) is not np.ndarray:
            return np.concatenate(columns)
        a = <cnp.ndarray>column
        if (cnp.PyArray_NDIM(a) != 1 or cnp.PyArray_TYPE(a) != type_num or not cnp.PyArray_IS_C_CONTIGUOUS(a)
                or not cnp.PyArray_ISNOTSWAPPED(a)):
            return np.concatenate(columns)
        total += cnp.PyArray_DIM(a, 0)
    out = np.empty(total, dtype=dtype)
    cdef char *dst = <char *>cnp.PyArray_DATA(out)
    cdef Py_ssize_t itemsize = cnp.PyArray_ITEMSIZE(out)
    for column in columns:
        a = <cnp.ndarray>column
        n = cnp.PyArray_DIM(a, 0)
        if n:
            memcpy(dst + used * itemsize, cnp.PyArray_DATA(a), n * itemsize)
        used += n
    return out


cdef _Stack _stack_of(list groups):
    cdef _Stack s = _Stack()
    cdef Py_ssize_t i, n = len(groups)
    n_members, n_topics = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    n_subs, n_owned = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    cdef int64_t[::1] members_of = n_members, topics_of = n_topics, subs_of = n_subs, owned_of = n_owned
    # one pass for every size of a group: a list apiece, made an array, cost several times that
    for i in range(n):
        g = groups[i]
        members_of[i] = g.num_members
        topics_of[i] = len(g.topics)
        subs_of[i] = len(g.sub_topics)
        owned_of[i] = len(g.owned_topic)
    member_base, topic_base = _bases(n_members), _bases(n_topics)
    s.member_base, s.topic_base, s.sub_base = member_base, topic_base, _bases(n_subs)
    s.owned_base = _bases(n_owned)
    counts = _stacked(groups, "partition_counts", np.int32)
    sub_topics = _stacked(groups, "sub_topics", np.int32)
    s.partition_counts, s.sub_topics = counts, sub_topics
    s.topic_offset = _stacked(groups, "topic_offset", np.int64)
    s.sub_indptr = _stacked(groups, "sub_indptr", np.int64)
    s.owned_indptr = _stacked(groups, "owned_indptr", np.int64)
    s.owned_topic = _stacked(groups, "owned_topic", np.int32)
    s.owned_partition = _stacked(groups, "owned_partition", np.int32)
    s.generation = _stacked(groups, "generation", np.int32)
    s.subscription_generation = _stacked(groups, "subscription_generation", np.int32)
    # _assignable_topics of every group: subscribed by someone and present with partitions
    total_topics = int(topic_base[len(groups)])
    subscribed = np.bincount(sub_topics + np.repeat(topic_base[:len(groups)], n_subs), minlength=total_topics)
    s.assignable = ((subscribed[:total_topics] > 0) & (counts > 0)).astype(np.uint8)
    s.topic_hash = _string_hashes([t for g in groups for t in g.topics])
    ids = [m for g in groups for m in g.member_ids]
    group_of_member = np.repeat(np.arange(len(groups), dtype=np.int64), n_members)
    position = np.arange(len(ids), dtype=np.int64)
    # HashMap order in a table of capacity_after(members) slots: a small group cannot crowd one
    hashmap_order = (_stacked_hashmap_positions(_string_hashes(ids), n_members)
                     - member_base[group_of_member]).astype(np.int32)
    for g in np.flatnonzero(n_members >= _PLAIN_HASHMAP_MEMBERS).tolist():
        hashmap_order[member_base[g]:member_base[g + 1]] = _member_order(groups[g])
    s.hashmap_order = hashmap_order
    order = _stacked_name_order(ids, n_members)
    if order is not None:
        id_rank = np.empty(len(ids), dtype=np.int32)
        id_rank[order] = position - member_base[group_of_member[order]]
    else:
        id_rank = np.concatenate([g.member_id_rank() for g in groups]).astype(np.int32)
    s.id_rank = id_rank
    return s


cdef class _Classes:
    """What ``_classes`` returns, as the typed views _general takes."""
    cdef const int32_t[::1] of_member, rack, topic_class
    cdef const int64_t[::1] topic_start


cdef _Classes _member_classes(_Run r):
    """``_classes(group, assignable)`` for a group without racks, in C: a
    member's class is the sorted list of its assignable subscribed topics
    (a topic listed twice stays twice), classes numbered as first met."""
    cdef int n = r.n_members, member, other, topic, cls, n_classes = 0, i, j
    cdef int64_t entry, length, k
    cdef int32_t t
    cdef bint same
    cdef int64_t[::1] start = r.arena.i64(n + 1, 0)
    cdef int32_t[::1] topics = r.arena.i32(max(r.subscription_start[n], 1), 0)
    cdef int32_t[::1] classes = r.arena.i32(max(n, 1), 0)
    cdef int32_t[::1] first_member = r.arena.i32(max(n, 1), 0)
    # each member's assignable topics, sorted (insertion sort: lists are short)
    for member in range(n):
        k = start[member]
        for entry in range(r.subscription_start[member], r.subscription_start[member + 1]):
            t = r.subscription_topic[entry]
            if not r.assignable[t]:
                continue
            i = <int>(k - start[member])
            while i > 0 and topics[start[member] + i - 1] > t:
                topics[start[member] + i] = topics[start[member] + i - 1]
                i -= 1
            topics[start[member] + i] = t
            k += 1
        start[member + 1] = k
    for member in range(n):
        length = start[member + 1] - start[member]
        classes[member] = -1
        for cls in range(n_classes):
            other = first_member[cls]
            if start[other + 1] - start[other] != length:
                continue
            same = True
            for k in range(length):
                if topics[start[member] + k] != topics[start[other] + k]:
                    same = False
                    break
            if same:
                classes[member] = cls
                break
        if classes[member] < 0:
            classes[member] = n_classes
            first_member[n_classes] = member
            n_classes += 1
    # per topic, the classes subscribing to it in class order (once per listing)
    cdef int64_t[::1] topic_class_start = r.arena.i64(r.n_topics + 1, 0)
    for cls in range(n_classes):
        other = first_member[cls]
        for k in range(start[other], start[other + 1]):
            topic_class_start[topics[k] + 1] += 1
    for topic in range(r.n_topics):
        topic_class_start[topic + 1] += topic_class_start[topic]
    cdef int32_t[::1] topic_class = r.arena.i32(max(topic_class_start[r.n_topics], 1), 0)
    cdef int64_t[::1] fill = r.arena.i64(max(r.n_topics, 1), 0)
    for topic in range(r.n_topics):
        fill[topic] = topic_class_start[topic]
    for cls in range(n_classes):
        other = first_member[cls]
        for k in range(start[other], start[other + 1]):
            topic_class[fill[topics[k]]] = cls
            fill[topics[k]] += 1
    cdef _Classes out = _Classes()
    out.of_member = classes[:n]
    out.rack = r.arena.i32(max(n_classes, 1), -1)[:n_classes]
    out.topic_start = topic_class_start
    out.topic_class = topic_class
    return out


cdef int32_t[::1] _sorted_topics(_Run r) except *:
    """Java's TopicComparator order of the assignable topics: fewest
    potential consumers (subscription listings) first, then by index."""
    cdef int topic, n_sorted = 0
    cdef int64_t entry
    cdef int32_t[::1] consumers = r.arena.i32(max(r.n_topics, 1), 0)
    cdef int64_t[::1] keys = r.arena.i64(max(r.n_topics, 1), 0)
    cdef int32_t[::1] out = r.arena.i32(max(r.n_topics, 1), 0)
    for entry in range(r.subscription_start[r.n_members]):
        topic = r.subscription_topic[entry]
        if r.assignable[topic]:
            consumers[topic] += 1
    for topic in range(r.n_topics):
        if r.assignable[topic]:
            keys[n_sorted] = <int64_t>consumers[topic] * (r.n_topics + 1) + topic
            n_sorted += 1
    if n_sorted > 1:
        qsort(&keys[0], n_sorted, sizeof(int64_t), _cmp_i64)
    for topic in range(n_sorted):
        out[topic] = <int32_t>(keys[topic] % (r.n_topics + 1))
    return out[:n_sorted]


def sticky_pair_many(groups):
    """``sticky_pair_arrays`` of each group, end to end (see
    ``_sticky_rules.pair_many``, which the pure twin runs): ``(ran, eager,
    cooperative)``, ``ran`` 1 where the group ran and both answers are valid."""
    groups = list(groups)
    cdef Py_ssize_t g, n = len(groups)
    ran_a = np.zeros(n, dtype=np.uint8)
    if not n:
        return ran_a, _no_partitions(), _no_partitions()
    cdef uint8_t[::1] ran = ran_a
    cdef _Stack s = _stack_of(groups)
    cdef int64_t n_members = s.member_base[n], members, before_members, before_eager, before_cooperative
    cdef int64_t estimate = 2 * s.topic_offset.shape[0]
    cdef _Answers eager = _Answers(n_members, estimate), cooperative = _Answers(n_members, estimate)
    # one set of scratch buffers for every group: a group's run leaves nothing in them that the next needs
    cdef _Arena arena = _Arena()
    cdef _Run r
    for g in range(n):
        members = s.member_base[g + 1] - s.member_base[g]
        group = groups[g]
        if not members:
            eager.skip(members)
            cooperative.skip(members)
            continue
        before_members, before_eager, before_cooperative = eager.n_members, eager.n_entries, cooperative.n_entries
        try:
            if any(group.racks):
                # rack facts are per group (_rack_setup): the group's own run, its answers checked apart
                one, two = _answers(group, True, True, arena)
                _append(eager, one)
                _append(cooperative, two)
                valid = _is_valid(group, *one) and _is_valid(group, *two)
            else:
                check_partition_total(s.topic_offset[s.topic_base[g + 1] + g])
                arena.reset()
                r = _Run.of_stack(s, g, group.member_ids, arena)
                valid = _run_paths(r, group, False, _NO_I32, _NO_I64, _NO_I32, None, True, True, eager,
                                   cooperative)[0]
            if valid:
                ran[g] = 1
                continue
        except KwireError:
            pass
        # left to the per-group path: nothing of the group stays
        eager.rewind(before_members, before_eager)
        cooperative.rewind(before_members, before_cooperative)
        eager.skip(members)
        cooperative.skip(members)
    return ran_a, eager.arrays(n_members), cooperative.arrays(n_members)


cdef void _append(_Answers out, tuple answer) except *:
    indptr, topic, number = answer
    cdef const int64_t[::1] ptr = indptr
    cdef const int32_t[::1] t = topic, p = number
    cdef Py_ssize_t member, k
    out.reserve(t.shape[0])
    for member in range(ptr.shape[0] - 1):
        out.counts[out.n_members] = ptr[member + 1] - ptr[member]
        out.n_members += 1
    for k in range(t.shape[0]):
        out.topic[out.n_entries + k] = t[k]
        out.number[out.n_entries + k] = p[k]
    out.n_entries += t.shape[0]
