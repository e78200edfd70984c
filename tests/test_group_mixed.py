"""Mixed groups: classic-protocol members inside a consumer group, and Kafka's online upgrade and downgrade
between the two group types, through GroupCoordinator.handle on an injected clock (nothing sleeps).

Each test cites the Kafka method it follows (``GroupMetadataManager.classicGroupJoinToConsumerGroup``,
``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup``,
``classicGroupLeaveToConsumerGroup``, ``convertToConsumerGroup``, ``convertToClassicGroup``).  Every request and
answer goes through kwire's framing, and after every step no partition is held by two members."""

import pytest

from kwire import codec
from kwire.codec import ErrorCode as E
from kwire.group import GroupState
from tests.group_net import Net

FOO = b"\x01" * 16
FAST = {"group.consumer.assignment.interval.ms": 0, "group.consumer.session.timeout.ms": 1000,
        "group.consumer.min.session.timeout.ms": 1000, "group.consumer.heartbeat.interval.ms": 100,
        "group.consumer.min.heartbeat.interval.ms": 100, "group.min.session.timeout.ms": 1000}
SESSION = 2000
REBALANCE = 3000


def net(policy="bidirectional", **config):
    return Net(config={**FAST, "group.consumer.migration.policy": policy, **config}, topics={"foo": (FOO, 4)},
               initial_rebalance_delay_ms=100)


def wire(n, request, version):
    frame = codec.encode_request(request, version, correlation_id=5, client_id="cid")
    _header, decoded = codec.decode_request(frame)
    handle = n.send(decoded, version, client_id="cid")
    response = n.answer(handle)
    if response is None:
        return handle   # parked (a classic group's JoinGroup or SyncGroup)
    frame = codec.encode_response(response, version, correlation_id=5)
    return codec.decode_response(frame, request.api_key, version)[1]


def subscription(owned=None, version=1, topics=("foo",)):
    owned_tps = [codec.SubscriptionTopicPartition(topic="foo", partitions=list(owned))] if owned else []
    return codec.Subscription(topics=list(topics), owned_partitions=owned_tps).encode(version)


def protos(owned=None, names=("range",), version=1):
    return [codec.JoinGroupRequestProtocol(name=name, metadata=subscription(owned, version)) for name in names]


def join(n, member_id="", owned=None, names=("range",), version=9, instance=None, ptype="consumer"):
    return wire(n, codec.JoinGroupRequest(group_id="g", session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE,
                                          member_id=member_id, group_instance_id=instance, protocol_type=ptype,
                                          protocols=protos(owned, names)), version)


def sync(n, member_id, generation, version=5, name="range", assignments=()):
    return wire(n, codec.SyncGroupRequest(group_id="g", generation_id=generation, member_id=member_id,
                                          protocol_type="consumer", protocol_name=name,
                                          assignments=list(assignments)), version)


def heartbeat(n, member_id, generation):
    return wire(n, codec.HeartbeatRequest(group_id="g", generation_id=generation, member_id=member_id), 4).error_code


def leave(n, member_id, instance=None):
    r = wire(n, codec.LeaveGroupRequest(group_id="g", members=[
        codec.MemberIdentity(member_id=member_id, group_instance_id=instance)]), 5)
    return r.members[0].error_code


def cg(n, member_id, epoch, owned=None, version=1, join_topics=None):
    tps = None if owned is None else [codec.ConsumerGroupHeartbeatRequestTopicPartitions(
        topic_id=FOO, partitions=list(owned))]
    fields = dict(group_id="g", member_id=member_id, member_epoch=epoch, topic_partitions=tps)
    if epoch == 0:
        fields.update(rebalance_timeout_ms=5000, subscribed_topic_names=join_topics or ["foo"], topic_partitions=[])
    return wire(n, codec.ConsumerGroupHeartbeatRequest(**fields), version)


def assigned(sync_response):
    return sorted(p for tp in codec.Assignment.decode(sync_response.assignment).assigned_partitions
                  for p in tp.partitions)


def owned_by(n, member_id):
    return {p for ps in n.c.consumer.group("g").members[member_id].assigned.values() for p in ps}


def no_two_owners(n):
    group = n.c.consumer.group("g")
    if group is None:
        return
    seen = set()
    for member in group.members.values():
        for topic_id, ps in member.assigned.items():
            for p in ps:
                assert (topic_id, p) not in seen, f"partition {p} owned twice"
                seen.add((topic_id, p))


def classic_join_twice(n, owned=None, names=("range",)):
    """JoinGroup v9 with an empty id (MEMBER_ID_REQUIRED), then with the id: the second answer."""
    first = join(n, owned=owned, names=names)
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id
    return join(n, first.member_id, owned=owned, names=names)


