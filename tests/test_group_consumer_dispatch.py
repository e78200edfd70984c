"""The consumer protocol (KIP-848) through GroupCoordinator.handle: heartbeats, offsets under member epochs, the
answers of ListGroups, DescribeGroups and ConsumerGroupDescribe for both group types, group lifetimes, the id
space shared with classic groups, and the Kafka-named settings.

Every request and answer goes through kwire's framing at the version under test.  The clock is injected;
nothing sleeps.  Kafka's behaviour is cited by method (``GroupMetadataManager``, ``ConsumerGroup``)."""

import pytest

from kwire import codec
from kwire.codec import ConsumerGroupHeartbeatRequestTopicPartitions as TP
from kwire.codec import ErrorCode as E
from kwire.errors import ArgumentValueError
from kwire.group import GroupState
from tests.group_net import Net

FOO = b"\x01" * 16
BAR = b"\x02" * 16
FAST = {"group.consumer.assignment.interval.ms": 0, "group.consumer.session.timeout.ms": 1000,
        "group.consumer.min.session.timeout.ms": 1000, "group.consumer.heartbeat.interval.ms": 100,
        "group.consumer.min.heartbeat.interval.ms": 100}


def net(config=None, foo=4, **kw):
    return Net(config={**FAST, **(config or {})}, topics={"foo": (FOO, foo)}, **kw)


def wire(n, request, version):
    """Send ``request`` through the framing at ``version``; the decoded answer (it must come at once)."""
    frame = codec.encode_request(request, version, correlation_id=3, client_id="cid")
    _header, decoded = codec.decode_request(frame)
    handle = n.send(decoded, version, client_id="cid")
    response = n.answer(handle)
    assert response is not None, "answered at once"
    frame = codec.encode_response(response, version, correlation_id=3)
    return codec.decode_response(frame, request.api_key, version)[1]


def cg_join(n, member_id="", group="g", topics=("foo",), version=1, instance_id=None):
    return wire(n, codec.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=0, instance_id=instance_id, rebalance_timeout_ms=5000,
        subscribed_topic_names=list(topics), topic_partitions=[]), version)


def cg_hb(n, member_id, epoch, owned=None, group="g", version=1):
    tps = None if owned is None else [TP(topic_id=t, partitions=ps) for t, ps in owned.items()]
    return wire(n, codec.ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=epoch,
                                                       topic_partitions=tps), version)


def parts(response):
    return {tp.topic_id: sorted(tp.partitions) for tp in response.assignment.topic_partitions}


def commit(n, version, member, epoch, group="g", offset=10):
    req = codec.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
        topics=[codec.OffsetCommitRequestTopic(name="foo", partitions=[codec.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=offset, committed_metadata="")])])
    (topic,) = wire(n, req, version).topics
    return topic.partitions[0].error_code


def fetch_v9(n, member, epoch, group="g"):
    req = codec.OffsetFetchRequest(groups=[codec.OffsetFetchRequestGroup(
        group_id=group, member_id=member, member_epoch=epoch,
        topics=[codec.OffsetFetchRequestTopics(name="foo", partition_indexes=[0])])])
    (g,) = wire(n, req, 9).groups
    return g.error_code, [p.committed_offset for t in g.topics for p in t.partitions]


def classic_member(n, group="g"):
    """One classic member, joined and synced: returns (member id, generation)."""
    h = n.join(group=group, version=9)
    joined = n.answer(h)
    h = n.join(member_id=joined.member_id, group=group, version=9)
    n.complete(h)
    answer = n.answer(h)
    n.answer(n.sync(answer.member_id, answer.generation_id, group=group))
    return answer.member_id, answer.generation_id


# -- heartbeats through handle --------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1])
def test_heartbeats_through_handle_at_every_version(version):
    # GroupMetadataManager.consumerGroupHeartbeat: the first member gets epoch 1 and every partition at once.
    n = net()
    r = cg_join(n, "A", version=version)
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (E.NONE, "A", 1, 100)
    assert parts(r) == {FOO: [0, 1, 2, 3]}
    b = cg_join(n, "B", version=version)
    assert (b.member_epoch, parts(b)) == (2, {})
    a = cg_hb(n, "A", 1, version=version)
    assert a.member_epoch == 1 and sum(len(p) for p in parts(a).values()) == 2
    assert n.c.group_type("g") == "consumer" and n.c.consumer.group("g").group_epoch == 2


