# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled sticky / cooperative-sticky assignors over an ArrayGroup.

Same public names and the same output as ``_sticky_py`` (the reference).
Partitions are global integers ``g = topic_offset[t] + p``; every per-partition
fact lives in a C array indexed by ``g``, and per-member lists are intrusive
doubly linked lists threaded through those arrays, so removing a partition
from the middle of a member's list (Java ``List.remove``) keeps list order at
O(1) cost.

Inputs the fast kernels do not model -- consumer racks, a topic listed twice
in one subscription, a partition claimed twice by one member, or a claimed
partition number past the topic's size -- are handed to the reference
implementation, which reproduces Java's behaviour for those too.
"""

import numpy as np
from libc.stdlib cimport qsort
from libc.stdint cimport int64_t, int32_t, uint32_t, uint8_t

from ._javaorder import capacity_after, hashmap_capacity, hashmap_positions, java_rank
from . import _sticky_py as _ref
from ..errors import AssignmentError


IMPLEMENTATION = "cython"

# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

cdef int _cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef inline uint32_t _spread(int32_t h) noexcept nogil:
    cdef uint32_t u = <uint32_t>h
    return u ^ (u >> 16)


def _member_order(group):
    """Iteration order of the leader's members ``HashMap`` (see
    ``_javaorder.hashmap_capacity`` for the crowded-bucket growth rule)."""
    hashes = group.member_hashes()
    cap = hashmap_capacity(hashes.tolist())
    if cap == capacity_after(len(hashes)):
        return group.member_hashmap_order()
    return hashmap_positions(hashes, cap)


# --------------------------------------------------------------------------
# partition movements (general path only; touched once per move)
# --------------------------------------------------------------------------

cdef class _HashSetOrder:
    """First element of a Java ``HashSet<TopicPartition>``; see
    ``_sticky_py.JavaHashSetModel`` for the rules modelled."""
    cdef public int cap
    cdef dict seq
    cdef dict bins
    cdef long next_seq

    def __init__(self):
        self.cap = 16
        self.seq = {}
        self.bins = {}
        self.next_seq = 0

    cdef void _rebin(self, dict hashes) except *:
        cdef dict bins = {}
        cdef uint32_t mask = self.cap - 1
        for g in self.seq:
            b = hashes[g] & mask
            bins[b] = bins.get(b, 0) + 1
        self.bins = bins

    cdef void add(self, long g, uint32_t h, dict hashes) except *:
        if g in self.seq:
            return
        self.seq[g] = self.next_seq
        self.next_seq += 1
        hashes[g] = h
        b = h & (self.cap - 1)
        n = self.bins.get(b, 0) + 1
        self.bins[b] = n
        resized = False
        if n >= 9 and self.cap < 64:
            self.cap *= 2
            resized = True
        while len(self.seq) > self.cap * 3 // 4:
            self.cap *= 2
            resized = True
        if resized:
            self._rebin(hashes)

    cdef void discard(self, long g, dict hashes) except *:
        if g in self.seq:
            del self.seq[g]
            b = hashes[g] & (self.cap - 1)
            self.bins[b] -= 1

    cdef long first(self, dict hashes) except? -2:
        cdef uint32_t mask = self.cap - 1
        best = -1
        best_key = None
        for g, s in self.seq.items():
            k = (hashes[g] & mask, s)
            if best_key is None or k < best_key:
                best, best_key = g, k
        return best


cdef class _Moves:
    cdef dict by_topic
    cdef dict pair_of
    cdef dict hashes

    def __init__(self):
        self.by_topic = {}
        self.pair_of = {}
        self.hashes = {}

    cdef tuple _drop(self, long g, long t):
        pair = self.pair_of.pop(g)
        sets = self.by_topic[t]
        s = <_HashSetOrder>sets[pair]
        s.discard(g, self.hashes)
        if not s.seq:
            del sets[pair]
        if not sets:
            del self.by_topic[t]
        return pair

    cdef void _record(self, long g, long t, tuple pair, uint32_t h) except *:
        self.pair_of[g] = pair
        sets = self.by_topic.get(t)
        if sets is None:
            sets = self.by_topic[t] = {}
        s = sets.get(pair)
        if s is None:
            s = sets[pair] = _HashSetOrder()
        (<_HashSetOrder>s).add(g, h, self.hashes)

    cdef void move(self, long g, long t, int src, int dst, uint32_t h) except *:
        if g in self.pair_of:
            origin = self._drop(g, t)[0]
            if origin != dst:
                self._record(g, t, (origin, dst), h)
        else:
            self._record(g, t, (src, dst), h)

    cdef long substitute(self, long g, long t, int src, int dst) except? -2:
        sets = self.by_topic.get(t)
        if sets is None:
            return g
        p = self.pair_of.get(g)
        if p is not None:
            src = p[0]
        back = sets.get((dst, src))
        if back is None:
            return g
        return (<_HashSetOrder>back).first(self.hashes)


# --------------------------------------------------------------------------
# shared state of one assignment run
# --------------------------------------------------------------------------

cdef class _Run:
    cdef int M, T
    cdef long long P_all
    cdef const int32_t[::1] counts
    cdef const int64_t[::1] off
    cdef uint8_t[::1] valid
    cdef const int64_t[::1] sub_ptr
    cdef const int32_t[::1] sub_t
    cdef const int64_t[::1] own_ptr
    cdef const int32_t[::1] own_t
    cdef const int32_t[::1] own_p
    cdef const int32_t[::1] gen
    cdef const int32_t[::1] sgen
    cdef const int32_t[::1] order
    cdef const int32_t[::1] rank
    cdef const int32_t[::1] thash
    cdef list member_ids          # only for error messages
    # resolution results
    cdef uint8_t[::1] alive       # per owned entry
    cdef uint8_t[::1] contested   # per g
    cdef int max_gen
    cdef bint all_equal
    # member lists
    cdef int32_t[::1] head, tail, size, nxt, prv, holder

    def __init__(self, group, valid):
        self.M = group.num_members
        self.T = len(group.topics)
        self.counts = group.partition_counts
        self.off = group.topic_offset
        self.P_all = int(group.topic_offset[-1]) if self.T else 0
        self.valid = valid
        self.sub_ptr = group.sub_indptr
        self.sub_t = group.sub_topics
        self.own_ptr = group.owned_indptr
        self.own_t = group.owned_topic
        self.own_p = group.owned_partition
        self.gen = group.generation
        self.sgen = group.subscription_generation
        self.order = _member_order(group)
        self.rank = java_rank(group.member_ids)
        self.thash = group.topic_hashes()
        self.member_ids = list(group.member_ids)

    # -- input checks -------------------------------------------------------
    cdef int needs_reference(self) except -1:
        """True when the input uses a feature only the reference models."""
        cdef int m, t
        cdef int64_t e, g
        cdef int32_t p
        cdef int32_t[::1] tstamp = np.zeros(self.T, dtype=np.int32)
        cdef int32_t[::1] gstamp = np.zeros(max(self.P_all, 1), dtype=np.int32)
        for m in range(self.M):
            for e in range(self.sub_ptr[m], self.sub_ptr[m + 1]):
                t = self.sub_t[e]
                if tstamp[t] == m + 1:
                    return True
                tstamp[t] = m + 1
            for e in range(self.own_ptr[m], self.own_ptr[m + 1]):
                t = self.own_t[e]
                if not self.valid[t]:
                    continue
                p = self.own_p[e]
                if p < 0 or p >= self.counts[t]:
                    return True
                g = self.off[t] + p
                if gstamp[g] == m + 1:
                    return True
                gstamp[g] = m + 1
        return False

    # -- owner resolution and path choice -------------------------------------
    cdef void resolve(self) except *:
        cdef int i, m, other, t, L, first_size = 0
        cdef int64_t e, oe, g
        cdef int32_t mg
        cdef uint8_t[::1] in_first = np.zeros(self.T, dtype=np.uint8)
        cdef int64_t[::1] claim = np.full(max(self.P_all, 1), -1, dtype=np.int64)
        cdef int32_t[::1] entry_member = np.empty(max(len(self.own_t), 1), dtype=np.int32)
        self.alive = np.zeros(max(len(self.own_t), 1), dtype=np.uint8)
        self.contested = np.zeros(max(self.P_all, 1), dtype=np.uint8)
        self.all_equal = True
        self.max_gen = -1
        for m in range(self.M):
            for e in range(self.own_ptr[m], self.own_ptr[m + 1]):
                entry_member[e] = m
        for i in range(self.M):
            m = self.order[i]
            L = <int>(self.sub_ptr[m + 1] - self.sub_ptr[m])
            if first_size == 0:
                for e in range(self.sub_ptr[m], self.sub_ptr[m + 1]):
                    in_first[self.sub_t[e]] = 1
                first_size = L
            elif self.all_equal:
                if L != first_size:
                    self.all_equal = False
                else:
                    for e in range(self.sub_ptr[m], self.sub_ptr[m + 1]):
                        if not in_first[self.sub_t[e]]:
                            self.all_equal = False
                            break
            mg = self.gen[m]
            if mg > self.max_gen:
                self.max_gen = mg
            for e in range(self.own_ptr[m], self.own_ptr[m + 1]):
                t = self.own_t[e]
                if not self.valid[t]:
                    continue
                g = self.off[t] + self.own_p[e]
                oe = claim[g]
                if oe < 0:
                    self.alive[e] = 1
                    claim[g] = e
                    continue
                other = entry_member[oe]
                if mg == self.sgen[other]:
                    self.contested[g] = 1
                    self.alive[oe] = 0
                    claim[g] = e
                elif mg > self.sgen[other]:
                    self.alive[e] = 1
                    self.alive[oe] = 0
                    claim[g] = e

    cdef void init_lists(self) except *:
        n = max(self.P_all, 1)
        self.head = np.full(self.M, -1, dtype=np.int32)
        self.tail = np.full(self.M, -1, dtype=np.int32)
        self.size = np.zeros(self.M, dtype=np.int32)
        self.nxt = np.full(n, -1, dtype=np.int32)
        self.prv = np.full(n, -1, dtype=np.int32)
        self.holder = np.full(n, -1, dtype=np.int32)

    cdef inline void append(self, int m, int32_t g) noexcept nogil:
        cdef int32_t last = self.tail[m]
        self.prv[g] = last
        self.nxt[g] = -1
        if last < 0:
            self.head[m] = g
        else:
            self.nxt[last] = g
        self.tail[m] = g
        self.size[m] += 1
        self.holder[g] = m

    cdef inline void unlink(self, int m, int32_t g) noexcept nogil:
        cdef int32_t a = self.prv[g], b = self.nxt[g]
        if a < 0:
            self.head[m] = b
        else:
            self.nxt[a] = b
        if b < 0:
            self.tail[m] = a
        else:
            self.prv[b] = a
        self.size[m] -= 1
        self.holder[g] = -1

    cdef tuple export(self):
        """CSR arrays (member index order) of the current lists."""
        cdef int m, k = 0
        cdef int32_t g
        cdef int64_t total = 0
        cdef int64_t[::1] indptr
        cdef int32_t[::1] ot, op, topic_of
        cdef const int64_t[::1] off = self.off
        for m in range(self.M):
            total += self.size[m]
        indptr_a = np.zeros(self.M + 1, dtype=np.int64)
        indptr = indptr_a
        ot_a = np.empty(total, dtype=np.int32)
        op_a = np.empty(total, dtype=np.int32)
        ot = ot_a
        op = op_a
        topic_of = self._topic_of()
        for m in range(self.M):
            g = self.head[m]
            while g >= 0:
                ot[k] = topic_of[g]
                op[k] = <int32_t>(g - off[topic_of[g]])
                k += 1
                g = self.nxt[g]
            indptr[m + 1] = k
        return indptr_a, ot_a, op_a

    cdef int32_t[::1] _topic_of(self):
        counts = np.asarray(self.counts)
        return np.repeat(np.arange(self.T, dtype=np.int32), counts).astype(np.int32)


# --------------------------------------------------------------------------
# all subscriptions equal
# --------------------------------------------------------------------------

cdef inline bint _on_rack(int64_t g, int rack, const int64_t[::1] rr_ptr, const int32_t[::1] rr) noexcept:
    cdef int64_t e
    if rack < 0 or g + 1 >= rr_ptr.shape[0]:
        return False
    for e in range(rr_ptr[g], rr_ptr[g + 1]):
        if rr[e] == rack:
            return True
    return False


cdef int _next_on_rack(int64_t g, const int32_t[::1] members, int base, int n, int first,
                       const int32_t[::1] member_rack, const int64_t[::1] rr_ptr,
                       const int32_t[::1] rr) noexcept:
    """Java's ``nextRackConsumer``: the first member, cycling from ``first``,
    whose rack holds a replica of ``g``; -1 if none (or ``g`` has no racks)."""
    cdef int i, idx
    if g + 1 >= rr_ptr.shape[0] or rr_ptr[g] == rr_ptr[g + 1]:
        return -1
    for i in range(n):
        idx = (first + i) % n
        if _on_rack(g, member_rack[members[base + idx]], rr_ptr, rr):
            return idx
    return -1


cdef void _constrained(_Run r, bint cooperative, bint rack_active, const int32_t[::1] member_rack,
                       const int64_t[::1] rr_ptr, const int32_t[::1] rr, object crowd) except *:
    cdef int M = r.M, T = r.T
    cdef int i, j, m, t, n_kept, n_under = 0, under_pos, q_head = 0, q_tail = 0
    cdef int64_t e, g, total = 0
    cdef int32_t p, sz
    cdef int lo, hi, n_over, over = 0
    cdef bint from_under
    for t in range(T):
        if r.valid[t]:
            total += r.counts[t]
    lo = <int>(total // M)
    hi = <int>((total + M - 1) // M)
    n_over = <int>(total % M)
    r.init_lists()
    cdef uint8_t[::1] revoked = np.zeros(max(r.P_all, 1), dtype=np.uint8)
    cdef uint8_t[::1] taken = np.zeros(max(r.P_all, 1), dtype=np.uint8)
    cdef uint8_t[::1] withheld = np.zeros(max(r.P_all, 1), dtype=np.uint8)
    cdef int64_t[::1] keys = np.empty(max(len(r.own_t), 1), dtype=np.int64)
    cdef int32_t[::1] under = np.empty(M, dtype=np.int32)
    cdef int32_t[::1] queue = np.empty(2 * M + 1, dtype=np.int32)
    cdef int64_t tt = T if T > 0 else 1
    cdef int64_t key
    cdef bint sorted_already

    for i in range(M):
        m = r.order[i]
        # kept claims, ordered by (partition, topic)
        n_kept = 0
        sorted_already = True
        for e in range(r.own_ptr[m], r.own_ptr[m + 1]):
            if not r.alive[e]:
                continue
            t = r.own_t[e]
            g = r.off[t] + r.own_p[e]
            if r.contested[g]:
                continue
            # a claim on a replica-less rack is dropped (not revoked) in rack-aware mode
            if rack_active and member_rack[m] >= 0 and not _on_rack(g, member_rack[m], rr_ptr, rr):
                continue
            key = <int64_t>r.own_p[e] * tt + t
            if n_kept and key < keys[n_kept - 1]:
                sorted_already = False
            keys[n_kept] = key
            n_kept += 1
        if not sorted_already:
            qsort(&keys[0], n_kept, sizeof(int64_t), _cmp_i64)
        if n_kept < lo:
            sz = n_kept
            under[n_under] = m
            n_under += 1
        elif n_kept >= hi and over < n_over:
            over += 1
            if over == n_over:
                q_tail = 0
            sz = hi
        else:
            sz = lo
            if over < n_over:
                queue[q_tail] = m
                q_tail += 1
        for j in range(n_kept):
            t = <int>(keys[j] % tt)
            p = <int32_t>(keys[j] // tt)
            g = r.off[t] + p
            if j < sz:
                r.append(m, <int32_t>g)
                taken[g] = 1
            else:
                revoked[g] = 1

    _sort_by_rank(under, n_under, r.rank)
    _sort_by_rank(queue, q_tail, r.rank)

    # unassigned partitions: topics in Java order, partitions ascending,
    # then (when consumers have racks) stable-sorted by consumers on their racks
    cdef int64_t n_todo = 0, x
    cdef int k, cursor, cnt
    todo_a = np.empty(max(total, 1), dtype=np.int32)
    cdef int32_t[::1] todo = todo_a
    for t in range(T):
        if not r.valid[t]:
            continue
        for g in range(r.off[t], r.off[t + 1]):
            if not taken[g]:
                todo[n_todo] = <int32_t>g
                n_todo += 1
    if crowd is not None and n_todo > 1:
        head = todo_a[:n_todo]
        todo_a[:n_todo] = head[np.argsort(np.asarray(crowd)[head], kind="stable")]
    cdef uint8_t[::1] done = np.zeros(max(n_todo, 1), dtype=np.uint8)

    if rack_active:
        cursor = 0
        for x in range(n_todo):
            g = todo[x]
            m = -1
            k = _next_on_rack(g, under, 0, n_under, cursor, member_rack, rr_ptr, rr)
            if k >= 0:
                m = under[k]
                cnt = r.size[m] + 1
                if cnt >= lo:
                    for j in range(k, n_under - 1):
                        under[j] = under[j + 1]
                    n_under -= 1
                    if cnt < hi:
                        queue[q_tail] = m
                        q_tail += 1
                else:
                    k += 1
                cursor = 0 if n_under == 0 else k % n_under
            elif q_tail > q_head:
                k = _next_on_rack(g, queue, q_head, q_tail - q_head, 0, member_rack, rr_ptr, rr)
                if k >= 0:
                    m = queue[q_head + k]
                    if r.size[m] + 1 == hi:
                        for j in range(q_head + k, q_tail - 1):
                            queue[j] = queue[j + 1]
                        q_tail -= 1
            if m >= 0:
                r.append(m, <int32_t>g)
                if cooperative and (revoked[g] or r.contested[g]):
                    withheld[g] = 1
                done[x] = 1

    under_pos = 0
    for x in range(n_todo):
        if done[x]:
            continue
        g = todo[x]
        from_under = False
        if under_pos < n_under:
            m = under[under_pos]
            under_pos += 1
            from_under = True
        elif n_under == 0 and q_head == q_tail:
            raise AssignmentError("sticky assignor ran out of members with spare quota "
                                  "(Java: IllegalStateException 'No more unfilled consumers')")
        elif n_under == 0:
            m = queue[q_head]
            q_head += 1
        else:
            under_pos = 0
            m = under[under_pos]
            under_pos += 1
            from_under = True
        r.append(m, <int32_t>g)
        sz = r.size[m]
        if cooperative and (revoked[g] or r.contested[g]):
            withheld[g] = 1
        if sz == lo:
            if not from_under:
                raise AssignmentError("sticky assignor reached an inconsistent state "
                                      "(Java: IllegalStateException from Iterator.remove)")
            under_pos -= 1
            for j in range(under_pos, n_under - 1):
                under[j] = under[j + 1]
            n_under -= 1
            if q_tail >= 2 * M + 1:
                raise AssignmentError("sticky assignor queue overflow")
            queue[q_tail] = m
            q_tail += 1
        elif sz == hi:
            over += 1
    if cooperative:
        # the previous holder must give these up first: drop them from the
        # new owner's list only now, after they counted toward its quota
        for g in range(r.P_all):
            if withheld[g]:
                r.unlink(r.holder[g], <int32_t>g)
    if n_under:
        if over != n_over:
            raise AssignmentError("sticky assignor could not reach the expected number of members "
                                  "above the minimum quota (Java: IllegalStateException)")
        for j in range(n_under):
            if r.size[under[j]] != lo:
                raise AssignmentError("a member ends below the minimum quota (Java: IllegalStateException)")


cdef void _sort_by_rank(int32_t[::1] members, int n, const int32_t[::1] rank) except *:
    if n <= 1:
        return
    cdef int64_t[::1] k = np.empty(n, dtype=np.int64)
    cdef int i
    for i in range(n):
        k[i] = (<int64_t>rank[members[i]] << 32) | <int64_t>members[i]
    qsort(&k[0], n, sizeof(int64_t), _cmp_i64)
    for i in range(n):
        members[i] = <int32_t>(k[i] & 0xFFFFFFFF)


# --------------------------------------------------------------------------
# subscriptions differ
# --------------------------------------------------------------------------

cdef class _Heaps:
    """Members grouped by identical subscription; each group is a binary heap
    on (load, Java id rank), so "the least loaded member, ties by id, among
    those subscribing to topic t" is a min over the groups holding t."""
    cdef int M
    cdef int32_t[::1] cls_of, start, length, heap, pos, size
    cdef const int32_t[::1] rank
    cdef int64_t[::1] tc_ptr
    cdef int32_t[::1] tc

    cdef inline int64_t key(self, int m) noexcept nogil:
        return <int64_t>self.size[m] * self.M + self.rank[m]

    cdef void sift_up(self, int i) noexcept nogil:
        cdef int c = self.cls_of[self.heap[i]]
        cdef int s = self.start[c]
        cdef int m = self.heap[i]
        cdef int64_t k = self.key(m)
        cdef int parent
        while i > s:
            parent = s + (i - s - 1) // 2
            if self.key(self.heap[parent]) <= k:
                break
            self.heap[i] = self.heap[parent]
            self.pos[self.heap[i]] = i
            i = parent
        self.heap[i] = m
        self.pos[m] = i

    cdef void sift_down(self, int i) noexcept nogil:
        cdef int c = self.cls_of[self.heap[i]]
        cdef int s = self.start[c]
        cdef int end = s + self.length[c]
        cdef int m = self.heap[i]
        cdef int64_t k = self.key(m)
        cdef int child, best
        while True:
            child = s + 2 * (i - s) + 1
            if child >= end:
                break
            best = child
            if child + 1 < end and self.key(self.heap[child + 1]) < self.key(self.heap[child]):
                best = child + 1
            if self.key(self.heap[best]) >= k:
                break
            self.heap[i] = self.heap[best]
            self.pos[self.heap[i]] = i
            i = best
        self.heap[i] = m
        self.pos[m] = i

    cdef void changed(self, int m, int delta) noexcept nogil:
        if self.pos[m] < 0:
            return
        if delta > 0:
            self.sift_down(self.pos[m])
        else:
            self.sift_up(self.pos[m])

    cdef void remove(self, int m) noexcept nogil:
        cdef int i = self.pos[m]
        if i < 0:
            return
        cdef int c = self.cls_of[m]
        cdef int last = self.start[c] + self.length[c] - 1
        self.pos[m] = -1
        self.length[c] -= 1
        if i == last:
            return
        cdef int moved = self.heap[last]
        self.heap[i] = moved
        self.pos[moved] = i
        self.sift_up(i)
        self.sift_down(self.pos[moved])

    cdef int best_for(self, int t) noexcept nogil:
        cdef int best = -1, c, m
        cdef int64_t bk = 0, k
        cdef int64_t e
        for e in range(self.tc_ptr[t], self.tc_ptr[t + 1]):
            c = self.tc[e]
            if self.length[c] == 0:
                continue
            m = self.heap[self.start[c]]
            k = self.key(m)
            if best < 0 or k < bk:
                best = m
                bk = k
        return best


