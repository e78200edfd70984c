"""Java's client ``RangeAssignor`` (3.5+, with KIP-881 rack matching) over an :class:`ArrayGroup`.

What is decided here is per topic or per member and follows Java's
collections: members sort as ``MemberInfo`` (static first), topics are
visited in the iteration order of the leader's ``HashMap`` of partitions per
topic, and topics are grouped for co-partitioned rack matching.  The
per-partition work happens in the ``_rangerr`` kernels.
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
from typing import Dict, List, Optional, Sequence

import numpy as np

from ._javaorder import (capacity_after, hashmap_buckets, member_info_order, small_string_map_positions,
                         stacked_hashmap_positions, stacked_name_order, string_hashmap_order, topic_partition_sort_key)
from ..errors import AssignmentError
from ._arrays import ArrayAssignment, ArrayGroup, end_to_end, fast_string_hashes, load_kernels, segment_starts
from ._model import MemberAssignments, GroupInput, MemberInput

class GroupStack:
    """Many groups' subscriptions as the columns of one: members and topics
    numbered end to end (group ``g``'s from ``member_base[g]`` and
    ``topic_base[g]``), each topic's subscribers in its own group's
    ``MemberInfo`` order.  A topic's subscribers all belong to its group, so
    the kernels, which split one topic at a time, split a stack as they
    split each group apart; a stack of one group is that group's own arrays."""

    __slots__ = ("groups", "member_base", "num_members", "topic_base", "num_topics", "group_of_topic",
                 "partition_counts", "sub_indptr", "sub_topics", "member_order", "tp_indptr", "tp_members",
                 "shared_topics")

    def __init__(self, groups: Sequence[ArrayGroup], kernels):
        self.groups = groups
        if len(groups) == 1:
            # the common call, one group: its own arrays, nothing numbered anew
            g = groups[0]
            self.member_base = self.topic_base = _ZERO
            self.num_members, self.num_topics = g.num_members, len(g.topics)
            self.group_of_topic = np.zeros(self.num_topics, dtype=np.intp)
            self.partition_counts, self.member_order = g.partition_counts, g.member_sort_order()
            self.shared_topics = g.shared_topics()
            if self.shared_topics is not None:
                # One list for every member: stand for the group as a group of
                # one member holding it, which is all first_seen reads of it.
                self.sub_indptr = np.array([0, len(self.shared_topics)], dtype=np.int64)
                self.sub_topics = self.shared_topics
                self.tp_indptr, self.tp_members = kernels.subscribers_of_shared_topics(
                    self.num_topics, self.shared_topics, self.member_order)
                return
            self.sub_indptr, self.sub_topics = g.sub_indptr, g.sub_topics
        else:
            n_members = np.array([g.num_members for g in groups], dtype=np.int64)
            n_topics = np.array([len(g.topics) for g in groups], dtype=np.int64)
            self.member_base, self.num_members = segment_starts(n_members)
            self.topic_base, self.num_topics = segment_starts(n_topics)
            self.group_of_topic = np.repeat(np.arange(len(groups)), n_topics)
            n_subs = np.array([len(g.sub_topics) for g in groups], dtype=np.int64)
            sub_base, n_all = segment_starts(n_subs)
            self.partition_counts = np.concatenate([g.partition_counts for g in groups])
            # each group's indptr but its last entry (a view per group cost more than dropping them after)
            indptr = np.delete(np.concatenate([g.sub_indptr for g in groups]), np.cumsum(n_members + 1) - 1)
            self.sub_indptr = np.append(indptr + np.repeat(sub_base, n_members), n_all)
            self.sub_topics = (np.concatenate([g.sub_topics for g in groups])
                               + np.repeat(self.topic_base, n_subs)).astype(np.int32)
            self.member_order = _stacked_member_order(groups, n_members, self.member_base)
            self.shared_topics = None
        self.tp_indptr, self.tp_members = kernels.subscribers_by_topic(self.num_topics, self.sub_indptr,
                                                                        self.sub_topics, self.member_order)

    def answer(self, indptr, topic, partition) -> ArrayAssignment:
        """A kernel's answer on the stack, each topic numbered in its own group again."""
        local = topic - self.topic_base[self.group_of_topic[topic]]
        return ArrayAssignment(indptr, local.astype(np.int32), partition)

    def topic_hashes(self) -> np.ndarray:
        if len(self.groups) == 1:
            return self.groups[0].topic_hashes()
        # One hashing call for the stack: each group's own (cached) hashes
        # cost a kernel call per group, several times the hashing itself.
        return fast_string_hashes([t for g in self.groups for t in g.topics])

    def member_hashmap_order(self) -> np.ndarray:
        """Members in each group's ``HashMap`` iteration order, group after group, numbered as in the stack."""
        if len(self.groups) == 1:
            return self.groups[0].member_hashmap_order()
        return stacked_hashmap_positions(fast_string_hashes([m for g in self.groups for m in g.member_ids]),
                                         np.diff(np.append(self.member_base, self.num_members)))


