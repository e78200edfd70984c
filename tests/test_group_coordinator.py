"""GroupCoordinator against Kafka's classic coordinator rules, state by state and request by request.

Every test drives the sans-IO machine on an injected clock (milliseconds passed in) and never sleeps.
Member ids are deterministic (``<client or instance id>-<n>``) through the member_id_factory hook.
"""

import pytest

import kwire
from kwire.errors import KwireError
from kwire.codec import ErrorCode as E
from kwire.group import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupCoordinator, GroupProtocolError, GroupState
from tests.group_net import REBALANCE, SESSION, Net, protocols

# ---------------------------------------------------------------------------------------------------------
# JoinGroup: checks before the group logic
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(10))
def test_join_empty_group_id_is_invalid_and_echoes_member_id(version):
    net = Net()
    h = net.join("someone", version=version, group="")
    r = net.answer(h)
    assert (r.error_code, r.member_id, r.generation_id, r.leader) == (E.INVALID_GROUP_ID, "someone", -1, "")
    assert r.protocol_name == (None if version >= 7 else "")
    assert net.c.group_ids() == []
    kwire.JoinGroupResponse.decode(r.encode(version), version)  # every error response is writable at its version


@pytest.mark.parametrize("session,ok", [(5_999, False), (6_000, True), (1_800_000, True), (1_800_001, False)])
def test_session_timeout_bounds_are_inclusive(session, ok):
    net = Net()
    r = net.answer(net.join(session=session))
    assert r.error_code == (E.MEMBER_ID_REQUIRED if ok else E.INVALID_SESSION_TIMEOUT)


def test_unknown_group_with_member_id_is_unknown_member_and_creates_nothing():
    net = Net()
    r = net.answer(net.join("ghost"))
    assert (r.error_code, r.member_id) == (E.UNKNOWN_MEMBER_ID, "ghost")
    assert net.view() is None


# ---------------------------------------------------------------------------------------------------------
# JoinGroup: new members, MEMBER_ID_REQUIRED, the initial delay
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(4, 10))
def test_member_id_required_from_v4_leaves_the_group_empty(version):
    net = Net(initial_rebalance_delay_ms=3000)
    r = net.answer(net.join(version=version, client_id="app"))
    assert r.error_code == E.MEMBER_ID_REQUIRED and r.member_id == "app-1" and r.generation_id == -1
    assert net.state() == GroupState.EMPTY and net.view().members == ()
    assert net.c.next_deadline() == SESSION  # the pending id's own session timer
    # Back with the id: now a member, the initial rebalance starts
    h = net.join("app-1", version=version)
    assert net.answer(h) is None and net.state() == GroupState.PREPARING_REBALANCE
    net.tick(3000)
    r = net.answer(h)
    assert (r.error_code, r.generation_id, r.member_id, r.leader) == (0, 1, "app-1", "app-1")
    assert [m.member_id for m in r.members] == ["app-1"]


@pytest.mark.parametrize("version", range(0, 4))
def test_before_v4_an_unknown_member_is_added_at_once(version):
    net = Net(initial_rebalance_delay_ms=3000)
    h = net.join(version=version, client_id="old")
    assert net.answer(h) is None and net.state() == GroupState.PREPARING_REBALANCE
    net.tick(3000)
    r = net.answer(h)
    assert r.error_code == 0 and r.member_id == "old-1" and r.generation_id == 1
    assert r.protocol_name == "range"


def test_v0_uses_the_session_timeout_as_rebalance_timeout():
    net = Net()
    ids, gen, leader = net.stable_group(1, version=0)
    # A second v0 member: the leader has rebalance timeout = session (10 s), so the join timer is 10 s
    h = net.join(version=0, session=SESSION, client_id="x")
    assert net.state() == GroupState.PREPARING_REBALANCE
    assert net.c.next_deadline() == net.now + SESSION
    net.tick(net.now + SESSION)
    assert net.answer(h).error_code == 0  # the old member did not rejoin and was dropped
    assert [m.member_id for m in net.view().members] == [net.answer(h).member_id]


def test_pending_id_expires_on_its_session_timer():
    net = Net()
    mid = net.answer(net.join()).member_id
    net.tick(SESSION)
    r = net.answer(net.join(mid))
    assert r.error_code == E.UNKNOWN_MEMBER_ID and r.member_id == mid
    assert net.state() == GroupState.EMPTY


def test_heartbeat_from_a_pending_id_is_unknown_member():
    net = Net()
    ids, gen, _ = net.stable_group(1)
    pending = net.answer(net.join(client_id="p")).member_id
    assert net.answer(net.heartbeat(pending, gen)).error_code == E.UNKNOWN_MEMBER_ID


def test_initial_delay_extends_per_window_with_new_members_up_to_the_rebalance_timeout():
    # The reference example: D=3000, R=10000, a new member in every window: firings at 3000, 6000, 9000, 10000.
    net = Net(initial_rebalance_delay_ms=3000)
    first = net.join(version=3, rebalance=10_000)
    firings = []
    for t in (1000, 4000, 7000, 9500):
        net.now = t
        net.join(version=3, rebalance=10_000)  # a new member inside the current window
        firings.append(net.c.next_deadline())
        net.tick(firings[-1] - 1)
        assert net.answer(first) is None
        net.tick(firings[-1])
    assert firings == [3000, 6000, 9000, 10_000]
    r = net.answer(first)
    assert r.error_code == 0 and len(r.members) == 5


def test_initial_delay_without_new_members_completes_at_the_first_window():
    net = Net(initial_rebalance_delay_ms=3000)
    h = net.join(version=3)
    net.tick(2999)
    assert net.answer(h) is None
    net.tick(3000)
    assert net.answer(h).error_code == 0 and net.state() == GroupState.COMPLETING_REBALANCE


def test_rejoin_of_a_known_member_does_not_extend_the_initial_delay():
    net = Net(initial_rebalance_delay_ms=3000)
    h = net.join(version=3)
    mid = "c-1"
    net.now = 1000
    h2 = net.join(mid, version=3)  # the same member again: replaces the parked join, not a new member
    assert net.c.next_deadline() == 3000
    net.tick(3000)
    assert net.answer(h) is None, "the replaced join is never answered"
    assert net.answer(h2).error_code == 0


