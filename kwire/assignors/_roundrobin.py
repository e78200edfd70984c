"""Java's client ``RoundRobinAssignor`` over an :class:`ArrayGroup`.

Members sort as ``MemberInfo`` (static first); partitions run through the
topics in sorted order, which is plain topic-index order in an ArrayGroup.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ._javaorder import java_sorted
from ..errors import AssignmentError
from ._arrays import ArrayAssignment, ArrayGroup, end_to_end, load_kernels
from ._model import MemberAssignments, GroupInput
from ._range import member_info_sorted, members_in_map_order, stack_of

def _roundrobin(groups: Sequence[ArrayGroup], implementation: Optional[str]):
    k = load_kernels("rangerr", implementation)
    if any(g.num_members == 0 for g in groups):
        # Java's CircularIterator refuses an empty member list.
        raise AssignmentError("roundrobin needs at least one member")
    stack = stack_of(groups, k)
    # Ranks run on from group to group: the cursor a group leaves behind is
    # at most the next group's first rank, so that group starts from its own
    # first member, as it does alone.
    rank = np.empty(stack.num_members, dtype=np.int32)
    rank[stack.member_order] = np.arange(stack.num_members, dtype=np.int32)
    active = (stack.tp_indptr[1:] > stack.tp_indptr[:-1]) & (stack.partition_counts > 0)
    topic_order = np.flatnonzero(active).astype(np.int32)
    return stack, k.roundrobin(stack.num_members, stack.partition_counts, stack.tp_indptr, stack.tp_members,
                               topic_order, rank)


def assign_roundrobin(group: ArrayGroup, implementation: Optional[str] = None) -> ArrayAssignment:
    return ArrayAssignment.for_group(group, *_roundrobin([group], implementation)[1])


def assign_roundrobin_many(groups: Sequence[ArrayGroup], implementation: Optional[str] = None) -> ArrayAssignment:
    """:func:`assign_roundrobin` of each group, end to end (:func:`end_to_end`), in one kernel run."""
    if not groups:
        load_kernels("rangerr", implementation)
        return end_to_end([])
    stack, out = _roundrobin(groups, implementation)
    return stack.answer(*out)


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
