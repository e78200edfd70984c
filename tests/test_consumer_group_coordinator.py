"""ConsumerGroupCoordinator against the scenarios that tell Kafka's consumer protocol from a plausible imitation,
one test each, on an injected clock.  Each cites the Kafka method whose behaviour it checks (trunk
``GroupMetadataManager`` and friends, the KIP-848 coordinator)."""

import pytest

from kwire.codec import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from kwire.codec import ConsumerGroupHeartbeatRequestTopicPartitions as TP
from kwire.codec import ErrorCode
from kwire.errors import ArgumentValueError, AssignmentError
from kwire.group import (
    ConsumerGroupCoordinator,
    ConsumerGroupState,
    ConsumerMemberState,
    GroupEmptied,
    MemberFenced,
    TargetAssignmentComputed,
)

FOO = b"\x01" * 16
BAR = b"\x02" * 16
NOW0 = {"group.consumer.assignment.interval.ms": 0}


def coordinator(config=None, foo=4, bar=None):
    topics = {"foo": (FOO, foo)}
    if bar is not None:
        topics["bar"] = (BAR, bar)
    return ConsumerGroupCoordinator({**NOW0, **(config or {})}, topics=topics)


def join(c, member_id, topics=("foo",), now=0, **kw):
    kw.setdefault("rebalance_timeout_ms", 5000)
    return c.heartbeat(ConsumerGroupHeartbeatRequest(group_id="g", member_id=member_id, member_epoch=0,
                                                     subscribed_topic_names=list(topics), topic_partitions=[], **kw),
                       0, now)


def hb(c, member_id, epoch, owned=None, now=0, group_id="g", **kw):
    tps = None if owned is None else [TP(topic_id=t, partitions=ps) for t, ps in owned.items()]
    return c.heartbeat(ConsumerGroupHeartbeatRequest(group_id=group_id, member_id=member_id, member_epoch=epoch,
                                                     topic_partitions=tps, **kw), 0, now)


def parts(response):
    if response.assignment is None:
        return None
    return {tp.topic_id: sorted(tp.partitions) for tp in response.assignment.topic_partitions}


def two_members(c):
    """A holds foo 0-3 at epoch 1; B joined at epoch 2 and waits; A revoked and acked: both STABLE at 2."""
    join(c, "A")
    join(c, "B")
    hb(c, "A", 1)
    hb(c, "A", 1, {FOO: [0, 1]})
    hb(c, "B", 2)


def test_first_member_gets_epoch_1_and_everything_in_the_same_response():
    # GroupMetadataManager.consumerGroupHeartbeat: group epoch 0 -> 1, target at 1, CurrentAssignmentBuilder row 2.
    c = coordinator()
    r = join(c, "A")
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "A", 1, 5000)
    assert parts(r) == {FOO: [0, 1, 2, 3]}
    g = c.group("g")
    assert (g.group_epoch, g.target_epoch, g.state()) == (1, 1, ConsumerGroupState.STABLE)


def test_an_empty_regex_is_no_regex():
    # librdkafka's first heartbeat at v1 sends SubscribedTopicRegex "" (the member's default in Kafka's records);
    # only a non-empty regex is refused at this commit.
    c = coordinator()
    r = c.heartbeat(ConsumerGroupHeartbeatRequest(group_id="g", member_id="A", member_epoch=0, rebalance_timeout_ms=5000,
                                                  subscribed_topic_names=["foo"], subscribed_topic_regex="",
                                                  topic_partitions=[]), 1, 0)
    assert (r.error_code, r.member_epoch) == (0, 1) and parts(r) == {FOO: [0, 1, 2, 3]}


def test_an_empty_member_id_gets_a_generated_uuid():
    c = coordinator()
    r = join(c, "")
    assert r.error_code == 0 and len(r.member_id) == 22 and not r.member_id.startswith("-")


