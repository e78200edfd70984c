# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of ``_rangerr_py``: the array kernels of the range and
round-robin assignors.  See that module for the meaning of every argument;
the two must return identical arrays.

Every kernel counts first and fills second, so each output array is
allocated once at its final size and no Python object is made per partition.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.string cimport memcmp, memcpy


cdef extern from "Python.h":
    int PyUnicode_KIND(object)
    int PyUnicode_1BYTE_KIND
    void* PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)


cdef void _subscriptions(const int64_t[:] sub_indptr, const int32_t[:] sub_topics, const int32_t[:] member_order,
                         int32_t[:] last, int64_t[:] topic_pos, int32_t[:] tp_members, bint fill) noexcept nogil:
    # Every (member, topic) subscription with members in member_order, a topic
    # a member lists twice seen once: a member's topics are visited together,
    # so remembering the last member added per topic (``last``) is enough.
    # Counting (fill False) adds one to topic_pos[t + 1]; filling writes the
    # member at topic_pos[t] and moves it on.
    cdef Py_ssize_t r
    cdef int64_t e
    cdef int32_t m, t
    last[:] = -1
    for r in range(sub_indptr.shape[0] - 1):
        m = member_order[r]
        for e in range(sub_indptr[m], sub_indptr[m + 1]):
            t = sub_topics[e]
            if last[t] == m:
                continue
            last[t] = m
            if fill:
                tp_members[topic_pos[t]] = m
                topic_pos[t] += 1
            else:
                topic_pos[t + 1] += 1


cdef bint _one_topic_list(const int64_t[:] sub_indptr, const int32_t[:] sub_topics) noexcept nogil:
    """Whether every member lists the same topics in the same order (the usual group)."""
    cdef Py_ssize_t members = sub_indptr.shape[0] - 1, m
    if members < 2 or sub_topics.shape[0] == 0 or sub_topics.strides[0] != sizeof(int32_t):
        return False
    cdef int64_t width = sub_indptr[1] - sub_indptr[0]
    cdef const int32_t* first = &sub_topics[0] + sub_indptr[0]
    for m in range(1, members):
        if (sub_indptr[m + 1] - sub_indptr[m] != width
                or memcmp(&sub_topics[0] + sub_indptr[m], first, width * sizeof(int32_t)) != 0):
            return False
    return True


def subscribers_of_shared_topics(Py_ssize_t num_topics, const int32_t[:] topic_list, const int32_t[::1] member_order):
    """subscribers_by_topic of a group whose every member lists ``topic_list``:
    each listed topic's subscribers are all members in member_order, one
    copy of it per topic instead of a visit per (member, topic)."""
    cdef Py_ssize_t t, e, members = member_order.shape[0]
    tp_indptr_a = np.zeros(num_topics + 1, dtype=np.int64)
    cdef int64_t[:] tp_indptr = tp_indptr_a
    listed_a = np.zeros(num_topics, dtype=np.uint8)
    cdef uint8_t[:] listed = listed_a
    for e in range(topic_list.shape[0]):
        if not 0 <= topic_list[e] < num_topics:
            raise IndexError(f"topic index {topic_list[e]} out of range for {num_topics} topics")
        listed[topic_list[e]] = 1  # a topic listed twice is subscribed once
    for t in range(num_topics):
        tp_indptr[t + 1] = tp_indptr[t] + (members if listed[t] else 0)
    tp_members_a = np.empty(tp_indptr[num_topics], dtype=np.int32)
    cdef int32_t[:] tp_members = tp_members_a
    if members:
        with nogil:
            for t in range(num_topics):
                if listed[t]:
                    memcpy(&tp_members[tp_indptr[t]], &member_order[0], members * sizeof(int32_t))
    return tp_indptr_a, tp_members_a


