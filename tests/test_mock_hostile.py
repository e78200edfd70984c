"""Requests that could make the mock cluster do work or hold memory out of proportion to their size: each is
answered at once, within the server's own bounds, as Kafka bounds it."""

import struct
import threading
import time

import pytest

from kwire import codec
from kwire.codec import ErrorCode as E
from kwire.codec import Record, RecordBatch, crc32c
from kwire.errors import ArgumentValueError
from kwire.testing import MockCluster
from kwire.testing._log import LogStore
# ``cluster`` is the fixture (a MockCluster with topic "t") that the tests below take by name.
from tests.test_mock_records import batch, cluster, fetch, fetch_request, offsets_of, produce  # noqa: F401
from tests.test_serve import Client


def create(client, name, n):
    req = codec.CreateTopicsRequest(topics=[codec.CreatableTopic(name=name, num_partitions=n, replication_factor=1)])
    return client.call(req, 5).topics[0]


def test_topics_and_partitions_beyond_the_cluster_cap_are_policy_violation_at_once():
    with pytest.raises(ArgumentValueError, match="kwire.max.partitions"):
        MockCluster(topics={"x": 11}, config={"kwire.max.partitions": 10})
    with MockCluster(topics={"a": 4}, config={"kwire.max.partitions": 10}) as cluster:
        client = Client(cluster)
        started = time.monotonic()
        huge = create(client, "huge", 2**31 - 1)
        assert (huge.error_code, huge.num_partitions) == (E.POLICY_VIOLATION, -1)
        assert "kwire.max.partitions" in huge.error_message and time.monotonic() - started < 5
        assert create(client, "b", 7).error_code == E.POLICY_VIOLATION
        assert create(client, "b", 6).error_code == E.NONE
        grow = client.call(codec.CreatePartitionsRequest(topics=[
            codec.CreatePartitionsTopic(name="a", count=2**31 - 1, assignments=None)]), 3)
        assert grow.results[0].error_code == E.POLICY_VIOLATION
        # Metadata's auto-creation beyond the cap leaves the topic unknown, as a client then retries it.
        (t,) = client.call(codec.MetadataRequest(topics=[codec.MetadataRequestTopic(name="c")],
                                                 allow_auto_topic_creation=True), 9).topics
        assert t.error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert cluster.server.topics.counts == {"a": 4, "b": 6}
        with pytest.raises(ArgumentValueError, match="kwire.max.partitions"):
            cluster.create_topic("d", 1)


def test_a_partition_named_many_times_in_one_fetch_is_read_once(cluster):
    client = Client(cluster)
    for i in range(3):
        produce(client, "t", 0, batch(2, first=2 * i, value=b"x" * 1000))
    stored = cluster.server.store.logs[("t", 0)].size
    req = fetch_request(cluster, "t", [(0, 0, 1 << 20)] * 40 + [(1, 0, 1 << 20)] + [(0, 2, 1 << 20)],
                        max_bytes=2**31 - 1)
    parts = client.call(req, 12).responses[0].partitions
    # FetchRequest.fetchData is a map: partition 0 once, where it was first named, from the offset last asked.
    assert [p.partition_index for p in parts] == [0, 1]
    assert offsets_of(parts[0].records) == [2, 3, 4, 5] and len(parts[0].records) < stored


def test_fetch_max_bytes_caps_an_answer_whatever_max_bytes_asks():
    with MockCluster(topics={"t": 2}, config={"fetch.max.bytes": 1024}) as cluster:
        client = Client(cluster)
        big = batch(1, value=b"x" * 3000)
        for p in (0, 1):
            produce(client, "t", p, big)
            produce(client, "t", p, big)
        parts = fetch(client, cluster, "t", [(0, 0, 1 << 20), (1, 0, 1 << 20)], max_bytes=2**31 - 1)
        # The first batch comes whole (message.max.bytes bounds it), then nothing beyond fetch.max.bytes.
        assert [offsets_of(p.records) for p in parts] == [[0], []]


