"""ConsumerMember: the consumer's side, response by response (the Java client's rules), then whole groups of
members against the GroupCoordinator through kwire's framing in memory (tests/group_loop.py)."""

import itertools

import pytest

import kwire
# The names this file tests, taken from the public package as a caller takes them; kwire/group/__init__.py lists
# the member's ones too, as it re-exports them from kwire/group/_member.py.
from kwire.group import (
    COOPERATIVE,
    EAGER,
    ConsumerMember,
    CoordinatorFound,
    GroupCoordinator,
    GroupJoined,
    GroupProtocolError,
    GroupState,
    MemberFailed,
    MemberState,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Send,
)
from kwire.codec import ErrorCode as E

from tests.group_loop import Loop


class NoJitter:
    @staticmethod
    def uniform(a, b):
        return 0.0


def sends(outputs):
    return [o for o in outputs if isinstance(o, Send)]


def events(outputs):
    return [o for o in outputs if not isinstance(o, Send)]


def one_send(outputs, cls):
    found = [o for o in sends(outputs) if isinstance(o.request, cls)]
    assert len(found) == 1, outputs
    return found[0]


def member(**kw):
    kw.setdefault("rng", NoJitter())
    kw.setdefault("session_timeout_ms", 10_000)
    kw.setdefault("heartbeat_interval_ms", 3_000)
    kw.setdefault("partitions_per_topic", {"a": 4, "b": 2})
    return ConsumerMember("g", kw.pop("topics", ["b", "a"]), client_id="me", **kw)


def found(m, now=0):
    find = one_send(m.poll(now), kwire.FindCoordinatorRequest)
    out = m.receive(find.token, kwire.FindCoordinatorResponse(
        coordinators=[kwire.Coordinator(key="g", node_id=7, host="h", port=1)]), now)
    assert CoordinatorFound(7, "h", 1) in out
    return one_send(out, kwire.JoinGroupRequest)


def join_ok(member_id, generation=1, leader="other", members=(), protocol="range"):
    return kwire.JoinGroupResponse(error_code=0, generation_id=generation, protocol_type="consumer",
                                   protocol_name=protocol, leader=leader, member_id=member_id, members=list(members))


def assignment(*tps):
    topics = {}
    for t, p in tps:
        topics.setdefault(t, []).append(p)
    return kwire.Assignment(assigned_partitions=[kwire.AssignmentTopicPartition(topic=t, partitions=ps)
                                                 for t, ps in topics.items()]).encode(3)


def stable_member(owned=(("a", 0), ("b", 1)), **kw):
    """A member taken to STABLE by hand: returns (member, its last outputs)."""
    m = member(**kw)
    join = found(m)
    out = m.receive(join.token, join_ok("me-1"), 10)
    sync = one_send(out, kwire.SyncGroupRequest)
    out = m.receive(sync.token, kwire.SyncGroupResponse(protocol_type="consumer", protocol_name="range",
                                                        assignment=assignment(*owned)), 20)
    assert m.state == MemberState.STABLE
    return m, out


# ---------------------------------------------------------------------------------------------------------
# Coordinator discovery
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 3, 4, 6])
def test_find_coordinator_by_version_then_join(version):
    m = member(versions={10: version})
    find = one_send(m.poll(0), kwire.FindCoordinatorRequest)
    assert not find.to_coordinator and find.version == version
    if version >= 4:
        assert find.request.coordinator_keys == ["g"]
        response = kwire.FindCoordinatorResponse(coordinators=[kwire.Coordinator(key="g", node_id=1, host="x", port=2)])
    else:
        assert find.request.key == "g"
        response = kwire.FindCoordinatorResponse(node_id=1, host="x", port=2)
    find.request.encode(version)
    out = m.receive(find.token, response, 5)
    assert out[0] == CoordinatorFound(1, "x", 2)
    join = one_send(out, kwire.JoinGroupRequest)
    assert join.to_coordinator and m.state == MemberState.PREPARING_REBALANCE


