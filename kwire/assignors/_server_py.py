"""The server-side assignors of KIP-848 on arrays, in plain Python: the pure
twin of ``_server_c.pyx`` (same names, same results).

Kafka's group coordinator assigns with ``UniformAssignor`` (which builds with
``UniformHomogeneousAssignmentBuilder`` when every member subscribes to the
same topic names and with ``UniformHeterogeneousAssignmentBuilder`` otherwise)
or its server-side ``RangeAssignor``.  The kernels take the group in columns
(``_server_common.ServerGroupArrays``, checked) plus the Java orders the
caller derived (the member map's order, the homogeneous builder's topic set)
and return ``(present, indptr, topics, part_indptr, parts)``.  Their
``scratch`` flag lets the compiled twin put that result in work arrays the
next call reuses; here every result is new.
"""

from __future__ import annotations

import numpy as np

from kwire.errors import ArgumentTypeError, ArgumentValueError

from ._javaorder import string_hashmap_iteration
from ._server_common import (
    INT32_MAX,
    INT32_MIN,
    content_row,
    entry_map_order,
    index_error,
    left_unassigned_error,
    partition_set_order,
    range_unknown_topic_error,
    same_target,
    unknown_topic_error,
)


def member_map_order(member_ids) -> np.ndarray:
    """Member indices in the iteration order of the coordinator's
    ``new HashMap<String, ...>()`` filled with them in index order."""
    return np.asarray(string_hashmap_iteration(list(member_ids)), dtype=np.int32)


def _entry_parts(cur_part_indptr, cur_parts, e):
    return cur_parts[cur_part_indptr[e]:cur_part_indptr[e + 1]]


def _build(m_count, present, pairs_m, pairs_t, pairs_p, empty_m, empty_t):
    """CSR (sorted by member, topic, partition) from (member, topic, partition)
    triples plus entries that exist with no partition."""
    mm = np.concatenate([np.asarray(pairs_m, dtype=np.int64), np.asarray(empty_m, dtype=np.int64)])
    tt = np.concatenate([np.asarray(pairs_t, dtype=np.int64), np.asarray(empty_t, dtype=np.int64)])
    pp = np.concatenate([np.asarray(pairs_p, dtype=np.int64), np.zeros(len(empty_m), dtype=np.int64)])
    real = np.concatenate([np.ones(len(pairs_m), dtype=bool), np.zeros(len(empty_m), dtype=bool)])
    order = np.lexsort((pp, ~real, tt, mm))
    mm, tt, pp, real = mm[order], tt[order], pp[order], real[order]
    if len(mm):
        # a partition given twice to one member (overlapping input) is in its Java set once
        again = np.zeros(len(mm), dtype=bool)
        again[1:] = (mm[1:] == mm[:-1]) & (tt[1:] == tt[:-1]) & (pp[1:] == pp[:-1]) & (real[1:] == real[:-1])
        mm, tt, pp, real = mm[~again], tt[~again], pp[~again], real[~again]
        new_entry = np.ones(len(mm), dtype=bool)
        new_entry[1:] = (mm[1:] != mm[:-1]) | (tt[1:] != tt[:-1])
        # an empty marker is dropped where its entry also holds partitions
        keep = real | new_entry & np.append((mm[1:] != mm[:-1]) | (tt[1:] != tt[:-1]), True)
        mm, tt, pp, real, new_entry = mm[keep], tt[keep], pp[keep], real[keep], new_entry[keep]
    else:
        new_entry = np.zeros(0, dtype=bool)
    starts = np.flatnonzero(new_entry)
    topics = tt[starts].astype(np.int32)
    entry_member = mm[starts]
    indptr = np.zeros(m_count + 1, dtype=np.int64)
    np.cumsum(np.bincount(entry_member, minlength=m_count), out=indptr[1:])
    part_count = np.add.reduceat(real.astype(np.int64), starts) if len(starts) else np.zeros(0, np.int64)
    part_indptr = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(part_count, out=part_indptr[1:])
    parts = pp[real].astype(np.int32)
    return np.asarray(present, dtype=bool), indptr, topics, part_indptr, parts


def _nobody(m_count):
    return (np.zeros(m_count, dtype=bool), np.zeros(m_count + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
            np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32))


# -- UniformHomogeneousAssignmentBuilder ---------------------------------------

