"""Records through the mock cluster over real sockets: Produce, Fetch, ListOffsets, idempotent producers and the
storage caps, checked against what Kafka answers."""

import asyncio
import struct
import threading
import time

import pytest

from kwire import codec
from kwire.codec import ErrorCode as E
from kwire.codec import Header, Record, RecordBatch
from kwire.testing import MockCluster
from tests.test_serve import Client


def batch(n=2, *, first=0, ts=1_000, pid=-1, epoch=-1, seq=-1, value=b"v", compression=0):
    records = [Record(b"k%d" % (first + i), value + b"%d" % (first + i), [Header("h", b"x")] if i % 2 else (),
                      offset=i, timestamp=ts + i) for i in range(n)]
    return RecordBatch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       compression=compression).encode()


def produce(client, topic, partition, data, *, version=9, acks=-1, transactional_id=None, by_id=None):
    req = codec.ProduceRequest(acks=acks, timeout_ms=1000, transactional_id=transactional_id, topic_data=[
        codec.TopicProduceData(name=topic, topic_id=by_id or b"\0" * 16,
                               partition_data=[codec.PartitionProduceData(index=partition, records=data)])])
    return client.call(req, version).responses[0].partition_responses[0]


def fetch_request(cluster, topic, partitions, *, max_wait_ms=0, min_bytes=1, max_bytes=50 << 20):
    tid = cluster.server.topic_ids[topic]
    return codec.FetchRequest(max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes, topics=[
        codec.FetchTopic(topic=topic, topic_id=tid, partitions=[
            codec.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=m) for p, o, m in partitions])])


def fetch(client, cluster, topic, partitions, version=12, **kw):
    return client.call(fetch_request(cluster, topic, partitions, **kw), version).responses[0].partitions


def offsets_of(records_bytes):
    return [r.offset for b in codec.decode_record_batches(records_bytes) for r in b.records]


@pytest.fixture
def cluster():
    with MockCluster(topics={"t": 3}) as c:
        yield c


def test_produce_assigns_offsets_and_fetch_returns_the_batches_as_sent(cluster):
    client = Client(cluster)
    sent = [batch(3, first=0), batch(2, first=3, compression=1)]
    for version in (3, 8, 11, 13):
        for data in sent:
            by_id = cluster.server.topic_ids["t"] if version >= 13 else None
            part = produce(client, "" if by_id else "t", 1, data, version=version, by_id=by_id)
            assert part.error_code == E.NONE
    for version in (4, 11, 12, 13, 17, 18):
        (part,) = fetch(client, cluster, "t", [(1, 0, 1 << 20)], version=version)
        assert (part.error_code, part.high_watermark) == (E.NONE, 20)
        assert offsets_of(part.records) == list(range(20))
        got = [(r.key, r.value, r.headers, r.timestamp) for b in codec.decode_record_batches(part.records)
               for r in b.records]
        want = [(r.key, r.value, r.headers, r.timestamp) for d in sent for r in RecordBatch.decode(d).records]
        assert got == want * 4
    stored = cluster.records("t", 1)
    assert [r.offset for r in stored] == list(range(20)) and stored[1].headers == (Header("h", b"x"),)


def test_fetch_limits_give_at_least_the_first_batch_and_offset_out_of_range(cluster):
    client = Client(cluster)
    big = batch(1, value=b"x" * 5000)
    for _ in range(3):
        produce(client, "t", 0, big)
        produce(client, "t", 2, big)
    size = len(big)
    # The first batch comes whole even over both limits; the next partition then gets nothing over its limit.
    p0, p2 = fetch(client, cluster, "t", [(0, 0, 10), (2, 0, 10)], max_bytes=10)
    assert offsets_of(p0.records) == [0] and p2.records == b""
    # partition_max_bytes bounds each partition, max_bytes the response.
    p0, p2 = fetch(client, cluster, "t", [(0, 0, 2 * size), (2, 0, 3 * size)], max_bytes=3 * size)
    assert (offsets_of(p0.records), offsets_of(p2.records)) == ([0, 1], [0])
    # From the middle of the log, at its end, and past it.
    (p,) = fetch(client, cluster, "t", [(0, 2, 1 << 20)])
    assert offsets_of(p.records) == [2]
    (p,) = fetch(client, cluster, "t", [(0, 3, 1 << 20)])
    assert (p.error_code, p.records, p.high_watermark, p.log_start_offset) == (E.NONE, b"", 3, 0)
    (p,) = fetch(client, cluster, "t", [(0, 4, 1 << 20)])
    assert p.error_code == E.OFFSET_OUT_OF_RANGE