def test_find_coordinator_error_backs_off_exponentially():
    m = member(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    times = []
    now = 0
    for _ in range(6):
        find = one_send(m.poll(now), kwire.FindCoordinatorRequest)
        m.receive(find.token, kwire.FindCoordinatorResponse(
            coordinators=[kwire.Coordinator(key="g", error_code=E.COORDINATOR_NOT_AVAILABLE)]), now)
        assert m.poll(now) == [] and m.next_deadline() > now
        now = m.next_deadline()
        times.append(now)
    assert [b - a for a, b in zip([0] + times, times)] == [100, 200, 400, 800, 1000, 1000]


def test_find_coordinator_v4_takes_this_groups_entry():
    m = member()
    find = one_send(m.poll(0), kwire.FindCoordinatorRequest)
    out = m.receive(find.token, kwire.FindCoordinatorResponse(coordinators=[
        kwire.Coordinator(key="other", node_id=1, host="wrong", port=1),
        kwire.Coordinator(key="g", node_id=2, host="right", port=2)]), 0)
    assert out[0] == CoordinatorFound(2, "right", 2)
    m = member()
    find = one_send(m.poll(0), kwire.FindCoordinatorRequest)
    out = m.receive(find.token, kwire.FindCoordinatorResponse(coordinators=[
        kwire.Coordinator(key="other", node_id=1, host="wrong", port=1)]), 0)
    assert out == [] and m.coordinator is None  # no entry for this group: retried after a backoff


def test_request_failed_on_find_retries_after_backoff():
    m = member()
    find = one_send(m.poll(0), kwire.FindCoordinatorRequest)
    assert m.request_failed(find.token, 0) == []
    one_send(m.poll(m.next_deadline()), kwire.FindCoordinatorRequest)


# ---------------------------------------------------------------------------------------------------------
# JoinGroup
# ---------------------------------------------------------------------------------------------------------


def test_join_request_carries_the_subscription_per_assignor():
    m = member(assignors=("range", "roundrobin"), rack_id="r1")
    join = found(m)
    req = join.request
    assert (join.version, req.member_id, req.protocol_type, req.session_timeout_ms) == (9, "", "consumer", 10_000)
    assert [p.name for p in req.protocols] == ["range", "roundrobin"]
    sub = kwire.Subscription.decode(req.protocols[0].metadata)
    assert (sub.topics, sub.owned_partitions, sub.generation_id, sub.rack_id) == (["a", "b"], [], -1, "r1")
    assert m.protocol == EAGER


def test_subscription_topics_in_java_string_order():
    # Java's String.compareTo compares UTF-16 code units: U+1F600 is the surrogate pair D83D DE00, which
    # sorts before U+FFEE, though its code point is larger (Python's sorted() puts it last).
    smiley, halfwidth = "\U0001f600", "\uffee"
    m = member(topics=[halfwidth, smiley, halfwidth], partitions_per_topic={smiley: 1, halfwidth: 1})
    assert m.topics == (smiley, halfwidth)
    assert kwire.Subscription.decode(found(m).request.protocols[0].metadata).topics == [smiley, halfwidth]
    m.subscribe(["z", halfwidth, smiley])
    assert m.topics == ("z", smiley, halfwidth)


@pytest.mark.parametrize("topics", [None, 5, "orders", ["a", None], [["a"]]])
def test_topics_that_are_not_topic_names_are_a_typed_error(topics):
    from kwire.errors import ArgumentTypeError

    with pytest.raises(ArgumentTypeError):
        ConsumerMember("g", topics)
    with pytest.raises(ArgumentTypeError):
        member().subscribe(topics)


def test_cooperative_only_if_every_assignor_supports_it():
    assert member(assignors=("cooperative-sticky",)).protocol == COOPERATIVE
    assert member(assignors=("range", "cooperative-sticky")).protocol == EAGER


def test_member_id_required_rejoins_at_once_with_the_id():
    m = member()
    join = found(m)
    out = m.receive(join.token, kwire.JoinGroupResponse(error_code=E.MEMBER_ID_REQUIRED, member_id="me-9"), 1)
    again = one_send(out, kwire.JoinGroupRequest)
    assert again.request.member_id == "me-9" and events(out) == []


def test_follower_syncs_with_no_assignments_and_gets_its_partitions():
    m = member()
    join = found(m)
    out = m.receive(join.token, join_ok("me-1", generation=3, leader="lead"), 10)
    sync = one_send(out, kwire.SyncGroupRequest)
    req = sync.request
    assert (req.generation_id, req.member_id, req.assignments, req.protocol_type, req.protocol_name) == (
        3, "me-1", [], "consumer", "range")
    assert m.state == MemberState.COMPLETING_REBALANCE and not m.is_leader
    out = m.receive(sync.token, kwire.SyncGroupResponse(protocol_type="consumer", protocol_name="range",
                                                        assignment=assignment(("b", 1), ("a", 0))), 20)
    assert events(out) == [PartitionsAssigned((("a", 0), ("b", 1))),
                           GroupJoined(3, "me-1", "lead", "range", (("a", 0), ("b", 1)))]
    assert m.owned == (("a", 0), ("b", 1))


def test_leader_runs_the_assignor():
    m = member()
    join = found(m)
    other = kwire.Subscription(topics=["a", "b"]).encode(3)
    mine = join.request.protocols[0].metadata
    response = join_ok("me-1", leader="me-1", members=[
        kwire.JoinGroupResponseMember(member_id="me-1", metadata=mine),
        kwire.JoinGroupResponseMember(member_id="x-2", metadata=other)])
    sync = one_send(m.receive(join.token, response, 10), kwire.SyncGroupRequest)
    assert m.is_leader
    expected = kwire.leader_assignments("range", response, {"a": 4, "b": 2})
    assert sync.request.assignments == expected
    got = {a.member_id: kwire.Assignment.decode(a.assignment) for a in sync.request.assignments}
    assert sorted((t.topic, p) for a in got.values() for t in a.assigned_partitions for p in t.partitions) == [
        ("a", 0), ("a", 1), ("a", 2), ("a", 3), ("b", 0), ("b", 1)]


def test_leader_with_skip_assignment_sends_no_assignments():
    m = member()
    join = found(m)
    response = join_ok("me-1", leader="me-1", members=[kwire.JoinGroupResponseMember(member_id="me-1", metadata=b"")])
    response.skip_assignment = True
    assert one_send(m.receive(join.token, response, 10), kwire.SyncGroupRequest).request.assignments == []


@pytest.mark.parametrize("error", [E.FENCED_INSTANCE_ID, E.INCONSISTENT_GROUP_PROTOCOL, E.INVALID_SESSION_TIMEOUT,
                                   E.INVALID_GROUP_ID, E.GROUP_MAX_SIZE_REACHED, E.UNSUPPORTED_VERSION,
                                   E.ILLEGAL_GENERATION, E.GROUP_AUTHORIZATION_FAILED])
def test_fatal_join_errors(error):
    m = member()
    join = found(m)
    out = m.receive(join.token, kwire.JoinGroupResponse(error_code=error), 1)
    failed, = events(out)
    assert isinstance(failed, MemberFailed) and failed.error.error_code == error
    assert m.state == MemberState.FAILED and m.poll(100) == [] and m.next_deadline() is None


def test_join_retriable_errors():
    m = member(retry_backoff_ms=100)
    join = found(m)
    # REBALANCE_IN_PROGRESS: at once
    join = one_send(m.receive(join.token, kwire.JoinGroupResponse(error_code=E.REBALANCE_IN_PROGRESS), 1),
                    kwire.JoinGroupRequest)
    # COORDINATOR_LOAD_IN_PROGRESS: after the fixed backoff
    assert sends(m.receive(join.token, kwire.JoinGroupResponse(error_code=E.COORDINATOR_LOAD_IN_PROGRESS), 2)) == []
    assert m.next_deadline() == 102
    join = one_send(m.poll(102), kwire.JoinGroupRequest)
    # NOT_COORDINATOR: find it again
    out = m.receive(join.token, kwire.JoinGroupResponse(error_code=E.NOT_COORDINATOR), 3)
    assert sends(out) == [] and m.coordinator is None
    one_send(m.poll(103), kwire.FindCoordinatorRequest)


def test_join_unknown_member_id_resets_the_id():
    m = member()
    join = found(m)
    join = one_send(m.receive(join.token, kwire.JoinGroupResponse(error_code=E.MEMBER_ID_REQUIRED, member_id="me-1"), 1),
                    kwire.JoinGroupRequest)
    again = one_send(m.receive(join.token, kwire.JoinGroupResponse(error_code=E.UNKNOWN_MEMBER_ID), 2),
                     kwire.JoinGroupRequest)
    assert again.request.member_id == ""


# ---------------------------------------------------------------------------------------------------------
# SyncGroup replies
# ---------------------------------------------------------------------------------------------------------


def sync_in_flight(**kw):
    m = member(**kw)
    join = found(m)
    sync = one_send(m.receive(join.token, join_ok("me-1", generation=4), 10), kwire.SyncGroupRequest)
    return m, sync


def test_sync_rebalance_in_progress_rejoins_with_the_same_id_and_generation():
    m, sync = sync_in_flight()
    out = m.receive(sync.token, kwire.SyncGroupResponse(error_code=E.REBALANCE_IN_PROGRESS), 11)
    join = one_send(out, kwire.JoinGroupRequest)
    assert join.request.member_id == "me-1" and events(out) == []
    assert kwire.Subscription.decode(join.request.protocols[0].metadata).generation_id == 4


@pytest.mark.parametrize("error,member_id", [(E.ILLEGAL_GENERATION, "me-1"), (E.UNKNOWN_MEMBER_ID, "")])
def test_sync_generation_errors_reset(error, member_id):
    m, sync = sync_in_flight()
    join = one_send(m.receive(sync.token, kwire.SyncGroupResponse(error_code=error), 11), kwire.JoinGroupRequest)
    assert join.request.member_id == member_id
    assert kwire.Subscription.decode(join.request.protocols[0].metadata).generation_id == -1


def test_sync_fenced_is_fatal_and_protocol_mismatch_is_inconsistent():
    m, sync = sync_in_flight()
    failed, = events(m.receive(sync.token, kwire.SyncGroupResponse(error_code=E.FENCED_INSTANCE_ID), 11))
    assert failed.error.error_code == E.FENCED_INSTANCE_ID
    m, sync = sync_in_flight()
    failed, = events(m.receive(sync.token, kwire.SyncGroupResponse(protocol_type="consumer", protocol_name="roundrobin",
                                                                   assignment=assignment(("a", 0))), 11))
    assert failed.error.error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_empty_assignment_bytes_are_fatal_as_in_java():
    m, sync = sync_in_flight()
    failed, = events(m.receive(sync.token, kwire.SyncGroupResponse(assignment=b""), 11))
    assert isinstance(failed, MemberFailed)


def test_assignment_outside_the_subscription_is_not_applied_and_rejoins():
    m, sync = sync_in_flight()
    out = m.receive(sync.token, kwire.SyncGroupResponse(assignment=assignment(("zzz", 0))), 11)
    assert m.owned == () and not any(isinstance(e, PartitionsAssigned) for e in out)
    one_send(out, kwire.JoinGroupRequest)


# ---------------------------------------------------------------------------------------------------------
# Heartbeats
# ---------------------------------------------------------------------------------------------------------


def test_heartbeat_on_its_interval_and_session_kept_alive():
    m, _ = stable_member()
    assert m.next_deadline() == 10 + 3000  # enabled at the JoinGroup reply (t=10)
    assert m.poll(3009) == []
    hb = one_send(m.poll(3010), kwire.HeartbeatRequest)
    assert (hb.request.generation_id, hb.request.member_id) == (1, "me-1")
    assert m.poll(3011) == [] and m.next_deadline() == 10_010  # the session deadline; no second heartbeat in flight
    m.receive(hb.token, kwire.HeartbeatResponse(), 3020)
    assert m.next_deadline() == 6010
    now = 6010
    for _ in range(10):
        hb = one_send(m.poll(now), kwire.HeartbeatRequest)
        m.receive(hb.token, kwire.HeartbeatResponse(), now)
        now = m.next_deadline()
    assert m.state == MemberState.STABLE and m.coordinator is not None


def test_session_timeout_without_successful_heartbeat_marks_the_coordinator_unknown():
    m, _ = stable_member()
    hb = one_send(m.poll(3010), kwire.HeartbeatRequest)  # never answered
    assert m.next_deadline() == 10_010
    out = m.poll(10_010)
    one_send(out, kwire.FindCoordinatorRequest)
    assert m.coordinator is None and m.generation_id == 1  # the generation is kept
    assert hb


def test_heartbeat_rebalance_in_progress_eager_revokes_everything_before_rejoining():
    m, _ = stable_member()
    hb = one_send(m.poll(3010), kwire.HeartbeatRequest)
    out = m.receive(hb.token, kwire.HeartbeatResponse(error_code=E.REBALANCE_IN_PROGRESS), 3020)
    assert isinstance(out[0], PartitionsRevoked) and out[0].partitions == (("a", 0), ("b", 1))
    join = one_send(out[1:], kwire.JoinGroupRequest)
    sub = kwire.Subscription.decode(join.request.protocols[0].metadata)
    assert sub.owned_partitions == [] and sub.generation_id == 1 and join.request.member_id == "me-1"
    assert m.poll(6020) == []  # no heartbeats while the join is in flight


def test_heartbeat_rebalance_in_progress_cooperative_keeps_partitions_and_reports_them():
    m, _ = stable_member(assignors=("cooperative-sticky",))
    hb = one_send(m.poll(3010), kwire.HeartbeatRequest)
    out = m.receive(hb.token, kwire.HeartbeatResponse(error_code=E.REBALANCE_IN_PROGRESS), 3020)
    assert events(out) == []
    sub = kwire.Subscription.decode(one_send(out, kwire.JoinGroupRequest).request.protocols[0].metadata)
    assert [(t.topic, t.partitions) for t in sub.owned_partitions] == [("a", [0]), ("b", [1])]
    assert kwire.CooperativeStickyUserData.decode(sub.user_data, 0).generation == 1


@pytest.mark.parametrize("error,member_id", [(E.ILLEGAL_GENERATION, "me-1"), (E.UNKNOWN_MEMBER_ID, "")])
def test_heartbeat_generation_errors_lose_partitions_and_rejoin(error, member_id):
    m, _ = stable_member()
    hb = one_send(m.poll(3010), kwire.HeartbeatRequest)
    out = m.receive(hb.token, kwire.HeartbeatResponse(error_code=error), 3020)
    assert out[0] == PartitionsLost((("a", 0), ("b", 1)))
    assert one_send(out, kwire.JoinGroupRequest).request.member_id == member_id


def test_stale_heartbeat_error_is_ignored():
    m, _ = stable_member()
    hb = one_send(m.poll(3010), kwire.HeartbeatRequest)
    # the member rejoins and completes a new generation before the old heartbeat's answer arrives
    m.subscribe(["a"])
    out = m.poll(3011)
    join = one_send(out, kwire.JoinGroupRequest)
    sync = one_send(m.receive(join.token, join_ok("me-1", generation=2), 3012), kwire.SyncGroupRequest)
    m.receive(sync.token, kwire.SyncGroupResponse(assignment=assignment(("a", 1))), 3013)
    assert m.generation_id == 2
    out = m.receive(hb.token, kwire.HeartbeatResponse(error_code=E.ILLEGAL_GENERATION), 3014)
    assert m.state == MemberState.STABLE and m.generation_id == 2 and events(out) == []


def test_heartbeat_fenced_is_fatal():
    m, _ = stable_member(group_instance_id="inst")
    hb = one_send(m.poll(3010), kwire.HeartbeatRequest)
    assert hb.request.group_instance_id == "inst"
    failed, = events(m.receive(hb.token, kwire.HeartbeatResponse(error_code=E.FENCED_INSTANCE_ID), 3020))
    assert failed.error.error_code == E.FENCED_INSTANCE_ID


def test_heartbeat_failure_backs_off():
    m, _ = stable_member(retry_backoff_ms=100)
    hb = one_send(m.poll(3010), kwire.HeartbeatRequest)
    m.receive(hb.token, kwire.HeartbeatResponse(error_code=E.UNKNOWN_SERVER_ERROR), 3020)
    assert m.next_deadline() == 3120


# ---------------------------------------------------------------------------------------------------------
# Cooperative rebalance, subscription change, leaving
# ---------------------------------------------------------------------------------------------------------


def test_cooperative_revokes_only_what_moves_then_rejoins():
    m, _ = stable_member(owned=(("a", 0), ("a", 1), ("b", 0)), assignors=("cooperative-sticky",))
    hb = one_send(m.poll(3010), kwire.HeartbeatRequest)
    join = one_send(m.receive(hb.token, kwire.HeartbeatResponse(error_code=E.REBALANCE_IN_PROGRESS), 3020),
                    kwire.JoinGroupRequest)
    sync = one_send(m.receive(join.token, join_ok("me-1", generation=2, protocol="cooperative-sticky"), 3030),
                    kwire.SyncGroupRequest)
    out = m.receive(sync.token, kwire.SyncGroupResponse(assignment=assignment(("a", 0), ("b", 0))), 3040)
    assert events(out)[:2] == [PartitionsRevoked((("a", 1),)), PartitionsAssigned(())]
    follow_up = one_send(out, kwire.JoinGroupRequest)  # the second phase
    sub = kwire.Subscription.decode(follow_up.request.protocols[0].metadata)
    assert [(t.topic, t.partitions) for t in sub.owned_partitions] == [("a", [0]), ("b", [0])]


def test_subscription_change_cooperative_revokes_the_dropped_topic_first():
    m, _ = stable_member(owned=(("a", 0), ("b", 1)), assignors=("cooperative-sticky",))
    m.subscribe(["a"])
    out = m.poll(100)
    assert events(out) == [PartitionsRevoked((("b", 1),))]
    req = one_send(out, kwire.JoinGroupRequest).request
    assert kwire.Subscription.decode(req.protocols[0].metadata).topics == ["a"]


@pytest.mark.parametrize("version", [0, 2, 3, 5])
def test_close_revokes_and_leaves(version):
    m, _ = stable_member(versions={13: version})
    out = m.close(100)
    assert out[0] == PartitionsRevoked((("a", 0), ("b", 1)))
    leave = one_send(out, kwire.LeaveGroupRequest)
    if version >= 3:
        assert [x.member_id for x in leave.request.members] == ["me-1"]
        assert leave.request.members[0].reason == ("the consumer is being closed" if version >= 5 else None)
    else:
        assert leave.request.member_id == "me-1"
    leave.request.encode(version)
    assert m.state == MemberState.CLOSED and m.poll(10_000) == [] and m.next_deadline() is None
    m.receive(leave.token, kwire.LeaveGroupResponse(), 101)  # answered or not, nothing follows


def test_static_member_does_not_send_leave_group():
    m, _ = stable_member(group_instance_id="inst")
    out = m.close(100)
    assert sends(out) == [] and out == [PartitionsRevoked((("a", 0), ("b", 1)))]


def test_bad_calls_are_kwire_errors():
    m = member()
    find = one_send(m.poll(0), kwire.FindCoordinatorRequest)
    with pytest.raises(GroupProtocolError):
        m.receive(find.token + 100, kwire.FindCoordinatorResponse(), 0)
    with pytest.raises(GroupProtocolError):
        m.receive(find.token, kwire.HeartbeatResponse(), 0)
    with pytest.raises(GroupProtocolError):
        member(group_instance_id="x", versions={11: 4})
    with pytest.raises(GroupProtocolError):
        member(heartbeat_interval_ms=10_000, session_timeout_ms=10_000)


# ---------------------------------------------------------------------------------------------------------
# End to end: members and a coordinator through kwire's framing
# ---------------------------------------------------------------------------------------------------------

TOPICS = {"orders": 12, "payments": 5, "audit": 1}
OLD_VERSIONS = {10: 3, 11: 3, 12: 2, 13: 2, 14: 2}


class Ownership:
    """Replays every member's events in delivery order and fails if a partition is ever assigned while
    another member still holds it."""

    def __init__(self, loop):
        self.loop = loop
        self.seen = 0
        self.holder = {}

    def check(self, ignore=()):
        for name, ev in self.loop.log[self.seen:]:
            if name in ignore:
                continue
            if isinstance(ev, (PartitionsRevoked, PartitionsLost)):
                for tp in ev.partitions:
                    assert self.holder.get(tp) == name, (tp, name, self.holder.get(tp))
                    del self.holder[tp]
            elif isinstance(ev, PartitionsAssigned):
                for tp in ev.partitions:
                    assert tp not in self.holder, f"{tp} assigned to {name} while {self.holder[tp]} holds it"
                    self.holder[tp] = name
            elif isinstance(ev, MemberFailed):
                raise AssertionError(f"{name} failed: {ev.error}")
        self.seen = len(self.loop.log)

    def forget(self, name):
        """A crashed process: what it held is taken from it without a callback."""
        self.holder = {tp: n for tp, n in self.holder.items() if n != name}


def all_partitions(topics):
    return {(t, p) for t, n in topics.items() for p in range(n)}


def settled(loop, names, generation=None):
    members = [loop.members[n] for n in names]
    if not all(m.state == MemberState.STABLE and not m._rejoin_needed for m in members):
        return False
    gens = {m.generation_id for m in members}
    return len(gens) == 1 and (generation is None or gens == {generation})


def assert_covering(loop, names, topics=TOPICS):
    owned = [set(loop.members[n].owned) for n in names]
    union = set().union(*owned)
    assert sum(len(o) for o in owned) == len(union), "overlapping assignments"
    assert union == all_partitions(topics)


def start_group(n, strategy, versions=None, delay=3000, **config):
    counter = itertools.count(1)
    loop = Loop(GroupCoordinator(initial_rebalance_delay_ms=delay,
                                 member_id_factory=lambda prefix: f"{prefix}-{next(counter)}"))
    for i in range(n):
        loop.add(f"m{i}", "g", list(TOPICS), assignors=(strategy,), partitions_per_topic=TOPICS,
                 session_timeout_ms=10_000, heartbeat_interval_ms=1_000, versions=versions,
                 rng=NoJitter(), **config)
    return loop


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])
@pytest.mark.parametrize("versions", [None, OLD_VERSIONS], ids=["newest", "old"])
def test_end_to_end_group_covers_every_partition_through_leave_and_crash(strategy, versions):
    loop = start_group(4, strategy, versions)
    names = list(loop.members)
    ownership = Ownership(loop)
    loop.run_until(lambda: settled(loop, names), 60_000)
    ownership.check()
    assert_covering(loop, names)
    assert loop.frames >= 4 * 3  # FindCoordinator, JoinGroup (twice from v4), SyncGroup each
    assert loop.coordinator.describe_group("g").state == GroupState.STABLE

    # a member closes: LeaveGroup, the rest rebalance and cover everything again
    loop.close("m1")
    rest = ["m0", "m2", "m3"]
    loop.run_until(lambda: settled(loop, rest) and loop.members["m0"].generation_id > 1, 30_000)
    ownership.check()
    assert_covering(loop, rest)
    assert "m1" not in {m.client_id for m in loop.coordinator.describe_group("g").members}

    # a member stops heartbeating: dropped after its session timeout (10 s), the rest cover everything
    generation = loop.members["m0"].generation_id
    loop.kill("m3")
    crash = loop.now
    rest = ["m0", "m2"]
    loop.run_until(lambda: settled(loop, rest) and loop.members["m0"].generation_id > generation, 60_000)
    assert loop.now >= crash + 10_000
    ownership.forget("m3")
    ownership.check()
    assert_covering(loop, rest)
    members = loop.coordinator.describe_group("g").members
    assert sorted(m.client_id for m in members) == ["m0", "m2"]