def uniform_homogeneous(order, subscribed, topic_ids, partitions, cur_indptr, cur_topics, cur_part_indptr,
                        cur_parts, scratch=False):
    """``UniformHomogeneousAssignmentBuilder.build``.  ``order``: the member
    map's order; ``subscribed``: the first member's topics in the order of
    ``new HashSet<>(them)``, every one known (the caller checked)."""
    m_count = len(order)
    subscribed = [int(t) for t in subscribed]
    if not subscribed or not m_count:
        return _nobody(m_count)
    t_count = len(partitions)
    insub = np.zeros(t_count, dtype=bool)
    insub[subscribed] = True
    assigned = {t: np.zeros(int(partitions[t]), dtype=bool) for t in subscribed}
    for e in range(len(cur_topics)):
        t = int(cur_topics[e])
        if insub[t]:
            n = int(partitions[t])
            ps = _entry_parts(cur_part_indptr, cur_parts, e)
            ps = ps[(ps >= 0) & (ps < n)]
            assigned[t][ps] = True
    unassigned = []
    total = 0
    for t in subscribed:
        free = np.flatnonzero(~assigned[t])
        unassigned.extend((t, int(p)) for p in free)
        total += int(partitions[t])
    min_quota, extra = divmod(total, m_count)
    pm, pt, pp, em, et = [], [], [], [], []
    unfilled = []
    for m in order:
        m = int(m)
        quota = min_quota + (1 if extra > 0 else 0)
        if extra > 0:
            extra -= 1
        entries = [e for e in range(int(cur_indptr[m]), int(cur_indptr[m + 1]))]
        sets = {e: partition_set_order(_entry_parts(cur_part_indptr, cur_parts, e)) for e in entries
                if insub[cur_topics[e]]}
        held = sum(len(s) for s in sets.values())
        if held > quota:
            # quota runs out inside this member's map: its entry order and each
            # set's order decide what is kept (AssignorHelpers' map copies keep them)
            entries = [entries[i] for i in entry_map_order(topic_ids, [cur_topics[e] for e in entries])]
        for e in entries:
            if e not in sets:
                continue                       # a topic no longer subscribed: dropped, not freed
            t = int(cur_topics[e])
            ps = sets[e]
            if len(ps) <= quota:
                quota -= len(ps)
                kept = ps
            else:
                kept = ps[:quota]
                unassigned.extend((t, p) for p in ps[quota:])
                quota = 0
            if not ps:
                em.append(m)
                et.append(t)
            for p in kept:
                pm.append(m)
                pt.append(t)
                pp.append(p)
        if quota > 0:
            unfilled.append((m, quota))
    i = 0
    for m, q in unfilled:
        take = unassigned[i:i + q]
        i += len(take)
        for t, p in take:
            pm.append(m)
            pt.append(t)
            pp.append(p)
    if i < len(unassigned):
        raise left_unassigned_error()
    return _build(m_count, np.ones(m_count, dtype=bool), pm, pt, pp, em, et)


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
        s = self.sorted = sorted(members, key=lambda i: (size[i], i))
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


def _topic_sort_key(t, partitions, subs, topic_ids):
    n, s = int(partitions[t]), len(subs[t])
    raw = topic_ids[t].tobytes()
    return (-(n / s), s, int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True))