@pytest.mark.parametrize("fields, message", [
    (dict(group_id=" ", member_id="m", member_epoch=1), "GroupId can't be empty."),
    (dict(group_id="g", member_id="m", member_epoch=1, instance_id="  "), "InstanceId can't be empty."),
    (dict(group_id="g", member_id="m", member_epoch=1, rack_id=""), "RackId can't be empty."),
    (dict(group_id="g", member_id="m", member_epoch=1, subscribed_topic_regex="x.*"),
     "SubscribedTopicRegex is not supported yet."),
    (dict(group_id="g", member_id=" ", member_epoch=1), "MemberId can't be empty."),
    (dict(group_id="g", member_id="", member_epoch=-1), "MemberId can't be empty."),
    (dict(group_id="g", member_id="m", member_epoch=0, subscribed_topic_names=["foo"], topic_partitions=[]),
     "RebalanceTimeoutMs must be provided in first request."),
    (dict(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1, subscribed_topic_names=["foo"]),
     "TopicPartitions must be empty when (re-)joining."),
    (dict(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1, subscribed_topic_names=["foo"],
          topic_partitions=[TP(topic_id=FOO, partitions=[0])]), "TopicPartitions must be empty when (re-)joining."),
    (dict(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1, topic_partitions=[]),
     "SubscribedTopicNames must be set in first request."),
    (dict(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1, topic_partitions=[],
          subscribed_topic_names=[]), "SubscribedTopicNames must be set in first request."),
    (dict(group_id="g", member_id="m", member_epoch=-2), "InstanceId can't be null."),
    (dict(group_id="g", member_id="m", member_epoch=-3), "MemberEpoch is invalid."),
])
def test_invalid_requests_are_refused_before_any_group_lookup(fields, message):
    # GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid, in its order and words.
    c = coordinator()
    r = c.heartbeat(ConsumerGroupHeartbeatRequest(**fields), 1, 0)
    assert (r.error_code, r.error_message, r.member_id, r.member_epoch) == (ErrorCode.INVALID_REQUEST, message, None, 0)
    assert c.group_ids() == []


def test_an_unknown_server_assignor_is_unsupported():
    c = coordinator()
    r = join(c, "A", server_assignor="sticky")
    assert r.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert r.error_message == "ServerAssignor sticky is not supported. Supported assignors: uniform, range."


