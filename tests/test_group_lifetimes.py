"""How long a classic group and a half-joined member live, on the injected clock.

Kafka deletes a group that has no members and no committed offsets on its periodic cleanup
(GroupMetadataManager.cleanupGroupMetadata) and expires members that never finish joining (the pending
member's session timer, NEW_MEMBER_JOIN_TIMEOUT for a member added by JoinGroup); committed offsets are
never lost.  kwire's coordinator does the same through its own timers, and its optional cap on groups
(max_groups) makes room by deleting the oldest idle group before it refuses anyone."""

import pytest

import kwire
from kwire.codec import ErrorCode as E
from kwire.group import GroupProtocolError, GroupState
from tests.group_net import Net

RETENTION = 5_000


def commit(net, group, generation=-1, member="", partition_ok=True):
    request = kwire.codec.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member, topics=[
            kwire.codec.OffsetCommitRequestTopic(name="t", partitions=[
                kwire.codec.OffsetCommitRequestPartition(partition_index=0 if partition_ok else 99,
                                                         committed_offset=7)])])
    (topic,) = net.answer(net.send(request, 8)).topics
    return topic.partitions[0].error_code


def run_to(net, until):
    """Fire every deadline up to ``until`` in order, as a server's timer would."""
    while (deadline := net.c.next_deadline()) is not None and deadline <= until:
        net.tick(max(deadline, net.now))
    net.tick(until)


def test_an_empty_group_without_offsets_is_deleted_after_the_retention():
    net = Net(empty_group_retention_ms=RETENTION)
    ids, _, _ = net.stable_group(2)
    net.leave(*[(m, None) for m in ids])
    assert net.state() == GroupState.EMPTY
    emptied = net.now
    run_to(net, emptied + RETENTION - 1)
    assert net.state() == GroupState.EMPTY
    run_to(net, emptied + RETENTION)
    assert net.state() is None and net.c.group_ids() == [] and net.c.next_deadline() is None


def test_a_group_that_gains_a_member_again_is_not_deleted():
    net = Net(empty_group_retention_ms=RETENTION)
    ids, _, _ = net.stable_group(1)
    net.leave((ids[0], None))
    emptied = net.now
    net.now += RETENTION // 2
    net.stable_group(1)
    run_to(net, emptied + RETENTION + 1)  # past the deleted cleanup, within the new member's session
    assert net.state() == GroupState.STABLE and len(net.view().members) == 1


@pytest.mark.parametrize("how", ["simple commit", "member commit"])
def test_committed_offsets_keep_their_group_and_are_never_lost(how):
    net = Net(empty_group_retention_ms=RETENTION)
    if how == "simple commit":
        assert commit(net, "g") == E.NONE
    else:
        ids, gen, _ = net.stable_group(2)
        assert commit(net, "g", gen, ids[0]) == E.NONE
        net.leave(*[(m, None) for m in ids])
    run_to(net, net.now + 100 * RETENTION)
    assert net.state() == GroupState.EMPTY
    assert net.c.committed("g", "t", 0)[0] == 7


def test_a_commit_that_stores_nothing_leaves_no_group_behind():
    net = Net(empty_group_retention_ms=RETENTION, partition_exists=lambda topic, partition: partition < 1)
    assert commit(net, "g", partition_ok=False) == E.UNKNOWN_TOPIC_OR_PARTITION
    assert net.state() == GroupState.EMPTY  # created by the simple commit, as Kafka does
    run_to(net, RETENTION)
    assert net.state() is None and net.c.committed("g", "t", 99) == (-1, -1, "")


def test_offsets_outlive_an_unload_and_a_deleted_group():
    net = Net(empty_group_retention_ms=0)
    ids, gen, _ = net.stable_group(1)
    assert commit(net, "g", gen, ids[0]) == E.NONE
    net.leave((ids[0], None))
    assert net.state() == GroupState.EMPTY  # kept: it has offsets
    net._take(net.c.unload_group("g", net.now))
    assert net.state() is None and net.c.committed("g", "t", 0)[0] == 7


def test_a_pending_member_expires_and_its_group_goes_with_it():
    net = Net(empty_group_retention_ms=0)
    handle = net.join(version=9, session=6_000)
    assert net.answer(handle).error_code == E.MEMBER_ID_REQUIRED
    assert net.state() == GroupState.EMPTY  # held by the id it handed out
    run_to(net, 5_999)
    assert net.state() == GroupState.EMPTY
    run_to(net, 6_000)
    assert net.state() is None and net.c.next_deadline() is None


def test_a_member_that_never_completes_its_join_expires():
    # A JoinGroup v3 member is added at once; it gets its JoinGroup answer but never sends SyncGroup:
    # its session ends it, and the group it made is deleted with it.
    net = Net(empty_group_retention_ms=0)
    handle = net.join(version=3, session=6_000)
    net.complete(handle)
    assert net.answer(handle).error_code == E.NONE and net.state() == GroupState.COMPLETING_REBALANCE
    joined = net.now
    run_to(net, joined + 6_000)
    assert net.state() is None and net.c.next_deadline() is None