cdef class _General:
    cdef _Run r
    cdef _Heaps hp
    cdef _Moves moves
    cdef int32_t[::1] prev_owner, prev_gen, maxsize, topic_of, my_nvalid
    cdef uint8_t[::1] active, movable
    cdef int32_t[::1] top1, top1_m, top2, top1_g, top2_g
    cdef bint snap_taken
    cdef object snap
    cdef long long moves_made, move_budget
    # balanced() is a pure function of the loads and holders, which change
    # only in give()/take(); reassign() asks before every partition, so an
    # unchanged state answers from here instead of a scan of every partition
    # (the scan per partition made large uneven groups quadratic).
    cdef long long state_version, balanced_version
    cdef bint balanced_answer
    # The last scan's proof of imbalance: member witness_m could take
    # partition witness_g from a holder at least two partitions fuller.
    # While that still holds the answer is still no, without a scan.
    cdef int witness_m
    cdef int32_t witness_g

    def __init__(self, _Run r, classes, tc_ptr, tc):
        self.r = r
        self.state_version = 0
        self.balanced_version = -1
        self.witness_g = -1
        self.moves = _Moves()
        self.topic_of = r._topic_of()
        cdef _Heaps hp = _Heaps()
        hp.M = r.M
        hp.size = r.size
        hp.rank = r.rank
        cls_of = np.asarray(classes, dtype=np.int32)
        ncls = int(cls_of.max()) + 1 if r.M else 0
        lengths = np.bincount(cls_of, minlength=ncls).astype(np.int32)
        starts = np.zeros(ncls, dtype=np.int32)
        if ncls > 1:
            starts[1:] = np.cumsum(lengths)[:-1]
        hp.cls_of = cls_of
        hp.start = starts
        hp.length = np.zeros(ncls, dtype=np.int32)
        hp.heap = np.empty(max(r.M, 1), dtype=np.int32)
        hp.pos = np.full(r.M, -1, dtype=np.int32)
        hp.tc_ptr = tc_ptr
        hp.tc = tc
        self.hp = hp
        self.snap_taken = False
        self.moves_made = 0
        valid = np.asarray(r.valid).astype(bool)
        self.move_budget = _ref.move_budget(int(np.asarray(r.counts)[valid].sum()), r.M)

    cdef void activate_all(self) except *:
        cdef int m, c, i
        for m in range(self.r.M):
            c = self.hp.cls_of[m]
            i = self.hp.start[c] + self.hp.length[c]
            self.hp.length[c] += 1
            self.hp.heap[i] = m
            self.hp.pos[m] = i
            self.hp.sift_up(i)

    cdef void give(self, int m, int32_t g) noexcept nogil:
        self.r.append(m, g)
        self.hp.changed(m, 1)
        self.state_version += 1

    cdef void take(self, int m, int32_t g) noexcept nogil:
        self.r.unlink(m, g)
        self.hp.changed(m, -1)
        self.state_version += 1

    cdef bint balanced(self) except -1:
        cdef int answer
        if self.balanced_version == self.state_version:
            return self.balanced_answer
        if self.witness_still_holds():
            self.balanced_version = self.state_version
            self.balanced_answer = False
            return False
        with nogil:
            answer = self._scan_balanced()
        if answer < 0:
            raise AssignmentError("a partition has no holder while balancing (Java: NullPointerException)")
        self.balanced_version = self.state_version
        self.balanced_answer = answer
        return answer

    cdef bint witness_still_holds(self) noexcept nogil:
        # Only loads and holders change during reassign(); subscriptions,
        # maxsize and active do not, so these checks are the whole condition.
        cdef int m = self.witness_m, h, sz
        if self.witness_g < 0:
            return False
        h = self.r.holder[self.witness_g]
        if h < 0 or h == m or not self.active[h]:
            return False
        sz = self.r.size[m]
        return sz != self.maxsize[m] and self.r.size[h] > sz + 1

    cdef int _scan_balanced(self) noexcept nogil:
        """Java's isBalanced(): 1, 0, or -1 when a partition has no holder."""
        cdef int m, t, lo = -1, hi = -1, h, sz, mx
        cdef int64_t e, g
        for m in range(self.r.M):
            if not self.active[m]:
                continue
            sz = self.r.size[m]
            if lo < 0 or sz < lo:
                lo = sz
            if sz > hi:
                hi = sz
        self.witness_g = -1
        if lo < 0 or lo >= hi - 1:
            return 1
        # per topic: the two largest loads among distinct holders
        for t in range(self.r.T):
            self.top1[t] = -1
            self.top1_m[t] = -1
            self.top2[t] = -1
            self.top1_g[t] = -1
            self.top2_g[t] = -1
            if not self.r.valid[t]:
                continue
            for g in range(self.r.off[t], self.r.off[t + 1]):
                h = self.r.holder[g]
                if h < 0:
                    return -1
                if not self.active[h]:
                    continue
                sz = self.r.size[h]
                if h == self.top1_m[t]:
                    continue
                if sz > self.top1[t]:
                    self.top2[t] = self.top1[t]
                    self.top2_g[t] = self.top1_g[t]
                    self.top1[t] = sz
                    self.top1_m[t] = h
                    self.top1_g[t] = <int32_t>g
                elif sz > self.top2[t]:
                    self.top2[t] = sz
                    self.top2_g[t] = <int32_t>g
        for m in range(self.r.M):
            if not self.active[m]:
                continue
            sz = self.r.size[m]
            if sz == self.maxsize[m]:
                continue
            for e in range(self.r.sub_ptr[m], self.r.sub_ptr[m + 1]):
                t = self.r.sub_t[e]
                if not self.r.valid[t]:
                    continue
                mx = self.top2[t] if self.top1_m[t] == m else self.top1[t]
                if mx > sz + 1:
                    self.witness_m = m
                    self.witness_g = self.top2_g[t] if self.top1_m[t] == m else self.top1_g[t]
                    return 0
        return 1

    cdef void take_snapshot(self) except *:
        r = self.r
        self.snap = (np.array(r.head), np.array(r.tail), np.array(r.size), np.array(r.nxt),
                     np.array(r.prv), np.array(r.holder))
        self.snap_taken = True

    cdef void move(self, int32_t g, int dst) except *:
        cdef _Run r = self.r
        cdef int src = r.holder[g]
        cdef int t = self.topic_of[g]
        cdef long actual
        if not self.snap_taken:
            self.take_snapshot()
        self.moves_made += 1
        if self.moves_made > self.move_budget:
            raise AssignmentError("sticky balancing does not converge for this input "
                                  "(Java would loop forever)")
        actual = self.moves.substitute(g, t, src, dst)
        src = r.holder[actual]
        t = self.topic_of[actual]
        cdef int32_t h = <int32_t>((<uint32_t>31 * <uint32_t>(31 + (actual - r.off[t])) + <uint32_t>r.thash[t]))
        self.moves.move(actual, t, src, dst, _spread(h))
        self.take(src, <int32_t>actual)
        self.give(dst, <int32_t>actual)

    cdef bint reassign(self, int32_t[::1] parts, int n) except -1:
        cdef _Run r = self.r
        cdef bint performed = False, modified
        cdef int i, m, pm, load, best, t
        cdef int32_t g
        while True:
            modified = False
            for i in range(n):
                if self.balanced():
                    break
                g = parts[i]
                m = r.holder[g]
                if m < 0:
                    raise AssignmentError("a partition has no holder while balancing (Java: NullPointerException)")
                load = r.size[m]
                pm = self.prev_owner[g]
                if pm >= 0:
                    if not self.active[pm]:
                        # Same words as the pure twin: the implementations must fail alike.
                        raise AssignmentError(f"member {r.member_ids[pm]!r} is referenced while balancing but "
                                              "holds a fixed assignment (Java: NullPointerException)")
                    if load > r.size[pm] + 1:
                        self.move(g, pm)
                        performed = modified = True
                        continue
                t = self.topic_of[g]
                if self.hp.tc_ptr[t + 1] - self.hp.tc_ptr[t] > 64:
                    # A topic shared by many subscription classes: the search
                    # is long enough to be worth handing the GIL over.
                    with nogil:
                        best = self.hp.best_for(t)
                else:
                    best = self.hp.best_for(t)
                if best >= 0 and load > r.size[best] + 1:
                    self.move(g, best)
                    performed = modified = True
            if not modified:
                return performed


