"""One consumer-protocol member's way from its current assignment to its target, as a table.

This is Kafka's ``CurrentAssignmentBuilder.build`` (the broker side of KIP-848): given a member's state,
epoch, assigned partitions and partitions pending revocation, the group's target assignment and its epoch,
the partitions the member says it owns (``TopicPartitions`` of its heartbeat, None when not sent) and the
group's partition -> owner-epoch map, it returns the member's next state, or None when nothing changes.

Two tables drive it:

* ``_BUILD`` picks what to do from the member's state (``CurrentAssignmentBuilder.build``'s switch);
* ``_NEXT`` is ``CurrentAssignmentBuilder.computeNextAssignment``'s if/else chain as data: the three facts
  it tests (something to revoke that the member still owns; something newly given; something held back
  because another member still owns it at some epoch) select one row, the first of Kafka's four rows that
  applies.

The protocol's safety rule lives in the "held back" test: a partition of the target is given to a member
only when no member holds it at any epoch (assigned or pending revocation), so two members never own a
partition at once.  The caller keeps the partition -> epoch map and applies the result to it.

Assignments are ``{topic_id: frozenset(partitions)}`` dicts with no empty entries; topic ids are the wire's
16-byte ``bytes``.  Nothing here allocates per partition unless the member's partitions change.
"""

from enum import Enum
from typing import Dict, FrozenSet, NamedTuple, Optional

__all__ = ["ConsumerMemberState", "Reconciled", "reconcile", "owned_map", "owns_any", "EMPTY_ASSIGNMENT",
           "FENCED_UNKNOWN_STATE"]

Assignment = Dict[bytes, FrozenSet[int]]
EMPTY_ASSIGNMENT: Assignment = {}
_NOTHING = frozenset()

# What reconcile() returns for a member in state UNKNOWN whose heartbeat still reports partitions: Kafka's
# CurrentAssignmentBuilder.build throws FencedMemberEpochException there.
FENCED_UNKNOWN_STATE = "fenced"


class ConsumerMemberState(str, Enum):
    """A consumer-protocol member's reconciliation state, as Kafka's ``MemberState`` names it."""

    STABLE = "STABLE"                                  # holds its target's share (or all it can have)
    UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"      # must give partitions up before it moves on
    UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"    # waits for partitions other members still own
    UNKNOWN = "UNKNOWN"                                # a state from a newer broker: rejoin to reset

    def __str__(self):
        return self.value


STABLE = ConsumerMemberState.STABLE
UNREVOKED = ConsumerMemberState.UNREVOKED_PARTITIONS
UNRELEASED = ConsumerMemberState.UNRELEASED_PARTITIONS
UNKNOWN = ConsumerMemberState.UNKNOWN


class Reconciled(NamedTuple):
    """The member after one ``CurrentAssignmentBuilder.build``; ``previous_epoch`` is always the epoch the
    member had before the call (``updateMemberEpoch``), even when the epoch did not change."""

    state: ConsumerMemberState
    epoch: int
    previous_epoch: int
    assigned: Assignment
    pending: Assignment


# Reconciled is made on every reconciling heartbeat: as a tuple of its class (the same object) rather than
# through namedtuple's generated __new__, a Python function.
_make = tuple.__new__


def owned_map(topic_partitions):
    """The heartbeat's ``TopicPartitions`` as ``{topic_id: set}``; None stays None ("owns everything")."""
    if topic_partitions is None:
        return None
    owned = {}
    for tp in topic_partitions:
        if tp.partitions:
            owned.setdefault(tp.topic_id, set()).update(tp.partitions)
    return owned


def owns_any(owned, partitions):
    """``CurrentAssignmentBuilder.ownsRevokedPartitions``: a heartbeat without ``TopicPartitions`` (None)
    counts as still owning everything it had."""
    if owned is None:
        return True
    for topic_id, ps in partitions.items():
        mine = owned.get(topic_id)
        if mine and not mine.isdisjoint(ps):
            return True
    return False


# -- computeNextAssignment's rows ------------------------------------------------------------------------------
# Row results: (state, epoch source, assigned source, pending source).  "e" is the epoch handed to
# computeNextAssignment (the member's own, or its own + 1 after an acknowledged revocation), "T" the target
# epoch; "keep" is assigned ∩ target, "keep+give" adds the target partitions nobody holds.
_ROWS = (
    # (condition on (revoke_owned, give, unreleased), result)
    (lambda r, g, u: r, (UNREVOKED, "e", "keep", "revoke")),
    (lambda r, g, u: g and u, (UNRELEASED, "T", "keep+give", None)),
    (lambda r, g, u: g, (STABLE, "T", "keep+give", None)),
    (lambda r, g, u: u, (UNRELEASED, "T", "keep", None)),
    (lambda r, g, u: True, (STABLE, "T", "keep", None)),
)
# The first row that applies, for each of the eight combinations, looked up rather than searched.
_NEXT = {(r, g, u): next(result for cond, result in _ROWS if cond(r, g, u))
         for r in (False, True) for g in (False, True) for u in (False, True)}


