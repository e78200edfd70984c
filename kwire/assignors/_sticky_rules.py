"""Rules of the sticky assignors that do not depend on the implementation.

Both sticky kernels -- the compiled ``_sticky_c`` and its pure twin
``_sticky_py`` -- import these, so the limits, the input checks and the
balance score are written once and the twins cannot drift apart on them.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ..errors import AssignmentError, KwireError
from ._arrays import ArrayAssignment, end_to_end
from ._model import GroupInput
from ._sticky_repair import is_valid

class JavaAssignorFailure(AssignmentError):
    """Java's own sticky assignor fails on this input (it throws, or it would
    loop forever); the message names the Java failure.

    Raised only by the Java-exact kernels.  The default strategies in
    :mod:`kwire.assignors._sticky` catch it and answer with a valid
    assignment instead; ``java_exact=True`` lets it through."""


#: Upper bound on partitions in one assignment: far above any real cluster,
#: and it keeps partition indices inside int32 in the compiled twin.
MAX_PARTITIONS = 1 << 27


def check_partition_total(total: int) -> None:
    """Refuse metadata with more than :data:`MAX_PARTITIONS` partitions."""
    if total > MAX_PARTITIONS:
        raise AssignmentError(f"more than {MAX_PARTITIONS} partitions in the metadata; "
                              "no consumer group is that large")


def move_budget(partitions: int, members: int) -> int:
    """How many balancing moves the general path may make before giving up.

    Every real balancing move shrinks the load spread, so Java's loop ends
    long before this; only a substitution cycle (which would make Java loop
    forever) can reach it."""
    return 50 * (partitions + members) + 10000


def balance_score(sizes: Iterable[int]) -> int:
    """Java's ``getBalanceScore``: the sum over member pairs of ``|a - b|``.

    For sorted sizes each one contributes with a sign by its rank, which is
    the same total Java gets from its double loop, in one pass."""
    ordered = sorted(sizes)
    n = len(ordered)
    return sum(s * (2 * i - n + 1) for i, s in enumerate(ordered))


def validate(group: GroupInput) -> None:
    """Type and range checks on a :class:`GroupInput`, so that bad input
    gives an :class:`AssignmentError` in either twin instead of a crash."""
    ids = set()
    for m in group.members:
        if not isinstance(m.member_id, str):
            raise AssignmentError(f"member id must be a string, got {type(m.member_id).__name__}")
        if m.member_id in ids:
            raise AssignmentError(f"member id {m.member_id!r} appears twice in the group")
        ids.add(m.member_id)
        for t in m.topics:
            if not isinstance(t, str):
                raise AssignmentError(f"member {m.member_id!r}: topic names must be strings")
        for tp in m.owned:
            if (not isinstance(tp, tuple) or len(tp) != 2 or not isinstance(tp[0], str)
                    or not isinstance(tp[1], int) or isinstance(tp[1], bool)):
                raise AssignmentError(f"member {m.member_id!r}: owned partition {tp!r} is not (topic, int)")
            if not 0 <= tp[1] < 2**31:
                raise AssignmentError(f"member {m.member_id!r}: owned partition {tp!r} is out of range")
        for g in (m.generation, m.subscription_generation):
            if not isinstance(g, int) or isinstance(g, bool) or not -2**31 <= g < 2**31:
                raise AssignmentError(f"member {m.member_id!r}: generation {g!r} is not an int32")
    for t, n in group.partitions_per_topic.items():
        if not isinstance(t, str):
            raise AssignmentError("topic names must be strings")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0 or n >= 2**31:
            raise AssignmentError(f"topic {t!r}: partition count {n!r} is not a non-negative int32")
    check_partition_total(sum(group.partitions_per_topic.values()))
    if group.partition_racks:
        mentioned = set(group.partitions_per_topic)
        for m in group.members:
            mentioned.update(m.topics)
            mentioned.update(t for t, _ in m.owned)
        for t, layout in group.partition_racks.items():
            if t not in mentioned:
                continue
            if len(layout) != group.partitions_per_topic.get(t, 0):
                raise AssignmentError(f"partition_racks[{t!r}] has {len(layout)} entries but the topic has "
                                      f"{group.partitions_per_topic.get(t, 0)} partitions")
            for reps in layout:
                if isinstance(reps, (str, bytes)) or any(r is not None and not isinstance(r, str) for r in reps):
                    raise AssignmentError(f"partition_racks[{t!r}]: each entry must be a list of rack names")


def pair_many(groups, pair):
    """``pair(group)`` (a twin's ``sticky_pair_arrays``) of each group, end to
    end: ``(ran, eager, cooperative)``.  ``ran`` is 1 per group that ran with
    both answers valid (``_sticky_repair.is_valid``) and 0 where the group is
    left to the per-group path: no members, a KwireError (Java throws, or the
    kernel refuses the input), or an answer that needs the repair.  Such a
    group's members get empty lists in both ``(indptr, topic, partition)``."""

    n = len(groups)
    ran = np.zeros(n, dtype=np.uint8)
    eager, cooperative = [], []
    for i, group in enumerate(groups):
        one = two = None
        if group.num_members:
            try:
                one, two = pair(group)
            except KwireError:
                pass
        if one is not None and is_valid(group, *one) and is_valid(group, *two):
            ran[i] = 1
        else:
            one = two = _no_lists(group.num_members)
        eager.append(ArrayAssignment(*one))
        cooperative.append(ArrayAssignment(*two))
    return (ran, *((a.indptr, a.topic, a.partition) for a in (end_to_end(eager), end_to_end(cooperative))))


def _no_lists(n_members):
    return np.zeros(n_members + 1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