def test_leave_during_the_initial_delay_does_not_cut_it_short():
    net = Net(initial_rebalance_delay_ms=3000)
    a = net.join(version=3, client_id="a")
    net.join(version=3, client_id="b")
    net.leave(("b-2", None), version=3)
    assert net.state() == GroupState.PREPARING_REBALANCE and net.answer(a) is None
    net.tick(3000)
    net.tick(6000)  # b's arrival flagged a new member: one more window
    assert net.answer(a).error_code == 0 and [m.member_id for m in net.answer(a).members] == ["a-1"]


# ---------------------------------------------------------------------------------------------------------
# Protocols
# ---------------------------------------------------------------------------------------------------------


def test_protocol_selection_by_votes_among_common_protocols():
    net = Net(initial_rebalance_delay_ms=100)
    a = net.join(version=3, protos=protocols("roundrobin", "range", "sticky"))
    b = net.join(version=3, protos=protocols("range", "roundrobin"))
    c = net.join(version=3, protos=protocols("range", "roundrobin"))
    net.complete(a, b, c)
    net.tick(200)
    leader = net.answer(a)
    assert leader.protocol_name == "range"  # range 2 votes, roundrobin 1; sticky is not common
    assert [m.metadata for m in leader.members] == [b"mrange"] * 3  # each member's bytes for the selection
    assert net.answer(b).protocol_name == net.answer(c).protocol_name == "range"


@pytest.mark.parametrize("case", ["type", "names"])
def test_inconsistent_group_protocol(case):
    net = Net()
    ids, gen, _ = net.stable_group(2)
    if case == "type":
        r = net.answer(net.join(protocol_type="connect"))
    else:
        r = net.answer(net.join(protos=protocols("roundrobin")))
    assert r.error_code == E.INCONSISTENT_GROUP_PROTOCOL and r.member_id == ""
    # a known member changing to an unsupported protocol: the same, echoing its id
    r = net.answer(net.join(ids[1], protos=protocols("roundrobin")))
    assert r.error_code == E.INCONSISTENT_GROUP_PROTOCOL and r.member_id == ids[1]
    assert net.state() == GroupState.STABLE


def test_empty_group_accepts_any_nonempty_protocol_type_and_list():
    net = Net()
    assert net.answer(net.join(protocol_type="")).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    req = kwire.JoinGroupRequest(group_id="g", session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE,
                                 member_id="", protocol_type="consumer", protocols=[])
    assert net.answer(net.send(req, 9)).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert net.answer(net.join(protocol_type="anything")).error_code == E.MEMBER_ID_REQUIRED


# ---------------------------------------------------------------------------------------------------------
# JoinGroup by state for known members
# ---------------------------------------------------------------------------------------------------------


def test_completing_rebalance_same_metadata_gets_the_current_generation_again():
    net = Net()
    first_a, first_b = net.completing_pair()
    assert net.state() == GroupState.COMPLETING_REBALANCE
    again_b = net.answer(net.join(first_b.member_id, version=3))
    again_a = net.answer(net.join(first_a.member_id, version=3))
    assert again_b.generation_id == first_b.generation_id and again_b.members == []
    assert len(again_a.members) == 2 and again_a.leader == first_a.member_id
    assert net.state() == GroupState.COMPLETING_REBALANCE


def test_completing_rebalance_changed_metadata_rebalances_and_answers_parked_syncs():
    net = Net()
    ra, rb = net.completing_pair()
    parked = net.sync(rb.member_id, rb.generation_id)
    assert net.answer(parked) is None
    rejoin = net.join(rb.member_id, version=3, protos=protocols("range", meta=b"new"))
    r = net.answer(parked)
    assert r.error_code == E.REBALANCE_IN_PROGRESS and r.assignment == b"" and r.protocol_name is None
    assert net.state() == GroupState.PREPARING_REBALANCE and net.answer(rejoin) is None
    # the leader's next heartbeat learns of it, it rejoins, the join completes at once
    assert net.answer(net.heartbeat(ra.member_id, ra.generation_id)).error_code == E.REBALANCE_IN_PROGRESS
    net.join(ra.member_id, version=3)
    assert net.answer(rejoin).generation_id == rb.generation_id + 1


def test_stable_follower_with_same_metadata_gets_current_generation_without_rebalance():
    net = Net()
    ids, gen, leader = net.stable_group(3)
    follower = [m for m in ids if m != leader][0]
    r = net.answer(net.join(follower))
    assert (r.error_code, r.generation_id, r.leader, r.members) == (0, gen, leader, [])
    assert net.state() == GroupState.STABLE


def test_stable_leader_rejoin_always_rebalances():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    h = net.join(leader)
    assert net.answer(h) is None and net.state() == GroupState.PREPARING_REBALANCE


def test_stable_follower_with_changed_metadata_rebalances():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    follower = [m for m in ids if m != leader][0]
    net.join(follower, protos=protocols("range", meta=b"changed"))
    assert net.state() == GroupState.PREPARING_REBALANCE


def test_rebalance_drops_dynamic_members_that_do_not_rejoin_in_time():
    net = Net()
    ids, gen, leader = net.stable_group(3)
    start = net.now
    h = net.join(leader)
    others = [m for m in ids if m != leader]
    # one follower rejoins, the other only heartbeats (which keeps its session, not its place)
    h2 = net.join(others[0])
    for t in range(start + 3000, start + REBALANCE, 3000):
        net.tick(t)
        assert net.answer(net.heartbeat(others[1], gen)).error_code == E.REBALANCE_IN_PROGRESS
    assert net.answer(h) is None
    net.tick(start + REBALANCE)
    r = net.answer(h)
    assert r.generation_id == gen + 1 and {m.member_id for m in r.members} == {leader, others[0]}
    assert net.answer(h2).error_code == 0
    assert net.answer(net.heartbeat(others[1], gen)).error_code == E.UNKNOWN_MEMBER_ID