def _next_assignment(e, previous, assigned, target_epoch, target, owned, partition_epochs):
    """``CurrentAssignmentBuilder.computeNextAssignment``: split every topic of target ∪ assigned into what
    is kept, what must be revoked and what may be given now; pick the row; build the member."""
    if assigned == target:
        # Nothing to revoke, give or wait for: the last row, the member stable on its target.
        return _make(Reconciled, (STABLE, target_epoch, previous, dict(target), EMPTY_ASSIGNMENT))
    keep = {}
    revoke = {}
    give = {}
    unreleased = False
    for topic_id in (target.keys() | assigned.keys()) if assigned is not target else target.keys():
        have = assigned.get(topic_id, _NOTHING)
        want = target.get(topic_id, _NOTHING)
        if have == want:
            keep[topic_id] = have
            continue
        kept = have & want
        if kept:
            keep[topic_id] = kept
        gone = have - kept
        if gone:
            revoke[topic_id] = gone
        new = want - kept
        if new:
            held = partition_epochs.get(topic_id)
            if held:
                free = frozenset([p for p in new if p not in held])
                if len(free) != len(new):
                    unreleased = True
                new = free
            if new:
                give[topic_id] = new
    revoke_owned = bool(revoke) and owns_any(owned, revoke)
    state, epoch_from, assigned_from, pending_from = _NEXT[(revoke_owned, bool(give), unreleased)]
    if assigned_from == "keep+give":
        for topic_id, ps in give.items():
            have = keep.get(topic_id)
            keep[topic_id] = ps if have is None else have | ps
    return _make(Reconciled, (state, e if epoch_from == "e" else target_epoch, previous, keep,
                              revoke if pending_from == "revoke" else EMPTY_ASSIGNMENT))


# -- CurrentAssignmentBuilder.build's switch --------------------------------------------------------------------

def _from_stable(epoch, assigned, pending, target_epoch, target, owned, partition_epochs):
    if epoch == target_epoch:
        return None
    return _next_assignment(epoch, epoch, assigned, target_epoch, target, owned, partition_epochs)


def _from_unrevoked(epoch, assigned, pending, target_epoch, target, owned, partition_epochs):
    # Still reporting a partition it must give up: wait, unchanged (no record, the revocation timer runs on).
    if owns_any(owned, pending):
        return None
    # Revocation acknowledged: one epoch further, so a member that must revoke again moves by +1 only.
    return _next_assignment(epoch + 1, epoch, assigned, target_epoch, target, owned, partition_epochs)


def _from_unreleased(epoch, assigned, pending, target_epoch, target, owned, partition_epochs):
    return _next_assignment(epoch, epoch, assigned, target_epoch, target, owned, partition_epochs)


def _from_unknown(epoch, assigned, pending, target_epoch, target, owned, partition_epochs):
    # A state this broker does not know: the member must show it gave everything up before it goes on.
    if owned is None or any(owned.values()):
        return FENCED_UNKNOWN_STATE
    return _next_assignment(target_epoch, epoch, assigned, target_epoch, target, owned, partition_epochs)


_BUILD = {
    STABLE: _from_stable,
    UNREVOKED: _from_unrevoked,
    UNRELEASED: _from_unreleased,
    UNKNOWN: _from_unknown,
}


def reconcile(state, epoch, assigned, pending, target_epoch, target, owned,
              partition_epochs) -> Optional[Reconciled]:
    """One step of ``CurrentAssignmentBuilder.build``.

    ``owned`` is :func:`owned_map` of the heartbeat (None: not sent).  ``partition_epochs`` is the group's
    ``{topic_id: {partition: epoch}}`` *before* this step, this member's own partitions included.
    Returns the new member as :class:`Reconciled`, None when the member is unchanged, or
    ``FENCED_UNKNOWN_STATE`` when Kafka fences it (state UNKNOWN still reporting partitions).
    ``GroupMetadataManager.maybeReconcile`` skips the call for a member already STABLE at the target epoch,
    and so does the STABLE row here."""
    return _BUILD[state](epoch, assigned, pending, target_epoch, target, owned, partition_epochs)
