# UniformHeterogeneousAssignmentBuilder, compiled (included by _server_c.pyx).
# Members are numbered by their position i in the member map's order; see
# _server_py.uniform_heterogeneous, the pure twin, line for line.


@cython.final
cdef class _Het:
    """The builder's state: partition owners per topic (flat, ``base[t] + p``),
    loads per member, the balancer's two ranges, and the rare records only
    overlapping input needs (members holding a partition beside its owner,
    topics kept with no partition)."""

    cdef int32_t[::1] owner, size, sorted_, tp_members, partitions, start, end, counts
    cdef int32_t lo
    cdef int64_t[::1] base, tp_indptr, keys
    cdef Py_ssize_t n
    cdef Py_ssize_t least_end, next_least_i, most_start, most_end, next_most_i
    cdef int64_t least_level, most_level
    cdef dict dup
    cdef set removed_from
    cdef bint track_removals

    # -- MemberAssignmentBalancer ----------------------------------------------

    cdef int64_t imbalance(self, int32_t t) noexcept:
        """What ``init`` returns, without sorting: the spread of the subscribers' loads."""
        cdef int64_t a = self.tp_indptr[t], b = self.tp_indptr[t + 1], j
        cdef int32_t lo = self.size[self.tp_members[a]], hi = lo, x
        for j in range(a + 1, b):
            x = self.size[self.tp_members[j]]
            if x < lo:
                lo = x
            elif x > hi:
                hi = x
        self.lo = lo
        return hi - lo

    cdef int64_t init(self, int32_t t):
        # sortedMembers: the subscribers by (load, index).  They are listed by
        # index already, so a stable counting sort by load gives that order
        # when loads span a narrow range (they do once anything is balanced).
        cdef int64_t a = self.tp_indptr[t], b = self.tp_indptr[t + 1], span = self.imbalance(t), c
        cdef Py_ssize_t i, n = b - a
        cdef int32_t x
        if span <= 4 * n + 64 and span < self.counts.shape[0] - 1:
            for i in range(span + 2):
                self.counts[i] = 0
            for i in range(n):
                self.counts[self.size[self.tp_members[a + i]] - self.lo + 1] += 1
            for i in range(span + 1):
                self.counts[i + 1] += self.counts[i]
            for i in range(n):
                x = self.tp_members[a + i]
                c = self.size[x] - self.lo
                self.sorted_[self.counts[c]] = x
                self.counts[c] += 1
        else:
            for i in range(n):
                self.keys[i] = (<int64_t>self.size[self.tp_members[a + i]] << 32) + self.tp_members[a + i]
            _sort_i64(&self.keys[0], n)
            for i in range(n):
                self.sorted_[i] = <int32_t>(self.keys[i] - ((self.keys[i] >> 32) << 32))
        self.n = n
        self.least_end = 0
        self.least_level = self.size[self.sorted_[0]] - 1
        self.next_least_i = 0
        self.most_start = n
        self.most_end = n
        self.most_level = self.size[self.sorted_[n - 1]] + 1
        self.next_most_i = n - 1
        return self.size[self.sorted_[n - 1]] - self.size[self.sorted_[0]]

    cdef inline int32_t next_least(self):
        if self.next_least_i >= self.least_end:
            self.least_level += 1
            while self.least_end < self.n and self.size[self.sorted_[self.least_end]] == self.least_level:
                self.least_end += 1
            self.next_least_i = 0
        self.next_least_i += 1
        return self.sorted_[self.next_least_i - 1]

    cdef inline int32_t next_most(self):
        if self.next_most_i < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_level = self.size[self.sorted_[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and self.size[self.sorted_[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.next_most_i = self.most_end - 1
        if self.next_most_i < 0:
            return -1
        self.next_most_i -= 1
        return self.sorted_[self.next_most_i + 1]

    cdef inline void exclude(self):
        cdef Py_ssize_t j = self.next_most_i + 1
        cdef int32_t x = self.sorted_[j]
        self.sorted_[j] = self.sorted_[self.most_end - 1]
        self.sorted_[self.most_end - 1] = x
        self.most_end -= 1

    cdef inline bint balanced(self):
        return self.most_level - self.least_level <= 1

    # -- assignPartition --------------------------------------------------------

    cdef inline void move(self, int32_t t, int32_t p, int32_t i):
        cdef int64_t g = self.base[t] + p
        cdef int32_t old = self.owner[g]
        if old != -1:
            self.size[old] -= 1
            if self.track_removals:
                self.removed_from.add((old, t))
        if self.dup:
            holders = self.dup.get((t, p))
            if holders:
                holders.discard(i)
        self.owner[g] = i
        self.size[i] += 1

    cdef int64_t balance_topic(self, int32_t t):
        if self.imbalance(t) <= 1 or self.init(t) <= 1:
            return 0
        cdef int32_t n = self.partitions[t], p, most, least
        cdef int64_t b = self.base[t], moved = 0
        cdef Py_ssize_t k
        for p in range(n):
            self.keys[p] = (<int64_t>self.owner[b + p] << 32) | p
        _sort_i64(&self.keys[0], n)
        for k in range(n):
            most = self.owner[b + (self.keys[k] & LOW32)]
            if self.start[most] < 0:
                self.start[most] = <int32_t>k
            self.end[most] = <int32_t>(k + 1)
        while not self.balanced():
            while True:
                most = self.next_most()
                if most == -1:
                    break
                if self.end[most] < 0 or self.end[most] - self.start[most] <= 0:
                    self.exclude()
                    continue
                break
            if most == -1:
                break
            self.end[most] -= 1
            p = <int32_t>(self.keys[self.end[most]] & LOW32)
            least = self.next_least()
            if self.balanced():
                break
            self.move(t, p, least)
            moved += 1
        for k in range(n):
            most = <int32_t>(self.keys[k] >> 32)
            self.start[most] = -1
            self.end[most] = -1
        return moved


def _topic_order(topics, partitions, tp_indptr, topic_ids):
    """``topics`` sorted as the builder's topic comparator sorts them:
    partitions per subscriber descending (a double), subscribers ascending,
    then ``Uuid.compareTo`` (signed msb, signed lsb)."""
    topics = np.asarray(topics, dtype=np.int64)
    subs = (tp_indptr[topics + 1] - tp_indptr[topics]).astype(np.int64)
    ratio = np.asarray(partitions)[topics].astype(np.float64) / subs
    halves = np.ascontiguousarray(topic_ids[topics]).view(">i8").reshape(-1, 2).astype(np.int64)
    return topics[np.lexsort((halves[:, 1], halves[:, 0], subs, -ratio))].astype(np.int32)


def uniform_heterogeneous(const int32_t[::1] order, const int32_t[::1] member_sub, const int64_t[::1] sub_indptr,
                          const int32_t[::1] sub_topics, topic_ids, const int32_t[::1] partitions,
                          const int64_t[::1] cur_indptr, const int32_t[::1] cur_topics,
                          const int64_t[::1] cur_part_indptr, const int32_t[::1] cur_parts, bint scratch=False):
    """See the twin."""
    cdef Py_ssize_t m_count = order.shape[0], t_count = partitions.shape[0], i, k
    cdef int64_t j, e, g, total = 0, r, stamped = -1, widest = 1
    cdef int32_t t, p, m, n
    tp_indptr_a = np.zeros(t_count + 1, dtype=np.int64)
    cdef int64_t[::1] tp_indptr = tp_indptr_a
    for i in range(m_count):
        r = member_sub[order[i]]
        for j in range(sub_indptr[r], sub_indptr[r + 1]):
            t = sub_topics[j]
            if partitions[t] == -1:
                raise common.unknown_topic_error(bytes(topic_ids[t]))
            tp_indptr[t + 1] += 1
    for k in range(t_count):
        tp_indptr[k + 1] += tp_indptr[k]
    if tp_indptr[t_count] == 0:
        return _nobody(m_count)
    tp_members_a = np.empty(tp_indptr[t_count], dtype=np.int32)
    cdef int32_t[::1] tp_members = tp_members_a
    cursor_a = tp_indptr_a[:t_count].copy()
    cdef int64_t[::1] cursor = cursor_a
    for i in range(m_count):
        r = member_sub[order[i]]
        for j in range(sub_indptr[r], sub_indptr[r + 1]):
            t = sub_topics[j]
            tp_members[cursor[t]] = <int32_t>i
            cursor[t] += 1
    base_a = np.full(t_count, -1, dtype=np.int64)
    cdef int64_t[::1] base = base_a
    for k in range(t_count):
        if tp_indptr[k + 1] > tp_indptr[k]:
            base[k] = total
            total += partitions[k]
            widest = max(widest, partitions[k])
    cdef _Het h = _Het()
    h.owner = np.full(max(total, 1), -1, dtype=np.int32)
    h.size = np.zeros(m_count, dtype=np.int32)
    h.sorted_ = np.empty(m_count, dtype=np.int32)
    h.keys = np.empty(max(m_count, widest), dtype=np.int64)
    h.start = np.full(m_count, -1, dtype=np.int32)
    h.end = np.full(m_count, -1, dtype=np.int32)
    h.counts = np.zeros(4 * m_count + 72, dtype=np.int32)
    h.tp_members = tp_members
    h.tp_indptr = tp_indptr
    h.partitions = partitions.copy()
    h.base = base
    h.dup = {}
    h.removed_from = set()
    h.track_removals = False
    kept_empty = []
    mark_a = np.full(t_count, -1, dtype=np.int64)
    cdef int64_t[::1] mark = mark_a
    stamp_a = np.full(max(total, 1), -1, dtype=np.int64)
    cdef int64_t[::1] stamp = stamp_a
    cdef bint bad
    topic_spread_a = None
    cdef uint32_t[::1] topic_spread
    # 1. keep every partition still subscribed; the last writer owns it
    for i in range(m_count):
        m = order[i]
        if cur_indptr[m] == cur_indptr[m + 1]:
            continue
        r = member_sub[m]
        if r != stamped:
            for j in range(sub_indptr[r], sub_indptr[r + 1]):
                mark[sub_topics[j]] = r
            stamped = r
        bad = False
        for e in range(cur_indptr[m], cur_indptr[m + 1]):
            t = cur_topics[e]
            if mark[t] != r:
                continue
            for j in range(cur_part_indptr[e], cur_part_indptr[e + 1]):
                if cur_parts[j] < 0 or cur_parts[j] >= partitions[t]:
                    bad = True
        if bad:
            # which bad index Java meets first follows the map's and the sets' orders
            if topic_spread_a is None:
                topic_spread_a = _topic_spreads(topic_ids)
                topic_spread = topic_spread_a
            for e in _entry_order(topic_ids, topic_spread, cur_topics, cur_indptr[m], cur_indptr[m + 1]):
                t = cur_topics[e]
                if mark[t] == r:
                    for p in _set_order(cur_parts, cur_part_indptr[e], cur_part_indptr[e + 1], partitions[t]):
                        if p < 0 or p >= partitions[t]:
                            raise common.index_error(p, partitions[t])
        for e in range(cur_indptr[m], cur_indptr[m + 1]):
            t = cur_topics[e]
            if mark[t] != r:
                continue
            if cur_part_indptr[e] == cur_part_indptr[e + 1]:
                kept_empty.append((i, t))
            for j in range(cur_part_indptr[e], cur_part_indptr[e + 1]):
                p = cur_parts[j]
                g = base[t] + p
                if stamp[g] == e:
                    continue
                stamp[g] = e
                h.size[i] += 1
                if h.owner[g] != -1:
                    h.dup.setdefault((t, p), set()).add(h.owner[g])
                h.owner[g] = <int32_t>i
    h.track_removals = bool(kept_empty)
    # 2. hand out the free partitions, topic by topic
    free = []
    for k in range(t_count):
        if base[k] >= 0:
            for j in range(base[k], base[k] + partitions[k]):
                if h.owner[j] == -1:
                    free.append(k)
                    break
    cdef int32_t[::1] sorted_topics = _topic_order(free, partitions, tp_indptr_a, topic_ids)
    for k in range(sorted_topics.shape[0]):
        t = sorted_topics[k]
        h.init(t)
        for p in range(partitions[t]):
            if h.owner[base[t] + p] == -1:
                h.move(t, p, h.next_least())
    # 3. balance the topics two or more members share, at most 16 passes
    shared = np.flatnonzero(np.diff(tp_indptr_a) >= 2)
    sorted_topics = _topic_order(shared, partitions, tp_indptr_a, topic_ids)
    cdef Py_ssize_t last = -1, passes
    cdef bint done = False
    for passes in range(16):        # MAX_ITERATION_COUNT
        for k in range(sorted_topics.shape[0]):
            if k == last:
                done = True
                break
            if h.balance_topic(sorted_topics[k]) > 0 or last == -1:
                last = k
        if done:
            break
    cdef _Pairs pairs = _Pairs(total + 16)
    for k in range(t_count):
        if base[k] >= 0:
            for p in range(partitions[k]):
                pairs.push(order[h.owner[base[k] + p]], _key(<int32_t>k, p, 1))
    for (t, p), holders in h.dup.items():
        for i in holders:
            pairs.push(order[i], _key(t, p, 1))
    for i, t in kept_empty:
        if (i, t) not in h.removed_from:
            pairs.push(order[i], _key(t, 0, 0))
    return pairs.assemble(m_count, scratch)
