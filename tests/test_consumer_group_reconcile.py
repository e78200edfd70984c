"""The reconciliation table (kwire.group's _reconcile), row by row against Kafka's ``CurrentAssignmentBuilder``
(``CurrentAssignmentBuilder.build`` and ``computeNextAssignment``)."""

import pytest

from kwire.codec import ConsumerGroupHeartbeatRequestTopicPartitions as TP
from kwire.group import ConsumerMemberState

from kwire.group._reconcile import FENCED_UNKNOWN_STATE, owned_map, reconcile

STABLE = ConsumerMemberState.STABLE
UNREVOKED = ConsumerMemberState.UNREVOKED_PARTITIONS
UNRELEASED = ConsumerMemberState.UNRELEASED_PARTITIONS
UNKNOWN = ConsumerMemberState.UNKNOWN
A = b"\x0a" * 16
B = b"\x0b" * 16


def asg(**topics):
    ids = {"a": A, "b": B}
    return {ids[t]: frozenset(ps) for t, ps in topics.items() if ps}


def owned(**topics):
    ids = {"a": A, "b": B}
    return owned_map([TP(topic_id=ids[t], partitions=list(ps)) for t, ps in topics.items()])


def test_stable_at_the_target_epoch_is_unchanged():
    # GroupMetadataManager.maybeReconcile skips a member reconciled to the target epoch.
    assert reconcile(STABLE, 5, asg(a=[0]), {}, 5, asg(a=[1]), None, {}) is None


def test_new_partitions_nobody_holds_are_given_at_once_at_the_target_epoch():
    # computeNextAssignment, row 2: newly assigned partitions need no acknowledgement.
    r = reconcile(STABLE, 0, {}, {}, 1, asg(a=[0, 1, 2, 3]), owned(), {})
    assert (r.state, r.epoch, r.previous_epoch, r.assigned, r.pending) == (STABLE, 1, 0, asg(a=[0, 1, 2, 3]), {})


def test_partitions_held_elsewhere_are_held_back_unreleased():
    # computeNextAssignment, row 3: every wanted partition is still owned at some epoch.
    r = reconcile(STABLE, 0, {}, {}, 2, asg(a=[2, 3]), owned(), {A: {0: 1, 1: 1, 2: 1, 3: 1}})
    assert (r.state, r.epoch, r.assigned) == (UNRELEASED, 2, {})


def test_some_given_some_held_back():
    # computeNextAssignment, row 2 with the unreleased flag set.
    r = reconcile(STABLE, 1, asg(a=[0]), {}, 3, asg(a=[0, 1, 2]), None, {A: {0: 1, 2: 2}})
    assert (r.state, r.epoch, r.assigned) == (UNRELEASED, 3, asg(a=[0, 1]))


def test_revocation_keeps_the_old_epoch_while_the_member_still_owns_them():
    # computeNextAssignment, row 1: owned null counts as owning everything (ownsRevokedPartitions).
    r = reconcile(STABLE, 1, asg(a=[0, 1, 2, 3]), {}, 2, asg(a=[0, 1]), None, {A: dict.fromkeys(range(4), 1)})
    assert (r.state, r.epoch, r.previous_epoch, r.assigned, r.pending) == (UNREVOKED, 1, 1, asg(a=[0, 1]),
                                                                          asg(a=[2, 3]))


def test_revoked_partitions_already_released_skip_unrevoked_in_the_same_heartbeat():
    r = reconcile(STABLE, 1, asg(a=[0, 1, 2, 3]), {}, 2, asg(a=[0, 1]), owned(a=[0, 1]), {})
    assert (r.state, r.epoch, r.assigned, r.pending) == (STABLE, 2, asg(a=[0, 1]), {})


def test_an_ack_that_still_lists_a_revoked_partition_changes_nothing():
    # CurrentAssignmentBuilder.build, UNREVOKED_PARTITIONS: ownsRevokedPartitions -> return the member as is.
    assert reconcile(UNREVOKED, 1, asg(a=[0, 1]), asg(a=[2, 3]), 2, asg(a=[0, 1]), owned(a=[0, 1, 3]), {}) is None