cdef void _general(_Run r, bint cooperative, classes, tc_ptr, tc, topic_sort) except *:
    cdef int M = r.M, T = r.T
    cdef int i, m, t, nvt = 0
    cdef int64_t e, g, total = 0, k
    cdef int32_t gg
    cdef bint revocation_required = False, initializing = True, performed
    r.init_lists()
    cdef _General G = _General(r, classes, tc_ptr, tc)
    cdef int32_t[::1] nsubs = np.zeros(T, dtype=np.int32)
    cdef uint8_t[::1] tmark = np.zeros(T, dtype=np.uint8)
    cdef int32_t[::1] tsort = topic_sort
    G.prev_owner = np.full(max(r.P_all, 1), -1, dtype=np.int32)
    G.prev_gen = np.zeros(max(r.P_all, 1), dtype=np.int32)
    G.maxsize = np.zeros(M, dtype=np.int32)
    G.active = np.zeros(M, dtype=np.uint8)
    G.movable = np.zeros(T, dtype=np.uint8)
    G.top1 = np.empty(T, dtype=np.int32)
    G.top1_m = np.empty(T, dtype=np.int32)
    G.top2 = np.empty(T, dtype=np.int32)
    G.top1_g = np.empty(T, dtype=np.int32)
    G.top2_g = np.empty(T, dtype=np.int32)

    for t in range(T):
        if r.valid[t]:
            total += r.counts[t]
            nvt += 1
    for m in range(M):
        for e in range(r.sub_ptr[m], r.sub_ptr[m + 1]):
            t = r.sub_t[e]
            if r.valid[t]:
                nsubs[t] += 1
    for t in range(T):
        G.movable[t] = nsubs[t] >= 2
    for m in range(M):
        k = 0
        i = 0
        for e in range(r.sub_ptr[m], r.sub_ptr[m + 1]):
            t = r.sub_t[e]
            if r.valid[t]:
                k += r.counts[t]
                i += 1
        G.maxsize[m] = <int32_t>(total if i == nvt else k)

    # previous owners: older generations, newest first, ties to the earlier member
    for i in range(M):
        m = r.order[i]
        if r.gen[m] >= r.max_gen:
            continue
        for e in range(r.own_ptr[m], r.own_ptr[m + 1]):
            t = r.own_t[e]
            if not r.valid[t]:
                continue
            g = r.off[t] + r.own_p[e]
            if G.prev_owner[g] < 0 or r.gen[m] > G.prev_gen[g]:
                G.prev_owner[g] = m
                G.prev_gen[g] = r.gen[m]

    # keep surviving claims on topics the member still subscribes to
    for m in range(M):
        for e in range(r.sub_ptr[m], r.sub_ptr[m + 1]):
            tmark[r.sub_t[e]] = 1
        for e in range(r.own_ptr[m], r.own_ptr[m + 1]):
            if not r.alive[e]:
                continue
            t = r.own_t[e]
            if tmark[t]:
                r.append(m, <int32_t>(r.off[t] + r.own_p[e]))
            else:
                revocation_required = True
        for e in range(r.sub_ptr[m], r.sub_ptr[m + 1]):
            tmark[r.sub_t[e]] = 0
        if r.size[m]:
            initializing = False

    G.activate_all()
    for m in range(M):
        G.active[m] = 1

    # the unassigned partitions in (subscriber count, topic, partition) order
    cdef int n_un = 0
    cdef int32_t[::1] unassigned = np.empty(max(total, 1), dtype=np.int32)
    for i in range(len(tsort)):
        t = tsort[i]
        for g in range(r.off[t], r.off[t + 1]):
            if r.holder[g] < 0:
                unassigned[n_un] = <int32_t>g
                n_un += 1
    with nogil:
        for i in range(n_un):
            gg = unassigned[i]
            m = G.hp.best_for(G.topic_of[gg])
            if m >= 0:
                G.give(m, gg)

    # only partitions of shared topics and members with room can move
    cdef int n_re = 0, n_un2 = 0
    cdef int32_t[::1] reassignable = np.empty(max(total, 1), dtype=np.int32)
    for i in range(len(tsort)):
        t = tsort[i]
        if G.movable[t]:
            for g in range(r.off[t], r.off[t + 1]):
                reassignable[n_re] = <int32_t>g
                n_re += 1
    for i in range(n_un):
        if G.movable[G.topic_of[unassigned[i]]]:
            unassigned[n_un2] = unassigned[i]
            n_un2 += 1
    cdef bint can
    for m in range(M):
        can = r.size[m] < G.maxsize[m]
        if not can:
            gg = r.head[m]
            while gg >= 0:
                if G.movable[G.topic_of[gg]]:
                    can = True
                    break
                gg = r.nxt[gg]
        if not can:
            G.active[m] = 0
            G.hp.remove(m)
            G.state_version += 1

    if not revocation_required:
        G.reassign(unassigned, n_un2)
    performed = G.reassign(reassignable, n_re)

    if not initializing and performed and G.snap_taken:
        sizes_now = np.asarray(r.size)[np.asarray(G.active).astype(bool)]
        sizes_then = np.asarray(G.snap[2])[np.asarray(G.active).astype(bool)]
        if _score(sizes_now) >= _score(sizes_then):
            head, tail, size, nxt, prv, holder = G.snap
            np.asarray(r.head)[:] = head
            np.asarray(r.tail)[:] = tail
            np.asarray(r.size)[:] = size
            np.asarray(r.nxt)[:] = nxt
            np.asarray(r.prv)[:] = prv
            np.asarray(r.holder)[:] = holder

    if cooperative:
        _withhold_computed(r)