_ZERO = np.zeros(1, dtype=np.int64)
_ONE_MEMBER = np.zeros(1, dtype=np.int32)  # a shared topic list's stand-in member (GroupStack)

#: Within :func:`sharing_stacks`: the last multi-group stack built, with its groups and kernels.
_SHARED_STACK: contextvars.ContextVar = contextvars.ContextVar("kwire_shared_stack", default=None)


@contextlib.contextmanager
def sharing_stacks():
    """Within the block, range and roundrobin on the very same group objects
    (:func:`~kwire.assignors.assign_arrays_many` of both, as the what-if runs
    them) share the one stack of their columns, the larger part of what
    roundrobin costs there.  The groups must not change inside the block;
    on leaving it the stack is dropped (per thread and task: a ContextVar)."""
    token = _SHARED_STACK.set([None])
    try:
        yield
    finally:
        _SHARED_STACK.reset(token)


def stack_of(groups: Sequence[ArrayGroup], kernels) -> GroupStack:
    """The :class:`GroupStack` of ``groups``: inside :func:`sharing_stacks`,
    the previous call's when it was on the same group objects and kernels."""
    shared = _SHARED_STACK.get()
    if len(groups) == 1 or shared is None:
        return GroupStack(groups, kernels)  # one group's stack is its own arrays: nothing worth keeping
    last = shared[0]
    if (last is not None and last[0] is kernels and len(last[1]) == len(groups)
            and all(map(operator.is_, last[1], groups))):
        return last[2]
    stack = GroupStack(groups, kernels)
    shared[0] = (kernels, list(groups), stack)
    return stack


def _stacked_member_order(groups, n_members, member_base) -> np.ndarray:
    """Each group's ``member_sort_order``, numbered as in the stack: one sort
    for all, static members by instance id ahead of dynamic ones by member
    id (``member_info_order``), but for groups where two static members
    share an instance id, which keep their HashMap order and sort alone."""
    ids = [m for g in groups for m in g.member_ids]
    instance_ids = [i for g in groups for i in g.group_instance_ids]
    if instance_ids.count(None) == len(instance_ids):
        order = stacked_name_order(ids, n_members)
    else:
        dynamic = np.fromiter((i is None for i in instance_ids), bool, len(instance_ids))
        order = stacked_name_order([m if i is None else i for m, i in zip(ids, instance_ids)], n_members, dynamic)
    if order is None:
        return (np.concatenate([g.member_sort_order() for g in groups])
                + np.repeat(member_base, n_members)).astype(np.int32)
    if len(instance_ids) != instance_ids.count(None):
        for i in np.flatnonzero(np.bincount(np.repeat(np.arange(len(groups)), n_members)[~dynamic],
                                            minlength=len(groups))).tolist():
            static = [s for s in groups[i].group_instance_ids if s is not None]
            if len(set(static)) != len(static):
                order[member_base[i]:member_base[i] + n_members[i]] = groups[i].member_sort_order() + member_base[i]
    return order.astype(np.int32)


def _capacities(sizes: np.ndarray) -> np.ndarray:
    """:func:`capacity_after` of each size."""
    # a stack of thousands of small groups has a handful of distinct sizes
    distinct, at = np.unique(sizes, return_inverse=True)
    return np.array([capacity_after(n) for n in distinct.tolist()], dtype=np.int64)[at]


def java_topic_order(stack: GroupStack, kernels) -> np.ndarray:
    """Topics with partitions and subscribers, in the order Java's range
    assignor visits them: each group's in turn, numbered as in the stack.

    Java collects the subscribed topics into a ``HashSet`` (members visited in
    the subscriptions ``HashMap`` order), then copies the ones with metadata
    into a ``HashMap``.  Iteration is by bucket of the final map; ties fall
    back to the set's order, whose own ties fall back to first insertion."""
    subscribed = stack.tp_indptr[1:] > stack.tp_indptr[:-1]
    idx = np.flatnonzero(subscribed & (stack.partition_counts > 0)).astype(np.int32)
    if len(idx) <= 1:
        return idx
    groups = len(stack.groups)
    hashes = stack.topic_hashes()[idx]
    if groups == 1:
        # one set and one map, whose capacities are plain numbers: the common call costs no more for the stack
        group = None
        n_subscribed = [int(np.count_nonzero(subscribed))]
        set_capacity, map_capacity = capacity_after(n_subscribed[0]), capacity_after(len(idx))
    else:
        group = stack.group_of_topic[idx]
        n_subscribed = np.bincount(stack.group_of_topic[subscribed], minlength=groups)
        set_capacity = _capacities(n_subscribed)[group]
        map_capacity = _capacities(np.bincount(group, minlength=groups))[group]
    set_bucket = hashmap_buckets(hashes, set_capacity)
    map_bucket = hashmap_buckets(hashes, map_capacity)
    first = np.zeros(len(idx), dtype=np.int64)
    if _crowded(set_bucket, group):
        # Two of a group's topics share a set bucket: their order there is first
        # insertion, which one walk of the stack's members (each group's in its
        # HashMap order) ranks for every group at once.
        visit = stack.member_hashmap_order() if stack.shared_topics is None else _ONE_MEMBER
        first = kernels.first_seen(stack.num_topics, stack.sub_indptr, stack.sub_topics,
                                   visit, int(np.count_nonzero(subscribed)))[idx]
    keys = (first, set_bucket, map_bucket)
    return idx[np.lexsort(keys if group is None else keys + (group,))]