def uniform_heterogeneous(order, member_sub, sub_indptr, sub_topics, topic_ids, partitions, cur_indptr, cur_topics,
                          cur_part_indptr, cur_parts, scratch=False):
    """``UniformHeterogeneousAssignmentBuilder.build`` (members numbered by
    their position in ``order``, the member map's order)."""
    m_count = len(order)
    subs = {}
    for i, m in enumerate(order):
        r = int(member_sub[m])
        for t in sub_topics[sub_indptr[r]:sub_indptr[r + 1]]:
            t = int(t)
            if partitions[t] == -1:
                raise unknown_topic_error(topic_ids[t].tobytes())
            subs.setdefault(t, []).append(i)
    if not subs:
        return _nobody(m_count)
    size = [0] * m_count
    owner = {t: [-1] * int(partitions[t]) for t in subs}
    dup = {}                 # (t, p) -> members still holding p beside its owner (overlapping input)
    kept_empty = set()       # (i, t): a subscribed topic kept with no partition
    removed_from = set()     # (i, t): a partition of t was taken from i
    for i, m in enumerate(order):
        r = int(member_sub[m])
        mine = set(sub_topics[sub_indptr[r]:sub_indptr[r + 1]].tolist())
        entries = list(range(int(cur_indptr[m]), int(cur_indptr[m + 1])))
        sets = {e: partition_set_order(_entry_parts(cur_part_indptr, cur_parts, e)) for e in entries
                if int(cur_topics[e]) in mine}
        if any(p < 0 or p >= partitions[cur_topics[e]] for e, ps in sets.items() for p in ps):
            # which bad index Java meets first follows the map's and the sets' orders
            entries = [entries[k] for k in entry_map_order(topic_ids, [cur_topics[e] for e in entries])]
        for e in entries:
            if e not in sets:
                continue
            t = int(cur_topics[e])
            ps = sets[e]
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

    def move(t, p, i):
        old = owner[t][p]
        if old != -1:
            size[old] -= 1
            removed_from.add((old, t))
        if dup:
            holders = dup.get((t, p))
            if holders:
                holders.discard(i)
        owner[t][p] = i
        size[i] += 1

    balancer = _Balancer(size)
    free_topics = [t for t in subs if -1 in owner[t]]
    free_topics.sort(key=lambda t: _topic_sort_key(t, partitions, subs, topic_ids))
    for t in free_topics:
        balancer.init(subs[t])
        for p, o in enumerate(owner[t]):
            if o == -1:
                move(t, p, balancer.next_least())

    shared = [t for t in subs if len(subs[t]) >= 2]
    shared.sort(key=lambda t: _topic_sort_key(t, partitions, subs, topic_ids))
    last = -1
    for _ in range(16):          # MAX_ITERATION_COUNT
        for k, t in enumerate(shared):
            if k == last:
                break
            moved = _balance_topic(t, owner[t], subs[t], balancer, move)
            if moved > 0 or last == -1:
                last = k
        else:
            continue
        break

    pm, pt, pp, em, et = [], [], [], [], []
    for t in sorted(subs):
        for p, o in enumerate(owner[t]):
            pm.append(order[o])
            pt.append(t)
            pp.append(p)
    for (t, p), holders in dup.items():
        for i in holders:
            pm.append(order[i])
            pt.append(t)
            pp.append(p)
    for i, t in kept_empty:
        if (i, t) not in removed_from:
            em.append(order[i])
            et.append(t)
    return _build(m_count, np.ones(m_count, dtype=bool), pm, pt, pp, em, et)


def _balance_topic(t, own, members, balancer, move):
    if balancer.init(members) <= 1:
        return 0
    parts = sorted(range(len(own)), key=lambda p: (own[p], p))
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
        move(t, p, least)
        moved += 1
    return moved


# -- the server RangeAssignor ---------------------------------------------------

def range_assign(order, homogeneous, member_sub, sub_indptr, sub_topics, partitions, scratch=False):
    """The server ``RangeAssignor.assign``: ``order`` is the members sorted
    static-first (instance id, then member id, in ``String.compareTo`` order).
    Per topic the first ``n % k`` of its ``k`` subscribers get one extra
    partition; ranges are contiguous; the current assignment is not read."""
    m_count = len(order)
    if not m_count:
        return _nobody(0)
    subs = {}
    if homogeneous:
        r = int(member_sub[order[0]])
        for t in sub_topics[sub_indptr[r]:sub_indptr[r + 1]]:
            if partitions[t] == -1:
                raise range_unknown_topic_error()
            subs[int(t)] = order
    else:
        for m in order:
            r = int(member_sub[m])
            for t in sub_topics[sub_indptr[r]:sub_indptr[r + 1]]:
                if partitions[t] == -1:
                    raise range_unknown_topic_error()
                subs.setdefault(int(t), []).append(int(m))
    pm, pt, pp = [], [], []
    for t, members in subs.items():
        n = int(partitions[t])
        q, extra = divmod(n, len(members))
        for k in range(min(n, len(members))):
            start = k * q + min(k, extra)
            for p in range(start, start + q + (1 if k < extra else 0)):
                pm.append(int(members[k]))
                pt.append(t)
                pp.append(p)
    return _build(m_count, np.ones(m_count, dtype=bool), pm, pt, pp, [], [])