def test_all_members_rejoining_completes_the_join_without_waiting():
    net = Net()
    ids, gen, leader = net.stable_group(3)
    hs = [net.join(m) for m in ids]
    assert all(net.answer(h).generation_id == gen + 1 for h in hs)
    assert net.state() == GroupState.COMPLETING_REBALANCE


def test_duplicate_join_in_preparing_replaces_the_parked_one():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    first = net.join(ids[0])
    second = net.join(ids[0])
    net.join(ids[1])
    assert net.answer(first) is None and net.answer(second).generation_id == gen + 1


def test_new_member_join_timeout_removes_a_member_whose_join_never_completes():
    net = Net()
    ids, gen, leader = net.stable_group(1)
    # the old member's rebalance timeout is 10 minutes: longer than the fixed new-member timeout
    net.join(leader, rebalance=600_000)
    net.join(leader, rebalance=600_000)  # (parked again; still waiting for the newcomer's slot? no: all joined)
    assert net.state() == GroupState.COMPLETING_REBALANCE
    net.sync(leader, gen + 1, assignments=[(leader, b"x")])
    start = net.now
    net.heartbeat(leader, gen + 1)
    h_new = net.join(version=3, client_id="late", rebalance=600_000)
    assert net.state() == GroupState.PREPARING_REBALANCE
    # keep the old member alive without rejoining; the newcomer waits
    for t in range(start + 5_000, start + NEW_MEMBER_JOIN_TIMEOUT_MS, 5_000):
        net.tick(t)
        net.heartbeat(leader, gen + 1)
    assert net.answer(h_new) is None
    net.tick(start + NEW_MEMBER_JOIN_TIMEOUT_MS)
    r = net.answer(h_new)
    assert r.error_code == E.UNKNOWN_MEMBER_ID and r.member_id == ""


# ---------------------------------------------------------------------------------------------------------
# GROUP_MAX_SIZE_REACHED
# ---------------------------------------------------------------------------------------------------------