def test_unsupported_when_the_consumer_protocol_is_disabled():
    # KafkaApis.isConsumerGroupProtocolEnabled: both apis answer UNSUPPORTED_VERSION.
    n = net({"group.coordinator.rebalance.protocols": "classic"})
    assert cg_join(n, "A").error_code == E.UNSUPPORTED_VERSION
    d = wire(n, codec.ConsumerGroupDescribeRequest(group_ids=["g"]), 1)
    assert [g.error_code for g in d.groups] == [E.UNSUPPORTED_VERSION]
    assert not n.c.has_group("g")


def test_handle_refuses_a_version_the_tables_do_not_have():
    from kwire.errors import UnsupportedVersionError
    n = net()
    with pytest.raises(UnsupportedVersionError):
        n.c.handle(1, codec.ConsumerGroupDescribeRequest(group_ids=["g"]), 2, 0)


def test_timers_of_both_protocols_share_next_deadline_and_tick():
    n = net({}, empty_group_retention_ms=0)
    cg_join(n, "A")
    assert n.c.next_deadline() == 1000   # the consumer member's session
    h = n.join(group="classic", version=9)
    assert n.answer(h).error_code == E.MEMBER_ID_REQUIRED
    assert n.c.next_deadline() == 1000
    n.tick(1000)   # the session expires: the member is fenced, the empty group goes (no offsets)
    assert not n.c.has_group("g")
    assert n.c.next_deadline() > 1000 and n.c.has_group("classic")   # the classic pending member's timer


def test_set_topics_bumps_a_subscribed_group_on_its_next_heartbeat():
    # GroupMetadataManager.onNewMetadataImage, then the subscription metadata refresh in the heartbeat.
    n = net()
    cg_join(n, "A")
    assert n.c.set_topics({"foo": (FOO, 6), "bar": (BAR, 1)}) == ["g"]
    r = cg_hb(n, "A", 1)
    assert r.member_epoch == 2 and parts(r) == {FOO: [0, 1, 2, 3, 4, 5]}


# -- offsets under member epochs ------------------------------------------------------------------------------

def test_offset_commit_and_fetch_check_the_member_epoch():
    # ConsumerGroup.validateOffsetCommit / validateOffsetFetch through the coordinator's OffsetCommit/OffsetFetch.
    n = net()
    cg_join(n, "A")
    assert commit(n, 9, "A", 1) == E.NONE
    assert commit(n, 9, "A", 7) == E.STALE_MEMBER_EPOCH
    assert commit(n, 8, "A", 1) == E.UNSUPPORTED_VERSION
    assert commit(n, 9, "", -1) == E.UNKNOWN_MEMBER_ID
    assert commit(n, 9, "Z", 1) == E.UNKNOWN_MEMBER_ID
    assert fetch_v9(n, "A", 1) == (E.NONE, [10])
    assert fetch_v9(n, None, -1) == (E.NONE, [10])
    assert fetch_v9(n, "A", 0) == (E.STALE_MEMBER_EPOCH, [])
    assert fetch_v9(n, "Z", 1) == (E.UNKNOWN_MEMBER_ID, [])


def test_an_old_epoch_commit_works_while_the_member_revokes():
    # The member epoch does not move while partitions are revoked (UNREVOKED_PARTITIONS keeps the old epoch).
    n = net()
    cg_join(n, "A")
    cg_join(n, "B")
    assert cg_hb(n, "A", 1).member_epoch == 1
    assert commit(n, 9, "A", 1) == E.NONE


def test_an_empty_consumer_group_takes_admin_commits():
    n = net({}, empty_group_retention_ms=0)
    cg_join(n, "A")
    assert cg_hb(n, "A", -1).member_epoch == -1
    assert not n.c.has_group("g")   # gone at once: no members, no offsets
    cg_join(n, "A")
    assert commit(n, 9, "A", 1) == E.NONE
    assert cg_hb(n, "A", -1).member_epoch == -1
    assert n.c.group_type("g") == "consumer"   # kept by its offsets
    assert commit(n, 9, "", -1) == E.NONE