def test_ids_handed_out_but_never_used_are_capped_per_group():
    net = Net(max_group_size=3)
    codes = [net.answer(net.join(version=9, client_id=f"c{i}")).error_code for i in range(5)]
    assert codes == [E.MEMBER_ID_REQUIRED] * 3 + [E.GROUP_MAX_SIZE_REACHED] * 2
    run_to(net, net.now + 10_000)  # the three expire on their session timers
    assert net.answer(net.join(version=9)).error_code == E.MEMBER_ID_REQUIRED


def form(net, group):
    """A one-member group through JoinGroup (v9, with MEMBER_ID_REQUIRED first) and SyncGroup; the time
    it took on the injected clock."""
    start = net.now
    member_id = net.answer(net.join(version=9, group=group, session=6_000)).member_id
    handle = net.join(member_id, version=9, group=group, session=6_000)
    net.complete(handle)
    joined = net.answer(handle)
    assert joined.error_code == E.NONE, joined
    synced = net.answer(net.sync(member_id, joined.generation_id, group=group,
                                 assignments=[(member_id, b"a")]))
    assert synced.error_code == E.NONE and net.state(group) == GroupState.STABLE
    return net.now - start


def test_a_flood_of_fresh_groups_and_half_joined_members_does_not_lock_out_a_new_group():
    cap = 200
    net = Net(max_groups=cap, initial_rebalance_delay_ms=100)
    # Half the cap: groups made by one JoinGroup each that never comes back (a pending id); the other
    # half: groups whose one member joined (v3) and never syncs.
    for i in range(cap // 2):
        assert net.answer(net.join(version=9, group=f"pending-{i}", session=6_000)).error_code == E.MEMBER_ID_REQUIRED
    for i in range(cap // 2):
        net.join(version=3, group=f"half-{i}", session=6_000)
    assert len(net.c.group_ids()) == cap
    # At the cap, a new group takes the place of the oldest idle one at once.
    assert form(net, "real") <= 1_000
    assert "pending-0" not in net.c.group_ids() and len(net.c.group_ids()) == cap
    # The evicted group's pending member, back with its id, is told to join afresh (and can).
    assert net.answer(net.join("c-1", version=9, group="pending-0", session=6_000)).error_code == E.UNKNOWN_MEMBER_ID


def test_with_no_idle_group_the_cap_answers_a_retriable_error_until_members_expire():
    cap = 50
    net = Net(max_groups=cap, initial_rebalance_delay_ms=100)
    for i in range(cap):
        net.join(version=3, group=f"half-{i}", session=6_000)
    flooded = net.now
    refused = net.answer(net.join(version=9, group="real"))
    assert refused.error_code == E.COORDINATOR_NOT_AVAILABLE  # the client finds the coordinator and retries
    commit_refused = commit(net, "real-offsets")
    assert commit_refused == E.COORDINATOR_NOT_AVAILABLE and net.c.committed("real-offsets", "t", 0)[0] == -1
    # The half-joined members never sync: their sessions end them (initial delay + session timeout).
    run_to(net, flooded + 100 + 6_000)
    took = form(net, "real")
    assert net.now - flooded + took <= 10_000
    assert commit(net, "real-offsets") == E.NONE


def test_without_a_cap_a_flood_leaves_nothing_behind():
    net = Net(empty_group_retention_ms=RETENTION)
    for i in range(500):
        net.join(version=9, group=f"pending-{i}", session=6_000)
        net.join(version=3, group=f"half-{i}", session=6_000)
    commit(net, "kept")
    assert len(net.c.group_ids()) == 1001
    run_to(net, net.now + 3_000 + 6_000 + RETENTION)
    assert net.c.group_ids() == ["kept"] and net.c.next_deadline() is None


@pytest.mark.parametrize("close", [True, False])
def test_a_closed_coordinator_is_freed_without_the_cycle_collector(close):
    """A coordinator refers to itself through its request tables and callbacks, so only the cyclic collector
    frees a dropped one, with its groups and members; close() lets reference counts free it at once."""
    import gc
    import weakref

    net = Net()
    net.stable_group(2)
    coordinator = weakref.ref(net.c)
    if close:
        net.c.close()
        assert net.c.tick(net.now + 10**9) == [] and net.c.next_deadline() is None
        with pytest.raises(GroupProtocolError, match="closed"):
            net.join()
    enabled = gc.isenabled()
    gc.disable()
    try:
        del net
        assert (coordinator() is None) is close
    finally:
        if enabled:
            gc.enable()
    gc.collect()
    assert coordinator() is None