def _score(sizes):
    s = np.sort(np.asarray(sizes, dtype=np.int64))
    n = len(s)
    return int((s * (2 * np.arange(n, dtype=np.int64) - n + 1)).sum())


cdef void _withhold_computed(_Run r) except *:
    """Cooperative two-phase rule for the general path: a partition that moves
    from one member to another is left unassigned until its old owner has
    given it up."""
    cdef int i, m, t
    cdef int64_t e, g
    cdef int32_t gg
    cdef int32_t[::1] stamp = np.zeros(max(r.P_all, 1), dtype=np.int32)
    cdef int32_t[::1] added_to = np.full(max(r.P_all, 1), -1, dtype=np.int32)
    cdef uint8_t[::1] revoked = np.zeros(max(r.P_all, 1), dtype=np.uint8)
    for i in range(r.M):
        m = r.order[i]
        for e in range(r.own_ptr[m], r.own_ptr[m + 1]):
            t = r.own_t[e]
            if not r.valid[t]:
                continue
            g = r.off[t] + r.own_p[e]
            stamp[g] = m + 1
            if r.holder[g] != m:
                revoked[g] = 1
        gg = r.head[m]
        while gg >= 0:
            if stamp[gg] != m + 1:
                added_to[gg] = m
            gg = r.nxt[gg]
    for g in range(r.P_all):
        if added_to[g] >= 0 and revoked[g]:
            r.unlink(added_to[g], <int32_t>g)