def subscribers_by_topic(Py_ssize_t num_topics, const int64_t[:] sub_indptr, const int32_t[:] sub_topics,
                         const int32_t[:] member_order):
    cdef Py_ssize_t t, members = member_order.shape[0]
    cdef int64_t e
    tp_indptr_a = np.zeros(num_topics + 1, dtype=np.int64)
    cdef int64_t[:] tp_indptr = tp_indptr_a
    cdef int32_t[:] last = np.empty(num_topics, dtype=np.int32)
    cdef int32_t[:] tp_members = np.empty(0, dtype=np.int32)
    cdef bint uniform
    with nogil:
        uniform = (members == sub_indptr.shape[0] - 1 and member_order.strides[0] == sizeof(int32_t)
                   and _one_topic_list(sub_indptr, sub_topics))
    if uniform:
        return subscribers_of_shared_topics(num_topics, sub_topics[sub_indptr[0]:sub_indptr[1]], member_order)
    with nogil:
        _subscriptions(sub_indptr, sub_topics, member_order, last, tp_indptr, tp_members, False)
        for t in range(num_topics):
            tp_indptr[t + 1] += tp_indptr[t]
    tp_members_a = np.empty(tp_indptr[num_topics], dtype=np.int32)
    tp_members = tp_members_a
    cdef int64_t[:] cursor = np.array(tp_indptr_a[:num_topics])
    with nogil:
        _subscriptions(sub_indptr, sub_topics, member_order, last, cursor, tp_members, True)
    return tp_indptr_a, tp_members_a


def first_seen(Py_ssize_t num_topics, const int64_t[:] sub_indptr, const int32_t[:] sub_topics,
               const int32_t[:] member_visit_order, int64_t num_distinct):
    seen_a = np.full(num_topics, -1, dtype=np.int64)
    cdef int64_t[:] seen = seen_a
    cdef int64_t n = 0
    cdef int64_t e
    cdef Py_ssize_t r
    cdef int32_t m, t
    for r in range(member_visit_order.shape[0]):
        if n == num_distinct:
            break
        m = member_visit_order[r]
        for e in range(sub_indptr[m], sub_indptr[m + 1]):
            t = sub_topics[e]
            if seen[t] < 0:
                seen[t] = n
                n += 1
    return seen_a


cdef _alloc_csr(Py_ssize_t num_members, int64_t[:] counts):
    # counts has num_members + 1 slots, counts[m + 1] holding member m's total.
    cdef Py_ssize_t m
    for m in range(num_members):
        counts[m + 1] += counts[m]
    n = counts[num_members]
    # One block, not two arrays: from 4 MiB up NumPy asks the kernel for huge
    # pages, and at 1M partitions the two 4 MB columns just missed that.
    # Each 4 KiB page is a fault when first written (~2.7 us on a VM), and
    # their ~2000 faults took as long as assigning the partitions.
    block = np.empty(2 * n, dtype=np.int32)
    return block[:n], block[n:]


cdef inline Py_ssize_t _subscribers_to_split(const int32_t[:] partition_counts, const int64_t[:] tp_indptr,
                                             int32_t t) noexcept nogil:
    # How many subscribers share topic t; 0 when it has none or no partitions,
    # so there is nothing to split (the pure twin's _topics_to_split).  Returned
    # rather than written through pointers: a local whose address is taken is
    # reloaded after every array store (CPython builds with -fno-strict-aliasing).
    if partition_counts[t] == 0:
        return 0
    return tp_indptr[t + 1] - tp_indptr[t]


cdef void _range_runs(const int32_t[:] partition_counts, const int64_t[:] tp_indptr, const int32_t[:] tp_members,
                      const int32_t[:] topic_order, int64_t[:] member_pos, int32_t[:] topic, int32_t[:] partition,
                      bint fill) noexcept nogil:
    # Java's range split of every topic: subscriber i takes the contiguous run
    # of q = P // n partitions starting at i * q + min(i, r), one more for the
    # first r = P % n.  Counting (fill False) adds each run's length to
    # member_pos[m + 1]; filling writes the run at member_pos[m] and moves it on.
    cdef Py_ssize_t k, i, n
    cdef int32_t t, m, P, q, r, start, length, p
    cdef int64_t base, c
    for k in range(topic_order.shape[0]):
        t = topic_order[k]
        n = _subscribers_to_split(partition_counts, tp_indptr, t)
        if n == 0:
            continue
        base = tp_indptr[t]
        P = partition_counts[t]
        q = P // n
        r = P % n
        for i in range(n):
            m = tp_members[base + i]
            length = q + (1 if i < r else 0)
            if not fill:
                member_pos[m + 1] += length
                continue
            start = <int32_t>(i * q + (i if i < r else r))
            c = member_pos[m]
            for p in range(start, start + length):
                topic[c] = t
                partition[c] = p
                c += 1
            member_pos[m] = c


