"""Java's client ``RangeAssignor`` (3.5+, with KIP-881 rack matching) over an :class:`ArrayGroup`.

What is decided here is per topic or per member and follows Java's
collections: members sort as ``MemberInfo`` (static first), topics are
visited in the iteration order of the leader's ``HashMap`` of partitions per
topic, and topics are grouped for co-partitioned rack matching.  The
per-partition work happens in the ``_rangerr`` kernels.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._javaorder import capacity_after
from ._arrays import ArrayAssignment, ArrayGroup, load_kernels

NAME = "range"


def java_topic_order(group: ArrayGroup, kernels, subscribed: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Topics with partitions and subscribers, in the order Java's range assignor visits them.

    Java collects the subscribed topics into a ``HashSet`` (members visited in
    the subscriptions ``HashMap`` order), then copies the ones with metadata
    into a ``HashMap``.  Iteration is by bucket of the final map; ties fall
    back to the set's order, whose own ties fall back to first insertion."""
    idx = np.flatnonzero(active).astype(np.int32)
    if len(idx) <= 1:
        return idx
    h = group.topic_hashes()[idx].view(np.uint32)
    spread = h ^ (h >> np.uint32(16))
    set_bucket = spread & np.uint32(capacity_after(int(subscribed.sum())) - 1)
    map_bucket = spread & np.uint32(capacity_after(len(idx)) - 1)
    if len(np.unique(set_bucket)) < len(idx):
        first = kernels.first_seen(len(group.topics), group.sub_indptr, group.sub_topics, group.member_hashmap_order())
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
    subscribed = np.diff(tp_indptr) > 0
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
