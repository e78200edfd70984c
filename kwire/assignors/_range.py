"""Java's client ``RangeAssignor`` (3.5+, with KIP-881 rack matching) over an :class:`ArrayGroup`.

What is decided here is per topic or per member and follows Java's
collections: members sort as ``MemberInfo`` (static first), topics are
visited in the iteration order of the leader's ``HashMap`` of partitions per
topic, and topics are grouped for co-partitioned rack matching.  The
per-partition work happens in the ``_rangerr`` kernels.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from ._javaorder import capacity_after, hashmap_buckets, member_info_order, string_hashmap_order, topic_partition_sort_key
from ..errors import AssignmentError
from ._arrays import ArrayAssignment, ArrayGroup, load_kernels
from ._model import MemberAssignments, GroupInput, MemberInput

def java_topic_order(group: ArrayGroup, kernels, subscribed: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Topics with partitions and subscribers, in the order Java's range assignor visits them.

    Java collects the subscribed topics into a ``HashSet`` (members visited in
    the subscriptions ``HashMap`` order), then copies the ones with metadata
    into a ``HashMap``.  Iteration is by bucket of the final map; ties fall
    back to the set's order, whose own ties fall back to first insertion."""
    idx = np.flatnonzero(active).astype(np.int32)
    if len(idx) <= 1:
        return idx
    hashes = group.topic_hashes()[idx]
    set_bucket = hashmap_buckets(hashes, capacity_after(int(subscribed.sum())))
    map_bucket = hashmap_buckets(hashes, capacity_after(len(idx)))
    if len(np.unique(set_bucket)) < len(idx):
        first = kernels.first_seen(
            len(group.topics), group.sub_indptr, group.sub_topics, group.member_hashmap_order(), int(subscribed.sum())
        )
        first = first[idx]
    else:
        first = np.zeros(len(idx), dtype=np.int64)
    return idx[np.lexsort((first, set_bucket, map_bucket))]


def _co_partitioned_groups(group, tp_indptr, tp_members, member_rack, topic_order):
    # Java groups topics by their ordered consumer map and then by the size of
    # the partition-rack map, which is the partition count only when some
    # subscriber has a rack (otherwise it is empty and the group does nothing).
    buckets = {}
    for t in topic_order.tolist():
        subs = tp_members[tp_indptr[t] : tp_indptr[t + 1]]
        if not (member_rack[subs] >= 0).any():
            continue
        buckets.setdefault((int(group.partition_counts[t]), subs.tobytes()), []).append(t)
    groups = [ts for ts in buckets.values() if len(ts) > 1]
    indptr = np.zeros(len(groups) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(g) for g in groups], dtype=np.int64)
    topics = np.array([t for g in groups for t in g], dtype=np.int32)
    return indptr, topics


def assign_range(group: ArrayGroup, implementation: Optional[str] = None) -> ArrayAssignment:
    k = load_kernels("rangerr", implementation)
    T, M = len(group.topics), group.num_members
    tp_indptr, tp_members = k.subscribers_by_topic(T, group.sub_indptr, group.sub_topics, group.member_sort_order())
    subscribed = tp_indptr[1:] > tp_indptr[:-1]
    active = subscribed & (group.partition_counts > 0)
    topic_order = java_topic_order(group, k, subscribed, active)

    member_rack = group.member_rack_index()
    if len(group.replica_racks) and (member_rack >= 0).any():
        needs = k.rack_needs(
            group.partition_counts,
            group.topic_offset,
            tp_indptr,
            tp_members,
            member_rack,
            group.replica_rack_indptr,
            group.replica_racks,
        )
        if needs[topic_order].any():
            co_indptr, co_topics = _co_partitioned_groups(group, tp_indptr, tp_members, member_rack, topic_order)
            out = k.range_rack(
                M,
                group.partition_counts,
                group.topic_offset,
                tp_indptr,
                tp_members,
                topic_order,
                needs,
                co_indptr,
                co_topics,
                member_rack,
                group.replica_rack_indptr,
                group.replica_racks,
            )
            return ArrayAssignment.for_group(group, *out)
    out = k.range_plain(M, group.partition_counts, tp_indptr, tp_members, topic_order)
    return ArrayAssignment.for_group(group, *out)


# -- object-level reference -------------------------------------------------------------------
#
# A direct statement of Java's RangeAssignor over dicts and lists, independent
# of the array kernels above; tests hold the two against each other.


