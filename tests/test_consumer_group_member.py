"""ConsumerProtocolMember, the client of the consumer protocol, against scripted responses on an injected clock.
Each test cites the Java client method whose behaviour it checks (``AbstractMembershipManager``,
``ConsumerMembershipManager``, ``AbstractHeartbeatRequestManager``, ``ConsumerHeartbeatRequestManager``)."""

import pytest

from kwire.codec import ConsumerGroupHeartbeatAssignment as Assignment
from kwire.codec import ConsumerGroupHeartbeatResponse as Response
from kwire.codec import ConsumerGroupHeartbeatResponseTopicPartitions as TP
from kwire.codec import ErrorCode
from kwire.group import (
    ConsumerMembershipState,
    ConsumerProtocolMember,
    CoordinatorLost,
    GroupProtocolError,
    MemberFailed,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Send,
)

S = ConsumerMembershipState
FOO = b"\x01" * 16
NAMES = {FOO: "foo"}


def member(**kw):
    return ConsumerProtocolMember("g", ["foo"], topic_names=NAMES, **kw)


def sends(outputs):
    return [o for o in outputs if isinstance(o, Send)]


def events(outputs):
    return [o for o in outputs if not isinstance(o, Send)]


def ok(epoch, partitions=None, member_id="m1", interval=3000):
    assignment = None if partitions is None else Assignment(topic_partitions=[TP(topic_id=FOO, partitions=partitions)])
    return Response(member_id=member_id, member_epoch=epoch, heartbeat_interval_ms=interval, assignment=assignment)


def joined(m, partitions=(0, 1), now=0):
    """Join, receive ``partitions`` at epoch 1, send the ack and answer it: STABLE."""
    (send,) = sends(m.poll(now))
    out = m.receive(send.token, ok(1, list(partitions)), now)
    (ack,) = sends(out)
    m.receive(ack.token, ok(1), now)
    return out


def test_join_is_immediate_and_full():
    # AbstractHeartbeatRequestManager.poll: JOINING heartbeats at once; buildRequestData sends every field.
    m = member(rebalance_timeout_ms=1000, server_assignor="range")
    assert m.state is S.JOINING and m.next_deadline() == 0
    (send,) = sends(m.poll(0))
    r = send.request
    assert (send.version, r.member_id, r.member_epoch, r.rebalance_timeout_ms, r.subscribed_topic_names,
            r.server_assignor, r.topic_partitions) == (0, "", 0, 1000, ["foo"], "range", [])
    assert m.poll(0) == []   # one in flight at a time


def test_revoke_then_assign_then_acknowledge_at_once():
    # AbstractMembershipManager.revokeAndAssign.  An empty first assignment equals the current one: STABLE,
    # nothing to reconcile (onPartitionsAssigned with an empty set comes from a reconciliation, below).
    m = member()
    (send,) = sends(m.poll(0))
    out = m.receive(send.token, ok(1, []), 0)
    assert out == [] and m.state is S.STABLE
    m = member()
    out = joined(m, (0, 1, 2))
    assert events(out) == [PartitionsAssigned((("foo", 0), ("foo", 1), ("foo", 2)))]
    (ack,) = sends(out)
    assert [(tp.topic_id, tp.partitions) for tp in ack.request.topic_partitions] == [(FOO, [0, 1, 2])]
    assert ack.request.subscribed_topic_names is None and ack.request.rebalance_timeout_ms == -1
    assert m.state is S.STABLE


def test_stable_waits_for_the_interval_and_acks_the_next_assignment():
    m = member()
    joined(m, (0, 1, 2))
    assert m.next_deadline() == 3000 and sends(m.poll(2999)) == []
    (hb,) = sends(m.poll(3000))
    assert (hb.request.member_epoch, hb.request.topic_partitions) == (1, None)   # nothing changed: a delta
    out = m.receive(hb.token, ok(1, [0]), 3000)
    assert events(out) == [PartitionsRevoked((("foo", 1), ("foo", 2))), PartitionsAssigned(())]
    (ack,) = sends(out)
    assert [tp.partitions for tp in ack.request.topic_partitions] == [[0]]


def test_any_error_makes_the_next_heartbeat_full():
    # AbstractHeartbeatRequestManager.onErrorResponse -> resetHeartbeatState; COORDINATOR_LOAD_IN_PROGRESS backs off.
    m = member()
    joined(m)
    (hb,) = sends(m.poll(3000))
    out = m.receive(hb.token, Response(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), 3000)
    assert sends(out) == [] and m.next_deadline() == 3100
    (hb,) = sends(m.poll(3100))
    assert (hb.request.rebalance_timeout_ms, hb.request.subscribed_topic_names) == (300_000, ["foo"])
    assert [tp.partitions for tp in hb.request.topic_partitions] == [[0, 1]]


def test_fenced_rejoins_with_the_same_id_at_epoch_0_and_loses_its_partitions():
    # AbstractMembershipManager.transitionToFenced: onPartitionsLost, not onPartitionsRevoked; no backoff.
    m = member()
    joined(m)
    (hb,) = sends(m.poll(3000))
    out = m.receive(hb.token, Response(error_code=ErrorCode.FENCED_MEMBER_EPOCH), 3000)
    assert events(out) == [PartitionsLost((("foo", 0), ("foo", 1)))]
    (rejoin,) = sends(out)
    assert (rejoin.request.member_id, rejoin.request.member_epoch, rejoin.request.topic_partitions) == ("m1", 0, [])
    assert m.state is S.JOINING


