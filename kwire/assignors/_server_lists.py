"""Kafka's ``UniformAssignor`` builders on plain lists: the pure twin's algorithm, and the small-call path.

``UniformHomogeneousAssignmentBuilder.build`` and ``UniformHeterogeneousAssignmentBuilder.build`` as
functions of Python lists, with the Java orders already derived by the caller (the member map's order, the
homogeneous builder's topic set).  Two callers:

* the pure twin ``_server_py.py``, which reads its checked columns into lists, calls these and builds the
  CSR result from what they return;
* ``_server.py``'s :func:`~kwire.assignors._server.uniform_lists`, a coordinator's path for small groups:
  a consumer-protocol coordinator computes a target at every group epoch bump, and for a group of a few
  members the columns, the kernel's work arrays and the result's arrays cost many times the assignment.

The group: members ``0..M-1``; ``order`` their indices in the member map's order; ``rows[member_sub[m]]``
member m's subscribed topic indices; ``keys[t]`` topic t's 16-byte id and ``partitions[t]`` its partition
count (-1: unknown); ``current[m]`` member m's current assignment as ``[(topic index, [partitions]), ...]``
in its map's insertion order.  Both return the new assignment per member, ``{topic index: [partitions]}``
in no particular order (a partition may be listed twice where the input overlapped; an empty list is an
entry Java keeps with no partition), or None when nobody subscribes to anything.
"""

from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache

from ._javaorder import hashset_capacity_from, uuid_hash, uuid_hash_iteration
from ._server_common import index_error, left_unassigned_error, partition_set_order, unknown_topic_error


#: A bin that reaches this many keys makes Java's table double or turn the bin into a tree: below it the
#: iteration order is plain (bucket, then insertion).
_CROWDED = 9
_MASK32 = 0xFFFFFFFF


def _plain_order(buckets):
    """Positions in bucket order, insertion order within a bucket; None when some bin crowds."""
    if len(buckets) >= _CROWDED:
        counts = {}
        for b in buckets:
            counts[b] = counts.get(b, 0) + 1
        if max(counts.values()) >= _CROWDED:
            return None
    return sorted(range(len(buckets)), key=buckets.__getitem__)


@lru_cache(maxsize=None)
def _set_capacity(n):
    return 16 if n <= 11 else hashset_capacity_from(n)


def set_order(parts):
    """``partition_set_order``: the distinct values of ``parts`` in the order of ``new HashSet<>(parts)``
    (``Integer.hashCode`` is the value), computed here when no bin crowds."""
    if len(parts) <= 1:
        return list(parts)
    cap = _set_capacity(len(parts))
    lo, hi = min(parts), max(parts)
    if lo >= 0 and hi < 65536 and hi - lo < cap:
        # Each value its own bucket, p mod cap (HashMap.hash leaves an int below 2**16 as it is): ascending
        # from the first multiple of cap above lo, then the rest.
        ordered = sorted(set(parts))
        if hi < cap:
            return ordered
        k = bisect_left(ordered, (lo & -cap) + cap)
        return ordered[k:] + ordered[:k]
    distinct = list(dict.fromkeys(parts))
    mask = cap - 1
    buckets = [(p if 0 <= p < 65536 else (p & _MASK32) ^ ((p & _MASK32) >> 16)) & mask for p in distinct]
    pos = _plain_order(buckets)
    if pos is None:
        return partition_set_order(parts)
    return [distinct[i] for i in pos]


_UUID_SPREADS = {}


def entry_order(keys, entries):
    """Positions of a member's entries in the order of the ``new HashMap<Uuid, Set<Integer>>()`` the
    coordinator rebuilds them into (``_server_common.entry_map_order`` on ids as bytes)."""
    if len(entries) > 12:
        return uuid_hash_iteration([keys[t] for t, _ps in entries], 16)   # a table that grows
    spreads = _UUID_SPREADS
    buckets = []
    for t, _ps in entries:
        key = keys[t]
        h = spreads.get(key)
        if h is None:
            if len(spreads) >= 1 << 16:
                spreads.clear()
            h = uuid_hash(key) & _MASK32
            h = spreads[key] = h ^ (h >> 16)
        buckets.append(h & 15)
    pos = _plain_order(buckets)
    return pos if pos is not None else uuid_hash_iteration([keys[t] for t, _ps in entries], 16)


# -- UniformHomogeneousAssignmentBuilder ---------------------------------------