def test_a_long_poll_is_woken_by_a_produce_and_ends_at_max_wait(cluster):
    client, producer = Client(cluster), Client(cluster)
    started = time.monotonic()
    (p,) = fetch(client, cluster, "t", [(0, 0, 1 << 20)], max_wait_ms=200)
    assert p.records == b"" and 0.15 < time.monotonic() - started < 5
    threading.Timer(0.2, lambda: produce(producer, "t", 0, batch(1))).start()
    started = time.monotonic()
    (p,) = fetch(client, cluster, "t", [(0, 0, 1 << 20)], max_wait_ms=10_000)
    assert offsets_of(p.records) == [0] and time.monotonic() - started < 5


def test_list_offsets_earliest_latest_by_timestamp_and_max_timestamp(cluster):
    client = Client(cluster)
    produce(client, "t", 0, batch(3, ts=1_000))   # offsets 0-2, timestamps 1000-1002
    produce(client, "t", 0, batch(2, ts=5_000))   # offsets 3-4, 5000-5001
    produce(client, "t", 0, batch(2, ts=2_000))   # offsets 5-6, 2000-2001

    def lookup(target, version=7):
        req = codec.ListOffsetsRequest(replica_id=-1, topics=[codec.ListOffsetsTopic(name="t", partitions=[
            codec.ListOffsetsPartition(partition_index=0, timestamp=target)])])
        p = client.call(req, version).topics[0].partitions[0]
        return p.error_code, p.timestamp, p.offset

    assert lookup(-2) == (E.NONE, -1, 0)
    assert lookup(-1) == (E.NONE, -1, 7)
    assert lookup(1_001) == (E.NONE, 1_001, 1)
    assert lookup(1_500) == (E.NONE, 5_000, 3)   # the first batch whose max timestamp reaches it
    assert lookup(9_999) == (E.NONE, -1, -1)
    assert lookup(-3) == (E.NONE, 5_001, 4)      # the record with the greatest timestamp


def test_idempotent_producer_duplicates_are_acknowledged_once_and_gaps_refused(cluster):
    client = Client(cluster)
    init = client.call(codec.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4)
    assert init.error_code == E.NONE and init.producer_id >= 0 and init.producer_epoch == 0
    pid = init.producer_id
    first = produce(client, "t", 0, batch(2, pid=pid, epoch=0, seq=0))
    second = produce(client, "t", 0, batch(3, pid=pid, epoch=0, seq=2))
    assert (first.base_offset, second.base_offset) == (0, 2)
    # A retry of a batch already stored: its first offset again, nothing stored twice.
    again = produce(client, "t", 0, batch(2, pid=pid, epoch=0, seq=0))
    assert (again.error_code, again.base_offset) == (E.NONE, 0)
    assert len(cluster.records("t", 0)) == 5
    gap = produce(client, "t", 0, batch(1, pid=pid, epoch=0, seq=9), version=8)
    assert gap.error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER and "out of order" in gap.error_message
    # A new epoch starts at 0; then the old epoch is fenced.
    assert produce(client, "t", 0, batch(1, pid=pid, epoch=1, seq=3)).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(client, "t", 0, batch(1, pid=pid, epoch=1, seq=0)).error_code == E.NONE
    assert produce(client, "t", 0, batch(1, pid=pid, epoch=0, seq=5)).error_code == E.INVALID_PRODUCER_EPOCH
    # Another partition keeps its own sequence.
    assert produce(client, "t", 1, batch(1, pid=pid, epoch=1, seq=0)).error_code == E.NONE


def test_bad_batches_and_unsupported_produce_get_kafkas_errors(cluster):
    client = Client(cluster)
    good = batch(2)
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    assert produce(client, "t", 0, bytes(corrupt)).error_code == E.CORRUPT_MESSAGE
    assert produce(client, "t", 0, good + good).error_code == E.INVALID_RECORD
    assert produce(client, "t", 0, None).error_code == E.INVALID_RECORD
    assert produce(client, "t", 0, batch(1, compression=4), version=6).error_code == E.UNSUPPORTED_COMPRESSION_TYPE
    assert produce(client, "t", 0, good, transactional_id="tx").error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert produce(client, "t", 9, good).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(client, "t", 0, good, acks=2).error_code == E.INVALID_REQUIRED_ACKS
    init = client.call(codec.InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60_000), 4)
    assert init.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert cluster.records("t", 0) == []


