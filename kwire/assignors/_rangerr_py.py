"""Pure-Python twin of ``_rangerr_c``: the array kernels of the range and
round-robin assignors.

Both twins take and return the same NumPy arrays and must agree bit for bit;
the Cython one is the fast path, this one is the readable statement of the
rules and the fallback under ``KWIRE_NO_EXTENSIONS=1``.  Everything that is
per topic or per member (Java's sort and hash orders) is decided by the
callers in ``kwire.assignors._range`` and ``._roundrobin``; the kernels only do the per-partition
work.

Shared vocabulary:

* ``tp_indptr``/``tp_members``: each topic's subscribers, de-duplicated, in
  ``MemberInfo`` order (static members first).  This is the per-topic
  consumer list both Java assignors walk.
* ``topic_order``: the topics to assign, in the order Java visits them.
* result ``(indptr, topic, partition)``: CSR per member index.
"""

import numpy as np

from . import _javaorder

_I32 = np.int32
_I64 = np.int64


def subscribers_of_shared_topics(num_topics, topic_list, member_order):
    """:func:`subscribers_by_topic` of a group whose every member lists ``topic_list``."""
    topic_list = np.asarray(topic_list)
    if len(topic_list) and (topic_list.min() < 0 or topic_list.max() >= num_topics):
        bad = topic_list[(topic_list < 0) | (topic_list >= num_topics)][0]
        raise IndexError(f"topic index {bad} out of range for {num_topics} topics")
    listed = np.zeros(num_topics, dtype=bool)
    listed[topic_list] = True  # a topic listed twice is subscribed once
    tp_indptr = np.zeros(num_topics + 1, dtype=_I64)
    np.cumsum(listed * len(member_order), out=tp_indptr[1:])
    return tp_indptr, np.tile(np.asarray(member_order, dtype=_I32), int(listed.sum()))


def subscribers_by_topic(num_topics, sub_indptr, sub_topics, member_order):
    """Invert the member->topics CSR into topic->members, members in ``member_order``."""
    num_members = len(sub_indptr) - 1
    rank = np.empty(num_members, dtype=_I64)
    rank[member_order] = np.arange(num_members, dtype=_I64)
    members = np.repeat(np.arange(num_members, dtype=_I32), np.diff(sub_indptr))
    order = np.lexsort((rank[members], sub_topics))
    t = sub_topics[order]
    m = members[order]
    # A topic listed twice by one member must count that member once.
    keep = np.ones(len(t), dtype=bool)
    if len(t) > 1:
        keep[1:] = (t[1:] != t[:-1]) | (m[1:] != m[:-1])
    t, m = t[keep], m[keep]
    tp_indptr = np.zeros(num_topics + 1, dtype=_I64)
    np.cumsum(np.bincount(t, minlength=num_topics), out=tp_indptr[1:])
    return tp_indptr, m.astype(_I32)


def first_seen(num_topics, sub_indptr, sub_topics, member_visit_order, num_distinct):
    """Rank of each topic's first insertion when members are visited in the
    given order and each member's topics in list order; -1 if never seen.
    ``num_distinct`` (how many topics are subscribed at all) allows stopping early."""
    seen = np.full(num_topics, -1, dtype=_I64)
    n = 0
    for m in member_visit_order.tolist():
        if n == num_distinct:
            break
        for t in sub_topics[sub_indptr[m] : sub_indptr[m + 1]].tolist():
            if seen[t] < 0:
                seen[t] = n
                n += 1
    return seen


def _collect(num_members, owner, topic, partition):
    """CSR by member, keeping the given sequence within each member."""
    order = np.argsort(owner, kind="stable")
    indptr = np.zeros(num_members + 1, dtype=_I64)
    np.cumsum(np.bincount(owner, minlength=num_members), out=indptr[1:])
    return indptr, topic[order].astype(_I32), partition[order].astype(_I32)


def _expand(piece_member, piece_topic, piece_start, piece_len):
    """Turn (member, topic, first partition, count) runs into one row per partition."""
    total = int(piece_len.sum())
    run_base = np.repeat(np.cumsum(piece_len) - piece_len, piece_len)
    partition = np.repeat(piece_start, piece_len) + (np.arange(total, dtype=_I64) - run_base)
    return np.repeat(piece_member, piece_len), np.repeat(piece_topic, piece_len), partition