def homogeneous_lists(order, subscribed, keys, partitions, current):
    """``UniformHomogeneousAssignmentBuilder.build``: ``subscribed`` is the first member's topics in the
    order of ``new HashSet<>(them)``, every one known (the caller checked)."""
    m_count = len(order)
    if not subscribed or not m_count:
        return None
    insub = set(subscribed)
    # What the members hold of each topic; a value beyond the topic's range is never asked for below.
    assigned = {t: set() for t in subscribed}
    for entries in current:
        for t, ps in entries:
            if t in insub:
                assigned[t].update(ps)
    unassigned = []
    total = 0
    for t in subscribed:
        held = assigned[t]
        unassigned.extend([(t, p) for p in range(partitions[t]) if p not in held])
        total += partitions[t]
    min_quota, extra = divmod(total, m_count)
    got = [{} for _ in range(m_count)]
    unfilled = []
    for m in order:
        quota = min_quota + (1 if extra > 0 else 0)
        if extra > 0:
            extra -= 1
        entries = current[m]
        mine = got[m]
        held = 0
        for t, ps in entries:
            if t in insub:
                held += len(set(ps)) if len(ps) > 1 else len(ps)
        if held <= quota:
            # Everything is kept: no order can matter.
            for t, ps in entries:
                if t in insub:
                    mine[t] = list(ps)
            quota -= held
        else:
            # quota runs out inside this member's map: its entry order and each
            # set's order decide what is kept (AssignorHelpers' map copies keep them)
            for e in entry_order(keys, entries):
                t, ps = entries[e]
                if t not in insub:
                    continue                   # a topic no longer subscribed: dropped, not freed
                ps = set_order(ps)
                if len(ps) <= quota:
                    quota -= len(ps)
                    mine[t] = ps
                else:
                    if quota:
                        mine[t] = ps[:quota]   # an entry that keeps nothing is no entry
                    unassigned.extend([(t, p) for p in ps[quota:]])
                    quota = 0
        if quota > 0:
            unfilled.append((m, quota))
    i = 0
    for m, q in unfilled:
        take = unassigned[i:i + q]
        i += len(take)
        mine = got[m]
        for t, p in take:
            have = mine.get(t)
            if have is None:
                mine[t] = [p]
            else:
                have.append(p)
    if i < len(unassigned):
        raise left_unassigned_error()
    return got


# -- UniformHeterogeneousAssignmentBuilder -------------------------------------