def range_plain(Py_ssize_t num_members, const int32_t[:] partition_counts, const int64_t[:] tp_indptr,
                const int32_t[:] tp_members, const int32_t[:] topic_order):
    indptr_a = np.zeros(num_members + 1, dtype=np.int64)
    cdef int64_t[:] indptr = indptr_a
    cdef int32_t[:] nothing = np.empty(0, dtype=np.int32)
    with nogil:
        _range_runs(partition_counts, tp_indptr, tp_members, topic_order, indptr, nothing, nothing, False)
    topic_a, partition_a = _alloc_csr(num_members, indptr)
    cdef int32_t[:] topic = topic_a
    cdef int32_t[:] partition = partition_a
    cdef int64_t[:] cursor = np.array(indptr_a[:num_members])
    with nogil:
        _range_runs(partition_counts, tp_indptr, tp_members, topic_order, cursor, topic, partition, True)
    return indptr_a, topic_a, partition_a


def roundrobin(Py_ssize_t num_members, const int32_t[:] partition_counts, const int64_t[:] tp_indptr,
               const int32_t[:] tp_members, const int32_t[:] topic_order, const int32_t[:] member_rank):
    cdef Py_ssize_t K = topic_order.shape[0]
    cdef Py_ssize_t k, n, lo, hi, mid, j, slot
    cdef int32_t t, P, q, r, p, m, cur_rank
    cdef int64_t base, c
    first_a = np.full(K, -1, dtype=np.int64)  # per topic_order entry: the slot its first partition goes to
    cdef int64_t[:] first = first_a
    indptr_a = np.zeros(num_members + 1, dtype=np.int64)
    cdef int64_t[:] indptr = indptr_a
    # The cursor carries over from topic to topic; within a topic the
    # subscribers (in rank order) simply take turns from the first one at or
    # after the cursor, so only that starting slot needs a search.
    with nogil:
        cur_rank = 0
        for k in range(K):
            t = topic_order[k]
            base = tp_indptr[t]
            n = tp_indptr[t + 1] - base
            P = partition_counts[t]
            if n == 0 or P == 0:
                continue
            lo = 0
            hi = n
            while lo < hi:
                mid = (lo + hi) >> 1
                if member_rank[tp_members[base + mid]] < cur_rank:
                    lo = mid + 1
                else:
                    hi = mid
            j = lo % n
            first[k] = j
            # Every subscriber takes q rounds; the r after them, from slot j
            # round the circle, one more.  With more subscribers than
            # partitions (q == 0, the usual wide group) only those r are visited.
            q = P // n
            r = P % n
            if q:
                for slot in range(n):
                    indptr[tp_members[base + slot] + 1] += q
            slot = j
            for p in range(r):
                indptr[tp_members[base + slot] + 1] += 1
                slot += 1
                if slot == n:
                    slot = 0
            cur_rank = member_rank[tp_members[base + (j + P - 1) % n]] + 1
    topic_a, partition_a = _alloc_csr(num_members, indptr)
    cdef int32_t[:] topic = topic_a
    cdef int32_t[:] partition = partition_a
    cursor_a = np.array(indptr_a[:num_members])
    cdef int64_t[:] cursor = cursor_a
    with nogil:
        for k in range(K):
            slot = first[k]
            if slot < 0:
                continue  # the first pass found nothing to hand out
            t = topic_order[k]
            base = tp_indptr[t]
            n = tp_indptr[t + 1] - base
            for p in range(partition_counts[t]):
                m = tp_members[base + slot]
                c = cursor[m]
                topic[c] = t
                partition[c] = p
                cursor[m] = c + 1
                slot += 1
                if slot == n:
                    slot = 0
    return indptr_a, topic_a, partition_a