def test_acks_zero_gets_no_answer_and_an_error_closes_the_connection(cluster):
    client = Client(cluster)
    client.correlation += 1
    req = codec.ProduceRequest(acks=0, timeout_ms=1000, topic_data=[codec.TopicProduceData(
        name="t", partition_data=[codec.PartitionProduceData(index=0, records=batch(1))])])
    client.send_raw(codec.encode_request(req, 9, correlation_id=client.correlation, client_id="t"))
    # The next answer on the connection is the Metadata's, not the Produce's.
    assert client.call(codec.MetadataRequest(topics=None), 9).topics
    assert len(cluster.records("t", 0)) == 1
    bad = codec.ProduceRequest(acks=0, timeout_ms=1000, topic_data=[codec.TopicProduceData(
        name="t", partition_data=[codec.PartitionProduceData(index=7, records=batch(1))])])
    client.send_raw(codec.encode_request(bad, 9, correlation_id=99, client_id="t"))
    assert client.is_closed()


def test_retention_bytes_moves_the_log_start_and_the_total_cap_refuses():
    one = len(batch(1))
    with MockCluster(topics={"t": 2}, config={"retention.bytes": 2 * one,
                                              "kwire.storage.total.bytes": 3 * one}) as cluster:
        client = Client(cluster)
        for _ in range(4):
            assert produce(client, "t", 0, batch(1)).error_code == E.NONE
        (p,) = fetch(client, cluster, "t", [(0, 0, 1 << 20)])
        assert (p.error_code, p.log_start_offset, p.high_watermark) == (E.OFFSET_OUT_OF_RANGE, 2, 4)
        assert [r.offset for r in cluster.records("t", 0)] == [2, 3]
        assert produce(client, "t", 1, batch(1)).error_code == E.NONE
        full = produce(client, "t", 1, batch(1), version=8)
        assert full.error_code == E.POLICY_VIOLATION and "kwire.storage.total.bytes" in full.error_message


def test_a_batch_that_is_most_of_its_frame_is_kept_without_a_copy_and_read_back_with_its_offsets(cluster):
    client = Client(cluster)
    big = batch(3000, value=b"v" * 100)
    for _ in range(2):
        assert produce(client, "t", 0, big).error_code == E.NONE
    # Two partitions in one Produce: neither batch is most of the frame, so each is copied out of it.
    req = codec.ProduceRequest(acks=-1, timeout_ms=1000, transactional_id=None, topic_data=[
        codec.TopicProduceData(name="t", partition_data=[codec.PartitionProduceData(index=0, records=big),
                                                         codec.PartitionProduceData(index=1, records=big)])])
    assert [p.base_offset for p in client.call(req, 9).responses[0].partition_responses] == [6000, 0]
    kept = cluster.server.store.logs[("t", 0)].batches
    assert [type(b) for b in kept] == [memoryview, memoryview, bytes]
    for view in kept[:2]:
        # The frame a view holds is at most 8/7 of the batch the log counts.
        assert view.readonly and isinstance(view.obj, bytes) and len(view.obj) * 7 <= len(view) * 8
    assert type(cluster.server.store.logs[("t", 1)].batches[0]) is bytes
    # Stored as sent (base offset 0); read with the offsets the log assigned.
    assert all(bytes(b[:8]) == bytes(8) for b in kept)
    (part,) = fetch(client, cluster, "t", [(0, 3000, 50 << 20)])
    assert offsets_of(part.records) == list(range(3000, 9000))
    assert [r.offset for r in cluster.records("t", 0)] == list(range(9000))


def test_helpers_produce_records_and_committed_without_a_client():
    with MockCluster(topics={"t": 4}) as cluster:
        assert cluster.produce("t", b"v", key=b"k", partition=2, headers={"h": b"x"}, timestamp=7) == (2, 0)
        (rec,) = cluster.records("t", 2)
        assert (rec.offset, rec.key, rec.value, rec.headers, rec.timestamp) == (0, b"k", b"v", (Header("h", b"x"),), 7)
        # Keyed records go where Java's default partitioner puts them (murmur2 of the key).
        assert {cluster.produce("t", b"v", key=b"same")[0] for _ in range(3)} == {cluster.produce("t", None, key=b"same")[0]}
        cluster.create_topic("new", 2)
        assert cluster.produce("new", None)[1] == 0 and cluster.records("new", 0)[0].value is None
        assert cluster.committed("g") == {}