def _topics_to_split(partition_counts, tp_indptr, tp_members, topic_order):
    """``(topic, subscribers, partition count)`` of each topic in ``topic_order``
    that has both subscribers and partitions: what both plain assignors walk."""
    for t in topic_order.tolist():
        subs = tp_members[tp_indptr[t] : tp_indptr[t + 1]]
        P = int(partition_counts[t])
        if len(subs) and P:
            yield t, subs, P


def range_plain(num_members, partition_counts, tp_indptr, tp_members, topic_order):
    """Range without racks: per topic, contiguous runs of P//n, the first P%n
    subscribers one more; a member's list follows ``topic_order``."""
    pm, pt, ps, pl = [], [], [], []
    for t, subs, P in _topics_to_split(partition_counts, tp_indptr, tp_members, topic_order):
        n = len(subs)
        q, r = divmod(P, n)
        i = np.arange(n, dtype=_I64)
        pm.append(subs)
        pt.append(np.full(n, t, dtype=_I32))
        ps.append(i * q + np.minimum(i, r))
        pl.append(q + (i < r))
    if not pm:
        return np.zeros(num_members + 1, dtype=_I64), np.zeros(0, dtype=_I32), np.zeros(0, dtype=_I32)
    owner, topic, partition = _expand(np.concatenate(pm), np.concatenate(pt), np.concatenate(ps), np.concatenate(pl))
    return _collect(num_members, owner, topic, partition)


def roundrobin(num_members, partition_counts, tp_indptr, tp_members, topic_order, member_rank):
    """Round-robin: one cursor over the sorted members runs through all topics
    in ``topic_order``, skipping members not subscribed to the current topic."""
    owners, topics, partitions = [], [], []
    cursor = 0
    for t, subs, P in _topics_to_split(partition_counts, tp_indptr, tp_members, topic_order):
        n = len(subs)
        ranks = member_rank[subs]
        # The next subscriber at or after the cursor, wrapping around the circle.
        j = int(np.searchsorted(ranks, cursor)) % n
        slots = (j + np.arange(P, dtype=_I64)) % n
        owners.append(subs[slots])
        topics.append(np.full(P, t, dtype=_I32))
        partitions.append(np.arange(P, dtype=_I32))
        cursor = int(ranks[(j + P - 1) % n]) + 1
    if not owners:
        return np.zeros(num_members + 1, dtype=_I64), np.zeros(0, dtype=_I32), np.zeros(0, dtype=_I32)
    return _collect(num_members, np.concatenate(owners), np.concatenate(topics), np.concatenate(partitions))


def _racks_of(rr_indptr, rr, g):
    return set(rr[rr_indptr[g] : rr_indptr[g + 1]].tolist())


def rack_needs(partition_counts, topic_offset, tp_indptr, tp_members, member_rack, rr_indptr, rr):
    """Per topic, whether Java's rack-aware range logic applies: some
    subscriber has a rack, it shares a rack with the replicas, and not every
    partition has replicas on every one of the topic's replica racks."""
    T = len(partition_counts)
    needs = np.zeros(T, dtype=np.uint8)
    for t in range(T):
        consumer_racks = {int(r) for r in member_rack[tp_members[tp_indptr[t] : tp_indptr[t + 1]]] if r >= 0}
        if not consumer_racks:
            continue
        base = int(topic_offset[t])
        per_partition = [_racks_of(rr_indptr, rr, base + p) for p in range(int(partition_counts[t]))]
        union = set().union(*per_partition)
        if consumer_racks.isdisjoint(union):
            continue
        needs[t] = any(s != union for s in per_partition)
    return needs