class _Balancer:
    """``UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer``:
    two ranges over a topic's subscribers sorted by (load, index), the least
    loaded growing rightwards and the most loaded leftwards; it reads the
    live loads in ``size``."""

    def __init__(self, size):
        self.size = size

    def init(self, members):
        size = self.size
        # sorted by (load, index): the pairs are distinct, so sorting them gives the order a key would
        s = self.sorted = [i for _load, i in sorted([(size[i], i) for i in members])]
        n = self.n = len(s)
        self.least_end = 0
        self.least_level = size[s[0]] - 1
        self.next_least_i = 0
        self.most_start = self.most_end = n
        self.most_level = size[s[n - 1]] + 1
        self.next_most_i = n - 1
        return size[s[n - 1]] - size[s[0]]

    def next_least(self):
        size, s = self.size, self.sorted
        if self.next_least_i >= self.least_end:
            self.least_level += 1
            while self.least_end < self.n and size[s[self.least_end]] == self.least_level:
                self.least_end += 1
            self.next_least_i = 0
        r = s[self.next_least_i]
        self.next_least_i += 1
        return r

    def next_most(self):
        size, s = self.size, self.sorted
        if self.next_most_i < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_level = size[s[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and size[s[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.next_most_i = self.most_end - 1
        if self.next_most_i < 0:
            return -1
        r = s[self.next_most_i]
        self.next_most_i -= 1
        return r

    def exclude(self):
        s = self.sorted
        j = self.next_most_i + 1
        s[j], s[self.most_end - 1] = s[self.most_end - 1], s[j]
        self.most_end -= 1

    def balanced(self):
        return self.most_level - self.least_level <= 1


def _topic_sort_key(t, partitions, subs, keys):
    n, s = partitions[t], len(subs[t])
    raw = keys[t]
    return (-(n / s), s, int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True))


def _sorted_topics(topics, partitions, subs, keys):
    """``topics`` sorted by ``_topic_sort_key``, ties in their given order (as a stable sort by that key)."""
    decorated = [(_topic_sort_key(t, partitions, subs, keys), k, t) for k, t in enumerate(topics)]
    decorated.sort()
    return [t for _key, _k, t in decorated]


def _out_of_range(entries, wanted, partitions):
    """Whether some subscribed topic's entry lists a partition outside the topic."""
    for t, ps in entries:
        if ps and t in wanted and (min(ps) < 0 or max(ps) >= partitions[t]):
            return True
    return False


def _give(owner, size, dup, t, p, i):
    """Member ``i`` takes partition ``p`` of ``t``, whose old owner, if any, is already unloaded."""
    if dup:
        holders = dup.get((t, p))
        if holders:
            holders.discard(i)
    owner[t][p] = i
    size[i] += 1


def _move(owner, size, dup, removed_from, t, p, i):
    old = owner[t][p]
    if old != -1:
        size[old] -= 1
        removed_from.add((old, t))
    _give(owner, size, dup, t, p, i)


def heterogeneous_lists(order, member_sub, rows, keys, partitions, current):
    """``UniformHeterogeneousAssignmentBuilder.build`` (members numbered by
    their position in ``order``, the member map's order)."""
    m_count = len(order)
    subs = {}
    for i, m in enumerate(order):
        for t in rows[member_sub[m]]:
            if partitions[t] == -1:
                raise unknown_topic_error(keys[t])
            subs.setdefault(t, []).append(i)
    if not subs:
        return None
    size = [0] * m_count
    owner = {t: [-1] * partitions[t] for t in subs}
    dup = {}                 # (t, p) -> members still holding p beside its owner (overlapping input)
    kept_empty = set()       # (i, t): a subscribed topic kept with no partition
    removed_from = set()     # (i, t): a partition of t was taken from i
    for i, m in enumerate(order):
        wanted = set(rows[member_sub[m]])
        entries = current[m]
        if _out_of_range(entries, wanted, partitions):
            # which bad index Java meets first follows the map's and the sets' orders
            walk = [(entries[e][0], set_order(entries[e][1])) for e in entry_order(keys, entries)]
        else:
            # Each partition's owner and holders are set one partition at a time, whatever the order:
            # only the distinct values count.
            walk = [(t, set(ps) if len(ps) > 1 else ps) for t, ps in entries]
        for t, ps in walk:
            if t not in wanted:
                continue
            size[i] += len(ps)
            if not ps:
                kept_empty.add((i, t))
            own = owner[t]
            for p in ps:
                if p < 0 or p >= len(own):
                    raise index_error(p, len(own))
                if own[p] != -1:
                    dup.setdefault((t, p), set()).add(own[p])
                own[p] = i

    balancer = _Balancer(size)
    free_topics = _sorted_topics([t for t in subs if -1 in owner[t]], partitions, subs, keys)
    for t in free_topics:
        balancer.init(subs[t])
        for p, o in enumerate(owner[t]):
            if o == -1:   # nobody owns it: no old owner to unload
                _give(owner, size, dup, t, p, balancer.next_least())

    shared = _sorted_topics([t for t in subs if len(subs[t]) >= 2], partitions, subs, keys)
    last = -1
    for _ in range(16):          # MAX_ITERATION_COUNT
        for k, t in enumerate(shared):
            if k == last:
                break
            moved = _balance_topic(t, owner[t], subs[t], balancer, owner, size, dup, removed_from)
            if moved > 0 or last == -1:
                last = k
        else:
            continue
        break

    got = [{} for _ in range(m_count)]
    for t in sorted(subs):
        for p, o in enumerate(owner[t]):
            mine = got[order[o]]
            have = mine.get(t)
            if have is None:
                mine[t] = [p]
            else:
                have.append(p)
    for (t, p), holders in dup.items():
        for i in holders:
            got[order[i]].setdefault(t, []).append(p)
    for i, t in kept_empty:
        if (i, t) not in removed_from:
            got[order[i]].setdefault(t, [])
    return got


def _balance_topic(t, own, members, balancer, owner, size, dup, removed_from):
    if balancer.init(members) <= 1:
        return 0
    # by (owner, partition): the pairs are distinct, so sorting them gives the order a key would
    parts = [p for _o, p in sorted([(own[p], p) for p in range(len(own))])]
    start, end = {}, {}
    for k, p in enumerate(parts):
        start.setdefault(own[p], k)
        end[own[p]] = k + 1
    moved = 0
    while not balancer.balanced():
        while True:
            most = balancer.next_most()
            if most == -1:
                break
            if most not in end or end[most] - start[most] <= 0:
                balancer.exclude()
                continue
            break
        if most == -1:
            break
        end[most] -= 1
        p = parts[end[most]]
        least = balancer.next_least()
        if balancer.balanced():
            break
        _move(owner, size, dup, removed_from, t, p, least)
        moved += 1
    return moved