def test_an_ack_moves_straight_to_the_target_epoch():
    r = reconcile(UNREVOKED, 1, asg(a=[0, 1]), asg(a=[2, 3]), 2, asg(a=[0, 1]), owned(a=[0, 1]),
                  {A: {0: 1, 1: 1, 2: 1, 3: 1}})
    assert (r.state, r.epoch, r.previous_epoch, r.assigned, r.pending) == (STABLE, 2, 1, asg(a=[0, 1]), {})


def test_revoke_then_revoke_again_moves_the_epoch_by_one():
    # CurrentAssignmentBuilder.build, UNREVOKED_PARTITIONS: computeNextAssignment(memberEpoch + 1, ...).
    r = reconcile(UNREVOKED, 3, asg(a=[0, 1]), asg(a=[2]), 7, asg(a=[0]), None, {A: {0: 3, 1: 3, 2: 3}})
    assert r is None  # owned null still owns the pending partition
    r = reconcile(UNREVOKED, 3, asg(a=[0, 1]), asg(a=[2]), 7, asg(a=[0]), owned(a=[0, 1]), {A: {0: 3, 1: 3, 2: 3}})
    assert (r.state, r.epoch, r.previous_epoch, r.assigned, r.pending) == (UNREVOKED, 4, 3, asg(a=[0]), asg(a=[1]))


def test_unreleased_picks_up_freed_partitions():
    r = reconcile(UNRELEASED, 2, {}, {}, 2, asg(a=[2, 3]), None, {A: {2: 1}})
    assert (r.state, r.epoch, r.assigned) == (UNRELEASED, 2, asg(a=[3]))
    r = reconcile(UNRELEASED, 2, asg(a=[3]), {}, 2, asg(a=[2, 3]), None, {A: {3: 2}})
    assert (r.state, r.epoch, r.assigned) == (STABLE, 2, asg(a=[2, 3]))


def test_previous_epoch_is_set_even_when_the_epoch_stays():
    # updateMemberEpoch: STABLE at 5 going to row 1 with e = 5 gives epoch 5, previous 5.
    r = reconcile(STABLE, 5, asg(a=[0, 1]), {}, 6, asg(a=[0]), None, {A: {0: 5, 1: 5}})
    assert (r.epoch, r.previous_epoch) == (5, 5)


def test_a_partition_the_member_itself_is_revoking_still_counts_as_held():
    # The partition epochs are read before this heartbeat's records: a pending partition wanted back waits.
    r = reconcile(UNREVOKED, 1, asg(a=[0]), asg(a=[1]), 3, asg(a=[0, 1]), owned(a=[0]), {A: {0: 1, 1: 1}})
    assert (r.state, r.epoch, r.assigned) == (UNRELEASED, 3, asg(a=[0]))


@pytest.mark.parametrize("reported, fenced", [(None, True), ({"a": [0]}, True), ({}, False)])
def test_unknown_state_rejoins_only_with_nothing_owned(reported, fenced):
    own = None if reported is None else owned(**reported)
    r = reconcile(UNKNOWN, 2, asg(a=[0]), {}, 4, asg(a=[0, 1]), own, {A: {0: 2}})
    if fenced:
        assert r == FENCED_UNKNOWN_STATE
    else:
        assert (r.state, r.epoch, r.assigned) == (STABLE, 4, asg(a=[0, 1]))


def test_topics_are_independent():
    r = reconcile(STABLE, 1, asg(a=[0], b=[0, 1]), {}, 2, asg(a=[0, 1], b=[0]), owned(a=[0], b=[0, 1]), {})
    assert (r.state, r.epoch, r.assigned, r.pending) == (UNREVOKED, 1, asg(a=[0], b=[0]), asg(b=[1]))