def range_rack(num_members, partition_counts, topic_offset, tp_indptr, tp_members, topic_order, needs, co_indptr,
               co_topics, member_rack, rr_indptr, rr):
    """Range with KIP-881 rack matching.

    Phase 1 places what can be rack-aligned: each co-partitioned group
    (``co_indptr``/``co_topics``: topics with the same subscribers and
    partition count) partition index by partition index, then each other
    topic that ``needs`` it with a rack filter.  Phase 2 hands out the rest
    with plain ranges under the same quotas.  Java sorts every member's list
    by (topic, partition) afterwards, so the result is in global partition
    order per member."""
    owner = np.full(int(topic_offset[-1]), -1, dtype=_I64)
    state = {}
    for t in topic_order.tolist():
        subs = tp_members[tp_indptr[t] : tp_indptr[t + 1]].tolist()
        P = int(partition_counts[t])
        n = len(subs)
        state[t] = {
            "subs": subs,
            "q": P // n,
            "extra": P % n,
            "count": [0] * n,
            "base": int(topic_offset[t]),
            "P": P,
        }

    def max_assignable(s, slot):
        return max(0, s["q"] + (1 if s["extra"] > 0 else 0) - s["count"][slot])

    def assign(s, slot, partitions):
        for p in partitions:
            owner[s["base"] + p] = s["subs"][slot]
        s["count"][slot] += len(partitions)
        if s["count"][slot] > s["q"]:
            s["extra"] -= 1

    def racks_match(s, slot, p):
        r = int(member_rack[s["subs"][slot]])
        return r < 0 or r in _racks_of(rr_indptr, rr, s["base"] + p)

    def assign_ranges(s, use_racks):
        for slot in range(len(s["subs"])):
            free = [p for p in range(s["P"]) if owner[s["base"] + p] < 0]
            if not free:
                break
            limit = max_assignable(s, slot)
            chosen = [p for p in free if not use_racks or racks_match(s, slot, p)][:limit]
            if chosen:
                assign(s, slot, chosen)

    grouped = set(co_topics.tolist())
    for g in range(len(co_indptr) - 1):
        group = [state[t] for t in co_topics[co_indptr[g] : co_indptr[g + 1]].tolist()]
        remaining = list(range(len(group[0]["subs"])))  # slots line up: same subscribers, same order
        for p in range(group[0]["P"]):
            match = None
            for slot in remaining:
                if all(racks_match(s, slot, p) and max_assignable(s, slot) > 0 for s in group):
                    match = slot
                    break
            if match is None:
                continue
            for s in group:
                assign(s, match, [p])
            if all(max_assignable(s, match) == 0 for s in group):
                remaining.remove(match)
                if not remaining:
                    break
    for t in topic_order.tolist():
        if needs[t] and t not in grouped:
            assign_ranges(state[t], True)
    for t in topic_order.tolist():
        assign_ranges(state[t], False)

    assigned = np.flatnonzero(owner >= 0)
    topic = (np.searchsorted(topic_offset, assigned, side="right") - 1).astype(_I32)
    partition = (assigned - topic_offset[topic]).astype(_I32)
    return _collect(num_members, owner[assigned], topic, partition)


def string_hashes(names):
    """Java ``String.hashCode`` of each name (int32): :func:`_javaorder.string_hashes`,
    the rule itself (the compiled twin has its own loop, tested against it)."""
    return _javaorder.string_hashes(names)


#: Members x topics below which assignment_is_valid checks subscriptions in a dense table (at most 16 MB)
#: instead of sorting the entries' keys.
_DENSE_SUBSCRIPTIONS = 1 << 24


def assignment_is_valid(partition_counts, topic_offset, sub_indptr, sub_topics, indptr, topic, number):
    """Whether the assignment ``(indptr, topic, number)`` (CSR per member) is
    valid for the group's columns: every entry an existing partition of a
    topic its member subscribes to, and each partition once."""
    topic = np.asarray(topic, dtype=_I64)
    number = np.asarray(number, dtype=_I64)
    if len(topic) == 0:
        return True
    n_members, n_topics = len(indptr) - 1, len(partition_counts)
    if not ((number >= 0) & (number < partition_counts[topic])).all():
        return False
    keys = np.repeat(np.arange(n_members, dtype=_I64), np.diff(indptr)) * n_topics + topic
    subscription_keys = np.repeat(np.arange(n_members, dtype=_I64), np.diff(sub_indptr)) * n_topics + sub_topics
    if n_members * n_topics <= _DENSE_SUBSCRIPTIONS:
        subscribed = np.zeros(n_members * n_topics, dtype=bool)
        subscribed[subscription_keys] = True
        if not subscribed[keys].all():
            return False
    elif not np.isin(keys, subscription_keys).all():
        return False
    return int(np.bincount(topic_offset[topic] + number).max()) <= 1


# -- the sticky default's repair steps (kwire.assignors._sticky_repair) ------------------------------
# They sit beside assignment_is_valid for the same reason: they are facts about a group's columns and an
# answer's, which every repaired sticky answer computes, and the compiled twin's single passes are what keep a
# repaired answer within a few times its clean twin's cost.