def test_missing_group_and_unknown_member():
    # GroupMetadataManager.getOrMaybeCreateConsumerGroup (create only at epoch 0) and getOrMaybeCreateMember.
    c = coordinator()
    r = hb(c, "A", 1)
    assert (r.error_code, r.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group g not found.")
    join(c, "A")
    r = hb(c, "Z", 1)
    assert (r.error_code, r.error_message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Member Z is not a member of group g.")


def test_epoch_ahead_or_behind_is_fenced_except_a_lost_response():
    # GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid and isSubset.
    c = coordinator()
    two_members(c)   # A: epoch 2, previous 1, assigned foo 0-1
    assert hb(c, "A", 3).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert hb(c, "A", 1).error_code == ErrorCode.FENCED_MEMBER_EPOCH            # owned null is no subset
    assert hb(c, "A", 1, {FOO: [0, 1, 2]}).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    r = hb(c, "A", 1, {FOO: [0, 1]})
    assert (r.error_code, r.member_epoch) == (0, 2)


def test_a_known_member_rejoining_at_epoch_0_is_fenced_until_its_session_expires():
    c = coordinator()
    two_members(c)
    r = join(c, "A")
    assert r.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    events = c.tick(45_000)
    assert MemberFenced("g", "A", "session-timeout") in events
    r = join(c, "A", now=45_000)
    assert (r.error_code, r.member_epoch) == (0, c.group("g").group_epoch)


def test_second_member_waits_unreleased_and_first_revokes_at_its_old_epoch():
    # The worked sequence of CurrentAssignmentBuilder: B gets epoch 2 and nothing; A goes UNREVOKED at 1.
    c = coordinator()
    join(c, "A")
    r = join(c, "B")
    assert (r.member_epoch, parts(r)) == (2, {})
    assert c.group("g").members["B"].state is ConsumerMemberState.UNRELEASED_PARTITIONS
    r = hb(c, "A", 1)
    assert (r.member_epoch, parts(r)) == (1, {FOO: [0, 1]})
    assert c.group("g").members["A"].state is ConsumerMemberState.UNREVOKED_PARTITIONS
    assert c.group_state("g") is ConsumerGroupState.RECONCILING


def test_acknowledging_a_revocation():
    c = coordinator()
    join(c, "A")
    join(c, "B")
    hb(c, "A", 1)
    # Still listing partition 3: unchanged, no assignment in the answer, the timer keeps its first deadline.
    deadline = c.next_deadline()
    r = hb(c, "A", 1, {FOO: [0, 1, 3]}, now=100)
    assert (r.member_epoch, r.assignment) == (1, None)
    assert c.group("g").members["A"].state is ConsumerMemberState.UNREVOKED_PARTITIONS
    assert c.next_deadline() == deadline == 5000
    # Without them: the target epoch in that same answer; the assignment did not change, so none is sent.
    r = hb(c, "A", 1, {FOO: [0, 1]}, now=200)
    assert (r.member_epoch, r.assignment) == (2, None)
    r = hb(c, "B", 2, now=300)
    assert (r.member_epoch, parts(r)) == (2, {FOO: [2, 3]})
    assert c.group_state("g") is ConsumerGroupState.STABLE


def test_owned_partitions_that_already_omit_the_revoked_ones_skip_unrevoked():
    c = coordinator()
    join(c, "A")
    join(c, "B")
    r = hb(c, "A", 1, {FOO: [0, 1]})
    assert (r.member_epoch, c.group("g").members["A"].state) == (2, ConsumerMemberState.STABLE)


def test_revoke_then_revoke_again_moves_by_one_epoch():
    # CurrentAssignmentBuilder.build: an acknowledged revocation continues at memberEpoch + 1.
    c = coordinator(foo=6)
    join(c, "A")                      # A: 0-5 at 1
    join(c, "B")                      # epoch 2: A 3, B 3
    hb(c, "A", 1)                     # A UNREVOKED at 1, keeps 3
    join(c, "C")                      # epoch 3: A 2, B 2, C 2
    r = hb(c, "A", 1, {FOO: sorted(c.group("g").members["A"].assigned[FOO])})
    a = c.group("g").members["A"]
    assert (a.state, a.member_epoch, r.member_epoch) == (ConsumerMemberState.UNREVOKED_PARTITIONS, 2, 2)


def test_delta_without_change_has_no_assignment_and_full_request_has_one():
    # GroupMetadataManager.consumerGroupHeartbeat: the assignment goes out for a full request or a change.
    c = coordinator()
    join(c, "A")
    assert hb(c, "A", 1).assignment is None
    r = hb(c, "A", 1, {FOO: [0, 1, 2, 3]}, rebalance_timeout_ms=5000, subscribed_topic_names=["foo"])
    assert parts(r) == {FOO: [0, 1, 2, 3]}
    assert hb(c, "A", 1, {FOO: [0, 1, 2, 3]}).assignment is None   # owned alone is not a full request


def test_only_a_subscription_change_bumps_the_group_epoch():
    # GroupMetadataManager.hasMemberSubscriptionChanged: rack, timeout, assignor, client id write a record only.
    c = coordinator(bar=2)
    join(c, "A")
    hb(c, "A", 1, rack_id="r1", rebalance_timeout_ms=9, server_assignor="range")
    c.heartbeat(ConsumerGroupHeartbeatRequest(group_id="g", member_id="A", member_epoch=1), 0, 0, client_id="x")
    m = c.group("g").members["A"]
    assert (c.group("g").group_epoch, m.rack_id, m.rebalance_timeout_ms, m.server_assignor, m.client_id) == \
        (1, "r1", 9, "range", "x")
    r = hb(c, "A", 1, subscribed_topic_names=["foo", "bar"])
    assert (c.group("g").group_epoch, r.member_epoch, parts(r)) == (2, 2, {FOO: [0, 1, 2, 3], BAR: [0, 1]})


def test_leave_bumps_the_epoch_without_a_target():
    # GroupMetadataManager.consumerGroupLeave -> consumerGroupFenceMember: no target computed.
    c = coordinator()
    two_members(c)
    r = hb(c, "B", -1)
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "B", -1, 0)
    g = c.group("g")
    assert (g.group_epoch, g.target_epoch, g.state()) == (3, 2, ConsumerGroupState.ASSIGNING)
    r = hb(c, "A", 2)
    assert (r.member_epoch, parts(r), g.state()) == (3, {FOO: [0, 1, 2, 3]}, ConsumerGroupState.STABLE)
    assert hb(c, "B", -1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert hb(c, "B", -1, group_id="nope").error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_session_expiry_fences_and_errors_do_not_extend_the_session():
    # GroupMetadataManager.scheduleConsumerGroupSessionTimeout: re-armed only by a heartbeat that succeeds.
    c = coordinator()
    two_members(c)
    hb(c, "A", 2, now=40_000)
    assert hb(c, "B", 99, now=40_000).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert [e for e in c.tick(44_999) if isinstance(e, MemberFenced)] == []
    events = c.tick(45_000)
    assert MemberFenced("g", "B", "session-timeout") in events
    g = c.group("g")
    assert (g.group_epoch, "B" in g.members) == (3, False)
    assert all(p not in g.partition_epochs.get(FOO, {}) for p in (2, 3))
    events = c.tick(85_000)
    assert events == [MemberFenced("g", "A", "session-timeout"), GroupEmptied("g")]


def test_revocation_timer_fences_only_if_the_epoch_did_not_move():
    # GroupMetadataManager.scheduleConsumerGroupRebalanceTimeout: compares the epoch captured when armed.
    c = coordinator()
    join(c, "A", rebalance_timeout_ms=1000)
    join(c, "B")
    hb(c, "A", 1)                                   # UNREVOKED at 1, timer at 1000
    hb(c, "A", 1, now=900)                          # still owns: waits, session re-armed
    events = c.tick(1000)
    assert MemberFenced("g", "A", "rebalance-timeout") in events
    c2 = coordinator()
    join(c2, "A", rebalance_timeout_ms=1000)
    join(c2, "B")
    hb(c2, "A", 1)
    hb(c2, "A", 1, {FOO: [0, 1]}, now=500)          # acked: epoch 2, timer cancelled
    assert [e for e in c2.tick(1000) if isinstance(e, MemberFenced)] == []


def test_static_member_temporary_leave_and_return_with_a_new_id():
    # GroupMetadataManager.consumerGroupStaticMemberGroupLeave and replaceMember.
    c = coordinator()
    join(c, "A", instance_id="i-a")
    join(c, "B", instance_id="i-b")
    hb(c, "A", 1, instance_id="i-a")
    hb(c, "A", 1, {FOO: [0, 1]}, instance_id="i-a")
    hb(c, "B", 2)                                    # InstanceId null on a delta: found by member id
    r = hb(c, "A", -2, instance_id="i-a", now=1000)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "A", -2)
    g = c.group("g")
    assert g.partition_epochs[FOO][0] == -2 and g.group_epoch == 2
    assert g.state() is ConsumerGroupState.RECONCILING
    r = join(c, "A2", instance_id="i-a", now=2000)
    assert (r.error_code, r.member_epoch, parts(r)) == (0, 2, {FOO: [0, 1]})
    assert (g.group_epoch, "A" in g.members, g.static_members["i-a"]) == (2, False, "A2")
    assert g.state() is ConsumerGroupState.STABLE


def test_static_member_errors():
    c = coordinator()
    join(c, "A", instance_id="i-a")
    r = join(c, "A2", instance_id="i-a")
    assert r.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert r.error_message == ("Static member A2 with instance id i-a cannot join the group because the instance id "
                               "is owned by A member.")
    r = hb(c, "A2", 1, instance_id="i-a")
    assert (r.error_code, r.error_message) == (ErrorCode.FENCED_INSTANCE_ID,
                                               "Static member A2 with instance id i-a was fenced by member A.")
    r = hb(c, "A", 1, instance_id="i-z")
    assert (r.error_code, r.error_message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Instance id i-z is unknown.")
    assert hb(c, "A2", -2, instance_id="i-a").error_code == ErrorCode.FENCED_INSTANCE_ID


def test_static_member_away_too_long_is_fenced_by_its_session():
    c = coordinator()
    join(c, "A", instance_id="i-a")
    hb(c, "A", -2, instance_id="i-a", now=10_000)      # session timer armed at 0 keeps running
    events = c.tick(45_000)
    assert MemberFenced("g", "A", "session-timeout") in events
    assert c.group("g").partition_epochs == {}


def test_full_group_accepts_members_refuses_newcomers_and_replacements():
    # GroupMetadataManager.throwIfConsumerGroupIsFull uses the request's member id.
    c = coordinator({"group.consumer.max.size": 2})
    join(c, "A", instance_id="i-a")
    join(c, "B")
    r = join(c, "C")
    assert (r.error_code, r.error_message) == (ErrorCode.GROUP_MAX_SIZE_REACHED,
                                               "The consumer group has reached its maximum capacity of 2 members.")
    assert join(c, "").error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert hb(c, "A", 1, instance_id="i-a").error_code == 0
    hb(c, "A", -2, instance_id="i-a")
    assert join(c, "A2", instance_id="i-a").error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_more_partitions_bump_on_the_next_heartbeat():
    # GroupMetadataManager.onNewMetadataImage resets the refresh deadline; the heartbeat recomputes and bumps.
    c = coordinator()
    join(c, "A")
    assert c.set_topics({"foo": (FOO, 4)}) == []          # nothing changed: no refresh
    assert c.set_topics({"foo": (FOO, 6)}) == ["g"]
    assert c.group("g").group_epoch == 1
    r = hb(c, "A", 1)
    assert (c.group("g").group_epoch, r.member_epoch, parts(r)) == (2, 2, {FOO: [0, 1, 2, 3, 4, 5]})


def test_a_topic_created_after_the_subscription_is_picked_up():
    c = coordinator()
    join(c, "A", topics=("foo", "bar"))
    assert c.group("g").group_epoch == 1
    c.set_topics({"foo": (FOO, 4), "bar": (BAR, 2)})
    r = hb(c, "A", 1)
    assert parts(r) == {FOO: [0, 1, 2, 3], BAR: [0, 1]}


def test_the_majority_assignor_is_used_at_the_next_bump():
    # ConsumerGroup.computePreferredServerAssignor; with none named, the first configured (uniform).
    c = coordinator()
    join(c, "A")
    assert [e.assignor for e in c.tick(0) if isinstance(e, TargetAssignmentComputed)] == ["uniform"]
    join(c, "B", server_assignor="range")
    join(c, "C", server_assignor="range")
    assert [e.assignor for e in c.tick(0) if isinstance(e, TargetAssignmentComputed)] == ["range", "range"]
    described = c.describe(ConsumerGroupDescribeRequest(group_ids=["g"]), 0).groups[0]
    assert described.assignor_name == "range"


@pytest.mark.parametrize("small", [True, False], ids=["list-form", "columns"])
def test_an_assignor_failure_is_unknown_server_error_and_stores_nothing(monkeypatch, small):
    import dataclasses

    import kwire.group._consumer_target as module

    def refuse(*args, **kwargs):
        raise AssignmentError("no")

    real = module.get_server_assignor
    c = coordinator()
    monkeypatch.setattr(module, "get_server_assignor",
                        lambda name: dataclasses.replace(real(name), arrays=refuse, lists=refuse))
    if not small:
        monkeypatch.setattr(module, "SMALL_GROUP_MEMBERS", 0)
    r = join(c, "A")
    assert (r.error_code, r.error_message) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert c.group_ids() == []


def test_offset_commit_and_fetch_under_member_epochs():
    # OffsetMetadataManager.validateOffsetCommit, ConsumerGroup.validateOffsetCommit / validateOffsetFetch.
    c = coordinator()
    join(c, "A")
    join(c, "B")
    hb(c, "A", 1)                                   # A UNREVOKED, still at epoch 1
    v = c.validate_offset_commit
    assert v("g", "A", 1, 9) == ErrorCode.NONE      # old epoch during revocation: accepted
    assert v("g", "B", 1, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert v("g", "B", 2, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert v("g", "B", 2, 8, transactional=True) == ErrorCode.NONE
    assert v("g", "B", 1, 9, transactional=True) == ErrorCode.ILLEGAL_GENERATION
    assert v("g", "", -1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert v("nope", "A", 1, 9) is None             # not a consumer group: the classic coordinator decides
    assert c.validate_offset_fetch("g", None, -1) == ErrorCode.NONE
    assert c.validate_offset_fetch("g", "B", 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert c.validate_offset_fetch("g", "Z", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    hb(c, "A", -1)
    hb(c, "B", -1)
    assert v("g", "", -1, 9) == ErrorCode.NONE      # empty group: an admin commit


def test_describe_list_and_delete():
    # GroupMetadataManager.consumerGroupDescribe, listGroups; ConsumerGroup.validateDeleteGroup.
    c = coordinator()
    join(c, "A")
    d = c.describe(ConsumerGroupDescribeRequest(group_ids=["g", "g", "", "missing"]), 0).groups
    assert [(x.group_id, x.error_code) for x in d] == [("g", 0), ("", ErrorCode.INVALID_GROUP_ID),
                                                       ("missing", ErrorCode.GROUP_ID_NOT_FOUND)]
    g = d[0]
    assert (g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == ("Stable", 1, 1, "uniform")
    m = g.members[0]
    assert (m.member_epoch, m.subscribed_topic_names, m.subscribed_topic_regex) == (1, ["foo"], "")
    assert [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions] == [("foo", [0, 1, 2, 3])]
    assert c.list_groups() == [("g", "consumer", "Stable", "consumer")]
    assert c.list_groups(states=["STABLE"]) == [("g", "consumer", "Stable", "consumer")]
    assert c.list_groups(states=["empty"]) == []
    assert c.list_groups(types=["Consumer"]) and c.list_groups(types=["classic"]) == []
    assert c.delete_group("g") == ErrorCode.NON_EMPTY_GROUP
    hb(c, "A", -1)
    assert c.is_empty("g") and c.group_state("g") is ConsumerGroupState.EMPTY
    assert c.delete_group("g") == ErrorCode.NONE and not c.has_group("g")
    assert c.delete_group("g") == ErrorCode.GROUP_ID_NOT_FOUND


def test_consumer_protocol_disabled_answers_unsupported_version():
    # KafkaApis.isConsumerGroupProtocolEnabled.
    c = coordinator({"group.coordinator.rebalance.protocols": "classic"})
    assert join(c, "A").error_code == ErrorCode.UNSUPPORTED_VERSION


def test_joiners_within_one_assignment_interval_share_one_computation():
    # Assignment batching (Kafka 4.3's group.consumer.assignment.interval.ms): one target for a join storm.
    c = ConsumerGroupCoordinator({"group.consumer.assignment.interval.ms": 1000}, topics={"foo": (FOO, 8)})
    assert parts(join(c, "A")) == {FOO: list(range(8))}
    for m in "BCD":
        r = join(c, m)
        assert (r.member_epoch, parts(r)) == (1, {})          # the target in place (epoch 1), no share yet
    g = c.group("g")
    assert (g.group_epoch, g.target_epoch, c.assignments_computed, c.next_deadline()) == (4, 1, 1, 1000)
    c.tick(1000)
    assert (g.target_epoch, c.assignments_computed) == (4, 2)
    assert sorted(len(g.target_of(m).get(FOO, ())) for m in "ABCD") == [2, 2, 2, 2]


@pytest.mark.parametrize("config, words", [
    ({"group.consumer.session.timeout.ms": 1000}, "group.consumer.session.timeout.ms must be greater"),
    ({"group.consumer.heartbeat.interval.ms": 50_000, "group.consumer.max.heartbeat.interval.ms": 60_000},
     "group.consumer.heartbeat.interval.ms must be less than"),
    ({"group.consumer.sesion.timeout.ms": 1}, "unknown consumer group config"),
    ({"group.consumer.assignors": "sticky"}, "unknown assignor"),
    ({"group.consumer.max.size": "many"}, "must be an integer"),
])
def test_config_bounds_are_kafkas(config, words):
    # GroupCoordinatorConfig's constructor checks.
    with pytest.raises(ArgumentValueError, match=words):
        ConsumerGroupCoordinator(config)


def test_config_takes_class_names_and_lowered_bounds():
    c = ConsumerGroupCoordinator({
        "group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform",
        "group.consumer.min.session.timeout.ms": 500, "group.consumer.session.timeout.ms": 6000,
        "group.consumer.min.heartbeat.interval.ms": 100, "group.consumer.heartbeat.interval.ms": 500})
    assert (c.config.assignors, c.config.session_timeout_ms, c.config.heartbeat_interval_ms) == \
        (("range", "uniform"), 6000, 500)


def test_group_ids_shared_with_classic_groups():
    # GroupMetadataManager.getOrMaybeCreateConsumerGroup: an empty classic group gives its id to a consumer-protocol
    # join; a classic group otherwise answers GROUP_ID_NOT_FOUND.
    classic = {"empty": True, "busy": False}
    removed = []
    c = ConsumerGroupCoordinator(NOW0, topics={"foo": (FOO, 4)}, classic_group_lookup=classic.get,
                                 classic_group_remove=removed.append)
    r = c.heartbeat(ConsumerGroupHeartbeatRequest(group_id="busy", member_id="A", member_epoch=1), 0, 0)
    assert (r.error_code, r.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group busy is not a consumer group.")
    r = c.heartbeat(ConsumerGroupHeartbeatRequest(group_id="busy", member_id="A", member_epoch=-1), 0, 0)
    assert r.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    r = c.heartbeat(ConsumerGroupHeartbeatRequest(group_id="busy", member_id="A", member_epoch=0,
                                                  rebalance_timeout_ms=1, subscribed_topic_names=["foo"],
                                                  topic_partitions=[]), 0, 0)
    assert r.error_code == ErrorCode.GROUP_ID_NOT_FOUND and r.error_message == "Group busy is not a consumer group."
    r = c.heartbeat(ConsumerGroupHeartbeatRequest(group_id="empty", member_id="A", member_epoch=0,
                                                  rebalance_timeout_ms=1, subscribed_topic_names=["foo"],
                                                  topic_partitions=[]), 0, 0)
    assert (r.error_code, r.member_epoch, removed, c.has_group("empty")) == (0, 1, ["empty"], True)


def test_every_answer_encodes_at_every_version():
    # What a server sends must survive kwire's codec: heartbeats and ConsumerGroupDescribe at v0 and v1.
    from kwire.codec import ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse

    c = coordinator()
    answers = [join(c, "A"), join(c, "B", instance_id="i-b"), hb(c, "A", 1), hb(c, "A", 9),
               hb(c, "B", -2, instance_id="i-b"), hb(c, " ", 1)]
    for answer in answers:
        for version in (0, 1):
            assert ConsumerGroupHeartbeatResponse.decode(answer.encode(version), version) == answer
    described = c.describe(ConsumerGroupDescribeRequest(group_ids=["g", "", "x"]), 0)
    assert ConsumerGroupDescribeResponse.decode(described.encode(1), 1) == described
    # v0 has no MemberType: the ignorable field is dropped and reads back as its default, -1.
    back = ConsumerGroupDescribeResponse.decode(described.encode(0), 0)
    assert [m.member_type for m in back.groups[0].members] == [-1, -1]
    assert [m.member_type for m in described.groups[0].members] == [1, 1]
    assert back.encode(0) == described.encode(0)
    assert [m.member_id for m in back.groups[0].members] == ["A", "B"]


def test_answer_dispatches_the_two_apis():
    from kwire.codec import ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse, HeartbeatRequest
    from kwire.group import GroupProtocolError

    c = coordinator()
    req = ConsumerGroupHeartbeatRequest(group_id="g", member_id="A", member_epoch=0, rebalance_timeout_ms=1,
                                        subscribed_topic_names=["foo"], topic_partitions=[])
    assert c.handles(req) and type(c.answer(req, 0, 0)) is ConsumerGroupHeartbeatResponse
    d = ConsumerGroupDescribeRequest(group_ids=["g"])
    assert c.handles(d) and type(c.answer(d, 0, 0)) is ConsumerGroupDescribeResponse
    assert not c.handles(HeartbeatRequest())
    with pytest.raises(GroupProtocolError):
        c.answer(HeartbeatRequest(), 4, 0)
