"""Hand-checked frames: every byte below was laid out by reading
the byte layouts of Kafka's protocol guide (the layouts of each message and version), not by running kwire.

The first three are the seed flow of a consumer group: FindCoordinator v0
for group "test", a "range" JoinGroup v0 whose one protocol carries 21 bytes
of metadata (a Subscription v0 of topic "topic-one"), and a SyncGroup v0
whose assignment is 33 bytes (an Assignment v0 of topic-one partitions 0, 1).
"""

import types

import pytest

import kwire
from kwire.codec import _schema

from tests._twins import IMPLS, codec_module


def h(*parts):
    return bytes.fromhex("".join(parts).replace(" ", ""))


SUBSCRIPTION_V0 = h(
    "0000",                      # version 0
    "00000001", "0009", "746f7069632d6f6e65",  # topics: ["topic-one"]
    "ffffffff",                  # user_data: null
)
ASSIGNMENT_V0 = h(
    "0000",                      # version 0
    "00000001",                  # assigned_partitions: 1 topic
    "0009", "746f7069632d6f6e65",  # "topic-one"
    "00000002", "00000000", "00000001",  # partitions [0, 1]
    "ffffffff",                  # user_data: null
)

FIND_COORDINATOR_V0_FRAME = h(
    "00000015",                  # size 21
    "000a", "0000", "00000001",  # api key 10, version 0, correlation id 1
    "0005", "6b77697265",        # client id "kwire" (header v1)
    "0004", "74657374",          # key "test"
)

JOIN_GROUP_V0_FRAME = h(
    "00000048",                  # size 72
    "000b", "0000", "00000002", "0005", "6b77697265",
    "0003", "677270",            # group_id "grp"
    "00007530",                  # session_timeout_ms 30000
    "0000",                      # member_id ""
    "0008", "636f6e73756d6572",  # protocol_type "consumer"
    "00000001",                  # 1 protocol
    "0005", "72616e6765",        # name "range"
    "00000015",                  # metadata: 21 bytes
) + SUBSCRIPTION_V0

SYNC_GROUP_V0_FRAME = h(
    "00000049",                  # size 73
    "000e", "0000", "00000003", "0005", "6b77697265",
    "0003", "677270",            # group_id "grp"
    "00000001",                  # generation_id 1
    "0002", "6d31",              # member_id "m1"
    "00000001",                  # 1 assignment
    "0002", "6d31",              # member_id "m1"
    "00000021",                  # assignment: 33 bytes
) + ASSIGNMENT_V0

HEARTBEAT_V4_FRAME = h(
    "0000001d",                  # size 29
    "000c", "0004", "00000004",  # api key 12, version 4, correlation id 4
    "0005", "6b77697265",        # client id stays a classic string in header v2
    "00",                        # header tagged fields
    "04", "677270",              # compact group_id "grp"
    "00000001",                  # generation_id 1
    "03", "6d31",                # compact member_id "m1"
    "00",                        # group_instance_id: null
    "00",                        # tagged fields
)

JOIN_GROUP_V0_RESPONSE_FRAME = h(
    "0000003a",                  # size 58
    "00000002",                  # correlation id (response header v0)
    "0000",                      # error_code
    "00000001",                  # generation_id
    "0005", "72616e6765",        # protocol_name "range"
    "0002", "6d31",              # leader "m1"
    "0002", "6d31",              # member_id "m1"
    "00000001",                  # 1 member
    "0002", "6d31",              # member_id "m1"
    "00000015",                  # metadata: 21 bytes
) + SUBSCRIPTION_V0

JOIN_GROUP_V9_RESPONSE_FRAME = h(
    "00000031",                  # size 49
    "00000002", "00",            # correlation id, header v1 tagged fields
    "00000000",                  # throttle_time_ms
    "0000",                      # error_code
    "00000001",                  # generation_id
    "09", "636f6e73756d6572",    # protocol_type "consumer"
    "06", "72616e6765",          # protocol_name "range"
    "03", "6d31",                # leader "m1"
    "00",                        # skip_assignment false
    "03", "6d31",                # member_id "m1"
    "02",                        # 1 member (compact: N+1)
    "03", "6d31",                # member_id "m1"
    "00",                        # group_instance_id null
    "05", "0a0b0c0d",            # metadata: 4 bytes
    "00",                        # member tagged fields
    "00",                        # tagged fields
)