cdef int32_t _num_racks(const int32_t[:] member_rack, const int32_t[:] rr):
    cdef int32_t hi = -1
    cdef Py_ssize_t i
    for i in range(member_rack.shape[0]):
        if member_rack[i] > hi:
            hi = member_rack[i]
    for i in range(rr.shape[0]):
        if rr[i] > hi:
            hi = rr[i]
    return hi + 1


def rack_needs(const int32_t[:] partition_counts, const int64_t[:] topic_offset, const int64_t[:] tp_indptr,
               const int32_t[:] tp_members, const int32_t[:] member_rack, const int64_t[:] rr_indptr,
               const int32_t[:] rr):
    cdef Py_ssize_t T = partition_counts.shape[0]
    cdef Py_ssize_t R = _num_racks(member_rack, rr)
    needs_a = np.zeros(T, dtype=np.uint8)
    cdef uint8_t[:] needs = needs_a
    # Stamps instead of clearing: consumer racks of topic t are marked t+1,
    # the topic's replica racks likewise, and each partition's racks get a
    # fresh stamp so duplicates (two replicas on one rack) count once.
    cons_a = np.zeros(R, dtype=np.int64)
    union_a = np.zeros(R, dtype=np.int64)
    part_a = np.zeros(R, dtype=np.int64)
    cdef int64_t[:] cons = cons_a
    cdef int64_t[:] uni = union_a
    cdef int64_t[:] part = part_a
    cdef int64_t stamp = 0
    cdef Py_ssize_t t, i, union_size, distinct
    cdef int64_t g, e, g0, g1
    cdef int32_t rk
    cdef bint any_consumer, overlap, uneven
    for t in range(T):
        any_consumer = False
        for i in range(tp_indptr[t], tp_indptr[t + 1]):
            rk = member_rack[tp_members[i]]
            if rk >= 0:
                cons[rk] = t + 1
                any_consumer = True
        if not any_consumer:
            continue
        g0 = topic_offset[t]
        g1 = topic_offset[t + 1]
        union_size = 0
        overlap = False
        for e in range(rr_indptr[g0], rr_indptr[g1]):
            rk = rr[e]
            if uni[rk] != t + 1:
                uni[rk] = t + 1
                union_size += 1
                if cons[rk] == t + 1:
                    overlap = True
        if not overlap:
            continue
        uneven = False
        for g in range(g0, g1):
            stamp += 1
            distinct = 0
            for e in range(rr_indptr[g], rr_indptr[g + 1]):
                rk = rr[e]
                if part[rk] != stamp:
                    part[rk] = stamp
                    distinct += 1
            if distinct != union_size:
                uneven = True
                break
        needs[t] = uneven
    return needs_a


