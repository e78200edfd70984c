"""The batch decoder on the consumer protocol's (KIP-848) traffic: the columns of ConsumerGroupHeartbeat and
ConsumerGroupDescribe rows against the messages that made them, both twins alike on damaged frames, and claimed
lengths that the frame cannot hold."""

import random
import struct
import tracemalloc

import pytest

pa = pytest.importorskip("pyarrow")

import kwire  # noqa: E402
from kwire import _impl  # noqa: E402
from kwire.assignors._server_common import kafka_uuid_text  # noqa: E402
from kwire.codec import ApiKey, message_class  # noqa: E402
from kwire.pipeline._decode import decode_capture, decode_table  # noqa: E402
from kwire.pipeline._capture import read_capture  # noqa: E402

from tests._twins import IMPLS  # noqa: E402
from tests.consumer_captures import consumer_capture, consumer_group_frames, write_capture  # noqa: E402

HEARTBEAT, DESCRIBE = int(ApiKey.CONSUMER_GROUP_HEARTBEAT), int(ApiKey.CONSUMER_GROUP_DESCRIBE)
needs_compiled = pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="compiled decoder not built")


def _body(frame, direction, version, key):
    """The decoded message of a frame, read past its header with the codec."""
    c = kwire.codec
    if direction == 0:
        _header, body = c.split_request(frame)
        return message_class(key, "request").decode(body, version)
    return c.decode_response(frame, key, version)[1]


def _topic_partitions(tps):
    return None if tps is None else [{"topic_id": kafka_uuid_text(tp.topic_id), "partitions": list(tp.partitions)}
                                     for tp in tps]


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    return consumer_capture(str(tmp_path_factory.mktemp("c848") / "c.parquet"), groups=2, seconds=20)


@pytest.mark.parametrize("impl", IMPLS)
def test_heartbeat_rows_hold_their_messages_fields(capture, impl):
    table = read_capture(capture)
    rows = decode_capture(capture, impl).to_pylist()
    frames = dict(zip(table.column("seq").to_pylist(), table.column("frame").to_pylist()))
    requests = {}
    seen = {0: 0, 1: 0}
    for r in rows:
        assert r["decode_error"] is None, r
        if r["api_key"] != HEARTBEAT:
            continue
        seen[r["direction"]] += 1
        msg = _body(frames[r["seq"]], r["direction"], r["api_version"], HEARTBEAT)
        if r["direction"] == 0:
            requests[r["seq"]] = msg
            assert (r["group_id"], r["member_id"], r["group_instance_id"], r["generation_id"]) == (
                msg.group_id, msg.member_id, msg.instance_id, msg.member_epoch)
            assert (r["rebalance_timeout_ms"], r["topics"], r["subscribed_regex"], r["protocol_name"]) == (
                msg.rebalance_timeout_ms, msg.subscribed_topic_names, msg.subscribed_topic_regex, msg.server_assignor)
            assert r["topic_partitions"] == _topic_partitions(msg.topic_partitions)
            assert r["heartbeat_interval_ms"] is None and r["error_code"] is None
        else:
            request = requests[r["request_seq"]]
            assert (r["group_id"], r["group_instance_id"]) == (request.group_id, request.instance_id)
            assert r["member_id"] == (msg.member_id if msg.member_id is not None else request.member_id)
            assert (r["generation_id"], r["error_code"], r["heartbeat_interval_ms"]) == (
                msg.member_epoch, msg.error_code, msg.heartbeat_interval_ms)
            assert r["topic_partitions"] == (None if msg.assignment is None
                                             else _topic_partitions(msg.assignment.topic_partitions))
            assert r["topics"] is None and r["rebalance_timeout_ms"] is None
    assert seen[0] == seen[1] > 50
    # The traffic has every kind of row the events stage tells apart.
    heartbeats = [r for r in rows if r["api_key"] == HEARTBEAT]
    assert {r["generation_id"] for r in heartbeats if r["direction"] == 0} >= {0, -1}
    assert any(r["direction"] == 1 and r["topic_partitions"] is not None for r in heartbeats)
    assert any(r["direction"] == 0 and r["topic_partitions"] and r["generation_id"] > 0 for r in heartbeats)
    assert any(r["direction"] == 0 and r["topic_partitions"] is None and r["topics"] is None for r in heartbeats)


@pytest.mark.parametrize("impl", IMPLS)
def test_describe_and_metadata_rows(capture, impl):
    rows = decode_capture(capture, impl).to_pylist()
    described = [r for r in rows if r["api_key"] == DESCRIBE and r["direction"] == 1]
    assert len(described) == 4
    for r in described:
        (group,) = r["described"]
        assert r["group_id"] is None and group["group_id"] in ("group-0", "group-1")
        assert group["error_code"] == 0 and group["group_state"] == "Stable" and group["assignor_name"] == "uniform"
        assert group["group_epoch"] == group["assignment_epoch"] > 0
        assert len(group["members"]) in (3, 4)
        for m in group["members"]:
            assert m["member_type"] == 1 and m["member_epoch"] == group["group_epoch"]  # v1: a consumer member
            assert {(tp["topic_id"], p) for tp in m["assigned"] for p in tp["partitions"]} == \
                {(tp["topic_id"], p) for tp in m["target"] for p in tp["partitions"]}
    owned = sorted(p for m in described[-1]["described"][0]["members"] for tp in m["assigned"]
                   for p in tp["partitions"])
    assert owned == sorted(list(range(6)) + list(range(2)))
    metadata = [r for r in rows if r["api_key"] == 3 and r["direction"] == 1]
    for r in metadata:
        # consumer_group_loop.topic_ids: the sorted names' 1-based index, big-endian in 16 bytes.
        assert r["topics"] == ["audit", "orders"]
        assert r["topic_ids"] == [kafka_uuid_text((i + 1).to_bytes(16, "big")) for i in range(2)]