def test_group_max_size_in_stable_and_preparing():
    net = Net(max_group_size=2)
    ids, gen, leader = net.stable_group(2)
    r = net.answer(net.join(version=3, client_id="third"))
    assert (r.error_code, r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    # known members are always admitted in Stable
    h = net.join(leader)
    assert net.state() == GroupState.PREPARING_REBALANCE and net.answer(h) is None
    # in PreparingRebalance the gate counts members awaiting join: one is parked, so one more fits
    new = net.join(version=3, client_id="n")
    assert net.answer(new) is None
    r = net.answer(net.join(version=3, client_id="m"))
    assert r.error_code == E.GROUP_MAX_SIZE_REACHED


def test_group_max_size_removes_a_refused_known_member():
    net = Net(max_group_size=2)
    ids, gen, leader = net.stable_group(2)
    follower = [m for m in ids if m != leader][0]
    net.join(leader)
    net.join(version=3, client_id="n")  # 2 parked now
    r = net.answer(net.join(follower))   # a member without a parked join, and the gate is full
    assert (r.error_code, r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert follower not in {m.member_id for m in net.view().members}


def test_max_group_size_must_be_positive():
    with pytest.raises(GroupProtocolError):
        GroupCoordinator(max_group_size=0)


# ---------------------------------------------------------------------------------------------------------
# Static membership
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [5, 8, 9])
def test_static_restart_in_stable_replaces_the_id_without_rebalance(version):
    net = Net()
    ids, gen, leader = net.stable_group(2, version=version, instances=["i0", "i1"])
    assert net.answer(net.join(version=version)).error_code == E.MEMBER_ID_REQUIRED or version < 4
    old = ids[1] if leader == ids[0] else ids[0]
    instance = "i1" if old == ids[1] else "i0"
    r = net.answer(net.join(version=version, instance=instance))
    assert r.error_code == 0 and r.generation_id == gen and r.member_id not in ids
    assert r.member_id.startswith(instance + "-")
    assert net.state() == GroupState.STABLE
    # it syncs and gets its stored assignment
    s = net.answer(net.sync(r.member_id, gen, instance=instance))
    assert s.error_code == 0 and s.assignment == old.encode()
    # the old id is fenced
    assert net.answer(net.heartbeat(old, gen, instance=instance)).error_code == E.FENCED_INSTANCE_ID
    assert net.answer(net.sync(old, gen, instance=instance)).error_code == E.FENCED_INSTANCE_ID


@pytest.mark.parametrize("version", [8, 9])
def test_static_leader_restart_by_version(version):
    net = Net()
    ids, gen, leader = net.stable_group(2, version=version, instances=["i0", "i1"])
    instance = "i0" if leader == ids[0] else "i1"
    r = net.answer(net.join(version=version, instance=instance))
    assert net.view().leader_id == r.member_id and net.state() == GroupState.STABLE
    if version >= 9:
        assert r.leader == r.member_id and r.skip_assignment and len(r.members) == 2
    else:
        assert r.leader == leader and r.members == [] and not r.skip_assignment  # the OLD leader id


def test_static_restart_that_changes_the_selected_protocol_rebalances():
    net = Net()
    h = net.join(instance="i0", protos=protocols("range", "roundrobin"))
    net.complete(h)
    r = net.answer(h)
    net.sync(r.member_id, r.generation_id, assignments=[(r.member_id, b"x")])
    assert net.state() == GroupState.STABLE
    # same protocols, new order of preference: the vote changes, so the restart rebalances
    # (the only member has rejoined, so the rebalance completes at once into a new generation)
    r = net.answer(net.join(instance="i0", protos=protocols("roundrobin", "range")))
    assert (r.generation_id, r.protocol_name, net.state()) == (2, "roundrobin", GroupState.COMPLETING_REBALANCE)
    # a protocol the group does not support at all is refused before any replacement
    r = net.answer(net.join(instance="i0", protos=protocols("sticky")))
    assert r.error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_static_member_that_does_not_rejoin_stays_through_the_rebalance():
    net = Net()
    ids, gen, leader = net.stable_group(2, instances=["i0", "i1"])
    other, other_instance = (ids[1], "i1") if leader == ids[0] else (ids[0], "i0")
    start = net.now
    h = net.join(leader, instance="i0" if leader == ids[0] else "i1")
    for t in range(start + 3000, start + REBALANCE, 3000):
        net.tick(t)
        net.heartbeat(other, gen, instance=other_instance)
    net.tick(start + REBALANCE)
    r = net.answer(h)
    assert r.error_code == 0 and {m.member_id for m in r.members} == set(ids)
    assert {m.group_instance_id for m in r.members} == {"i0", "i1"}


def test_static_replacement_fences_the_old_parked_join():
    net = Net()
    ids, gen, leader = net.stable_group(3, instances=["i0", "i1", "i2"])
    instance_of = dict(zip(ids, ["i0", "i1", "i2"]))
    f1, f2 = [m for m in ids if m != leader]
    net.join(leader, instance=instance_of[leader])
    old_join = net.join(f1, instance=instance_of[f1])
    assert net.state() == GroupState.PREPARING_REBALANCE and net.answer(old_join) is None
    new = net.join(instance=instance_of[f1])
    r = net.answer(old_join)
    assert (r.error_code, r.member_id) == (E.FENCED_INSTANCE_ID, f1)
    assert net.answer(new) is None  # still waiting on f2
    net.join(f2, instance=instance_of[f2])
    assert net.answer(new).error_code == 0 and net.answer(new).generation_id == gen + 1


def test_static_replacement_in_completing_rebalance_fences_the_parked_sync_and_rebalances():
    net = Net()
    a = net.join(instance="a")
    b = net.join(instance="b")
    net.complete(a, b)
    rb = net.answer(b)
    parked = net.sync(rb.member_id, rb.generation_id, instance="b")
    net.join(instance="b")
    assert net.answer(parked).error_code == E.FENCED_INSTANCE_ID
    assert net.state() == GroupState.PREPARING_REBALANCE


def test_static_member_checks():
    net = Net()
    ids, gen, leader = net.stable_group(1, instances=["i0"])
    assert net.answer(net.heartbeat(ids[0], gen, instance="nope")).error_code == E.UNKNOWN_MEMBER_ID
    assert net.answer(net.heartbeat("other", gen, instance="i0")).error_code == E.FENCED_INSTANCE_ID
    assert net.answer(net.heartbeat(ids[0], gen, instance="i0")).error_code == 0
    # below v3 the instance id is not on the wire, so it is not checked
    assert net.answer(net.heartbeat(ids[0], gen, version=2)).error_code == 0


def test_static_members_never_get_member_id_required():
    net = Net()
    h = net.join(instance="s")
    assert net.answer(h) is None and net.state() == GroupState.PREPARING_REBALANCE


# ---------------------------------------------------------------------------------------------------------
# SyncGroup
# ---------------------------------------------------------------------------------------------------------


def test_followers_wait_for_the_leader_and_missing_members_get_empty_bytes():
    net = Net()
    hs = [net.join(version=3, client_id=f"c{i}") for i in range(3)]
    net.complete(*hs)
    rs = [net.answer(h) for h in hs]
    leader = rs[0].leader
    followers = [r.member_id for r in rs if r.member_id != leader]
    parked = [net.sync(m, 1) for m in followers]
    assert all(net.answer(p) is None for p in parked)
    net.heartbeat(followers[0], 1)
    assert net.answer(net.heartbeat(followers[0], 1)).error_code == 0  # NONE in CompletingRebalance (2.7+)
    lh = net.sync(leader, 1, assignments=[(leader, b"L"), (followers[0], b"F0"), ("stranger", b"?"),
                                          (followers[0], b"F0-last")])
    assert net.answer(lh).assignment == b"L"
    assert net.answer(parked[0]).assignment == b"F0-last"   # a repeated id: the last one wins
    assert net.answer(parked[1]).assignment == b""          # left out by the leader
    assert net.answer(parked[0]).protocol_type == "consumer" and net.answer(parked[0]).protocol_name == "range"
    assert net.state() == GroupState.STABLE


def test_late_follower_in_stable_gets_its_stored_assignment():
    net = Net()
    ra, rb = net.completing_pair()
    net.sync(ra.member_id, 1, assignments=[(ra.member_id, b"A"), (rb.member_id, b"B")])
    r = net.answer(net.sync(rb.member_id, 1))
    assert (r.error_code, r.assignment) == (0, b"B")
    # and again: a duplicate SyncGroup in Stable is answered the same
    assert net.answer(net.sync(rb.member_id, 1)).assignment == b"B"


@pytest.mark.parametrize("version", range(6))
def test_sync_errors(version):
    net = Net()
    assert net.answer(net.sync("x", 0, version=version, group="")).error_code == E.INVALID_GROUP_ID
    assert net.answer(net.sync("x", 0, version=version, group="nope")).error_code == E.UNKNOWN_MEMBER_ID
    ids, gen, leader = net.stable_group(2)
    assert net.answer(net.sync("ghost", gen, version=version)).error_code == E.UNKNOWN_MEMBER_ID
    assert net.answer(net.sync(leader, gen + 1, version=version)).error_code == E.ILLEGAL_GENERATION
    assert net.answer(net.sync(leader, gen - 1, version=version)).error_code == E.ILLEGAL_GENERATION
    wrong = net.answer(net.sync(leader, gen, version=version, pname="roundrobin")).error_code
    assert wrong == (E.INCONSISTENT_GROUP_PROTOCOL if version >= 5 else 0)
    net.join(leader)
    assert net.answer(net.sync(leader, gen, version=version)).error_code == E.REBALANCE_IN_PROGRESS
    r = net.answer(net.sync(leader, gen, version=version))
    assert r.assignment == b"" and r.protocol_type is None
    kwire.SyncGroupResponse.decode(r.encode(version), version)


def test_sync_v5_needs_protocol_type_and_name():
    net = Net()
    ids, gen, leader = net.stable_group(1)
    assert net.answer(net.sync(leader, gen, ptype=None)).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert net.answer(net.sync(leader, gen, pname=None)).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_sync_to_an_empty_group_is_unknown_member():
    net = Net()
    ids, gen, _ = net.stable_group(1)
    net.leave((ids[0], None))
    net.tick(net.now)
    assert net.state() == GroupState.EMPTY
    assert net.answer(net.sync(ids[0], gen)).error_code == E.UNKNOWN_MEMBER_ID


def test_leader_that_never_syncs_is_dropped_and_followers_are_sent_back():
    # sessions longer than the rebalance timeout, so the pending-sync timer is what fires
    net = Net()
    hs = [net.join(version=3, client_id=f"c{i}", session=60_000, rebalance=20_000) for i in range(3)]
    net.complete(*hs)
    start = net.now
    rs = [net.answer(h) for h in hs]
    leader = rs[0].leader
    followers = [r.member_id for r in rs if r.member_id != leader]
    parked = net.sync(followers[0], 1)
    assert net.c.next_deadline() == start + 20_000
    net.tick(start + 19_999)
    assert net.answer(parked) is None
    net.tick(start + 20_000)
    assert net.answer(parked).error_code == E.REBALANCE_IN_PROGRESS
    members = {m.member_id for m in net.view().members}
    # the leader and the follower that never sent SyncGroup are gone; the parked one stays
    assert members == {followers[0]} and net.state() == GroupState.PREPARING_REBALANCE
    assert net.view().leader_id == followers[0]


def test_member_that_never_syncs_is_dropped_even_once_stable():
    net = Net()
    ra, rb = net.completing_pair(session=60_000, rebalance=20_000)
    start = net.now
    net.sync(ra.member_id, 1, assignments=[(ra.member_id, b"A"), (rb.member_id, b"B")])
    assert net.state() == GroupState.STABLE
    assert net.answer(net.heartbeat(rb.member_id, 1)).error_code == 0  # heartbeats do not count as syncing
    net.tick(start + 20_000)
    assert [m.member_id for m in net.view().members] == [ra.member_id]
    assert net.state() == GroupState.PREPARING_REBALANCE


def test_sync_timer_is_cancelled_when_everyone_synced():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    for t in range(5_000, REBALANCE + 10_000, 5_000):
        net.tick(t)
        for m in ids:
            net.heartbeat(m, gen)
    assert net.state() == GroupState.STABLE and len(net.view().members) == 2


# ---------------------------------------------------------------------------------------------------------
# Heartbeat and session expiry
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(5))
def test_heartbeat_answers_by_state(version):
    net = Net()
    assert net.answer(net.heartbeat("x", 0, version=version, group="")).error_code == E.INVALID_GROUP_ID
    assert net.answer(net.heartbeat("x", 0, version=version, group="none")).error_code == E.UNKNOWN_MEMBER_ID
    a, b = net.join(version=3, client_id="a"), net.join(version=3, client_id="b")
    assert net.state() == GroupState.PREPARING_REBALANCE
    net.complete(a, b)
    ra, rb = net.answer(a), net.answer(b)
    assert net.state() == GroupState.COMPLETING_REBALANCE
    assert net.answer(net.heartbeat(rb.member_id, 1, version=version)).error_code == 0
    assert net.answer(net.heartbeat(rb.member_id, 0, version=version)).error_code == E.ILLEGAL_GENERATION
    net.sync(ra.member_id, 1, assignments=[])
    assert net.state() == GroupState.STABLE
    assert net.answer(net.heartbeat(rb.member_id, 1, version=version)).error_code == 0
    assert net.answer(net.heartbeat("ghost", 1, version=version)).error_code == E.UNKNOWN_MEMBER_ID
    net.join(ra.member_id, version=3)
    assert net.state() == GroupState.PREPARING_REBALANCE
    # the old generation is still current while preparing
    assert net.answer(net.heartbeat(rb.member_id, 1, version=version)).error_code == E.REBALANCE_IN_PROGRESS
    assert net.answer(net.heartbeat(rb.member_id, 2, version=version)).error_code == E.ILLEGAL_GENERATION