def test_classic_commits_are_unchanged():
    n = net()
    assert commit(n, 9, "", -1, group="simple") == E.NONE
    assert n.c.group_type("simple") == "classic"
    assert commit(n, 9, "nobody", 3, group="missing") == E.GROUP_ID_NOT_FOUND


# -- ListGroups, DescribeGroups, ConsumerGroupDescribe for both types ------------------------------------------

def two_types():
    n = net()
    classic_member(n, group="old")
    cg_join(n, "A", group="new")
    return n


@pytest.mark.parametrize("version", range(6))
def test_list_groups_lists_both_types(version):
    # GroupMetadataManager.listGroups; a consumer group lists as protocol type "consumer", type "consumer".
    n = two_types()
    got = wire(n, codec.ListGroupsRequest(), version).groups
    rows = {(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in got}
    state = (lambda s: s) if version >= 4 else (lambda s: "")
    kind = (lambda t: t) if version >= 5 else (lambda t: "")
    assert rows == {("old", "consumer", state("Stable"), kind("classic")),
                    ("new", "consumer", state("Stable"), kind("consumer"))}


@pytest.mark.parametrize("types, expected", [
    (["consumer"], {"new"}), (["CLASSIC"], {"old"}), (["classic", "consumer"], {"old", "new"}),
    ([], {"old", "new"}), (["share"], set()), (["nonsense"], set()),
])
def test_list_groups_v5_types_filter(types, expected):
    n = two_types()
    got = wire(n, codec.ListGroupsRequest(types_filter=types), 5).groups
    assert {g.group_id for g in got} == expected


def test_list_groups_states_filter_across_types():
    n = two_types()
    cg_join(n, "B", group="new")   # the consumer group is now Reconciling
    got = wire(n, codec.ListGroupsRequest(states_filter=["reconciling"]), 4).groups
    assert [(g.group_id, g.group_state) for g in got] == [("new", "Reconciling")]
    got = wire(n, codec.ListGroupsRequest(states_filter=["STABLE"], types_filter=["consumer"]), 5).groups
    assert got == []


@pytest.mark.parametrize("version", range(7))
def test_describe_groups_of_a_consumer_group_reads_as_a_missing_group(version):
    # GroupMetadataManager.describeGroups looks groups up as classic groups: a consumer group answers NONE,
    # state Dead, no members, exactly as an id no group has.
    n = two_types()
    got = wire(n, codec.DescribeGroupsRequest(groups=["new", "absent", "old"]), version).groups
    new, absent, old = got
    assert (new.error_code, new.group_state, new.members) == (E.NONE, "Dead", [])
    fields = ("error_code", "group_state", "protocol_type", "protocol_data", "members", "authorized_operations")
    assert [getattr(new, f) for f in fields] == [getattr(absent, f) for f in fields]
    assert old.group_state == "Stable" and len(old.members) == 1


@pytest.mark.parametrize("version", [0, 1])
def test_consumer_group_describe_both_types_every_version(version):
    # GroupMetadataManager.consumerGroupDescribe; ConsumerGroupMember.asConsumerGroupDescribeMember.
    n = two_types()
    cg_join(n, "B-with-a-long-client-chosen-id", group="new")
    got = wire(n, codec.ConsumerGroupDescribeRequest(group_ids=["new", "old", ""]), version).groups
    new, old, empty = got
    assert (new.error_code, new.group_state, new.group_epoch, new.assignment_epoch, new.assignor_name) == (
        E.NONE, "Reconciling", 2, 2, "uniform")
    assert [m.member_id for m in new.members] == ["A", "B-with-a-long-client-chosen-id"]
    assert [m.member_type for m in new.members] == ([1, 1] if version >= 1 else [-1, -1])
    a = new.members[0]
    assert (a.member_epoch, a.client_id, a.subscribed_topic_names) == (1, "cid", ["foo"])
    assert [(t.topic_id, t.topic_name, t.partitions) for t in a.assignment.topic_partitions] == [
        (FOO, "foo", [0, 1, 2, 3])]
    assert sum(len(t.partitions) for t in a.target_assignment.topic_partitions) == 2
    assert (old.error_code, old.members) == (E.GROUP_ID_NOT_FOUND, [])
    assert empty.error_code == E.INVALID_GROUP_ID


# -- lifetimes --------------------------------------------------------------------------------------------------

def test_an_empty_consumer_group_goes_after_the_retention_unless_it_has_offsets():
    # GroupMetadataManager.cleanupGroupMetadata: empty and no offsets -> deleted on the cleanup timer.
    n = net({}, empty_group_retention_ms=500)
    cg_join(n, "A")
    cg_join(n, "A", group="kept")
    assert commit(n, 9, "A", 1, group="kept") == E.NONE
    cg_hb(n, "A", -1)
    cg_hb(n, "A", -1, group="kept")
    assert n.c.has_group("g") and n.c.next_deadline() == 500
    n.tick(499)
    assert n.c.has_group("g")
    n.tick(500)
    assert not n.c.has_group("g") and n.c.group_type("kept") == "consumer"
    assert n.c.next_deadline() is None
    # The id is free again, for either protocol.
    assert cg_join(n, "A").member_epoch == 1


def test_a_member_rejoining_before_the_retention_keeps_the_group():
    n = net({}, empty_group_retention_ms=500)
    cg_join(n, "A")
    cg_hb(n, "A", -1)
    n.tick(100)
    assert cg_join(n, "B").member_epoch == 3   # the same group: epochs 1, 2 (leave), 3
    n.tick(600)
    assert n.c.has_group("g")


# -- one id, one type -------------------------------------------------------------------------------------------

def test_a_consumer_join_takes_the_id_of_an_empty_classic_group():
    # GroupMetadataManager.getOrMaybeCreateConsumerGroup / maybeDeleteEmptyClassicGroup.
    n = net()
    assert commit(n, 9, "", -1) == E.NONE   # a simple classic group, Empty, with an offset
    assert n.c.group_type("g") == "classic"
    r = cg_join(n, "A")
    assert r.error_code == E.NONE and n.c.group_type("g") == "consumer"
    assert fetch_v9(n, "A", 1) == (E.NONE, [10])   # offsets belong to the id, not to the group object


def test_a_consumer_join_to_a_classic_group_with_members_is_refused():
    n = net({"group.consumer.migration.policy": "disabled"})
    classic_member(n)
    r = cg_join(n, "A")
    assert (r.error_code, r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    assert cg_hb(n, "A", 3).error_code == E.GROUP_ID_NOT_FOUND
    assert n.c.group_type("g") == "classic"


def test_a_classic_join_replaces_an_empty_consumer_group():
    # classicGroupJoin -> maybeDeleteEmptyConsumerGroup: an empty consumer group (kept by its offsets) gives its id
    # to the classic group, whatever the migration policy; the offsets stay with the id.
    n = net({"group.consumer.migration.policy": "disabled"})
    cg_join(n, "A")
    assert commit(n, 9, "A", 1) == E.NONE
    cg_hb(n, "A", -1)
    assert n.c.group_type("g") == "consumer"   # empty, kept by its offset
    classic_member(n)
    assert n.c.group_type("g") == "classic" and n.c.describe_group("g").state == GroupState.STABLE
    assert n.c.committed("g", "foo", 0)[0] == 10
    assert cg_join(n, "B").error_code == E.GROUP_ID_NOT_FOUND


# -- settings ---------------------------------------------------------------------------------------------------

def test_settings_take_kafka_names_and_bounds():
    # GroupCoordinatorConfig's checks; the classic keys under their broker names too.
    with pytest.raises(ArgumentValueError, match="group.consumer.session.timeout.ms"):
        Net(config={"group.consumer.session.timeout.ms": 100})
    with pytest.raises(ArgumentValueError, match="unknown consumer group config"):
        Net(config={"group.consumer.sesion.timeout.ms": 100})
    n = net({"group.min.session.timeout.ms": 2000, "group.max.size": 1, "group.consumer.max.size": 1})
    assert n.answer(n.join(version=9, session=1000)).error_code == E.INVALID_SESSION_TIMEOUT
    assert cg_join(n, "A").error_code == E.NONE
    r = cg_join(n, "B")
    assert r.error_code == E.GROUP_MAX_SIZE_REACHED
    assert n.c.consumer.config.heartbeat_interval_ms == 100