# -- a classic member inside a consumer group ------------------------------------------------------------------

def test_a_classic_member_converges_through_join_sync_rounds():
    # classicGroupJoinToConsumerGroup: generation = the member epoch, leader "", no member list, the first
    # protocol's name; classicGroupHeartbeatToConsumerGroup answers REBALANCE_IN_PROGRESS until its share is free.
    n = net()
    a = cg(n, "A", 0)
    assert a.member_epoch == 1
    b = classic_join_twice(n)
    assert (b.error_code, b.generation_id, b.protocol_type, b.protocol_name, b.leader, b.members) == (
        E.NONE, 2, "consumer", "range", "", [])
    bid = b.member_id
    s = sync(n, bid, 2)
    assert (s.error_code, s.protocol_type, s.protocol_name, assigned(s)) == (E.NONE, "consumer", "range", [])
    assert heartbeat(n, bid, 2) == E.NONE   # waits for A to release
    a = cg(n, "A", 1)
    kept = sorted(p for tp in a.assignment.topic_partitions for p in tp.partitions)
    assert len(kept) == 2 and a.member_epoch == 1
    a = cg(n, "A", 1, owned=kept)   # A acknowledges the revocation
    assert a.member_epoch == 2
    no_two_owners(n)
    assert heartbeat(n, bid, 2) == E.REBALANCE_IN_PROGRESS   # its partitions are free now: rejoin
    b = join(n, bid)
    assert (b.error_code, b.generation_id) == (E.NONE, 2)
    s = sync(n, bid, 2)
    assert sorted(assigned(s) + kept) == [0, 1, 2, 3]
    assert heartbeat(n, bid, 2) == E.NONE
    no_two_owners(n)
    assert n.c.consumer.group("g").state().value == "Stable"


def two_converged(n):
    """A (consumer protocol) and B (classic) share foo, two partitions each, Stable: B's id and partitions."""
    cg(n, "A", 0)
    b = classic_join_twice(n)
    sync(n, b.member_id, b.generation_id)
    a = cg(n, "A", 1)
    kept = sorted(p for tp in a.assignment.topic_partitions for p in tp.partitions)
    cg(n, "A", 1, owned=kept)
    assert heartbeat(n, b.member_id, 2) == E.REBALANCE_IN_PROGRESS
    b = join(n, b.member_id)
    s = sync(n, b.member_id, b.generation_id)
    return b.member_id, assigned(s)


def test_a_classic_member_revokes_before_a_new_member_gets_its_partitions():
    # CurrentAssignmentBuilder for a classic member: told to rejoin, it reports what it owns, is answered what it
    # keeps (SyncGroup gives only the current assignment), and the partitions it gives up go to the new member
    # only once its next JoinGroup no longer reports them.
    n = net()
    bid, mine = two_converged(n)
    assert len(mine) == 2
    c = cg(n, "C", 0)
    assert c.member_epoch == 3
    no_two_owners(n)
    assert heartbeat(n, bid, 2) == E.REBALANCE_IN_PROGRESS
    b = join(n, bid, owned=mine)
    member = n.c.consumer.group("g").members[bid]
    assert b.generation_id == 2 and member.state.value == "UNREVOKED_PARTITIONS"
    s = sync(n, bid, 2)   # answered in UNREVOKED even though the group epoch is ahead
    keep = assigned(s)
    assert s.error_code == E.NONE and set(keep) < set(mine)
    assert cg(n, "C", 3).error_code == E.NONE
    assert not owned_by(n, "C") & set(mine)
    assert heartbeat(n, bid, 2) == E.REBALANCE_IN_PROGRESS   # still has to give partitions up
    b = join(n, bid, owned=keep)
    assert b.generation_id == 3
    assert sync(n, bid, 3).error_code == E.NONE and heartbeat(n, bid, 3) == E.NONE
    no_two_owners(n)
    assert cg(n, "C", 3).member_epoch == 3
    assert owned_by(n, "C") == set(mine) - set(keep)   # what B gave up, now C's


def test_classic_join_checks_the_protocols():
    # ConsumerGroup.supportsClassicProtocols: type "consumer" and a name every classic member lists.
    n = net()
    cg(n, "A", 0)
    assert join(n, "x", ptype="connect").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    b = classic_join_twice(n, names=("range", "roundrobin"))
    assert b.error_code == E.NONE
    assert join(n, "y", names=("cooperative-sticky",)).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    c = join(n, "z", names=("roundrobin",))
    assert (c.error_code, c.protocol_name) == (E.NONE, "roundrobin")
    malformed = codec.JoinGroupRequest(group_id="g", session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE,
                                       member_id="w", protocol_type="consumer", protocols=[
                                           codec.JoinGroupRequestProtocol(name="range", metadata=b"\x00")])
    assert wire(n, malformed, 9).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    # The classic members now have only roundrobin in common.
    assert join(n, "v", names=("range",)).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert join(n, "v", names=("roundrobin", "range")).error_code == E.NONE
    no_two_owners(n)