def test_session_expiry_removes_the_member_and_rebalances():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    follower = [m for m in ids if m != leader][0]
    for t in range(3000, SESSION + 3000, 3000):
        net.tick(t)
        net.heartbeat(leader, gen)
    assert net.state() == GroupState.PREPARING_REBALANCE
    assert [m.member_id for m in net.view().members] == [leader]
    assert net.answer(net.heartbeat(follower, gen)).error_code == E.UNKNOWN_MEMBER_ID
    assert net.answer(net.heartbeat(leader, gen)).error_code == E.REBALANCE_IN_PROGRESS
    h = net.join(leader)
    assert net.answer(h).generation_id == gen + 1 and net.answer(h).members[0].member_id == leader


def test_heartbeats_keep_a_session_alive_past_its_timeout():
    net = Net()
    ids, gen, leader = net.stable_group(1)
    for t in range(SESSION // 2, 10 * SESSION, SESSION // 2):
        net.tick(t)
        assert net.answer(net.heartbeat(leader, gen)).error_code == 0
    assert net.state() == GroupState.STABLE


def test_a_member_with_a_parked_join_is_not_expired():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    follower = [m for m in ids if m != leader][0]
    h = net.join(leader, rebalance=10 * SESSION)
    net.tick(net.now + 3 * SESSION)  # far past the leader's session: it waits on the group, not vice versa
    assert leader in {m.member_id for m in net.view().members}
    assert follower not in {m.member_id for m in net.view().members}
    assert net.answer(h).error_code == 0


# ---------------------------------------------------------------------------------------------------------
# LeaveGroup
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(3))
def test_leave_v0_to_v2_single_member(version):
    net = Net()
    assert net.answer(net.leave(("x", None), version=version, group="nope")).error_code == E.UNKNOWN_MEMBER_ID
    ids, gen, leader = net.stable_group(2)
    assert net.answer(net.leave(("ghost", None), version=version)).error_code == E.UNKNOWN_MEMBER_ID
    assert net.state() == GroupState.STABLE
    r = net.answer(net.leave((leader, None), version=version))
    assert r.error_code == 0 and r.members == []
    assert net.state() == GroupState.PREPARING_REBALANCE and net.view().leader_id != leader


