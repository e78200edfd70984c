"""GroupCoordinator's OffsetCommit, OffsetFetch, DescribeGroups and ListGroups, per state and per version.

Every request and answer goes through kwire's framing at the version under test, so a field a version
lacks cannot carry a value the test then reads back.  The clock is injected; nothing sleeps.
"""

import pytest

from kwire import codec
from kwire.group import GroupCoordinator, GroupProtocolError, GroupState
from kwire.codec import ErrorCode as E
from tests.group_net import Net


def wire(net, request, version):
    """Send ``request`` to the coordinator through the framing at ``version``; the decoded answer."""
    frame = codec.encode_request(request, version, correlation_id=7, client_id="t")
    _header, decoded = codec.decode_request(frame)
    handle = net.send(decoded, version)
    response = net.answer(handle)
    assert response is not None, "answered at once"
    frame = codec.encode_response(response, version, correlation_id=7)
    return codec.decode_response(frame, request.api_key, version)[1]


def commit(net, version, offsets, group="g", generation=-1, member="", instance=None, metadata="m", epoch=5):
    topics = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(codec.OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_metadata=metadata,
            committed_leader_epoch=epoch if version >= 6 else -1))
    req = codec.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation if version >= 1 else -1,
        member_id=member if version >= 1 else "", group_instance_id=instance if version >= 7 else None,
        topics=[codec.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in topics.items()])
    response = wire(net, req, version)
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def fetch(net, version, wanted, group="g"):
    """``{(topic, partition): (offset, epoch, metadata, error)}``; ``wanted`` None asks for everything (v2+)."""
    if version >= 8:
        topics = None if wanted is None else [codec.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
                                              for t, ps in wanted.items()]
        req = codec.OffsetFetchRequest(groups=[codec.OffsetFetchRequestGroup(group_id=group, topics=topics)])
        (g,) = wire(net, req, version).groups
        assert (g.group_id, g.error_code) == (group, E.NONE)
        topics = g.topics
    else:
        topics = None if wanted is None else [codec.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                                              for t, ps in wanted.items()]
        response = wire(net, codec.OffsetFetchRequest(group_id=group, topics=topics), version)
        if version >= 2:
            assert response.error_code == E.NONE
        topics = response.topics
    return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
            for t in topics for p in t.partitions}


@pytest.mark.parametrize("version", range(10))
def test_simple_commit_then_fetch_every_version(version):
    net = Net()
    errors = commit(net, version, {("orders", 0): 42, ("orders", 3): 7, ("audit", 1): 1})
    assert set(errors.values()) == {E.NONE}
    # A simple group (no protocol type) now exists, Empty.
    assert net.view().state == GroupState.EMPTY and net.view().protocol_type == ""
    got = fetch(net, version, {"orders": [0, 3, 5]})
    epoch = 5 if version >= 6 else -1
    shown_epoch = epoch if version >= 5 else -1  # OffsetFetch shows the epoch from v5
    assert got == {("orders", 0): (42, shown_epoch, "m", 0), ("orders", 3): (7, shown_epoch, "m", 0),
                   ("orders", 5): (-1, -1, "", 0)}
    if version >= 2:  # null topics: every committed offset of the group
        assert set(fetch(net, version, None)) == {("orders", 0), ("orders", 3), ("audit", 1)}


@pytest.mark.parametrize("version", [0, 1, 7, 8, 9])
def test_fetch_of_an_unknown_group_is_minus_one_everywhere(version):
    net = Net()
    assert fetch(net, version, {"t": [0, 1]}, group="nobody") == {("t", 0): (-1, -1, "", 0), ("t", 1): (-1, -1, "", 0)}
    if version >= 2:
        assert fetch(net, version, None, group="nobody") == {}


