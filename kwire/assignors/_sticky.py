"""Java's client ``StickyAssignor`` (eager) and ``CooperativeStickyAssignor``.

Importing this module registers both protocol names with
:mod:`kwire.assignors._api`.  The work happens in the ``_sticky`` kernels:
``_sticky_c`` (compiled, array based) or its pure twin ``_sticky_py``, which
is also the plain-Python reference the tests cross-check against; the rules
both share are in ``_sticky_rules``.  Where a member's previous assignment
comes from (userData vs. Subscription fields) is decided in
:mod:`kwire.assignors._userdata`.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ._arrays import ArrayAssignment, ArrayGroup, load_kernels
from ._model import GroupInput, MemberAssignments
from . import _sticky_py, _sticky_repair
from ._api import assign_arrays, get_strategy, register_strategy, small_cooperative_path_for
from ..errors import AssignmentError, KwireError
from ._sticky_rules import JavaAssignorFailure, validate
from ._userdata import member_input_for

NAMES = ("sticky", "cooperative-sticky")


def _java(kernels, group: ArrayGroup, cooperative: bool):
    """Java's answer from ``kernels`` (may raise JavaAssignorFailure)."""
    return kernels.sticky_arrays(group, cooperative)


def _with_claims(group: ArrayGroup, keep) -> ArrayGroup:
    """``group`` with only the owned entries where ``keep`` is True."""
    kept_before = np.zeros(len(keep) + 1, dtype=np.int64)  # kept entries before each one
    np.cumsum(keep, out=kept_before[1:])
    return group.with_claims(kept_before[group.owned_indptr], group.owned_topic[keep], group.owned_partition[keep])


def _consistent_claims(group: ArrayGroup) -> np.ndarray:
    """Per owned entry: a claim a consistent group could send (step 3 of
    ``_sticky_repair``): an existing partition of a topic the member
    subscribes to, claimed once by it, by a member of the newest generation."""
    # Like the validity check, a fact about the columns: the compiled loop whenever there is one.
    return load_kernels("rangerr").consistent_claims(
        group.partition_counts, group.topic_offset, group.generation, group.sub_indptr, group.sub_topics,
        group.owned_indptr, group.owned_topic, group.owned_partition)


def sticky_arrays(group: ArrayGroup, cooperative: bool, implementation: Optional[str] = None, *,
                  java_exact: bool = False):
    """``(indptr, topic, partition)`` for ``group``.

    ``java_exact=True``: exactly what Java's assignor returns, invalid
    answers included, and a :class:`JavaAssignorFailure` where Java throws.
    The default: Java's answer whenever it is a valid assignment, otherwise
    the repaired one described in :mod:`kwire.assignors._sticky_repair`."""
    kernels = load_kernels("sticky", implementation)
    if java_exact or group.num_members == 0:
        return _java(kernels, group, cooperative)
    try:
        out = _java(kernels, group, cooperative)
        if _sticky_repair.is_valid(group, *out):
            return out
        eager = _java(kernels, group, False) if cooperative else out
    except JavaAssignorFailure:
        eager = _eager_on_fewer_claims(kernels, group)
    return _repaired(group, cooperative, eager)