def test_end_to_end_cooperative_join_moves_partitions_in_two_phases():
    loop = start_group(3, "cooperative-sticky")
    ownership = Ownership(loop)
    loop.run_until(lambda: settled(loop, ["m0", "m1", "m2"]), 60_000)
    ownership.check()
    before = {n: set(loop.members[n].owned) for n in ["m0", "m1", "m2"]}
    generation = loop.members["m0"].generation_id
    loop.add("m3", "g", list(TOPICS), assignors=("cooperative-sticky",), partitions_per_topic=TOPICS,
             session_timeout_ms=10_000, heartbeat_interval_ms=1_000, rng=NoJitter())
    names = ["m0", "m1", "m2", "m3"]
    loop.run_until(lambda: settled(loop, names) and loop.members["m3"].owned, 60_000)
    ownership.check()
    assert_covering(loop, names)
    # two generations: the first takes partitions away, the second hands them to the newcomer
    assert loop.members["m0"].generation_id == generation + 2
    for n in ["m0", "m1", "m2"]:
        revoked = [tp for ev in loop.events[n] if isinstance(ev, PartitionsRevoked) for tp in ev.partitions]
        # only what moved was revoked, nothing that stayed
        assert set(revoked) == before[n] - set(loop.members[n].owned)
        assert not any(isinstance(ev, PartitionsLost) for ev in loop.events[n])