def test_one_connection_parks_one_fetch_at_a_time_and_answers_each_in_order(cluster):
    client = Client(cluster)
    wait_ms = 300
    frames = b"".join(codec.encode_request(fetch_request(cluster, "t", [(0, 0, 1 << 20)], max_wait_ms=wait_ms,
                                                         min_bytes=1 << 30), 12, correlation_id=i, client_id="t")
                      for i in range(1, 4))
    started = time.monotonic()
    client.send_raw(frames)
    time.sleep(0.1)
    # The first is parked; the two behind it are not read into long polls of their own.
    assert len(cluster.server.store.watchers.get(("t", 0), ())) == 1
    for i in range(1, 4):
        header, response = codec.decode_response(client.read_frame(), codec.FetchRequest.api_key, 12)
        assert header.correlation_id == i and response.responses[0].partitions[0].records == b""
    assert time.monotonic() - started >= 3 * wait_ms / 1000 * 0.95
    assert not cluster.server.store.watchers


def test_a_long_poll_on_a_deleted_topic_ends_at_once(cluster):
    client, admin = Client(cluster), Client(cluster)
    threading.Timer(0.2, lambda: admin.call(codec.DeleteTopicsRequest(topic_names=["t"], timeout_ms=1000),
                                            5)).start()
    started = time.monotonic()
    (p,) = fetch(client, cluster, "t", [(0, 0, 1 << 20)], max_wait_ms=20_000, min_bytes=1)
    assert p.error_code == E.UNKNOWN_TOPIC_OR_PARTITION and time.monotonic() - started < 10


def _with_crc(data):
    data = bytearray(data)
    data[17:21] = struct.pack(">I", crc32c(bytes(data[21:])))
    return bytes(data)


def test_a_batch_whose_records_do_not_read_is_refused_and_nothing_is_stored(cluster):
    client = Client(cluster)
    good = RecordBatch([Record(b"k", b"v" * 50)]).encode()
    # The record's attributes become a varint of six bytes: header and CRC hold, the record does not.
    bad_varint = _with_crc(good[:62] + b"\xff" * 6 + good[68:])
    gzip = bytearray(RecordBatch([Record(b"k", b"v" * 50)], compression="gzip").encode())
    gzip[70:80] = b"\x00" * 10  # inside the deflate stream
    for data in (bad_varint, _with_crc(bytes(gzip))):
        part = produce(client, "t", 0, data)
        assert part.error_code == E.CORRUPT_MESSAGE and "cannot be read" in part.error_message
    assert produce(client, "t", 0, good).error_code == E.NONE
    assert [r.value for r in cluster.records("t", 0)] == [b"v" * 50]


def test_list_offsets_naming_a_partition_twice_is_invalid_request_for_it(cluster):
    client = Client(cluster)
    produce(client, "t", 0, batch(2))
    req = codec.ListOffsetsRequest(replica_id=-1, topics=[codec.ListOffsetsTopic(name="t", partitions=[
        codec.ListOffsetsPartition(partition_index=p, timestamp=-3) for p in (0, 1, 0)])])
    parts = client.call(req, 7).topics[0].partitions
    assert [(p.partition_index, p.error_code) for p in parts] == [(0, E.INVALID_REQUEST), (1, E.NONE),
                                                                   (0, E.INVALID_REQUEST)]


def test_bytes_from_counts_what_is_held_from_an_offset_through_retention():
    store = LogStore(retention_bytes=3000, total_bytes=1 << 30, max_batch_bytes=1 << 20)
    sizes = []
    for i in range(20):
        data = batch(1 + i % 3, value=b"v" * (100 * (i % 5)))
        info = codec.read_batch_infos(data)[0]
        store.append("t", 0, data, info, 0)
        sizes.append((store.logs[("t", 0)].end, len(data)))
    log = store.logs[("t", 0)]
    assert log.log_start > 0  # retention dropped the first batches
    for offset in range(-1, log.end + 2):
        held = sum(len(b) for b, last in zip(log.batches, log.lasts) if last >= offset)
        assert log.bytes_from(offset) == held, offset