FIND_COORDINATOR_V6_RESPONSE_FRAME = h(
    "00000026",                  # size 38
    "00000001", "00",            # correlation id, header tagged fields
    "00000000",                  # throttle_time_ms
    "02",                        # 1 coordinator
    "05", "74657374",            # key "test"
    "00000001",                  # node_id 1
    "0a", "6c6f63616c686f7374",  # host "localhost"
    "00002384",                  # port 9092
    "0000",                      # error_code
    "00",                        # error_message null
    "00",                        # coordinator tagged fields
    "00",                        # tagged fields
)


@pytest.fixture(params=IMPLS)
def k(request):
    """One implementation's classes, with the framing functions bound to them."""
    from kwire.codec import Framing

    codec = codec_module(request.param)
    framing = Framing(codec)
    return types.SimpleNamespace(
        **{name: getattr(codec, name) for name in dir(codec) if name[:1].isupper()},
        **{name: getattr(framing, name) for name in dir(framing) if name.startswith(("encode_", "decode_"))},
    )


def test_subscription_and_assignment_v0(k):
    assert k.Subscription(topics=["topic-one"]).encode(0) == SUBSCRIPTION_V0
    assert len(SUBSCRIPTION_V0) == 21
    a = k.Assignment(assigned_partitions=[k.AssignmentTopicPartition(topic="topic-one", partitions=[0, 1])])
    assert a.encode(0) == ASSIGNMENT_V0
    assert len(ASSIGNMENT_V0) == 33
    assert k.Assignment.decode(ASSIGNMENT_V0) == a


def test_seed_flow_find_coordinator_v0(k):
    msg = k.FindCoordinatorRequest(key="test")
    assert k.encode_request(msg, 0, 1, "kwire") == FIND_COORDINATOR_V0_FRAME
    header, back = k.decode_request(FIND_COORDINATOR_V0_FRAME)
    assert (header.request_api_key, header.request_api_version, header.correlation_id, header.client_id) == (
        10, 0, 1, "kwire")
    assert back == msg


def test_seed_flow_join_group_v0(k):
    msg = k.JoinGroupRequest(group_id="grp", session_timeout_ms=30000, member_id="", protocol_type="consumer",
                             protocols=[k.JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION_V0)])
    assert k.encode_request(msg, 0, 2, "kwire") == JOIN_GROUP_V0_FRAME
    header, back = k.decode_request(JOIN_GROUP_V0_FRAME)
    assert back == msg
    assert k.Subscription.decode(back.protocols[0].metadata).topics == ["topic-one"]


def test_seed_flow_sync_group_v0(k):
    msg = k.SyncGroupRequest(group_id="grp", generation_id=1, member_id="m1",
                             assignments=[k.SyncGroupRequestAssignment(member_id="m1", assignment=ASSIGNMENT_V0)])
    assert k.encode_request(msg, 0, 3, "kwire") == SYNC_GROUP_V0_FRAME
    assert k.decode_request(SYNC_GROUP_V0_FRAME)[1] == msg


def test_heartbeat_v4_uses_header_v2_with_classic_client_id(k):
    msg = k.HeartbeatRequest(group_id="grp", generation_id=1, member_id="m1")
    assert k.encode_request(msg, 4, 4, "kwire") == HEARTBEAT_V4_FRAME
    header, back = k.decode_request(HEARTBEAT_V4_FRAME)
    assert header.client_id == "kwire" and back == msg


def test_join_group_response_v0_and_v9(k):
    member = k.JoinGroupResponseMember(member_id="m1", metadata=SUBSCRIPTION_V0)
    msg = k.JoinGroupResponse(generation_id=1, protocol_name="range", leader="m1", member_id="m1", members=[member])
    assert k.encode_response(msg, 0, 2) == JOIN_GROUP_V0_RESPONSE_FRAME
    assert k.decode_response(JOIN_GROUP_V0_RESPONSE_FRAME, 11, 0)[1] == msg

    msg9 = k.JoinGroupResponse(generation_id=1, protocol_type="consumer", protocol_name="range", leader="m1",
                               member_id="m1", members=[k.JoinGroupResponseMember(member_id="m1", metadata=h("0a0b0c0d"))])
    assert k.encode_response(msg9, 9, 2) == JOIN_GROUP_V9_RESPONSE_FRAME
    header, back = k.decode_response(JOIN_GROUP_V9_RESPONSE_FRAME, 11, 9)
    assert header.correlation_id == 2 and back == msg9