def test_classic_join_session_timeout_bounds_and_size():
    n = net(**{"group.consumer.max.size": 2})
    cg(n, "A", 0)
    r = wire(n, codec.JoinGroupRequest(group_id="g", session_timeout_ms=10, rebalance_timeout_ms=REBALANCE,
                                       member_id="b", protocol_type="consumer", protocols=protos()), 9)
    assert r.error_code == E.INVALID_SESSION_TIMEOUT
    assert join(n, "b").error_code == E.NONE
    assert join(n, "c").error_code == E.GROUP_MAX_SIZE_REACHED
    assert join(n, "b").error_code == E.NONE   # a member already in takes no new place


def test_classic_sync_and_heartbeat_checks():
    # classicGroupSyncToConsumerGroup's checks in order.
    n = net()
    cg(n, "A", 0)
    b = classic_join_twice(n)
    bid, gen = b.member_id, b.generation_id
    assert sync(n, "nobody", gen).error_code == E.UNKNOWN_MEMBER_ID
    assert sync(n, "A", 1).error_code == E.UNKNOWN_MEMBER_ID   # a consumer-protocol member
    assert sync(n, bid, gen + 5).error_code == E.ILLEGAL_GENERATION
    assert sync(n, bid, gen, name="roundrobin").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert heartbeat(n, "nobody", gen) == E.UNKNOWN_MEMBER_ID
    assert heartbeat(n, bid, gen - 1) == E.ILLEGAL_GENERATION
    assert sync(n, bid, gen).error_code == E.NONE
    # A static member's instance id must be its own.
    s = join(n, "", instance="i-1")
    assert s.error_code == E.NONE
    assert wire(n, codec.SyncGroupRequest(group_id="g", generation_id=s.generation_id, member_id=bid,
                                          group_instance_id="i-1", protocol_type="consumer",
                                          protocol_name="range"), 5).error_code == E.FENCED_INSTANCE_ID


def test_classic_member_timers():
    # The session timer uses the JoinGroup's session timeout; a member that never syncs is fenced after its
    # rebalance timeout; one told to rejoin that never does, too (Kafka's sync- and join- timers).
    n = net(**{"group.consumer.session.timeout.ms": 60000, "group.consumer.max.session.timeout.ms": 60000})
    cg(n, "A", 0)
    b = classic_join_twice(n)
    group = n.c.consumer.group("g")
    n.tick(SESSION - 1)
    assert heartbeat(n, b.member_id, b.generation_id) == E.NONE   # re-arms the session, not the sync timer
    n.tick(REBALANCE - 1)
    assert b.member_id in group.members
    n.tick(REBALANCE)   # B never sent SyncGroup
    assert b.member_id not in group.members
    c = classic_join_twice(n)
    assert sync(n, c.member_id, c.generation_id).error_code == E.NONE
    n.tick(REBALANCE + SESSION - 1)
    assert c.member_id in group.members
    n.tick(REBALANCE + SESSION)   # no Heartbeat within the JoinGroup's session timeout
    assert c.member_id not in group.members
    # Told to rejoin (a new member bumps the epoch) and never rejoining: fenced after the rebalance timeout.
    d = classic_join_twice(n)
    assert sync(n, d.member_id, d.generation_id).error_code == E.NONE
    cg(n, "E", 0)
    t = n.now
    assert heartbeat(n, d.member_id, d.generation_id) == E.REBALANCE_IN_PROGRESS
    n.tick(t + SESSION - 1)
    assert heartbeat(n, d.member_id, d.generation_id) == E.REBALANCE_IN_PROGRESS
    n.tick(t + REBALANCE)
    assert d.member_id not in group.members


def test_classic_leave_inside_a_consumer_group():
    # classicGroupLeaveToConsumerGroup: only classic members leave this way; one epoch bump; no downgrade.
    n = net()
    cg(n, "A", 0)
    b = classic_join_twice(n)
    group = n.c.consumer.group("g")
    epoch = group.group_epoch
    assert leave(n, "A") == E.UNKNOWN_MEMBER_ID
    assert leave(n, "nobody") == E.UNKNOWN_MEMBER_ID
    assert leave(n, b.member_id) == E.NONE
    assert b.member_id not in group.members and group.group_epoch == epoch + 1
    assert n.c.group_type("g") == "consumer"