def test_uuid_text_is_kafkas():
    from kwire.codec._batch_common import uuid_text

    rnd = random.Random(3)
    for raw in [bytes(16), b"\xff" * 16] + [rnd.randbytes(16) for _ in range(200)]:
        text = uuid_text(raw)
        assert len(text) == 22 and text == kafka_uuid_text(raw)
    # Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID (0..01) as Kafka prints them.
    assert uuid_text(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_text((1).to_bytes(16, "big")) == "AAAAAAAAAAAAAAAAAAAAAQ"


def _exchanges():
    """A consumer group's frames of every kind, as ``(conn, direction, frame)``: joins, assignments, acks,
    keep-alives, a leave, Describe and Metadata."""
    frames = []
    consumer_group_frames(frames, "g", {"t": 4}, members=2, seconds=10)
    picked, kinds = [], set()
    for ts, conn, direction, frame in sorted(frames, key=lambda f: f[0]):
        kind = (direction, frame[4:6] if direction == 0 else None, len(frame))
        if kind not in kinds or direction == 1:
            kinds.add(kind)
            picked.append((conn, direction, frame))
    return picked


@needs_compiled
@pytest.mark.parametrize("seed", range(2))
def test_damaged_consumer_frames_are_bad_rows_alike_in_both_twins(tmp_path, seed):
    # Every exchange again with its request or its response cut short or with a byte flipped: the fast
    # paths must decline what the codec rejects, and give exactly the codec's row for what it reads.
    rnd = random.Random(seed)
    rows = []
    for conn, direction, frame in _exchanges():
        rows.append((conn, direction, frame))
        for _ in range(3):
            k = rnd.randrange(4, len(frame))
            flipped = frame[:k] + bytes([frame[k] ^ (1 << rnd.randrange(8))]) + frame[k + 1:]
            cut = frame[:rnd.randrange(len(frame))]
            cut = struct.pack(">i", max(len(cut) - 4, 0)) + cut[4:] if len(cut) >= 12 else cut
            rows += [(conn + 100, direction, flipped), (conn + 200, direction, cut)]
    table = read_capture(write_capture(str(tmp_path / "c.parquet"),
                                       [(1000 * i, conn, d, f) for i, (conn, d, f) in enumerate(rows)]))
    pure = decode_table(table, "python")
    errors = [e for e in pure.column("decode_error").to_pylist() if e]
    assert len(errors) > len(rows) // 4
    assert all(e.split(":")[0] in ("DecodeError", "UnsupportedVersionError", "unpaired response") for e in errors), \
        set(e.split(":")[0] for e in errors)
    for batch_rows in (65536, 5):
        compiled = decode_table(table, "cython", batch_rows=batch_rows)
        for name in compiled.schema.names:
            assert compiled.column(name).to_pylist() == pure.column(name).to_pylist(), (batch_rows, name)


def _claiming(frame, at, count):
    """``frame`` with the one-byte compact count at ``at`` replaced by a varint claiming ``count`` elements."""
    varint, n = bytearray(), count + 1
    while n >= 0x80:
        varint.append(n & 0x7F | 0x80)
        n >>= 7
    varint.append(n)
    body = frame[4:at] + bytes(varint) + frame[at + 1:]
    return struct.pack(">i", len(body)) + body


@pytest.mark.parametrize("impl", IMPLS)
def test_a_count_past_the_frame_is_a_decode_error_without_allocating(tmp_path, impl):
    c = kwire.codec
    tp = [c.ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=bytes(16), partitions=[1])]
    request = c.encode_request(c.ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=3,
                                                              topic_partitions=tp), 1, correlation_id=1, client_id="c")
    response = c.encode_response(c.ConsumerGroupHeartbeatResponse(
        member_id="m", member_epoch=3, heartbeat_interval_ms=5, assignment=c.ConsumerGroupHeartbeatAssignment(
            topic_partitions=[c.ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=bytes(16), partitions=[1])])),
        1, correlation_id=1)
    # The TopicPartitions count sits 24 bytes before the end of the request (16-byte id, partitions, tags);
    # the response's Partitions count 8 bytes before its end (partition, three tag sections).
    assert request[-24] == 2 and response[-8] == 2
    frames = []
    for count in (2**31 - 2, 2**20, 200):
        frames += [(1, 0, _claiming(request, len(request) - 24, count)),
                   (1, 0, request), (1, 1, _claiming(response, len(response) - 8, count))]
    table = read_capture(write_capture(str(tmp_path / "c.parquet"),
                                       [(1000 * i, conn, d, f) for i, (conn, d, f) in enumerate(frames)]))
    tracemalloc.start()
    try:
        out = decode_table(table, impl)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024
    errors = out.column("decode_error").to_pylist()
    assert errors[1::3] == [None] * 3
    for e in errors[0::3] + errors[2::3]:
        assert e.startswith("DecodeError") and "cannot fit" in e, e