def consistent_claims(partition_counts, topic_offset, generation, sub_indptr, sub_topics, owned_indptr,
                      owned_topic, owned_partition):
    """Per owned entry: whether a consistent group could send it (step 3 of
    ``_sticky_repair``): an existing partition of a topic its member
    subscribes to, from a member of the newest generation, and the member's
    first listing of that partition."""
    n_members, n_topics = len(owned_indptr) - 1, len(partition_counts)
    member = np.repeat(np.arange(n_members, dtype=_I64), np.diff(owned_indptr))
    topic = np.asarray(owned_topic, dtype=_I64)
    number = np.asarray(owned_partition, dtype=_I64)
    if len(topic) == 0:
        return np.zeros(0, dtype=bool)
    _check_entries(n_topics, topic, number)
    keep = (number < np.asarray(partition_counts, dtype=_I64)[topic]) & (generation[member] == generation.max())
    subscription_keys = np.repeat(np.arange(n_members, dtype=_I64), np.diff(sub_indptr)) * n_topics + sub_topics
    keep &= np.isin(member * n_topics + topic, subscription_keys)
    where = np.flatnonzero(keep)
    key = member[where] * (int(topic_offset[-1]) + 1) + topic_offset[topic[where]] + number[where]
    # np.unique's return_index is each key's first occurrence: a member's repeated claim counts once
    _, first = np.unique(key, return_index=True)
    keep[:] = False
    keep[where[first]] = True
    return keep


def _check_entries(n_topics, topic, number, partition_counts=None):
    """IndexError at the first entry that names no topic or a negative
    partition (or, given ``partition_counts``, one past its topic's end),
    where NumPy's indexing would wrap or land in another topic's range."""
    topic, number = np.asarray(topic, dtype=_I64), np.asarray(number, dtype=_I64)
    outside = (topic < 0) | (topic >= n_topics) | (number < 0)
    bad = outside.copy()
    if partition_counts is not None:
        inside = np.flatnonzero(~outside)
        bad[inside] = number[inside] >= np.asarray(partition_counts, dtype=_I64)[topic[inside]]
    if bad.any():
        entry = int(np.flatnonzero(bad)[0])
        if outside[entry]:
            raise IndexError(f"entry {entry}: topic {topic[entry]}, partition {number[entry]}")
        raise IndexError(f"entry {entry}: partition {number[entry]} of a topic of {partition_counts[topic[entry]]}")


def transfers_withheld(partition_counts, topic_offset, owned_indptr, owned_topic, owned_partition, indptr,
                       topic, number):
    """``(indptr, topic, number)``: the valid answer given without each
    partition handed to a member that did not own it while a member that
    owned it loses it (step 4 of ``_sticky_repair``)."""
    n_members = len(indptr) - 1
    topic = np.asarray(topic, dtype=_I32)
    number = np.asarray(number, dtype=_I32)
    _check_entries(len(partition_counts), topic, number, partition_counts)
    _check_entries(len(partition_counts), owned_topic, owned_partition)
    member = np.repeat(np.arange(n_members, dtype=_I64), np.diff(indptr))
    partition = topic_offset[topic] + number
    total = int(topic_offset[-1])
    owned_member = np.repeat(np.arange(n_members, dtype=_I64), np.diff(owned_indptr))
    owned_topic = np.asarray(owned_topic, dtype=_I64)
    owned_number = np.asarray(owned_partition, dtype=_I64)
    exists = owned_number < np.asarray(partition_counts, dtype=_I64)[owned_topic]
    owned_member, owned_at = owned_member[exists], topic_offset[owned_topic[exists]] + owned_number[exists]
    # A valid answer holds each partition once: "this member was given that
    # partition" is one look-up in a holder array.
    holder = np.full(total, -1, dtype=_I64)
    holder[partition] = member
    kept_by_owner = holder[owned_at] == owned_member
    revoked = np.zeros(total, dtype=bool)
    revoked[owned_at[~kept_by_owner]] = True
    owner_kept = np.zeros(total, dtype=bool)
    owner_kept[owned_at[kept_by_owner]] = True
    keep = owner_kept[partition] | ~revoked[partition]
    out_indptr = np.zeros(n_members + 1, dtype=_I64)
    np.cumsum(np.bincount(member[keep], minlength=n_members), out=out_indptr[1:])
    return out_indptr, topic[keep], number[keep]