@pytest.mark.parametrize("version", range(3, 6))
def test_leave_batch_reports_each_identity(version):
    net = Net()
    r = net.answer(net.leave(("a", None), ("b", "i"), version=version, group="nope"))
    assert r.error_code == 0 and [m.error_code for m in r.members] == [E.UNKNOWN_MEMBER_ID] * 2
    ids, gen, leader = net.stable_group(3, instances=["i0", "i1", "i2"])
    r = net.answer(net.leave((ids[0], "i0"), ("ghost", None), (ids[1], "i2"), ("", "i2"), ("", "zz"),
                             version=version))
    assert r.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == [
        (ids[0], "i0", 0), ("ghost", None, E.UNKNOWN_MEMBER_ID), (ids[1], "i2", E.FENCED_INSTANCE_ID),
        ("", "i2", 0), ("", "zz", E.UNKNOWN_MEMBER_ID)]
    assert [m.member_id for m in net.view().members] == [ids[1]]
    assert net.state() == GroupState.PREPARING_REBALANCE


def test_leave_answers_the_leavers_parked_join_and_completes_the_join():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    follower = [m for m in ids if m != leader][0]
    hl = net.join(leader)
    hf = net.join(follower, protos=protocols("range", meta=b"other"))  # a second parked join
    net.join(leader)  # (complete: both joined)
    assert net.state() == GroupState.COMPLETING_REBALANCE
    hl2 = net.join(leader, protos=protocols("range", meta=b"v3"))  # back to preparing, leader parked
    assert net.state() == GroupState.PREPARING_REBALANCE and net.answer(hl2) is None
    r = net.answer(net.leave((leader, None)))
    assert r.members[0].error_code == 0
    parked = net.answer(hl2)
    assert (parked.error_code, parked.member_id) == (E.UNKNOWN_MEMBER_ID, "")
    assert hl and hf


def test_leave_of_a_pending_member_in_stable_rebalances_as_java():
    net = Net()
    ids, gen, leader = net.stable_group(1)
    pending = net.answer(net.join(client_id="p")).member_id
    r = net.answer(net.leave((pending, None)))
    assert r.members[0].error_code == 0 and net.state() == GroupState.PREPARING_REBALANCE


def test_leave_of_the_last_member_empties_the_group_with_a_new_generation():
    net = Net()
    ids, gen, leader = net.stable_group(1)
    net.leave((leader, None))
    assert net.state() == GroupState.EMPTY and net.view().generation_id == gen + 1


# ---------------------------------------------------------------------------------------------------------
# Timers, many groups, unload, bad input
# ---------------------------------------------------------------------------------------------------------


def test_tick_before_a_deadline_does_nothing_and_next_deadline_tracks_the_earliest():
    net = Net(initial_rebalance_delay_ms=3000)
    assert net.c.next_deadline() is None
    h = net.join(version=3)
    assert net.c.next_deadline() == 3000
    assert net.tick(2999) == []
    net.tick(3000)
    assert net.answer(h).error_code == 0
    # after the join: session timer (10 s) and sync timer (30 s): the earliest is reported
    assert net.c.next_deadline() == 3000 + SESSION


def test_handle_fires_overdue_timers_first():
    net = Net(initial_rebalance_delay_ms=3000)
    h = net.join(version=3)
    net.now = 5000  # no tick: the request itself must not see a stale state
    hb = net.heartbeat("c-1", 1)
    assert net.answer(h).error_code == 0 and net.answer(hb).error_code == 0


def test_many_groups_are_independent():
    net = Net()
    g1 = net.stable_group(2, group="one")
    g2 = net.stable_group(3, group="two")
    net.join(g1[2], group="one")
    assert net.state("one") == GroupState.PREPARING_REBALANCE and net.state("two") == GroupState.STABLE
    assert net.answer(net.heartbeat(g1[0][0], g1[1], group="two")).error_code == E.UNKNOWN_MEMBER_ID
    assert sorted(net.c.list_groups()) == [("one", "consumer", GroupState.PREPARING_REBALANCE, "classic"),
                                           ("two", "consumer", GroupState.STABLE, "classic")]
    assert net.c.list_groups(states=[" STABLE "]) == [("two", "consumer", GroupState.STABLE, "classic")]
    assert g2


def test_unload_answers_parked_requests_not_coordinator():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    h = net.join(leader)
    net._take(net.c.unload_group("g", net.now))
    r = net.answer(h)
    assert r.error_code == E.NOT_COORDINATOR
    assert net.view() is None and net.c.next_deadline() is None


def test_unload_in_completing_rebalance_answers_parked_syncs():
    net = Net()
    ra, rb = net.completing_pair()
    parked = net.sync(rb.member_id, 1)
    net._take(net.c.unload_group("g", net.now))
    assert net.answer(parked).error_code == E.NOT_COORDINATOR


def test_bad_input_is_a_kwire_error():
    c = GroupCoordinator()
    with pytest.raises(GroupProtocolError):
        c.handle(1, kwire.FindCoordinatorRequest(), 0, 0)
    with pytest.raises(KwireError):
        c.handle(1, kwire.JoinGroupRequest(group_id="g"), 10, 0)
    with pytest.raises(KwireError):
        c.handle(1, kwire.HeartbeatRequest(group_id="g"), -1, 0)


# ---------------------------------------------------------------------------------------------------------
# The read surface for the next wave: offset-commit checks, DescribeGroups, ListGroups
# ---------------------------------------------------------------------------------------------------------