def test_end_to_end_static_member_restart_gets_its_partitions_back_without_a_rebalance():
    loop = start_group(0, "range")
    for i in range(3):
        loop.add(f"s{i}", "g", list(TOPICS), assignors=("range",), partitions_per_topic=TOPICS,
                 group_instance_id=f"inst-{i}", session_timeout_ms=10_000, heartbeat_interval_ms=1_000,
                 rng=NoJitter())
    names = ["s0", "s1", "s2"]
    loop.run_until(lambda: settled(loop, names), 60_000)
    assert_covering(loop, names)
    generation = loop.members["s0"].generation_id
    owned_before = loop.members["s1"].owned
    others_events = {n: len(loop.events[n]) for n in ["s0", "s2"]}
    # s1's process dies and a new one with the same instance id starts within the session timeout
    assert sends(loop.members["s1"].close(loop.now)) == []  # static: no LeaveGroup
    loop.kill("s1")
    loop.advance(loop.now + 4_000)
    loop.members["s1"] = loop.members.pop("s1")  # keep the name order
    loop.dropped.discard("s1")
    loop.add("s1", "g", list(TOPICS), assignors=("range",), partitions_per_topic=TOPICS, group_instance_id="inst-1",
             session_timeout_ms=10_000, heartbeat_interval_ms=1_000, rng=NoJitter())
    loop.run_until(lambda: loop.members["s1"].state == MemberState.STABLE, 30_000)
    loop.advance(loop.now + 30_000)
    assert loop.members["s1"].owned == owned_before
    assert loop.members["s1"].generation_id == generation
    for n in ["s0", "s2"]:
        assert loop.members[n].generation_id == generation
        assert loop.events[n][others_events[n]:] == []  # no rebalance seen by the others
    assert loop.coordinator.describe_group("g").state == GroupState.STABLE