# --------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------

_NO_I32 = np.zeros(1, dtype=np.int32)
_NO_I64 = np.zeros(1, dtype=np.int64)


def _valid_topics(group):
    T = len(group.topics)
    subscribed = np.bincount(group.sub_topics, minlength=T)[:T] > 0
    return (subscribed & (group.partition_counts > 0)).astype(np.uint8)


def _classes(group, valid):
    """Members with the same set of (valid) subscribed topics share a class."""
    index = {}
    classes = np.empty(group.num_members, dtype=np.int32)
    ptr = group.sub_indptr
    subs = group.sub_topics
    vb = valid.astype(bool)
    topic_lists = []
    for m in range(group.num_members):
        s = subs[ptr[m]:ptr[m + 1]]
        s = np.sort(s[vb[s]])
        key = s.tobytes()
        c = index.get(key)
        if c is None:
            c = index[key] = len(index)
            topic_lists.append(s)
        classes[m] = c
    T = len(group.topics)
    per_topic = [[] for _ in range(T)]
    for c, s in enumerate(topic_lists):
        for t in s.tolist():
            per_topic[t].append(c)
    tc_ptr = np.zeros(T + 1, dtype=np.int64)
    tc_ptr[1:] = np.cumsum([len(x) for x in per_topic])
    tc = np.array([c for x in per_topic for c in x], dtype=np.int32)
    return classes, tc_ptr, tc


