# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of ``_server_py``: the server-side assignors of KIP-848
(``UniformAssignor``'s two builders and the server ``RangeAssignor``) on
arrays.  See that module for the meaning of every argument; the two return
identical arrays.

Results are gathered as (member, key) pairs, ``key = topic << 33 | (partition
+ 2**31) << 1 | real`` (``real`` 0 marks an entry Java keeps with no
partition), and :func:`_assemble` groups them per member and sorts them.  The
paths only overlapping or out-of-range input reaches, and hash tables whose
bins crowd (Java's tree bins), call the Python rules in ``_javaorder`` and
``_server_common``.
"""

cimport cython

import gc
import threading
from types import MemberDescriptorType as _MemberDescriptor

import numpy as np

from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.list cimport PyList_GET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)
    Py_ssize_t PyDict_GET_SIZE(object)
    Py_ssize_t PyList_GET_SIZE(object)
    bint PyList_CheckExact(object)
    void* Py_TYPE(PyObject*)


cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
    int T_OBJECT_EX


cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member


cdef Py_ssize_t _slot_offset(type cls, str name) except -2:
    """Where ``cls`` (a class with ``__slots__``) keeps attribute ``name`` in
    its instances, or -1 when it is not a plain object slot of ``cls`` itself."""
    desc = cls.__dict__.get(name)
    if type(desc) is not _MemberDescriptor:
        return -1
    cdef PyMemberDef* member = (<PyMemberDescrObject*>desc).d_member
    return member.offset if member.type == T_OBJECT_EX else -1


cdef inline object _slot(object obj, Py_ssize_t offset, str name):
    """Attribute ``name`` of an instance of exactly the class ``offset`` came
    from, read from its slot; an unset slot raises AttributeError as getattr does."""
    cdef PyObject* value = (<PyObject**>((<char*><PyObject*>obj) + offset))[0]
    if value is NULL:
        return getattr(obj, name)
    return <object>value


cdef extern from *:
    """
    /* An exact int (not a subclass) in long long's range: its value, without
       a call when CPython keeps it in one digit (every partition number below
       2**30).  Anything else says no. */
    static inline int kw_exact_int(PyObject* o, long long* v) {
        int overflow;
        if (!PyLong_CheckExact(o)) return 0;
    #if PY_VERSION_HEX >= 0x030C0000
        if (PyUnstable_Long_IsCompact((PyLongObject*)o)) {
            *v = (long long)PyUnstable_Long_CompactValue((PyLongObject*)o);
            return 1;
        }
    #else
        Py_ssize_t size = Py_SIZE(o);
        if (size == 0) { *v = 0; return 1; }
        if (size == 1) { *v = (long long)((PyLongObject*)o)->ob_digit[0]; return 1; }
        if (size == -1) { *v = -(long long)((PyLongObject*)o)->ob_digit[0]; return 1; }
    #endif
        *v = PyLong_AsLongLongAndOverflow(o, &overflow);
        return overflow == 0;
    }
    """
    bint kw_exact_int(PyObject* o, long long* v) noexcept
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport qsort
from libc.string cimport memcmp

from ._javaorder import hashset_capacity_from, string_hashmap_iteration, uuid_hashes
from ._rangerr_c import string_hashes
from kwire.errors import ArgumentTypeError, ArgumentValueError

from . import _server_common as common

DEF TREEIFY_LEN = 9
cdef int64_t INT_OFFSET = 2147483648   # partitions are stored offset into [0, 2**32)
cdef int64_t LOW32 = 4294967295


cdef int _cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef inline void _sort_i64(int64_t* keys, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef int64_t v
    for i in range(1, n):
        if keys[i - 1] > keys[i]:
            break
    else:
        return                      # already in order: the usual member's pairs
    if n < 64:
        for i in range(1, n):
            v = keys[i]
            j = i - 1
            while j >= 0 and keys[j] > v:
                keys[j + 1] = keys[j]
                j -= 1
            keys[j + 1] = v
    else:
        qsort(keys, n, sizeof(int64_t), _cmp_i64)


cdef inline int64_t _grown(int64_t size, int64_t cap) noexcept nogil:
    # _javaorder._grown: the table doubles while size exceeds 0.75 of it
    while size > cap * 3 // 4:
        cap *= 2
    return cap


cdef inline uint32_t _spread(uint32_t h) noexcept nogil:
    # _javaorder.spread: HashMap.hash
    return h ^ (h >> 16)


cdef inline int64_t _key(int32_t t, int64_t p, int real) noexcept nogil:
    return (<int64_t>t << 33) | ((p + INT_OFFSET) << 1) | real


cdef bint _crowds(const uint32_t* h, Py_ssize_t n, int64_t cap, int32_t[::1] counts) noexcept nogil:
    # _javaorder.may_crowd: could a bin of some table the map passes through hold 9 keys?
    cdef Py_ssize_t held, i
    cdef uint32_t mask
    if n < TREEIFY_LEN:
        return False
    while True:
        held = min(n, cap * 3 // 4 + 1)
        if held >= TREEIFY_LEN:
            mask = <uint32_t>(cap - 1)
            for i in range(cap):
                counts[i] = 0
            for i in range(held):
                counts[h[i] & mask] += 1
                if counts[h[i] & mask] >= TREEIFY_LEN:
                    return True
        if held >= n:
            return False
        cap *= 2


def member_map_order(member_ids):
    """See the twin."""
    names = list(member_ids)
    cdef Py_ssize_t n = len(names), i
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    spread_a = string_hashes(names).view(np.uint32)
    cdef uint32_t[::1] h = spread_a
    for i in range(n):
        h[i] = _spread(h[i])
    cdef int64_t cap = _grown(n, 16)
    counts_a = np.zeros(max(cap, 16) + 1, dtype=np.int32)
    cdef int32_t[::1] counts = counts_a
    if _crowds(&h[0], n, 16, counts):
        return np.asarray(string_hashmap_iteration(names), dtype=np.int32)
    out_a = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] out = out_a
    cdef uint32_t mask = <uint32_t>(cap - 1)
    counts[:] = 0
    for i in range(n):
        counts[(h[i] & mask) + 1] += 1
    for i in range(cap):
        counts[i + 1] += counts[i]
    for i in range(n):
        out[counts[h[i] & mask]] = <int32_t>i
        counts[h[i] & mask] += 1
    return out_a


_POOL = threading.local()


cdef object _scratch(int slot, Py_ssize_t n, object dtype):
    """A work array of ``n`` items that the next call in this thread reuses.

    Fresh arrays of a few MB per call cost page faults, which are kernel work
    that slows down badly on a busy machine; reusing work arrays leaves only the
    returned arrays fresh.  A thread keeps its largest group's work arrays."""
    pool = getattr(_POOL, "arrays", None)
    if pool is None:
        pool = _POOL.arrays = {}
    arr = pool.get(slot)
    if arr is None or arr.shape[0] < n:
        arr = pool[slot] = np.empty(max(n, 16) + (n >> 3), dtype=dtype)
    return arr[:n]


cdef tuple _nobody(Py_ssize_t m_count):
    return (np.zeros(m_count, dtype=bool), np.zeros(m_count + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
            np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32))


cdef tuple _assemble(Py_ssize_t m_count, const int32_t[::1] pm, const int64_t[::1] pkey, Py_ssize_t n,
                     bint scratch):
    """CSR per member (topics ascending, partitions ascending) from n (member,
    key) pairs in any order; a pair seen twice counts once, and an empty-entry
    marker only makes an entry where the topic has no partition."""
    cdef Py_ssize_t i, m
    cdef int64_t[::1] indptr = _scratch(19, m_count + 1, np.int64)
    indptr[:] = 0
    for i in range(n):
        indptr[pm[i] + 1] += 1
    for m in range(m_count):
        indptr[m + 1] += indptr[m]
    cdef int64_t[::1] grouped = _scratch(9, n, np.int64)
    cdef int64_t[::1] cursor = _scratch(18, m_count, np.int64)
    cursor[:] = indptr[:m_count]
    for i in range(n):
        grouped[cursor[pm[i]]] = pkey[i]
        cursor[pm[i]] += 1
    return _emit(m_count, grouped, indptr, scratch)


cdef tuple _emit(Py_ssize_t m_count, int64_t[::1] grouped, const int64_t[::1] indptr, bint scratch):
    """The CSR result from keys already grouped by member (``indptr``): each
    member's keys sorted, repeats dropped, entries made.  With ``scratch`` the
    result is in this thread's work arrays, for a caller (the member level)
    done with it before its next call: no fresh pages per call."""
    cdef Py_ssize_t m, a, b, j, entries = 0, reals = 0
    cdef int64_t k, prev
    cdef int64_t[::1] ecount = _scratch(10, m_count, np.int64)
    for m in range(m_count):
        a = indptr[m]
        b = indptr[m + 1]
        if b - a > 1:
            _sort_i64(&grouped[a], b - a)
        ecount[m] = 0
        prev = -1
        for j in range(a, b):
            k = grouped[j]
            if k == prev:
                continue
            if prev < 0 or (k >> 33) != (prev >> 33):
                ecount[m] += 1
                entries += 1
            if k & 1:
                reals += 1
            prev = k
    if scratch:
        present_a = _scratch(13, m_count, np.bool_)
        out_indptr_a = _scratch(14, m_count + 1, np.int64)
        topics_a = _scratch(15, entries, np.int32)
        part_indptr_a = _scratch(16, entries + 1, np.int64)
        parts_a = _scratch(17, reals, np.int32)
        present_a[:] = True
        out_indptr_a[0] = 0
        part_indptr_a[0] = 0
    else:
        present_a = np.ones(m_count, dtype=bool)
        out_indptr_a = np.zeros(m_count + 1, dtype=np.int64)
        topics_a = np.empty(entries, dtype=np.int32)
        part_indptr_a = np.zeros(entries + 1, dtype=np.int64)
        parts_a = np.empty(reals, dtype=np.int32)
    cdef int64_t[::1] out_indptr = out_indptr_a
    cdef int32_t[::1] topics = topics_a
    cdef int64_t[::1] part_indptr = part_indptr_a
    cdef int32_t[::1] parts = parts_a
    cdef Py_ssize_t e = 0, r = 0
    for m in range(m_count):
        out_indptr[m + 1] = out_indptr[m] + ecount[m]
        prev = -1
        for j in range(indptr[m], indptr[m + 1]):
            k = grouped[j]
            if k == prev:
                continue
            if prev < 0 or (k >> 33) != (prev >> 33):
                topics[e] = <int32_t>(k >> 33)
                e += 1
                part_indptr[e] = part_indptr[e - 1]
            if k & 1:
                parts[r] = <int32_t>(((k >> 1) & LOW32) - INT_OFFSET)
                r += 1
                part_indptr[e] += 1
            prev = k
    return present_a, out_indptr_a, topics_a, part_indptr_a, parts_a


@cython.final
cdef class _Pairs:
    """A growable (member, key) buffer."""
    cdef object pm_a, key_a
    cdef int32_t[::1] pm
    cdef int64_t[::1] key
    cdef Py_ssize_t n

    def __cinit__(self, Py_ssize_t capacity):
        # this thread's work arrays (one _Pairs per kernel call): no fresh pages per call
        _scratch(11, capacity, np.int32)
        _scratch(12, capacity, np.int64)
        self.pm_a = _POOL.arrays[11]
        self.key_a = _POOL.arrays[12]
        self.pm = self.pm_a
        self.key = self.key_a
        self.n = 0

    cdef void grow(self, Py_ssize_t need):
        cdef Py_ssize_t cap = self.pm.shape[0]
        while cap < need:
            cap *= 2
        self.pm_a = np.concatenate([self.pm_a[:self.n], np.empty(cap - self.n, dtype=np.int32)])
        self.key_a = np.concatenate([self.key_a[:self.n], np.empty(cap - self.n, dtype=np.int64)])
        self.pm = self.pm_a
        self.key = self.key_a
        _POOL.arrays[11] = self.pm_a
        _POOL.arrays[12] = self.key_a

    cdef inline void push(self, int32_t m, int64_t key) noexcept:
        if self.n == self.pm.shape[0]:
            self.grow(self.n + 1)   # allocates: only hostile input outgrows the first capacity
        self.pm[self.n] = m
        self.key[self.n] = key
        self.n += 1

    cdef tuple assemble(self, Py_ssize_t m_count, bint scratch):
        return _assemble(m_count, self.pm, self.key, self.n, scratch)


cdef list _set_order(const int32_t[::1] cur_parts, int64_t a, int64_t b, int64_t n):
    """The distinct partitions of ``cur_parts[a:b]`` in the order of ``new
    HashSet<>(list)`` (``_server_common.partition_set_order`` is the rule; this
    is its fast form for in-range lists whose bins cannot crowd)."""
    cdef int64_t length = b - a, cap = hashset_capacity_from(length), j
    cdef int32_t p
    if length == 0:
        return []
    seen = set()
    distinct = []
    for j in range(a, b):
        p = cur_parts[j]
        if p < 0 or p >= n:
            return common.partition_set_order(np.asarray(cur_parts[a:b]))
        if p not in seen:
            seen.add(p)
            distinct.append(p)
    cdef Py_ssize_t i, d = len(distinct)
    keys_a = np.empty(d, dtype=np.int64)
    spread_a = np.empty(d, dtype=np.uint32)
    cdef int64_t[::1] keys = keys_a
    cdef uint32_t[::1] h = spread_a
    cdef uint32_t mask = <uint32_t>(cap - 1)
    for i in range(d):
        h[i] = _spread(<uint32_t>(<int32_t>distinct[i]))
    if d >= TREEIFY_LEN and _crowds(&h[0], d, cap, np.zeros(_grown(d, cap) * 2, dtype=np.int32)):
        return common.partition_set_order(np.asarray(cur_parts[a:b]))
    for i in range(d):
        keys[i] = (<int64_t>(h[i] & mask) << 32) | i
    _sort_i64(&keys[0], len(distinct))
    return [distinct[keys[i] & LOW32] for i in range(len(distinct))]


cdef list _entry_order(object topic_ids, const uint32_t[::1] topic_spread, const int32_t[::1] cur_topics,
                       int64_t a, int64_t b):
    """Entries a..b-1 of one member in the order of its ``new HashMap<Uuid, Set<Integer>>()``."""
    cdef int64_t k = b - a, cap, i
    keys_a = np.empty(max(k, 1), dtype=np.int64)
    spread_a = np.empty(max(k, 1), dtype=np.uint32)
    cdef int64_t[::1] keys = keys_a
    cdef uint32_t[::1] h = spread_a
    for i in range(k):
        h[i] = topic_spread[cur_topics[a + i]]
    if k >= TREEIFY_LEN and _crowds(&h[0], k, 16, np.zeros(_grown(k, 16) * 2, dtype=np.int32)):
        return [a + i for i in common.entry_map_order(topic_ids, [cur_topics[e] for e in range(a, b)])]
    cap = _grown(k, 16)
    for i in range(k):
        keys[i] = (<int64_t>(h[i] & <uint32_t>(cap - 1)) << 32) | i
    _sort_i64(&keys[0], k)
    return [a + (keys[i] & LOW32) for i in range(k)]


def _topic_spreads(topic_ids):
    h = uuid_hashes(topic_ids).view(np.uint32)
    return h ^ (h >> np.uint32(16))


# -- UniformHomogeneousAssignmentBuilder ---------------------------------------

def uniform_homogeneous(const int32_t[::1] order, const int32_t[::1] subscribed, topic_ids,
                        const int32_t[::1] partitions, const int64_t[::1] cur_indptr, const int32_t[::1] cur_topics,
                        const int64_t[::1] cur_part_indptr, const int32_t[::1] cur_parts, bint scratch=False):
    """See the twin."""
    cdef Py_ssize_t m_count = order.shape[0], k_count = subscribed.shape[0], t_count = partitions.shape[0]
    if k_count == 0 or m_count == 0:
        return _nobody(m_count)
    cdef Py_ssize_t i, k, idx
    cdef int64_t e, j, g, total = 0, n, nua = 0, held, quota, min_quota, extra, start
    cdef int32_t t, p, m
    cdef int64_t[::1] base = _scratch(1, t_count, np.int64)
    base[:] = -1
    for k in range(k_count):
        t = subscribed[k]
        base[t] = total
        total += partitions[t]
    cdef Py_ssize_t n_entries = cur_topics.shape[0]
    # The unassigned list: partitions of subscribed topics no member holds (topic by topic), then those
    # revoked (in member map order).  The member loop below revokes into ua[total:] and marks in ``stamp``
    # every partition it finds held, so the first part is listed after it, in ua[:total], without a
    # pass of its own over the current assignment.
    cdef int32_t[::1] ua_t = _scratch(3, total + cur_parts.shape[0], np.int32)
    cdef int32_t[::1] ua_p = _scratch(4, total + cur_parts.shape[0], np.int32)
    cdef int64_t nrv = 0
    min_quota = total // m_count
    extra = total % m_count
    # stamp[g] is the entry that last held partition g (-1: nobody holds it): it drops a partition listed
    # twice in one entry and tells the held partitions from the unassigned ones
    cdef int64_t[::1] stamp = _scratch(5, total if n_entries else 1, np.int64)
    stamp[:] = -1
    # a member's kept keys are contiguous in ``pairs`` (seg[0, m], seg[1, m]: start,
    # length), and its fill is a slice of the unassigned list (seg[2, m], seg[3, m])
    cdef _Pairs pairs = _Pairs(cur_parts.shape[0] + n_entries)
    cdef int64_t[:, ::1] seg = _scratch(6, 4 * m_count, np.int64).reshape(4, m_count)
    seg[:, :] = 0
    cdef int32_t[::1] unfilled_m = _scratch(7, m_count, np.int32)
    cdef int64_t[::1] unfilled_q = _scratch(8, m_count, np.int64)
    cdef Py_ssize_t n_unfilled = 0, mark
    cdef bint fast
    topic_spread_a = None
    cdef uint32_t[::1] topic_spread
    for idx in range(m_count):
        m = order[idx]
        quota = min_quota
        if extra > 0:
            quota += 1
            extra -= 1
        mark = pairs.n
        held = 0
        fast = True
        for e in range(cur_indptr[m], cur_indptr[m + 1]):
            t = cur_topics[e]
            if base[t] < 0:
                continue                       # no longer subscribed: dropped, not freed
            n = partitions[t]
            if cur_part_indptr[e] == cur_part_indptr[e + 1]:
                pairs.push(m, _key(t, 0, 0))
            for j in range(cur_part_indptr[e], cur_part_indptr[e + 1]):
                p = cur_parts[j]
                if p < 0 or p >= n:
                    fast = False
                    break
                g = base[t] + p
                if stamp[g] == e:
                    continue
                stamp[g] = e
                pairs.push(m, _key(t, p, 1))
                held += 1
            if not fast:
                break
        if fast and held <= quota:
            quota -= held
        else:
            # quota runs out inside this member's map: its entry order and each
            # set's order decide what is kept
            pairs.n = mark
            if topic_spread_a is None:
                topic_spread_a = _topic_spreads(topic_ids)
                topic_spread = topic_spread_a
            for e in _entry_order(topic_ids, topic_spread, cur_topics, cur_indptr[m], cur_indptr[m + 1]):
                t = cur_topics[e]
                if base[t] < 0:
                    continue
                ps = _set_order(cur_parts, cur_part_indptr[e], cur_part_indptr[e + 1], partitions[t])
                if not ps:
                    pairs.push(m, _key(t, 0, 0))
                for i in range(len(ps)):
                    p = ps[i]
                    if 0 <= p < partitions[t]:
                        stamp[base[t] + p] = e
                    if quota > 0:
                        quota -= 1
                        pairs.push(m, _key(t, p, 1))
                    else:
                        ua_t[total + nrv] = t
                        ua_p[total + nrv] = p
                        nrv += 1
        seg[0, m] = mark
        seg[1, m] = pairs.n - mark
        if quota > 0:
            unfilled_m[n_unfilled] = m
            unfilled_q[n_unfilled] = quota
            n_unfilled += 1
    for k in range(k_count):
        t = subscribed[k]
        for p in range(partitions[t]):
            if n_entries == 0 or stamp[base[t] + p] < 0:
                ua_t[nua] = t
                ua_p[nua] = p
                nua += 1
    for j in range(nrv):            # nua <= total: moving down never overwrites what is still to move
        ua_t[nua] = ua_t[total + j]
        ua_p[nua] = ua_p[total + j]
        nua += 1
    start = 0
    for i in range(n_unfilled):
        m = unfilled_m[i]
        seg[2, m] = start
        seg[3, m] = min(unfilled_q[i], nua - start)
        start += seg[3, m]
    if start < nua:
        raise common.left_unassigned_error()
    cdef int64_t[::1] indptr = _scratch(19, m_count + 1, np.int64)
    indptr[0] = 0
    for m in range(m_count):
        indptr[m + 1] = indptr[m] + seg[1, m] + seg[3, m]
    cdef int64_t[::1] grouped = _scratch(9, indptr[m_count], np.int64)
    cdef int64_t w
    for m in range(m_count):
        w = indptr[m]
        for j in range(seg[0, m], seg[0, m] + seg[1, m]):
            grouped[w] = pairs.key[j]
            w += 1
        for j in range(seg[2, m], seg[2, m] + seg[3, m]):
            grouped[w] = _key(ua_t[j], ua_p[j], 1)
            w += 1
    return _emit(m_count, grouped, indptr, scratch)


# -- UniformHeterogeneousAssignmentBuilder -------------------------------------

include "_server_hetero.pxi"


# -- the server RangeAssignor ---------------------------------------------------

def range_assign(const int32_t[::1] order, bint homogeneous, const int32_t[::1] member_sub,
                 const int64_t[::1] sub_indptr, const int32_t[::1] sub_topics, const int32_t[::1] partitions,
                 bint scratch=False):
    """See the twin."""
    cdef Py_ssize_t m_count = order.shape[0], t_count = partitions.shape[0], i, k
    if m_count == 0:
        return _nobody(0)
    cdef int64_t j, r, total = 0, q, extra, start, cnt, s0, s1
    cdef int32_t t, m, p
    tp_indptr_a = np.zeros(t_count + 1, dtype=np.int64)
    cdef int64_t[::1] tp_indptr = tp_indptr_a
    members_a = None
    cdef int32_t[::1] tp_members
    cdef int64_t[::1] cursor_v
    if homogeneous:
        r = member_sub[order[0]]
        for j in range(sub_indptr[r], sub_indptr[r + 1]):
            if partitions[sub_topics[j]] == -1:
                raise common.range_unknown_topic_error()
        topics_of = np.asarray(sub_topics[sub_indptr[r]:sub_indptr[r + 1]])
    else:
        for i in range(m_count):
            r = member_sub[order[i]]
            for j in range(sub_indptr[r], sub_indptr[r + 1]):
                t = sub_topics[j]
                if partitions[t] == -1:
                    raise common.range_unknown_topic_error()
                tp_indptr[t + 1] += 1
        for k in range(t_count):
            tp_indptr[k + 1] += tp_indptr[k]
        members_a = np.empty(tp_indptr[t_count], dtype=np.int32)
        tp_members = members_a
        cursor_a = tp_indptr_a[:t_count].copy()
        cursor_v = cursor_a
        for i in range(m_count):
            r = member_sub[order[i]]
            for j in range(sub_indptr[r], sub_indptr[r + 1]):
                t = sub_topics[j]
                _place(tp_members, cursor_v, t, order[i])
        topics_of = np.flatnonzero(np.diff(tp_indptr_a)).astype(np.int32)
    cdef int32_t[::1] topics_v = np.ascontiguousarray(topics_of, dtype=np.int32)
    for k in range(topics_v.shape[0]):
        total += partitions[topics_v[k]]
    cdef _Pairs pairs = _Pairs(total)
    cdef int64_t subscribers
    for k in range(topics_v.shape[0]):
        t = topics_v[k]
        subscribers = m_count if homogeneous else tp_indptr[t + 1] - tp_indptr[t]
        q = partitions[t] // subscribers
        extra = partitions[t] % subscribers
        for i in range(min(<int64_t>partitions[t], subscribers)):
            m = order[i] if homogeneous else tp_members[tp_indptr[t] + i]
            start = i * q + min(<int64_t>i, extra)
            cnt = q + (1 if i < extra else 0)
            for j in range(start, start + cnt):
                pairs.push(m, _key(t, j, 1))
    return pairs.assemble(m_count, scratch)


cdef inline void _place(int32_t[::1] tp_members, int64_t[::1] cursor, int32_t t, int32_t m) noexcept:
    tp_members[cursor[t]] = m
    cursor[t] += 1


# -- the member level's edges: dicts in, columns; columns, dicts out -------------

include "_server_edges.pxi"