def test_validate_offset_commit():
    net = Net()
    v = net.c.validate_offset_commit
    # unknown group
    assert v("new", 5, "m", None, version=8, now=0) == E.ILLEGAL_GENERATION
    assert v("new", 5, "m", None, version=9, now=0) == E.GROUP_ID_NOT_FOUND
    assert net.c.describe_group("new") is None
    assert v("simple", -1, "", None, version=8, now=0) == 0
    view = net.c.describe_group("simple")
    assert (view.state, view.protocol_type) == (GroupState.EMPTY, "")
    assert v("simple", -1, "whoever", None, version=8, now=0) == 0  # Empty, generation < 0: not checked
    ids, gen, leader = net.stable_group(2)
    assert v("g", gen, leader, None, version=8, now=net.now) == 0
    assert v("g", gen + 1, leader, None, version=8, now=net.now) == E.ILLEGAL_GENERATION
    assert v("g", gen, "ghost", None, version=8, now=net.now) == E.UNKNOWN_MEMBER_ID
    assert v("g", -1, leader, None, version=8, now=net.now) == E.ILLEGAL_GENERATION
    assert v("g", -1, "", None, version=8, now=net.now) == E.UNKNOWN_MEMBER_ID
    net.join(leader)
    assert net.state() == GroupState.PREPARING_REBALANCE
    assert v("g", gen, leader, None, version=8, now=net.now) == 0  # the generation being left is accepted
    for m in ids:
        net.join(m)
    assert net.state() == GroupState.COMPLETING_REBALANCE
    assert v("g", gen + 1, leader, None, version=8, now=net.now) == E.REBALANCE_IN_PROGRESS


def test_validate_offset_commit_static_and_session_rearm():
    net = Net()
    ids, gen, leader = net.stable_group(1, instances=["i"])
    assert net.c.validate_offset_commit("g", gen, "other", "i", version=8, now=0) == E.FENCED_INSTANCE_ID
    # commits keep a member alive (its session timer is re-armed) in Stable
    for t in range(5000, 5 * SESSION, 5000):
        net.tick(t)
        assert net.c.validate_offset_commit("g", gen, leader, "i", version=8, now=t) == 0
    assert net.state() == GroupState.STABLE


def test_describe_group_by_state():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    view = net.view()
    assert (view.state, view.protocol_type, view.protocol_name, view.generation_id) == (
        GroupState.STABLE, "consumer", "range", gen)
    assert {m.member_id: (m.metadata, m.assignment) for m in view.members} == {
        m: (b"mrange", m.encode()) for m in ids}
    assert {m.client_id for m in view.members} == {"c0", "c1"}
    net.join(leader)
    view = net.view()
    assert view.protocol_name == "" and all(m.metadata == b"" for m in view.members)
    assert {m.assignment for m in view.members} == {x.encode() for x in ids}  # Java keeps the stored bytes


@pytest.mark.parametrize("version", range(10))
def test_every_reply_of_a_whole_cycle_goes_through_the_framing_at_its_version(version):
    # JoinGroup at `version`, SyncGroup/Heartbeat/LeaveGroup at the highest version that client would pair with it
    sync_v, hb_v, leave_v = min(version, 5), min(version, 4), min(version, 5)
    instances = ["i0", "i1"] if version >= 5 else None
    net = Net()
    handles = []
    for i in range(2):
        h = net.join(version=version, client_id=f"c{i}", instance=instances[i] if instances else None)
        if version >= 4 and not instances:
            h = net.join(net.answer(h).member_id, version=version, client_id=f"c{i}")
        handles.append(h)
    net.complete(*handles)
    joins = [net.answer(h) for h in handles]
    leader = joins[0].leader
    syncs = [net.sync(j.member_id, j.generation_id, version=sync_v, instance=instances[i] if instances else None,
                      assignments=[(x.member_id, b"a") for x in joins] if j.member_id == leader else ())
             for i, j in enumerate(joins)]
    hbs = [net.heartbeat(j.member_id, j.generation_id, version=hb_v) for j in joins if not instances]
    leave = net.leave((joins[1].member_id, instances[1] if instances else None), version=leave_v)
    assert net.state() == GroupState.PREPARING_REBALANCE
    for correlation, reply in enumerate(net.replies.values()):
        frame = kwire.encode_response(reply.response, reply.version, correlation)
        header, decoded = kwire.decode_response(frame, reply.response.api_key, reply.version)
        assert header.correlation_id == correlation
        assert decoded == reply.response  # nothing set that the version cannot carry
    assert [net.answer(h).assignment for h in syncs] == [b"a", b"a"]
    assert all(net.answer(h).error_code == 0 for h in [*handles, *syncs, *hbs, leave])


# ---------------------------------------------------------------------------------------------------------
# Every state × every request: the error code Kafka's classic coordinator answers, each row cited to the
# method of Kafka's GroupMetadataManager (or OffsetMetadataManager) that decides it; docs/GROUP.md carries
# the same tables
# ---------------------------------------------------------------------------------------------------------

PARKED = "parked"  # no answer yet: the request waits for the join or sync phase to end
ABSENT, UNLOADED = "(no group)", "(unloaded)"
# Dead is a passing state here: unload_group moves the group through Dead and forgets it, as Java's
# coordinator deletes the group object (ClassicGroupState: any state may go to Dead), so the next request
# meets no group at all.
MATRIX_STATES = [ABSENT, UNLOADED, GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                 GroupState.STABLE]


def group_in(state):
    """``(net, member, generation)``: group "g" in ``state``; ``member`` is a follower of the group's current
    generation ``generation`` (in Empty and without a group: a former member and the last generation)."""
    net = Net()
    if state == ABSENT:
        return net, "c1-2", 1
    ids, gen, leader = net.stable_group(3)
    follower = next(m for m in ids if m != leader)
    if state == UNLOADED:
        net._take(net.c.unload_group("g", net.now))
    elif state == GroupState.EMPTY:
        net.leave(*[(m, None) for m in ids])
        gen += 1  # an emptied join phase still ends a generation (completeClassicGroupJoin: → Empty)
    elif state == GroupState.PREPARING_REBALANCE:
        net.join(leader)  # a Stable leader's rejoin always rebalances (classicGroupJoinExistingMember);
        # the followers have not rejoined
    elif state == GroupState.COMPLETING_REBALANCE:
        rejoins = [net.join(m) for m in ids]
        assert all(net.answer(h).error_code == 0 for h in rejoins)
        gen += 1
    assert net.state() == (None if state in (ABSENT, UNLOADED) else state)
    return net, follower, gen