def _eager_on_fewer_claims(kernels, group: ArrayGroup):
    """Step 3 of ``_sticky_repair``: Java's eager answer where it throws on the claims as sent."""
    try:
        return _java(kernels, _with_claims(group, _consistent_claims(group)), False)
    except JavaAssignorFailure:
        try:
            return _java(kernels, _with_claims(group, np.zeros(len(group.owned_topic), dtype=bool)), False)
        except JavaAssignorFailure:
            # Java's algorithm fails on this group even with no claim at all (seen with consumer racks on
            # the constrained path): the repair then places every partition from nothing, which is always
            # a valid assignment, so the default still never fails a group.
            return (np.zeros(group.num_members + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
                    np.zeros(0, dtype=np.int32))


def _repaired(group: ArrayGroup, cooperative: bool, eager):
    out = _sticky_repair.repair(group, *eager)
    if cooperative:
        out = _sticky_repair.withhold_transfers(group, *out)
    return out


def assign_sticky_pair(group: ArrayGroup, *, implementation: Optional[str] = None):
    """``(assign_arrays("sticky", group), assign_arrays("cooperative-sticky", group))``
    (the default answers), from one run of Java's algorithm where the kernels
    can share it: the two differ only in the cooperative adjustment at its
    end, and on the what-if's small groups that run is most of the cost."""
    if not isinstance(group, ArrayGroup):
        raise AssignmentError(f"assign_sticky_pair needs an ArrayGroup, got {type(group).__name__}")
    if get_strategy("sticky").arrays is not assign_sticky or (
            get_strategy("cooperative-sticky").arrays is not assign_cooperative_sticky):
        # someone registered their own form of either: theirs is the answer
        return (assign_arrays("sticky", group, implementation=implementation),
                assign_arrays("cooperative-sticky", group, implementation=implementation))
    kernels = load_kernels("sticky", implementation)
    try:
        both = kernels.sticky_pair_arrays(group) if group.num_members else None
    except JavaAssignorFailure:
        both = None
    if both is None:
        # an empty group, or Java throws: each answer on its own
        return assign_sticky(group, implementation), assign_cooperative_sticky(group, implementation)
    eager = both[0]
    return tuple(ArrayAssignment.for_group(group, *(out if _sticky_repair.is_valid(group, *out)
                                                    else _repaired(group, cooperative, eager)))
                 for cooperative, out in zip((False, True), both))


def assign_sticky_pair_many(groups: Sequence[ArrayGroup], *, implementation: Optional[str] = None
                            ) -> Tuple[ArrayAssignment, ArrayAssignment, Dict[int, KwireError]]:
    """:func:`assign_sticky_pair` of each of ``groups``, end to end:
    ``(sticky, cooperative, refused)``, two bare :class:`ArrayAssignment` whose
    rows are the first group's members, then the second's, and so on (as
    :func:`assign_arrays_many` gives), and ``{index: error}`` of the groups
    :func:`assign_sticky_pair` refuses, whose members get empty lists.

    The kernels run every group in one call (``sticky_pair_many``), which
    also checks each answer's validity; a group where Java's algorithm
    throws, or either answer is not valid, takes :func:`assign_sticky_pair`
    itself, so each group gets exactly what that gives it."""
    groups = list(groups)
    for g in groups:
        if not isinstance(g, ArrayGroup):
            raise AssignmentError(f"assign_sticky_pair_many needs ArrayGroups, got {type(g).__name__}")
    members = np.array([g.num_members for g in groups], dtype=np.int64)
    if get_strategy("sticky").arrays is assign_sticky and (
            get_strategy("cooperative-sticky").arrays is assign_cooperative_sticky):
        ran, *both = load_kernels("sticky", implementation).sticky_pair_many(groups)
        answered = ran.astype(bool)
    else:
        # someone registered their own form of either: every group takes the per-group path, theirs
        both = [(np.zeros(int(members.sum()) + 1, dtype=np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))] * 2
        answered = np.zeros(len(groups), dtype=bool)
    alone: Dict[int, Tuple[ArrayAssignment, ArrayAssignment]] = {}
    refused: Dict[int, KwireError] = {}
    for j in np.flatnonzero(~answered).tolist():
        try:
            alone[j] = assign_sticky_pair(groups[j], implementation=implementation)
        except KwireError as exc:
            refused[j] = exc
    return (*(_spliced(members, answered, out, [(j, pair[k]) for j, pair in alone.items()])
              for k, out in enumerate(both)), refused)


def _spliced(members, answered, out, alone) -> ArrayAssignment:
    """The batch answer ``out`` with each group not ``answered`` holding its
    ``alone`` answer ``(index, ArrayAssignment)``, or nothing."""
    indptr, topic, number = out
    if answered.all():
        return ArrayAssignment(indptr, topic, number)
    counts = np.diff(indptr)
    member_answered = np.repeat(answered, members)
    group_of_entry = np.repeat(np.repeat(np.arange(len(members)), members), counts)
    kept = answered[group_of_entry]
    counts[~member_answered] = 0
    member_base = np.cumsum(members) - members
    parts = [(group_of_entry[kept], topic[kept], number[kept])]
    for j, a in alone:
        counts[member_base[j]:member_base[j] + members[j]] = np.diff(a.indptr)
        parts.append((np.full(len(a.topic), j), a.topic, a.partition))
    group, topic, number = (np.concatenate(column) for column in zip(*parts))
    # each group's entries come from one source, in order: a stable sort by group lays them end to end
    order = np.argsort(group, kind="stable")
    new_indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    return ArrayAssignment(new_indptr, topic[order].astype(np.int32), number[order].astype(np.int32))


def _run(group: ArrayGroup, cooperative: bool, implementation: Optional[str], java_exact: bool) -> ArrayAssignment:
    return ArrayAssignment.for_group(group, *sticky_arrays(group, cooperative, implementation, java_exact=java_exact))


def assign_sticky(group: ArrayGroup, implementation: Optional[str] = None, *,
                  java_exact: bool = False) -> ArrayAssignment:
    """Eager ``sticky``: every subscribed partition is assigned this round.
    ``java_exact``: see :func:`sticky_arrays`."""
    return _run(group, False, implementation, java_exact)


def assign_cooperative_sticky(group: ArrayGroup, implementation: Optional[str] = None, *,
                              java_exact: bool = False) -> ArrayAssignment:
    """``cooperative-sticky``: partitions changing hands are withheld until
    their previous owner has revoked them (the next rebalance).
    ``java_exact``: see :func:`sticky_arrays`."""
    return _run(group, True, implementation, java_exact)


def _reference(group: GroupInput, cooperative: bool, java_exact: bool) -> MemberAssignments:
    if java_exact:
        return _sticky_py.sticky_assign(group, cooperative)
    validate(group)
    if not group.members:
        return {}
    array_group = ArrayGroup.from_group_input(group)
    return ArrayAssignment.for_group(array_group, *sticky_arrays(array_group, cooperative, "python")).to_dict()


def reference_sticky(group: GroupInput, *, java_exact: bool = False) -> MemberAssignments:
    """The pure twin on a :class:`GroupInput`, with the same default as :func:`assign_sticky`."""
    return _reference(group, False, java_exact)


def reference_cooperative_sticky(group: GroupInput, *, java_exact: bool = False) -> MemberAssignments:
    """The pure twin on a :class:`GroupInput`, with the same default as :func:`assign_cooperative_sticky`."""
    return _reference(group, True, java_exact)


register_strategy("sticky", assign_sticky, reference=reference_sticky, member_input=member_input_for)
register_strategy(
    "cooperative-sticky",
    assign_cooperative_sticky,
    reference=reference_cooperative_sticky,
    member_input=member_input_for,
)
small_cooperative_path_for(assign_cooperative_sticky)