def members_in_map_order(group: GroupInput) -> List[MemberInput]:
    ids = [m.member_id for m in group.members]
    if len(set(ids)) != len(ids):
        raise AssignmentError("member ids must be unique")
    by_id = {m.member_id: m for m in group.members}
    return [by_id[i] for i in string_hashmap_order(ids, capacity_after(len(ids)))]


def member_info_sorted(members: List[MemberInput]) -> List[MemberInput]:
    """``MemberInfo`` order (stable, like ``Collections.sort``)."""
    order = member_info_order([m.group_instance_id for m in members], [m.member_id for m in members])
    return [members[i] for i in order]


class _TopicState:
    def __init__(self, topic, P, consumers, consumer_rack, replica_racks):
        self.topic = topic
        self.P = P
        self.consumers = consumers  # member ids, MemberInfo order, de-duplicated
        self.rack = {c: consumer_rack.get(c) for c in consumers}
        self.free = list(range(P))
        self.count = {c: 0 for c in consumers}
        self.quota, self.extra = divmod(P, len(consumers))
        subscriber_racks = {r for r in self.rack.values() if r}
        self.partition_racks = None
        self.needs_racks = False
        if subscriber_racks:
            self.partition_racks = [{r for r in replica_racks[p] if r is not None} for p in range(P)]
            union = set().union(*self.partition_racks)
            if not subscriber_racks.isdisjoint(union):
                self.needs_racks = any(s != union for s in self.partition_racks)

    def group_key(self):
        return frozenset(self.rack.items()), (self.P if self.partition_racks is not None else 0)

    def room(self, c):
        return max(0, self.quota + (1 if self.extra > 0 else 0) - self.count[c])

    def matches(self, c, p):
        r = self.rack[c]
        return not r or (self.partition_racks is not None and r in self.partition_racks[p])

    def give(self, c, ps, out):
        out[c].extend((self.topic, p) for p in ps)
        self.count[c] += len(ps)
        if self.count[c] > self.quota:
            self.extra -= 1
        taken = set(ps)
        self.free = [p for p in self.free if p not in taken]

    def ranges(self, out, rack_filter):
        for c in self.consumers:
            if not self.free:
                break
            ps = [p for p in self.free if not rack_filter or self.matches(c, p)][: self.room(c)]
            if ps:
                self.give(c, ps, out)


def reference_range(group: GroupInput) -> MemberAssignments:
    members = members_in_map_order(group)
    counts = group.partitions_per_topic
    inserted = list(dict.fromkeys(t for m in members for t in m.topics))  # a HashSet fed in this order
    topic_set = string_hashmap_order(inserted, capacity_after(len(inserted)))
    with_partitions = [t for t in topic_set if counts.get(t, 0) > 0]
    topic_order = string_hashmap_order(with_partitions, capacity_after(len(with_partitions)))

    consumer_rack = {m.member_id: m.rack for m in members if m.rack}
    racks_in = group.partition_racks or {}
    out: MemberAssignments = {m.member_id: [] for m in group.members}
    states = []
    for t in topic_order:
        subscribers = member_info_sorted([m for m in members for tt in m.topics if tt == t])
        consumers = list(dict.fromkeys(m.member_id for m in subscribers))  # Java's LinkedHashMap
        P = counts[t]
        states.append(_TopicState(t, P, consumers, consumer_rack, racks_in.get(t) or [[]] * P))

    rack_aware = any(s.needs_racks for s in states)
    if rack_aware:
        groups: Dict[tuple, List[_TopicState]] = {}
        for s in states:
            groups.setdefault(s.group_key(), []).append(s)
        for (_, P), same in groups.items():
            if len(same) > 1:
                remaining = list(same[0].consumers)
                for p in range(P):
                    c = next((c for c in remaining if all(s.matches(c, p) and s.room(c) > 0 for s in same)), None)
                    if c is None:
                        continue
                    for s in same:
                        s.give(c, [p], out)
                    if all(s.room(c) == 0 for s in same):
                        remaining.remove(c)
                        if not remaining:
                            break
            elif same[0].needs_racks:
                same[0].ranges(out, rack_filter=True)
    for s in states:
        s.ranges(out, rack_filter=False)
    if rack_aware:
        for tps in out.values():
            tps.sort(key=topic_partition_sort_key)
    return out