def test_unsubscribe_revokes_then_sends_one_leave_not_awaited():
    # AbstractMembershipManager.leaveGroup; ConsumerMembershipManager.leaveGroupEpoch: -1, or -2 when static.
    for instance_id, epoch in ((None, -1), ("i-1", -2)):
        m = member(instance_id=instance_id)
        joined(m)
        out = m.leave(5000)
        assert events(out) == [PartitionsRevoked((("foo", 0), ("foo", 1)))]
        (leave,) = sends(out)
        assert (leave.request.member_epoch, leave.request.instance_id) == (epoch, instance_id)
        assert m.state is S.UNSUBSCRIBED and m.poll(6000) == [] and m.next_deadline() is None
        assert m.receive(leave.token, Response(member_epoch=epoch), 6000) == []


def test_poll_timeout_leaves_first_then_loses_then_rejoins():
    # AbstractHeartbeatRequestManager.poll on an expired poll timer; transitionToStale; resetPollTimer.
    m = member()
    joined(m)
    out = m.poll_timeout_expired(9000)
    assert isinstance(out[0], Send) and out[0].request.member_epoch == -1
    assert out[1:] == [PartitionsLost((("foo", 0), ("foo", 1)))]
    assert m.state is S.STALE
    (rejoin,) = sends(m.rejoin(9500))
    assert (rejoin.request.member_id, rejoin.request.member_epoch) == ("m1", 0)


@pytest.mark.parametrize("code", [ErrorCode.GROUP_MAX_SIZE_REACHED, ErrorCode.UNSUPPORTED_ASSIGNOR,
                                  ErrorCode.UNRELEASED_INSTANCE_ID, ErrorCode.INVALID_REQUEST,
                                  ErrorCode.FENCED_INSTANCE_ID, ErrorCode.GROUP_ID_NOT_FOUND,
                                  ErrorCode.UNSUPPORTED_VERSION, ErrorCode.GROUP_AUTHORIZATION_FAILED])
def test_fatal_errors_stop_the_member(code):
    # ConsumerHeartbeatRequestManager.handleSpecificError and onErrorResponse's default: fatal.
    m = member()
    joined(m)
    (hb,) = sends(m.poll(3000))
    out = m.receive(hb.token, Response(error_code=code, error_message="why"), 3000)
    lost, failed = out
    assert lost == PartitionsLost((("foo", 0), ("foo", 1)))
    assert isinstance(failed, MemberFailed) and failed.error.error_code == code and "why" in str(failed.error)
    assert m.state is S.FATAL and m.poll(10_000) == [] and m.next_deadline() is None


def test_coordinator_errors_wait_for_a_new_coordinator():
    m = member()
    joined(m)
    (hb,) = sends(m.poll(3000))
    out = m.receive(hb.token, Response(error_code=ErrorCode.NOT_COORDINATOR), 3000)
    assert out == [CoordinatorLost(ErrorCode.NOT_COORDINATOR)] and m.next_deadline() is None
    (hb,) = sends(m.coordinator_found(3200))
    assert hb.request.subscribed_topic_names == ["foo"]


def test_a_topic_id_without_a_name_stays_pending():
    # AbstractMembershipManager.maybeReconcile: unresolved topics wait for metadata.
    bar = b"\x02" * 16
    m = member()
    (send,) = sends(m.poll(0))
    response = Response(member_id="m1", member_epoch=1, heartbeat_interval_ms=3000, assignment=Assignment(
        topic_partitions=[TP(topic_id=FOO, partitions=[0]), TP(topic_id=bar, partitions=[0])]))
    out = m.receive(send.token, response, 0)
    assert events(out) == [PartitionsAssigned((("foo", 0),))]
    (ack,) = sends(out)
    m.receive(ack.token, ok(1), 0)
    assert m.state is S.RECONCILING
    m.set_topic_names({bar: "bar"})
    out = m.poll(100)
    assert events(out) == [PartitionsAssigned((("bar", 0),))]
    assert [(tp.topic_id, tp.partitions) for tp in sends(out)[0].request.topic_partitions] == [(FOO, [0]), (bar, [0])]


def test_unknown_tokens_and_impossible_transitions_are_refused():
    m = member()
    with pytest.raises(GroupProtocolError):
        m.receive(99, ok(1), 0)
    with pytest.raises(GroupProtocolError, match="no transition from JOINING to ACKNOWLEDGING"):
        m._to(S.ACKNOWLEDGING)


def test_a_heartbeat_in_flight_when_leaving_is_dropped():
    m = member()
    joined(m)
    (hb,) = sends(m.poll(3000))
    (leave,) = sends(m.leave(3001))
    assert m.receive(hb.token, ok(1, [0]), 3002) == [] and m.state is S.UNSUBSCRIBED


def test_a_failed_request_backs_off_exponentially_and_resends_in_full():
    # AbstractHeartbeatRequestManager.onFailure: retry.backoff.ms doubling up to retry.backoff.max.ms.
    m = member(retry_backoff_ms=100, retry_backoff_max_ms=300)
    joined(m)
    waits = []
    now = 3000
    for _ in range(3):
        (hb,) = sends(m.poll(now))
        m.request_failed(hb.token, now)
        waits.append(m.next_deadline() - now)
        now = m.next_deadline()
    assert waits == [100, 200, 300]
    (hb,) = sends(m.poll(now))
    assert hb.request.subscribed_topic_names == ["foo"] and hb.request.rebalance_timeout_ms == 300_000