def test_a_classic_member_commits_with_its_generation():
    # ConsumerGroup.validateOffsetCommit / validateMemberEpoch: no version floor for a classic member, and a
    # wrong generation is ILLEGAL_GENERATION, not STALE_MEMBER_EPOCH.
    n = net()
    cg(n, "A", 0)
    b = classic_join_twice(n)

    def commit(version, member, generation):
        req = codec.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=generation, member_id=member,
                                        topics=[codec.OffsetCommitRequestTopic(name="foo", partitions=[
                                            codec.OffsetCommitRequestPartition(partition_index=0, committed_offset=5,
                                                                               committed_metadata="")])])
        return wire(n, req, version).topics[0].partitions[0].error_code

    assert commit(7, b.member_id, b.generation_id) == E.NONE
    assert commit(7, b.member_id, b.generation_id + 1) == E.ILLEGAL_GENERATION
    assert commit(8, "A", 1) == E.UNSUPPORTED_VERSION
    assert commit(9, "A", 7) == E.STALE_MEMBER_EPOCH
    assert n.c.committed("g", "foo", 0)[0] == 5


def test_consumer_group_describe_tells_member_types():
    n = net()
    cg(n, "A", 0)
    b = classic_join_twice(n)
    for version, types in ((0, [-1, -1]), (1, [1, 0])):
        (g,) = wire(n, codec.ConsumerGroupDescribeRequest(group_ids=["g"]), version).groups
        assert [m.member_id for m in g.members] == ["A", b.member_id]
        assert [m.member_type for m in g.members] == types
    (listed,) = wire(n, codec.ListGroupsRequest(), 5).groups
    assert (listed.protocol_type, listed.group_type) == ("consumer", "consumer")


# -- the online upgrade ------------------------------------------------------------------------------------------