cdef class _RangeState:
    """Quotas of every topic during a rack-aware range run (Java's TopicAssignmentState)."""
    cdef const int32_t[:] partition_counts
    cdef const int64_t[:] topic_offset
    cdef const int64_t[:] tp_indptr
    cdef const int32_t[:] tp_members
    cdef const int32_t[:] member_rack
    cdef const int64_t[:] rr_indptr
    cdef const int32_t[:] rr
    cdef int32_t[:] quota
    cdef int32_t[:] extra
    cdef int32_t[:] count      # parallel to tp_members: partitions of that topic given to that slot
    cdef int32_t[:] owner      # per global partition, -1 while unassigned
    cdef int32_t[:] free_buf   # scratch list of a topic's free partitions

    cdef inline int32_t max_assignable(self, int32_t t, Py_ssize_t slot) noexcept nogil:
        cdef int32_t v = self.quota[t] + (1 if self.extra[t] > 0 else 0) - self.count[self.tp_indptr[t] + slot]
        return v if v > 0 else 0

    cdef inline void give(self, int32_t t, Py_ssize_t slot, int32_t p) noexcept nogil:
        self.owner[self.topic_offset[t] + p] = self.tp_members[self.tp_indptr[t] + slot]

    cdef inline void on_assigned(self, int32_t t, Py_ssize_t slot, int32_t k) noexcept nogil:
        cdef int64_t i = self.tp_indptr[t] + slot
        self.count[i] += k
        if self.count[i] > self.quota[t]:
            self.extra[t] -= 1

    cdef inline bint racks_match(self, int32_t t, Py_ssize_t slot, int32_t p) noexcept nogil:
        cdef int32_t rk = self.member_rack[self.tp_members[self.tp_indptr[t] + slot]]
        cdef int64_t g, e
        if rk < 0:
            return True
        g = self.topic_offset[t] + p
        for e in range(self.rr_indptr[g], self.rr_indptr[g + 1]):
            if self.rr[e] == rk:
                return True
        return False

    cdef void assign_ranges(self, int32_t t, bint use_racks) noexcept nogil:
        cdef int32_t P = self.partition_counts[t]
        cdef int64_t base = self.topic_offset[t]
        cdef Py_ssize_t n = self.tp_indptr[t + 1] - self.tp_indptr[t]
        cdef Py_ssize_t nfree = 0, head = 0, slot, i, w
        cdef int32_t p, limit, taken
        for p in range(P):
            if self.owner[base + p] < 0:
                self.free_buf[nfree] = p
                nfree += 1
        for slot in range(n):
            if head >= nfree:
                break
            limit = self.max_assignable(t, slot)
            if limit == 0:
                continue
            taken = 0
            if not use_racks:
                # Unfiltered, a consumer takes the lowest free partitions, so
                # the free list is consumed from the front.
                while taken < limit and head < nfree:
                    self.give(t, slot, self.free_buf[head])
                    head += 1
                    taken += 1
            else:
                w = head
                for i in range(head, nfree):
                    p = self.free_buf[i]
                    if taken < limit and self.racks_match(t, slot, p):
                        self.give(t, slot, p)
                        taken += 1
                    else:
                        self.free_buf[w] = p
                        w += 1
                nfree = w
            if taken > 0:
                self.on_assigned(t, slot, taken)