cdef int _rack_facts(const int32_t[::1] counts, const int64_t[::1] off, const uint8_t[::1] valid,
                     const int64_t[::1] rr_ptr, const int32_t[::1] rr,
                     const int64_t[::1] consumers_on_rack, int n_racks, int64_t[::1] crowd) except -1:
    """What consumer racks change in Java's result, as bit flags.

    1: rack-aware mode is on -- a consumer rack is among the replica racks
       and some partition is not on every replica rack.
    2: "consumers on this partition's racks" (filled into ``crowd``) varies
       between partitions, so the constrained path's stable sort by it
       reorders the unassigned partitions even with rack-aware mode off."""
    cdef int32_t[::1] seen = np.zeros(max(n_racks, 1), dtype=np.int32)
    cdef uint8_t[::1] in_union = np.zeros(max(n_racks, 1), dtype=np.uint8)
    cdef int t, k, n_distinct, union_size = 0, first_size = -1, flags = 0
    cdef int64_t g, e, c, first_crowd = -1
    cdef int32_t stamp = 0
    cdef bint sizes_differ = False, shared_rack = False
    for t in range(counts.shape[0]):
        if not valid[t]:
            continue
        for g in range(off[t], off[t + 1]):
            stamp += 1
            n_distinct = 0
            c = 0
            if g + 1 < rr_ptr.shape[0]:
                for e in range(rr_ptr[g], rr_ptr[g + 1]):
                    k = rr[e]
                    if seen[k] == stamp:
                        continue
                    seen[k] = stamp
                    n_distinct += 1
                    c += consumers_on_rack[k]
                    if not in_union[k]:
                        in_union[k] = 1
                        union_size += 1
                        if consumers_on_rack[k] > 0:
                            shared_rack = True
            crowd[g] = c
            if first_crowd < 0:
                first_crowd = c
                first_size = n_distinct
            else:
                if c != first_crowd:
                    flags |= 2
                if n_distinct != first_size:
                    sizes_differ = True
    # every partition's rack set is a subset of the union, so "all equal to
    # the union" means every set has the union's size
    if shared_rack and (sizes_differ or (first_size >= 0 and first_size != union_size)):
        flags |= 1
    return flags