def test_find_coordinator_response_v6(k):
    msg = k.FindCoordinatorResponse(coordinators=[k.Coordinator(key="test", node_id=1, host="localhost", port=9092,
                                                                error_message=None)])
    assert k.encode_response(msg, 6, 1) == FIND_COORDINATOR_V6_RESPONSE_FRAME
    assert k.decode_response(FIND_COORDINATOR_V6_RESPONSE_FRAME, 10, 6)[1] == msg


def test_unknown_tagged_fields_survive_a_round_trip(k):
    # HeartbeatRequest v4 with two unknown tags (1: 2 bytes, 5: 0 bytes) at the end.
    body = h("04677270", "00000001", "036d31", "00", "02", "01", "02", "abcd", "05", "00")
    msg = k.HeartbeatRequest.decode(body, 4)
    assert msg.unknown_tagged_fields == {1: b"\xab\xcd", 5: b""}
    assert msg.encode(4) == body


def test_api_versions_response_always_uses_response_header_v0():
    assert _schema.response_header_version(18, 3) == 0
    assert _schema.response_header_version(11, 6) == 1
    assert _schema.request_header_version(18, 3) == 2


def test_absent_fields_decode_to_their_defaults(k):
    # JoinGroupRequest v0 carries no rebalance timeout (default -1) and no instance id.
    msg = k.decode_request(JOIN_GROUP_V0_FRAME)[1]
    assert msg.rebalance_timeout_ms == -1 and msg.group_instance_id is None and msg.reason is None
    # JoinGroupResponse v0 has no throttle time and no skip_assignment.
    resp = k.decode_response(JOIN_GROUP_V0_RESPONSE_FRAME, 11, 0)[1]
    assert resp.throttle_time_ms == 0 and resp.skip_assignment is False and resp.protocol_type is None


def test_writing_rules_for_fields_a_version_lacks(k):
    # Non-ignorable field with a non-default value: refused.
    with pytest.raises(kwire.UnsupportedVersionError):
        k.JoinGroupRequest(group_instance_id="static-1").encode(4)
    with pytest.raises(kwire.UnsupportedVersionError):
        k.JoinGroupResponse(skip_assignment=True).encode(8)
    with pytest.raises(kwire.UnsupportedVersionError):
        k.FindCoordinatorRequest(coordinator_keys=["a"]).encode(3)
    with pytest.raises(kwire.UnsupportedVersionError):
        k.FindCoordinatorRequest(key="a").encode(4)
    with pytest.raises(kwire.UnsupportedVersionError):
        k.FindCoordinatorRequest(key_type=1).encode(0)
    # Ignorable fields are silently dropped, as Kafka's writers do.
    assert k.JoinGroupRequest(rebalance_timeout_ms=5, reason="why").encode(0) == k.JoinGroupRequest().encode(0)
    assert k.JoinGroupResponse(throttle_time_ms=9).encode(1) == k.JoinGroupResponse().encode(1)
    # Versions outside the valid range.
    for bad in (-1, 10, "1", 1.0, None, True):
        with pytest.raises(kwire.UnsupportedVersionError):
            k.JoinGroupRequest().encode(bad)
        with pytest.raises(kwire.UnsupportedVersionError):
            k.JoinGroupRequest.decode(b"", bad)


def test_strings_without_a_declared_default_default_to_empty_not_null(k):
    # Kafka's rule: a nullable string with no "default" starts as "", not null.
    assert k.Coordinator().error_message == ""
    assert k.JoinGroupRequest().group_instance_id is None   # declared "default": "null"


def test_header_objects_follow_the_same_rules(k):
    header = k.RequestHeader(request_api_key=12, request_api_version=4, correlation_id=7, client_id="c")
    assert k.RequestHeader.decode(header.encode(2), 2) == header
    assert k.RequestHeader.decode(header.encode(0), 0).client_id == ""   # absent -> default
    assert header.encode(0) == h("000c", "0004", "00000007")