def member_dicts(member_ids, topic_keys, present, indptr, topics, part_indptr, parts, current=None, read=None):
    """The member level's result from the CSR columns: ``{member: {topic key:
    [partitions]}}`` for the present members, in index order.  ``current[m]``
    (optional) is member m's assignment as the caller gave it: when it is
    already a dict equal to the target in every detail the result shows (the
    same entries in the same order, keys of the metadata's type, lists of
    ints ascending), that dict is the member's result rather than a copy.
    ``read`` is what ``member_columns`` read of them (``canon`` and the
    current columns), which lets the compiled twin compare columns instead of
    objects; here the objects are compared, to the same effect."""
    if current is not None and len(current) != len(member_ids):
        raise ArgumentValueError(f"{len(current)} current assignments for {len(member_ids)} members")
    out = {}
    for m, mid in enumerate(member_ids):
        if not present[m]:
            continue
        entry = {}
        for e in range(int(indptr[m]), int(indptr[m + 1])):
            entry[topic_keys[topics[e]]] = parts[part_indptr[e]:part_indptr[e + 1]].tolist()
        out[mid] = current[m] if current is not None and same_target(current[m], entry) else entry
    return out


def first_repeat(indptr, values, domain):
    """The first row of a CSR (``indptr`` over ``values``, each in
    ``range(domain)``) that holds a value twice, or -1."""
    for r in range(len(indptr) - 1):
        row = values[indptr[r]:indptr[r + 1]]
        if len(np.unique(row)) != len(row):
            return r
    return -1


def member_columns(member_ids, members, member_class, topic_index, read_assignment=True, scratch=False):
    """The per-member columns of a group given member by member (see
    ``_server_members.server_group``): ``(member_sub, rows, unresolved,
    assignments, canon, cur_indptr, cur_topics, cur_part_indptr, cur_parts)``.

    ``rows`` are the distinct subscription sequences (a list object shared by
    members is read once; equal lists are merged too) and ``unresolved`` their
    unresolved names; ``assignments`` the members' assignment objects as given;
    ``canon`` is None here (the compiled twin marks the members whose
    assignment is in the result's form, see ``member_dicts``);
    ``topic_index(key)`` numbers a topic id of any form.  ``read_assignment``
    False leaves the current assignments out (for an assignor that never reads
    them).  ``scratch`` lets the compiled twin return views of work arrays; here
    the columns are always new."""
    m_count = len(member_ids)
    member_sub = np.empty(m_count, dtype=np.int32)
    by_identity, by_content = {}, {}
    rows, unresolved, assignments = [], [], []
    cur_topics, cur_counts, cur_flat = [], [], []
    cur_indptr = np.zeros(m_count + 1, dtype=np.int64)
    for mid in member_ids:
        if type(mid) is not str:
            raise ArgumentTypeError(f"member ids are str, not {type(mid).__name__}")
    for m in range(m_count):
        member = members[m]
        if not isinstance(member, member_class):
            raise ArgumentTypeError(f"member {member_ids[m]!r} is a {type(member).__name__}, not a ServerMember")
        subs, unres = member.subscribed_topic_ids, member.unresolved_topic_names
        key = (id(subs), id(unres))
        r = by_identity.get(key)
        if r is None:
            r = content_row(subs, unres, rows, unresolved, by_content)
            by_identity[key] = r
        member_sub[m] = r
        assignments.append(member.assignment)
        for tid, parts in (member.assignment.items() if read_assignment else ()):
            cur_topics.append(topic_index(tid))
            parts = list(parts)
            for p in parts:
                if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
                    raise ArgumentTypeError(f"a partition is an int, not {type(p).__name__}")
                if not INT32_MIN <= p <= INT32_MAX:
                    raise ArgumentValueError(f"partition {p} is outside Java's int range")
            cur_counts.append(len(parts))
            cur_flat.extend(parts)
        cur_indptr[m + 1] = len(cur_topics)
    cur_part_indptr = np.zeros(len(cur_counts) + 1, dtype=np.int64)
    np.cumsum(cur_counts, out=cur_part_indptr[1:])
    return (member_sub, rows, unresolved, assignments, None, cur_indptr, np.array(cur_topics, dtype=np.int32),
            cur_part_indptr, np.array(cur_flat, dtype=np.int64).astype(np.int32))