def stable_classic_group(n, count=2):
    """``count`` classic members, Stable, the leader's SyncGroup giving each a range share of foo."""
    ids = [join(n).member_id for _ in range(count)]
    handles = [join(n, mid) for mid in ids]   # parked: the initial delay
    n.complete(*handles)
    answers = [n.answer(h) for h in handles]
    generation = answers[0].generation_id
    shares = {mid: list(range(i * 4 // count, (i + 1) * 4 // count)) for i, mid in enumerate(ids)}
    leader = next(a.member_id for a in answers if a.leader == a.member_id)
    assignments = [codec.SyncGroupRequestAssignment(member_id=mid, assignment=codec.Assignment(
        assigned_partitions=[codec.AssignmentTopicPartition(topic="foo", partitions=ps)]).encode(1))
        for mid, ps in shares.items()]
    followers = [sync(n, mid, generation) for mid in ids if mid != leader]
    led = sync(n, leader, generation, assignments=assignments)
    assert led.error_code == E.NONE
    assert all(n.answer(h).error_code == E.NONE for h in followers)
    assert n.c.describe_group("g").state == GroupState.STABLE
    return ids, generation, shares


@pytest.mark.parametrize("policy", ["upgrade", "bidirectional"])
def test_upgrade_converts_a_classic_group_with_members(policy):
    # validateOnlineUpgrade + convertToConsumerGroup: epochs = the generation, members Stable with what they
    # held; the joiner bumps the epoch and the classic members are told to rejoin.
    n = net(policy)
    ids, generation, shares = stable_classic_group(n)
    a = cg(n, "A", 0)
    assert a.error_code == E.NONE and n.c.group_type("g") == "consumer"
    group = n.c.consumer.group("g")
    assert group.group_epoch == generation + 1 and a.member_epoch == generation + 1
    for mid in ids:
        m = group.members[mid]
        assert m.classic is not None and m.previous_member_epoch == generation
    no_two_owners(n)
    assert a.assignment.topic_partitions == []   # everything is still held by the classic members
    for mid in ids:
        assert heartbeat(n, mid, generation) == E.REBALANCE_IN_PROGRESS
    # Each classic member rejoins reporting what it owns, syncs, and gives up what the target moves.
    for mid in ids:
        r = join(n, mid, owned=shares[mid])
        assert r.error_code == E.NONE
        s = sync(n, mid, r.generation_id)
        assert s.error_code == E.NONE
        no_two_owners(n)
    for mid in ids:
        member = n.c.consumer.group("g").members[mid]
        owned = sorted(p for ps in member.assigned.values() for p in ps)
        r = join(n, mid, owned=owned)
        assert sync(n, r.member_id, r.generation_id).error_code == E.NONE
    a = cg(n, "A", a.member_epoch)
    no_two_owners(n)
    group = n.c.consumer.group("g")
    held = sorted(p for m in group.members.values() for ps in m.assigned.values() for p in ps)
    assert held == [0, 1, 2, 3] and len(group.members) == 3 and owned_by(n, "A")
    assert group.state().value == "Stable"


@pytest.mark.parametrize("policy", ["disabled", "downgrade", "nonsense"])
def test_upgrade_refused_by_the_policy(policy):
    n = net(policy)
    stable_classic_group(n)
    r = cg(n, "A", 0)
    assert (r.error_code, r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    assert n.c.group_type("g") == "classic"


def test_upgrade_refused_when_the_joiner_would_not_fit():
    n = net(**{"group.consumer.max.size": 2})
    stable_classic_group(n)
    assert cg(n, "A", 0).error_code == E.GROUP_MAX_SIZE_REACHED
    assert n.c.group_type("g") == "classic"


def test_upgrade_answers_parked_requests_rebalance_in_progress():
    n = net()
    ids, generation, _shares = stable_classic_group(n)
    parked = join(n, ids[0])   # a rejoin parks: the group prepares a rebalance and waits for the other
    assert isinstance(parked, int) and n.answer(parked) is None
    assert cg(n, "A", 0).error_code == E.NONE
    assert n.answer(parked).error_code == E.REBALANCE_IN_PROGRESS
    assert n.c.group_type("g") == "consumer"


# -- the online downgrade ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["leave", "session"])
def test_downgrade_when_the_last_consumer_member_goes(how):
    # validateOnlineDowngradeWithFencedMember + convertToClassicGroup: the classic members become a classic
    # group at the group epoch, holding their target assignments, and it rebalances.
    n = net()
    ids, generation, _shares = stable_classic_group(n)
    a = cg(n, "A", 0)
    epoch = n.c.consumer.group("g").group_epoch
    if how == "leave":
        assert cg(n, "A", -1).member_epoch == -1
    else:
        for mid in ids:
            heartbeat(n, mid, generation)
        n.tick(n.now + 1000)   # A's consumer session ends; the classic members' sessions run on
    assert n.c.group_type("g") == "classic"
    view = n.c.describe_group("g")
    assert view.state == GroupState.PREPARING_REBALANCE and view.generation_id == epoch
    assert {m.member_id for m in view.members} == set(ids)
    held = sorted(p for m in view.members for tp in codec.Assignment.decode(m.assignment).assigned_partitions
                  for p in tp.partitions)
    assert held == sorted(set(held))
    assert a.member_epoch == epoch
    # The classic members rejoin the classic group as usual.
    handles = [n.join(member_id=mid, protos=protos(), session=SESSION, rebalance=REBALANCE) for mid in ids]
    n.complete(*handles)
    assert {n.answer(h).error_code for h in handles} == {E.NONE}


def test_no_downgrade_when_the_policy_does_not_allow_it():
    n = net("upgrade")
    stable_classic_group(n)
    cg(n, "A", 0)
    cg(n, "A", -1)
    assert n.c.group_type("g") == "consumer"
    assert len(n.c.consumer.group("g").members) == 2


def test_no_downgrade_while_another_consumer_member_remains():
    n = net()
    stable_classic_group(n)
    cg(n, "A", 0)
    cg(n, "B", 0)
    cg(n, "A", -1)
    assert n.c.group_type("g") == "consumer"


def test_a_static_classic_member_restarting_takes_its_place():
    # classicGroupJoinToConsumerGroup, static with an empty member id: replaces the holder of the instance id
    # (without the consumer protocol's UNRELEASED_INSTANCE_ID check), keeping its assignment and epoch.
    n = net()
    cg(n, "A", 0)
    first = join(n, "", instance="i-1")
    assert first.error_code == E.NONE   # static members get no MEMBER_ID_REQUIRED
    group = n.c.consumer.group("g")
    epoch = group.group_epoch
    again = join(n, "", instance="i-1")
    assert again.error_code == E.NONE and again.member_id != first.member_id
    assert first.member_id not in group.members and again.member_id in group.members
    assert group.static_members["i-1"] == again.member_id and group.group_epoch == epoch
    assert sync(n, first.member_id, first.generation_id).error_code == E.UNKNOWN_MEMBER_ID
    assert join(n, first.member_id, instance="i-1").error_code == E.FENCED_INSTANCE_ID
    assert join(n, "someone", instance="i-2").error_code == E.UNKNOWN_MEMBER_ID