def _crowded(set_bucket, group) -> bool:
    """Whether two topics of a group (each topic's in ``group``, or None for one group) share a set bucket."""
    if group is None:
        return len(np.unique(set_bucket)) < len(set_bucket)
    in_set = np.sort((group.astype(np.int64) << 32) | set_bucket)
    return bool((in_set[1:] == in_set[:-1]).any())


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


def _rack_aware(group: ArrayGroup) -> bool:
    """Whether Java's rack matching may apply: replicas with racks and a member with one."""
    return bool(len(group.replica_racks)) and bool((group.member_rack_index() >= 0).any())


def assign_range(group: ArrayGroup, implementation: Optional[str] = None) -> ArrayAssignment:
    k = load_kernels("rangerr", implementation)
    M = group.num_members
    stack = GroupStack([group], k)
    tp_indptr, tp_members = stack.tp_indptr, stack.tp_members
    topic_order = java_topic_order(stack, k)

    if _rack_aware(group):
        member_rack = group.member_rack_index()
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


def assign_range_many(groups: Sequence[ArrayGroup], implementation: Optional[str] = None) -> ArrayAssignment:
    """:func:`assign_range` of each group, end to end (:func:`end_to_end`), in one kernel run."""
    k = load_kernels("rangerr", implementation)
    # most groups have no replica racks, which settles it without the call
    if not groups or any(len(g.replica_racks) and _rack_aware(g) for g in groups):
        # Rack matching ties co-partitioned topics of a group together: group by group.
        return end_to_end([assign_range(g, implementation) for g in groups])
    stack = stack_of(groups, k)
    return stack.answer(*k.range_plain(stack.num_members, stack.partition_counts, stack.tp_indptr,
                                       stack.tp_members, java_topic_order(stack, k)))


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


# -- the leader's small groups ---------------------------------------------------------------------
#
# A group of a few members costs the array path a hundred-odd numpy calls, several times what assigning
# it takes; a leader assigning such a group (most consumer groups) answers from the reference's rules
# instead, with each name's String.hashCode remembered across calls.

#: The most members the small path takes; larger groups go to the array path.
SMALL_GROUP_MEMBERS = 32
#: The most partitions (of the subscribed topics) the small path assigns.
SMALL_GROUP_PARTITIONS = 1 << 16


def _small_map_order(keys: List[str]) -> List[str]:
    """Distinct ``keys`` inserted in order into a ``HashMap`` of :func:`capacity_after` their number, in its
    iteration order (:func:`string_hashmap_order` with remembered hashes)."""
    if len(keys) <= 1:
        return list(keys)
    return [keys[i] for i in small_string_map_positions(keys, capacity_after(len(keys)))]


def small_range(members: List[tuple], counts: Dict[str, int]) -> Optional[Dict[str, List[tuple]]]:
    """Java's RangeAssignor without rack matching (no partition racks) for a small group: ``members`` are
    ``(member_id, group_instance_id, topics)`` in JoinGroup order, ids str and distinct, each ``topics`` a
    tuple of distinct str; ``counts`` checked.  The same rules as :func:`reference_range` (which the array
    path is held to), in the same order, as each member's ``[(topic, [partition, ...]), ...]`` (its
    Assignment's topics in Java's order).  None for a group the small path does not take."""
    if not members or len(members) > SMALL_GROUP_MEMBERS:
        return None
    by_id = {m[0]: m for m in members}
    if len(by_id) != len(members):
        return None
    in_map = [by_id[i] for i in _small_map_order(list(by_id))]
    inserted = list(dict.fromkeys([t for m in in_map for t in m[2]]))
    with_partitions = [t for t in _small_map_order(inserted) if counts.get(t, 0) > 0]
    if sum([counts[t] for t in with_partitions]) > SMALL_GROUP_PARTITIONS:
        return None   # the array path's (it also refuses a total past MAX_PARTITIONS)
    out: Dict[str, List[tuple]] = {m[0]: [] for m in members}
    for t in _small_map_order(with_partitions):
        subscribers = [m for m in in_map if t in m[2]]
        order = member_info_order([m[1] for m in subscribers], [m[0] for m in subscribers])
        quota, extra = divmod(counts[t], len(order))
        start = 0
        for k, i in enumerate(order):
            n = quota + 1 if k < extra else quota
            if n:
                out[subscribers[i][0]].append((t, list(range(start, start + n))))
            start += n
    return out