def _code(net, handle):
    response = net.answer(handle)
    return PARKED if response is None else response.error_code


def _commit(net, member, generation):
    request = kwire.codec.OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=generation, member_id=member, topics=[
            kwire.codec.OffsetCommitRequestTopic(name="t", partitions=[
                kwire.codec.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])])
    (topic,) = net.answer(net.send(request, 8)).topics
    return topic.partitions[0].error_code


def _fetch(net):
    request = kwire.codec.OffsetFetchRequest(groups=[kwire.codec.OffsetFetchRequestGroup(
        group_id="g", topics=[kwire.codec.OffsetFetchRequestTopics(name="t", partition_indexes=[0])])])
    (group,) = net.answer(net.send(request, 8)).groups
    (partition,) = group.topics[0].partitions
    assert partition.committed_offset == -1  # nothing was committed in any state
    return group.error_code


def _describe(net):
    (group,) = net.answer(net.send(kwire.codec.DescribeGroupsRequest(groups=["g"]), 5)).groups
    return group.error_code, group.group_state


def _leave(net, member):
    response = net.answer(net.leave((member, None)))
    return response.error_code, response.members[0].error_code


N, UMI, IG, RIP = E.NONE, E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS

# request -> (how to send it, the answer in each of MATRIX_STATES)
MATRIX = {
    # classicGroupJoin: a member id for a group that does not exist; classicGroupJoinExistingMember:
    # validateMember, then by state (a follower with unchanged metadata: parked while PreparingRebalance, the
    # current generation at once after it).
    "JoinGroup known member": (lambda net, m, g: _code(net, net.join(m, version=5)),
                               [UMI, UMI, UMI, PARKED, N, N]),
    # classicGroupJoinExistingMember: validateMember fails in every state.
    "JoinGroup unknown member": (lambda net, m, g: _code(net, net.join("ghost-9", version=5)), [UMI] * 6),
    # classicGroupJoinNewDynamicMember: a new dynamic member at v4+ is told its id first, whatever the state
    # (classicGroupJoin: a missing group is created).
    "JoinGroup new member": (lambda net, m, g: _code(net, net.join("", version=5)), [E.MEMBER_ID_REQUIRED] * 6),
    # classicGroupSync: no group or Empty is UNKNOWN_MEMBER_ID, then the answer by state.
    "SyncGroup": (lambda net, m, g: _code(net, net.sync(m, g)), [UMI, UMI, UMI, RIP, PARKED, N]),
    # classicGroupSync: the generation is checked after the member.
    "SyncGroup old generation": (lambda net, m, g: _code(net, net.sync(m, g - 1)), [UMI, UMI, UMI, IG, IG, IG]),
    # classicGroupSync: in CompletingRebalance a second SyncGroup replaces the parked one; elsewhere each is
    # answered alike.
    "SyncGroup duplicate": (lambda net, m, g: (_code(net, net.sync(m, g)), _code(net, net.sync(m, g))),
                            [(UMI, UMI)] * 3 + [(RIP, RIP), (PARKED, PARKED), (N, N)]),
    # classicGroupHeartbeat: by state after the member checks (CompletingRebalance answers NONE since 2.7).
    "Heartbeat": (lambda net, m, g: _code(net, net.heartbeat(m, g)), [UMI, UMI, UMI, RIP, N, N]),
    # classicGroupHeartbeat: the generation is checked after the member.
    "Heartbeat old generation": (lambda net, m, g: _code(net, net.heartbeat(m, g - 1)), [UMI] * 3 + [IG] * 3),
    # classicGroupHeartbeat: validateMember.
    "Heartbeat unknown member": (lambda net, m, g: _code(net, net.heartbeat("ghost-9", g)), [UMI] * 6),
    # classicGroupLeave (no group: top level NONE, the member UNKNOWN_MEMBER_ID); validateMember per identity.
    "LeaveGroup": (lambda net, m, g: _leave(net, m), [(N, UMI)] * 3 + [(N, N)] * 3),
    # OffsetMetadataManager.validateOffsetCommit (no group at v8: ILLEGAL_GENERATION), then
    # ClassicGroup.validateOffsetCommit.
    "OffsetCommit": (lambda net, m, g: _commit(net, m, g), [IG, IG, UMI, N, RIP, N]),
    # ClassicGroup.validateOffsetCommit: a simple commit only where there is no group or it is Empty.
    "OffsetCommit simple": (lambda net, m, g: _commit(net, "", -1), [N, N, N, UMI, UMI, UMI]),
    # OffsetMetadataManager.fetchOffsets: every state, no member or generation checks.
    "OffsetFetch": (lambda net, m, g: _fetch(net), [N] * 6),
    # GroupMetadataManager.describeGroups: an unknown group is NONE with state Dead.
    "DescribeGroups": (lambda net, m, g: _describe(net),
                       [(N, GroupState.DEAD), (N, GroupState.DEAD)] + [(N, s) for s in MATRIX_STATES[2:]]),
}


@pytest.mark.parametrize("state", MATRIX_STATES)
@pytest.mark.parametrize("request_name", list(MATRIX))
def test_every_state_answers_every_request_as_kafka(state, request_name):
    send, answers = MATRIX[request_name]
    net, member, generation = group_in(state)
    assert send(net, member, generation) == answers[MATRIX_STATES.index(state)]


def test_a_duplicate_sync_in_completing_rebalance_replaces_the_parked_one():
    # classicGroupSync: the member's parked sync is replaced; Kafka never answers the first (its callback is
    # dropped).
    net, follower, gen = group_in(GroupState.COMPLETING_REBALANCE)
    first, second = net.sync(follower, gen), net.sync(follower, gen)
    leader = net.view().leader_id
    net.sync(leader, gen, assignments=[(follower, b"f")])
    assert (net.answer(first), net.answer(second).assignment) == (None, b"f")
    assert net.state() == GroupState.STABLE