def range_rack(Py_ssize_t num_members, const int32_t[:] partition_counts, const int64_t[:] topic_offset,
               const int64_t[:] tp_indptr, const int32_t[:] tp_members, const int32_t[:] topic_order,
               const uint8_t[:] needs, const int64_t[:] co_indptr, const int32_t[:] co_topics,
               const int32_t[:] member_rack, const int64_t[:] rr_indptr, const int32_t[:] rr):
    cdef Py_ssize_t T = partition_counts.shape[0]
    cdef Py_ssize_t K = topic_order.shape[0]
    cdef Py_ssize_t k, gi, a, b, n, slot, remaining, x
    cdef int32_t t, P, p, max_p = 0
    cdef int64_t g
    cdef bint ok, spent
    # The kernel's inputs handed to the walker's state one field at a time (a cdef class has no keyword
    # constructor worth its cost here); `duplicates` pairs this with other plain attribute records by shape.
    cdef _RangeState s = _RangeState()
    s.partition_counts = partition_counts
    s.topic_offset = topic_offset
    s.tp_indptr = tp_indptr
    s.tp_members = tp_members
    s.member_rack = member_rack
    s.rr_indptr = rr_indptr
    s.rr = rr
    quota_a = np.zeros(T, dtype=np.int32)
    extra_a = np.zeros(T, dtype=np.int32)
    s.quota = quota_a
    s.extra = extra_a
    s.count = np.zeros(tp_members.shape[0], dtype=np.int32)
    s.owner = np.full(topic_offset[T], -1, dtype=np.int32)
    grouped_a = np.zeros(T, dtype=np.uint8)
    cdef uint8_t[:] grouped = grouped_a
    for k in range(K):
        t = topic_order[k]
        n = tp_indptr[t + 1] - tp_indptr[t]
        P = partition_counts[t]
        s.quota[t] = P // n
        s.extra[t] = P % n
        if P > max_p:
            max_p = P
    s.free_buf = np.empty(max_p, dtype=np.int32)
    removed_a = np.zeros(0, dtype=np.uint8)
    cdef uint8_t[:] removed

    # Co-partitioned groups: partition p of every topic goes to the first
    # consumer that matches p's racks in all of them and has room in all.
    for gi in range(co_indptr.shape[0] - 1):
        a = co_indptr[gi]
        b = co_indptr[gi + 1]
        t = co_topics[a]
        n = tp_indptr[t + 1] - tp_indptr[t]
        P = partition_counts[t]
        removed_a = np.zeros(n, dtype=np.uint8)
        removed = removed_a
        remaining = n
        for x in range(a, b):
            grouped[co_topics[x]] = 1
        for p in range(P):
            for slot in range(n):
                if removed[slot]:
                    continue
                ok = True
                for x in range(a, b):
                    if not (s.racks_match(co_topics[x], slot, p) and s.max_assignable(co_topics[x], slot) > 0):
                        ok = False
                        break
                if ok:
                    break
            else:
                continue
            spent = True
            for x in range(a, b):
                s.give(co_topics[x], slot, p)
                s.on_assigned(co_topics[x], slot, 1)
            for x in range(a, b):
                if s.max_assignable(co_topics[x], slot) > 0:
                    spent = False
                    break
            if spent:
                removed[slot] = 1
                remaining -= 1
                if remaining == 0:
                    break
    for k in range(K):
        t = topic_order[k]
        if needs[t] and not grouped[t]:
            s.assign_ranges(t, True)
    for k in range(K):
        s.assign_ranges(topic_order[k], False)

    # Java sorts each member's list by (topic, partition) after a rack-aware
    # run; walking global partitions in order produces exactly that.
    active_a = np.zeros(T, dtype=np.uint8)
    cdef uint8_t[:] active = active_a
    for k in range(K):
        active[topic_order[k]] = 1
    indptr_a = np.zeros(num_members + 1, dtype=np.int64)
    cdef int64_t[:] indptr = indptr_a
    cdef int32_t m
    for t in range(T):
        if active[t]:
            for g in range(topic_offset[t], topic_offset[t + 1]):
                m = s.owner[g]
                if m >= 0:
                    indptr[m + 1] += 1
    topic_a, partition_a = _alloc_csr(num_members, indptr)
    cdef int32_t[:] topic = topic_a
    cdef int32_t[:] partition = partition_a
    cursor_a = np.array(indptr_a[:num_members])
    cdef int64_t[:] cursor = cursor_a
    for t in range(T):
        if active[t]:
            for g in range(topic_offset[t], topic_offset[t + 1]):
                m = s.owner[g]
                if m >= 0:
                    topic[cursor[m]] = t
                    partition[cursor[m]] = <int32_t>(g - topic_offset[t])
                    cursor[m] += 1
    return indptr_a, topic_a, partition_a


def string_hashes(list names):
    """Java ``String.hashCode`` of each name (int32), over UTF-16 code units.

    The C twin of ``_javaorder.string_hashes`` (the rule, which the pure twin
    uses): hashing every topic and member id is on the hot path of building
    an ArrayGroup, and this loop needs no UTF-16 copy of the names.
    tests/test_assign_range_roundrobin.py holds both to the scalar rule."""
    cdef Py_ssize_t i, j, k, n = len(names)
    out_a = np.empty(n, dtype=np.int32)
    cdef int32_t[:] out = out_a
    cdef uint32_t h
    cdef Py_UCS4 ch
    cdef uint32_t cp
    cdef str s
    cdef const uint8_t* latin1
    for i in range(n):
        s = names[i]
        h = 0
        if PyUnicode_KIND(s) == PyUnicode_1BYTE_KIND:
            # Latin-1 text (every generated member id): each character is one UTF-16 unit
            latin1 = <const uint8_t*>PyUnicode_DATA(s)
            k = PyUnicode_GET_LENGTH(s)
            j = 0
            while j + 4 <= k:
                # four steps of h = 31 h + c at once: the multiplications no longer wait on each other
                h = (h * 923521u + latin1[j] * 29791u + latin1[j + 1] * 961u + latin1[j + 2] * 31u
                     + latin1[j + 3])
                j += 4
            while j < k:
                h = h * 31 + latin1[j]
                j += 1
            out[i] = <int32_t>h
            continue
        for ch in s:
            cp = <uint32_t>ch
            if cp > 0xFFFF:
                # Java sees a supplementary character as its surrogate pair.
                cp -= 0x10000
                h = h * 31 + (0xD800 + (cp >> 10))
                h = h * 31 + (0xDC00 + (cp & 0x3FF))
            else:
                h = h * 31 + cp
        out[i] = <int32_t>h
    return out_a