def _rack_setup(group, valid):
    """(rack-aware on?, member racks, replica-rack CSR, crowd or None)."""
    member_rack = group.member_rack_index()
    n_racks = max(len(group.rack_names), int(member_rack.max()) + 1 if len(member_rack) else 0)
    consumers_on_rack = np.bincount(member_rack[member_rack >= 0], minlength=n_racks).astype(np.int64)
    rr_ptr = group.replica_rack_indptr
    if len(rr_ptr) == 0:
        rr_ptr = np.zeros(1, dtype=np.int64)
    crowd = np.zeros(max(int(group.topic_offset[-1]) if len(group.topic_offset) else 0, 1), dtype=np.int64)
    flags = _rack_facts(group.partition_counts, group.topic_offset, valid, rr_ptr, group.replica_racks,
                        consumers_on_rack, n_racks, crowd)
    return bool(flags & 1), member_rack, rr_ptr, group.replica_racks, (crowd if flags & 2 else None)


def _python_arrays(group, bint cooperative):
    # one named place where the compiled path hands a group to the reference
    return _ref.sticky_arrays(group, cooperative)


def sticky_arrays(group, bint cooperative):
    """Assign an :class:`ArrayGroup`; returns ``(indptr, topic, partition)``
    with each member's partitions in Java's list order."""
    cdef int M = group.num_members
    if M == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32)
    if len(group.topic_offset) and int(group.topic_offset[-1]) > _ref.MAX_PARTITIONS:
        raise AssignmentError(f"more than {_ref.MAX_PARTITIONS} partitions in the metadata; "
                              "no consumer group is that large")
    valid = _valid_topics(group)
    rack_active, member_rack, rr_ptr, rr, crowd = False, _NO_I32, _NO_I64, _NO_I32, None
    if any(group.racks):
        rack_active, member_rack, rr_ptr, rr, crowd = _rack_setup(group, valid)
    cdef _Run r = _Run(group, valid)
    if r.needs_reference():
        return _python_arrays(group, cooperative)
    r.resolve()
    if r.all_equal:
        _constrained(r, cooperative, rack_active, member_rack, rr_ptr, rr, crowd)
        return r.export()
    if rack_active:
        # the general path's rack matching is only in the reference
        return _python_arrays(group, cooperative)
    nsubs = np.bincount(group.sub_topics[valid[group.sub_topics].astype(bool)],
                        minlength=len(group.topics)) if len(group.sub_topics) else np.zeros(len(group.topics), np.int64)
    vt = np.flatnonzero(valid).astype(np.int32)
    topic_sort = vt[np.lexsort((vt, nsubs[vt]))].astype(np.int32)
    classes, tc_ptr, tc = _classes(group, valid)
    _general(r, cooperative, classes, tc_ptr, tc, topic_sort)
    return r.export()


def sticky_assign(group, cooperative):
    """Same contract as ``_sticky_py.sticky_assign``."""
    from ._arrays import ArrayGroup, ArrayAssignment
    _ref._validate(group)
    if not group.members:
        return {}
    ag = ArrayGroup.from_group_input(group)
    out = sticky_arrays(ag, bool(cooperative))
    return ArrayAssignment.for_group(ag, *out).to_dict()
