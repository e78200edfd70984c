"""The consumer embedded protocol: Subscription and Assignment, version-prefixed."""

import struct

import pytest

from kwire.errors import DecodeError, UnsupportedVersionError


def _sub(k):
    return k.Subscription(
        topics=["a", "b"], user_data=b"ud",
        owned_partitions=[k.SubscriptionTopicPartition(topic="a", partitions=[0, 2])],
        generation_id=7, rack_id="rack-1")


def test_subscription_fields_by_version(codec):
    sub = _sub(codec)
    v0 = codec.Subscription.decode(sub.encode(0))
    assert (v0.topics, v0.user_data, v0.owned_partitions, v0.generation_id, v0.rack_id) == (
        ["a", "b"], b"ud", [], -1, None)
    v1 = codec.Subscription.decode(sub.encode(1))
    assert v1.owned_partitions == sub.owned_partitions and v1.generation_id == -1
    v2 = codec.Subscription.decode(sub.encode(2))
    assert v2.generation_id == 7 and v2.rack_id is None
    assert codec.Subscription.decode(sub.encode(3)) == sub
    assert sub.encode()[:2] == b"\x00\x03"      # newest version by default


def test_assignment_round_trip(codec):
    a = codec.Assignment(assigned_partitions=[codec.AssignmentTopicPartition(topic="t", partitions=[3, 1])],
                         user_data=None)
    for v in range(4):
        assert codec.Assignment.decode(a.encode(v)) == a
    with pytest.raises(UnsupportedVersionError):
        a.encode(4)


def test_newer_version_decodes_with_newest_known_layout(codec):
    sub = _sub(codec)
    body = sub.encode(3)[2:] + b"\x00\x00\x00\x2a future fields"
    assert codec.Subscription.decode(struct.pack(">h", 9) + body) == sub
    a = codec.Assignment(assigned_partitions=[])
    assert codec.Assignment.decode(b"\x00\x05" + a.encode(3)[2:] + b"\x01\x02") == a


def test_known_version_with_trailing_bytes_is_refused(codec):
    with pytest.raises(DecodeError, match="trailing"):
        codec.Subscription.decode(_sub(codec).encode(3) + b"\x00")


def test_negative_or_missing_version(codec):
    with pytest.raises(DecodeError, match="negative version"):
        codec.Subscription.decode(b"\xff\xff")
    with pytest.raises(DecodeError, match="truncated"):
        codec.Assignment.decode(b"\x00")


def test_sticky_user_data_layouts(codec):
    prev = [codec.StickyTopicAssignment(topic="t", partitions=[0, 1])]
    v1 = codec.StickyAssignorUserData(previous_assignment=prev, generation=4)
    raw1 = v1.encode(1)
    assert raw1 == (b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00\x00\x00\x00\x01"
                    + b"\x00\x00\x00\x04")
    assert codec.StickyAssignorUserData.decode(raw1, 1) == v1
    assert codec.StickyAssignorUserData.decode(raw1[:-4], 0).generation == -1
    assert codec.CooperativeStickyUserData(generation=9).encode(0) == b"\x00\x00\x00\x09"