def test_async_cluster_serves_records():
    async def run():
        async with MockCluster(topics={"t": 1}) as cluster:
            assert cluster.produce("t", b"a") == (0, 0)
            assert [r.value for r in cluster.records("t", 0)] == [b"a"]
    asyncio.run(run())


def test_mutated_produce_and_fetch_requests_are_answered_or_refused_and_the_server_goes_on(caplog):
    """Random byte flips in Produce and Fetch frames: each is answered or its connection closed, nothing the
    server logs as its own error, and a fresh client is served afterwards with every stored record intact."""
    import random
    import socket

    rng = random.Random(7)
    with MockCluster(topics={"t": 2}) as cluster:
        frames = []
        for version in (3, 9, 13):
            req = codec.ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[codec.TopicProduceData(
                name="t", topic_id=cluster.server.topic_ids["t"],
                partition_data=[codec.PartitionProduceData(index=0, records=batch(3, compression=version % 4))])])
            frames.append(codec.encode_request(req, version, correlation_id=1, client_id="m"))
        for version in (4, 12, 17):
            frames.append(codec.encode_request(fetch_request(cluster, "t", [(0, 0, 1 << 20)]), version,
                                               correlation_id=1, client_id="m"))
        for i in range(300):
            frame = bytearray(rng.choice(frames))
            for _ in range(rng.randint(1, 4)):
                frame[rng.randrange(4, len(frame))] = rng.randrange(256)
            with socket.create_connection((cluster.host, cluster.port), timeout=5) as sock:
                sock.sendall(bytes(frame))
                sock.shutdown(socket.SHUT_WR)
                try:
                    while sock.recv(65536):
                        pass
                except (ConnectionResetError, TimeoutError, socket.timeout):
                    pass
        assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
        client = Client(cluster)
        before = cluster.records("t", 0)
        assert produce(client, "t", 0, batch(1)).base_offset == (before[-1].offset + 1 if before else 0)
        stored = RecordBatch.decode(batch(3)).records
        assert all((r.key, r.value) in {(s.key, s.value) for s in stored} | {(b"k0", b"v0")} for r in before)


def _legacy_message_set(value=b"v"):
    # One magic-1 message (LegacyRecord): offset, size, then crc, magic 1, attributes, timestamp, key, value.
    import zlib

    body = struct.pack(">bbq", 1, 0, 1_000) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qi", 0, 4 + len(body)) + struct.pack(">I", zlib.crc32(body)) + body


def _legacy_produce(version, acks, correlation_id):
    # ProduceRequest v0-2: request header v1, then acks, timeout_ms, [topic, [partition, message set]] (v3
    # without its transactional id in front).
    records = _legacy_message_set()
    body = (struct.pack(">hi", acks, 1000) + struct.pack(">ih", 1, 1) + b"t" + struct.pack(">iii", 1, 0, len(records))
            + records)
    head = struct.pack(">hhih", codec.ApiKey.PRODUCE, version, correlation_id, 1) + b"c"
    return struct.pack(">i", len(head) + len(body)) + head + body


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_below_v3_is_answered_unsupported_version_in_its_own_layout(cluster, version):
    client = Client(cluster)
    client.send_raw(_legacy_produce(version, 1, 41))
    frame = client.read_frame()
    # ProduceResponse v0: correlation id, [topic, [partition, error code, base offset]]; v1 adds the throttle
    # time after the topics, v2 the log append time after the base offset.
    expected = struct.pack(">ii", 41, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">iihq", 1, 0, E.UNSUPPORTED_VERSION, -1)
    expected += struct.pack(">q", -1) if version >= 2 else b""
    expected += struct.pack(">i", 0) if version >= 1 else b""
    assert frame == struct.pack(">i", len(expected)) + expected
    # The connection goes on, and nothing was stored.
    assert produce(client, "t", 0, batch(1), version=3).base_offset == 0
    assert [r.offset for r in cluster.records("t", 0)] == [0]
    client.send_raw(_legacy_produce(version, 0, 42))  # acks 0: no answer to carry the error, so the close does
    assert client.is_closed()


def test_a_legacy_message_set_in_produce_v3_and_later_is_invalid_record(cluster):
    client = Client(cluster)
    for version in (3, 9):
        assert produce(client, "t", 0, _legacy_message_set(), version=version).error_code == E.INVALID_RECORD
    assert cluster.records("t", 0) == []