cdef bint _valid(const int32_t[:] partition_counts, const int64_t[:] topic_offset, const int64_t[:] sub_indptr,
                 const int32_t[:] sub_topics, const int64_t[:] indptr, const int32_t[:] topic,
                 const int32_t[:] number, int64_t[:] subscriber_mark, uint8_t[:] taken) noexcept nogil:
    # subscriber_mark: per topic, the last member (+ 1) found subscribing to it; taken: per partition
    cdef Py_ssize_t n_topics = partition_counts.shape[0], member
    cdef int64_t entry, slot
    cdef int32_t t, p
    for member in range(indptr.shape[0] - 1):
        for entry in range(sub_indptr[member], sub_indptr[member + 1]):
            subscriber_mark[sub_topics[entry]] = member + 1
        for entry in range(indptr[member], indptr[member + 1]):
            t = topic[entry]
            p = number[entry]
            if t < 0 or t >= n_topics or subscriber_mark[t] != member + 1 or p < 0 or p >= partition_counts[t]:
                return False
            slot = topic_offset[t] + p
            if taken[slot]:
                return False
            taken[slot] = 1
    return True


def assignment_is_valid(const int32_t[:] partition_counts, const int64_t[:] topic_offset,
                        const int64_t[:] sub_indptr, const int32_t[:] sub_topics, const int64_t[:] indptr,
                        const int32_t[:] topic, const int32_t[:] number):
    """See the twin.  One pass over the entries: the sticky pair checks every
    answer, mostly on groups of a few members, where NumPy's calls cost more than the check."""
    cdef Py_ssize_t n_topics = partition_counts.shape[0]
    cdef bint valid
    if topic.shape[0] == 0:
        return True
    cdef int64_t[:] subscriber_mark = np.zeros(max(n_topics, 1), dtype=np.int64)
    cdef uint8_t[:] taken = np.zeros(max(topic_offset[n_topics], 1), dtype=np.uint8)
    with nogil:
        valid = _valid(partition_counts, topic_offset, sub_indptr, sub_topics, indptr, topic, number,
                       subscriber_mark, taken)
    return valid


# -- the sticky default's repair steps: see the twin ------------------------------------------------


def consistent_claims(const int32_t[::1] partition_counts, const int64_t[::1] topic_offset, const int32_t[::1] generation,
                      const int64_t[::1] sub_indptr, const int32_t[::1] sub_topics, const int64_t[::1] owned_indptr,
                      const int32_t[::1] owned_topic, const int32_t[::1] owned_partition):
    """See the twin.  One pass over the claims, with per-topic and
    per-partition marks of the member last seen, where the twin sorts keys."""
    cdef Py_ssize_t n_members = owned_indptr.shape[0] - 1, n_topics = partition_counts.shape[0], member
    cdef int64_t entry, slot
    cdef int32_t t, p, newest
    keep_a = np.zeros(owned_topic.shape[0], dtype=bool)
    if owned_topic.shape[0] == 0:
        return keep_a
    _check_entries(n_topics, partition_counts, owned_topic, owned_partition, False)
    cdef uint8_t[::1] keep = keep_a.view(np.uint8)
    cdef int64_t[::1] subscriber_mark = np.zeros(max(n_topics, 1), dtype=np.int64)
    cdef int64_t[::1] claim_mark = np.zeros(max(topic_offset[n_topics], 1), dtype=np.int64)
    with nogil:
        newest = generation[0]
        for member in range(1, n_members):
            if generation[member] > newest:
                newest = generation[member]
        for member in range(n_members):
            if generation[member] != newest:
                continue
            for entry in range(sub_indptr[member], sub_indptr[member + 1]):
                subscriber_mark[sub_topics[entry]] = member + 1
            for entry in range(owned_indptr[member], owned_indptr[member + 1]):
                t = owned_topic[entry]
                p = owned_partition[entry]
                if subscriber_mark[t] != member + 1 or p >= partition_counts[t]:
                    continue
                slot = topic_offset[t] + p
                if claim_mark[slot] != member + 1:  # else the member listed it before
                    claim_mark[slot] = member + 1
                    keep[entry] = 1
    return keep_a


