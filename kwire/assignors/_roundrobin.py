"""Java's client ``RoundRobinAssignor`` over an :class:`ArrayGroup`.

Members sort as ``MemberInfo`` (static first); partitions run through the
topics in sorted order, which is plain topic-index order in an ArrayGroup.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ._javaorder import java_sorted
from ..errors import AssignmentError
from ._arrays import ArrayAssignment, ArrayGroup, load_kernels
from ._model import MemberAssignments, GroupInput
from ._range import member_info_sorted, members_in_map_order

def assign_roundrobin(group: ArrayGroup, implementation: Optional[str] = None) -> ArrayAssignment:
    k = load_kernels("rangerr", implementation)
    T, M = len(group.topics), group.num_members
    if M == 0:
        # Java's CircularIterator refuses an empty member list.
        raise AssignmentError("roundrobin needs at least one member")
    order = group.member_sort_order()
    rank = np.empty(M, dtype=np.int32)
    rank[order] = np.arange(M, dtype=np.int32)
    tp_indptr, tp_members = k.subscribers_by_topic(T, group.sub_indptr, group.sub_topics, order)
    active = (tp_indptr[1:] > tp_indptr[:-1]) & (group.partition_counts > 0)
    topic_order = np.flatnonzero(active).astype(np.int32)
    out = k.roundrobin(M, group.partition_counts, tp_indptr, tp_members, topic_order, rank)
    return ArrayAssignment.for_group(group, *out)


def reference_roundrobin(group: GroupInput) -> MemberAssignments:
    """Java's RoundRobinAssignor over dicts and lists, independent of the kernels."""
    if not group.members:
        raise AssignmentError("roundrobin needs at least one member")
    members = member_info_sorted(members_in_map_order(group))
    topics = java_sorted({t for m in group.members for t in m.topics})
    out: MemberAssignments = {m.member_id: [] for m in group.members}
    cursor = 0
    for t in topics:
        for p in range(group.partitions_per_topic.get(t, 0)):
            while t not in members[cursor].topics:
                cursor = (cursor + 1) % len(members)
            out[members[cursor].member_id].append((t, p))
            cursor = (cursor + 1) % len(members)
    return out