def test_null_metadata_is_stored_as_empty_and_too_large_metadata_is_refused_per_partition():
    net = Net(offset_metadata_max_bytes=4)
    assert commit(net, 8, {("t", 0): 1}, metadata=None) == {("t", 0): E.NONE}
    assert fetch(net, 8, {"t": [0]})[("t", 0)][2] == ""
    assert commit(net, 8, {("t", 1): 1}, metadata="12345") == {("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert fetch(net, 8, {"t": [1]})[("t", 1)][0] == -1


def test_unknown_partitions_are_refused_when_the_cluster_says_so():
    net = Net(partition_exists=lambda topic, partition: topic == "t" and partition < 2)
    errors = commit(net, 9, {("t", 0): 1, ("t", 2): 1, ("u", 0): 1})
    assert errors == {("t", 0): E.NONE, ("t", 2): E.UNKNOWN_TOPIC_OR_PARTITION, ("u", 0): E.UNKNOWN_TOPIC_OR_PARTITION}


@pytest.mark.parametrize("version", range(1, 10))
def test_member_commits_in_stable(version):
    net = Net()
    ids, gen, _leader = net.stable_group(2)
    assert commit(net, version, {("t", 0): 10}, generation=gen, member=ids[0]) == {("t", 0): E.NONE}
    assert commit(net, version, {("t", 0): 11}, generation=gen + 1, member=ids[0]) == {("t", 0): E.ILLEGAL_GENERATION}
    assert commit(net, version, {("t", 0): 12}, generation=gen, member="ghost") == {("t", 0): E.UNKNOWN_MEMBER_ID}
    # A simple commit into a group with members: no member id, no generation.
    assert commit(net, version, {("t", 0): 13}) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert fetch(net, version, {"t": [0]})[("t", 0)][0] == 10


def test_group_level_error_goes_into_every_partition_and_stores_nothing():
    net = Net()
    ids, gen, _ = net.stable_group(2)
    errors = commit(net, 8, {("a", 0): 1, ("a", 1): 1, ("b", 0): 1}, generation=gen, member="ghost")
    assert set(errors.values()) == {E.UNKNOWN_MEMBER_ID} and len(errors) == 3
    assert {v[0] for v in fetch(net, 8, {"a": [0, 1], "b": [0]}).values()} == {-1}


@pytest.mark.parametrize("version,expected", [(8, E.ILLEGAL_GENERATION), (9, E.GROUP_ID_NOT_FOUND)])
def test_member_commit_to_an_unknown_group_by_version(version, expected):
    net = Net()
    assert commit(net, version, {("t", 0): 1}, group="none", generation=3, member="m") == {("t", 0): expected}
    assert net.c.describe_group("none") is None


def test_commit_in_completing_rebalance_is_rebalance_in_progress_and_in_preparing_is_accepted():
    net = Net()
    a, _b = net.completing_pair()
    errors = commit(net, 8, {("t", 0): 1}, generation=a.generation_id, member=a.member_id)
    assert errors == {("t", 0): E.REBALANCE_IN_PROGRESS}

    net = Net()
    ids, gen, leader = net.stable_group(2)
    net.join(leader, client_id="c0")  # the leader rejoins: PreparingRebalance
    assert net.state() == GroupState.PREPARING_REBALANCE
    # The generation being rebalanced away from may still commit.
    assert commit(net, 8, {("t", 0): 5}, generation=gen, member=ids[1]) == {("t", 0): E.NONE}


def test_offsets_outlast_the_group_unloading():
    net = Net()
    commit(net, 8, {("t", 0): 9})
    net.c.unload_group("g", net.now)
    assert net.view() is None
    assert fetch(net, 8, {"t": [0]}) == {("t", 0): (9, 5, "m", 0)}


# ---------------------------------------------------------------------------------------------------------
# DescribeGroups and ListGroups
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(7))
def test_describe_groups_by_state(version):
    net = Net()
    ids, gen, leader = net.stable_group(2, group="stable")
    a = net.join(version=9, group="joining", client_id="x")  # MEMBER_ID_REQUIRED: nothing joined yet
    assert net.answer(a).error_code == E.MEMBER_ID_REQUIRED
    commit(net, 8, {("t", 0): 1}, group="simple")
    req = codec.DescribeGroupsRequest(groups=["stable", "simple", "unknown"])
    stable, simple, unknown = wire(net, req, version).groups
    assert (stable.error_code, stable.group_state, stable.protocol_type, stable.protocol_data) == (
        0, GroupState.STABLE, "consumer", "range")
    assert sorted(m.member_id for m in stable.members) == sorted(ids)
    for m in stable.members:
        assert m.member_assignment == m.member_id.encode()
        assert m.member_metadata == b"mrange"
        assert m.client_host == "/127.0.0.1"
        assert m.group_instance_id is None
    assert (simple.group_state, simple.protocol_type, simple.members) == (GroupState.EMPTY, "", [])
    assert (unknown.error_code, unknown.group_state, unknown.members) == (0, GroupState.DEAD, [])


def test_describe_outside_stable_has_no_protocol_data_or_metadata_but_keeps_assignments():
    net = Net()
    ids, gen, leader = net.stable_group(2)
    net.join(leader, client_id="c0")
    (group,) = wire(net, codec.DescribeGroupsRequest(groups=["g"]), 5).groups
    assert (group.group_state, group.protocol_data) == (GroupState.PREPARING_REBALANCE, "")
    assert {m.member_metadata for m in group.members} == {b""}
    assert {m.member_assignment for m in group.members} == {i.encode() for i in ids}


def test_describe_shows_static_instance_ids_from_v4():
    net = Net()
    net.stable_group(2, instances=["i0", "i1"])
    for version, expected in ((3, {None}), (4, {"i0", "i1"})):
        (group,) = wire(net, codec.DescribeGroupsRequest(groups=["g"]), version).groups
        assert {m.group_instance_id for m in group.members} == expected


@pytest.mark.parametrize("version", range(6))
def test_list_groups_every_version_and_filters(version):
    net = Net()
    net.stable_group(2, group="two")
    net.completing_pair()  # group "g"
    commit(net, 8, {("t", 0): 1}, group="simple")
    listed = wire(net, codec.ListGroupsRequest(), version)
    assert listed.error_code == E.NONE
    rows = sorted((g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups)
    state = (lambda s: s) if version >= 4 else (lambda s: "")
    kind = "classic" if version >= 5 else ""
    assert rows == [("g", "consumer", state(GroupState.COMPLETING_REBALANCE), kind),
                    ("simple", "", state(GroupState.EMPTY), kind),
                    ("two", "consumer", state(GroupState.STABLE), kind)]
    if version >= 4:
        only = wire(net, codec.ListGroupsRequest(states_filter=["stable"]), version)
        assert [g.group_id for g in only.groups] == ["two"]
    if version >= 5:
        assert wire(net, codec.ListGroupsRequest(types_filter=["consumer"]), version).groups == []
        assert len(wire(net, codec.ListGroupsRequest(types_filter=["Classic"]), version).groups) == 3


def test_handle_names_every_request_it_takes():
    c = GroupCoordinator()
    with pytest.raises(GroupProtocolError, match="DescribeGroups, ListGroups, ConsumerGroupHeartbeat and ConsumerGroupDescribe"):
        c.handle(1, codec.MetadataRequest(), 9, 0)