def transfers_withheld(const int32_t[::1] partition_counts, const int64_t[::1] topic_offset,
                       const int64_t[::1] owned_indptr, const int32_t[::1] owned_topic,
                       const int32_t[::1] owned_partition, const int64_t[::1] indptr, const int32_t[::1] topic,
                       const int32_t[::1] number):
    """See the twin.  Two passes over the answer and one over the claims,
    with a holder and a flag per partition."""
    cdef Py_ssize_t n_members = indptr.shape[0] - 1, n_topics = partition_counts.shape[0], member
    cdef int64_t entry, slot, total = topic_offset[n_topics], written = 0
    cdef int32_t t, p
    holder_a = np.full(max(total, 1), -1, dtype=np.int64)
    cdef int64_t[::1] holder = holder_a
    # per partition: bit 1, a member that owned it lost it; bit 2, a member that owned it kept it
    cdef uint8_t[::1] fate = np.zeros(max(total, 1), dtype=np.uint8)
    out_indptr_a = np.zeros(n_members + 1, dtype=np.int64)
    out_topic_a = np.empty(topic.shape[0], dtype=np.int32)
    out_number_a = np.empty(topic.shape[0], dtype=np.int32)
    cdef int64_t[::1] out_indptr = out_indptr_a
    cdef int32_t[::1] out_topic = out_topic_a, out_number = out_number_a
    _check_entries(n_topics, partition_counts, topic, number, True)
    _check_entries(n_topics, partition_counts, owned_topic, owned_partition, False)
    with nogil:
        for member in range(n_members):
            for entry in range(indptr[member], indptr[member + 1]):
                holder[topic_offset[topic[entry]] + number[entry]] = member
        for member in range(n_members):
            for entry in range(owned_indptr[member], owned_indptr[member + 1]):
                t = owned_topic[entry]
                p = owned_partition[entry]
                if p >= partition_counts[t]:
                    continue  # a claim past the topic's end: no one is given it
                slot = topic_offset[t] + p
                fate[slot] |= 2 if holder[slot] == member else 1
        for member in range(n_members):
            for entry in range(indptr[member], indptr[member + 1]):
                slot = topic_offset[topic[entry]] + number[entry]
                if fate[slot] != 1:
                    out_topic[written] = topic[entry]
                    out_number[written] = number[entry]
                    written += 1
            out_indptr[member + 1] = written
    return out_indptr_a, out_topic_a[:written], out_number_a[:written]


cdef _check_entries(Py_ssize_t n_topics, const int32_t[::1] partition_counts, const int32_t[::1] entry_topic,
                    const int32_t[::1] entry_number, bint to_its_end):
    # The twin indexes NumPy arrays with these and raises IndexError on a bad
    # one (its _check_entries); the loops here would read past their arrays.
    cdef Py_ssize_t entry
    cdef int32_t t, p
    for entry in range(entry_topic.shape[0]):
        t = entry_topic[entry]
        p = entry_number[entry]
        if t < 0 or t >= n_topics or p < 0:
            raise IndexError(f"entry {entry}: topic {t}, partition {p}")
        if to_its_end and p >= partition_counts[t]:
            raise IndexError(f"entry {entry}: partition {p} of a topic of {partition_counts[t]}")
