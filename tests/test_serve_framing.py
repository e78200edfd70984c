"""How a mock cluster's connection cuts its byte stream into frames: any chunking of the reads, frames bigger than
its read buffer (read whole into their own bytes within a reserve, else in chunks), a size prefix that reserves
nothing beyond that reserve, a bad size after good frames."""

import random
import struct
import tracemalloc

import pytest

from kwire import codec
from kwire.codec import ErrorCode as E
from kwire.testing import MockCluster
from kwire.testing import _connection as connection_module
from kwire.testing._connection import READ_BYTES, WHOLE_BYTES, WHOLE_RESERVE, Connection
from kwire.testing._server import Limits
from tests.test_mock_records import batch, fetch, produce
from tests.test_serve import Client


class _Transport:
    def __init__(self):
        self.written = []
        self.closed = self.paused = False

    def get_extra_info(self, name):
        return ("127.0.0.1", 1) if name == "peername" else None

    def set_write_buffer_limits(self, high):
        pass

    def get_write_buffer_size(self):
        return 0

    def write(self, data):
        self.written.append(bytes(data))

    def pause_reading(self):
        self.paused = True

    def resume_reading(self):
        self.paused = False

    def close(self):
        self.closed = True

    abort = close


class _Server:
    """Takes each frame as its request and answers it with its own size."""

    def __init__(self, **limits):
        self.limits = Limits(**limits)
        self.frames = []

    def accept(self, conn):
        return True

    def forget(self, conn):
        pass

    def request(self, conn, frame):
        self.frames.append(frame)
        conn.slot()(struct.pack(">i", len(frame)))


def _connection(**limits):
    server = _Server(**limits)
    conn = Connection(server, 0)
    conn.connection_made(_Transport())
    return server, conn


def _feed(conn, data, rng=None, most=None):
    """Hand ``data`` to the connection as a transport does, each read filling at most what ``get_buffer`` gave
    (and, with ``rng``, a random part of it)."""
    view = memoryview(data)
    while view:
        buf = memoryview(conn.get_buffer(-1))
        n = min(len(buf), len(view), most or len(view))
        if rng is not None:
            n = rng.randint(1, n)
        buf[:n] = view[:n]
        view = view[n:]
        conn.buffer_updated(n)


def _frame(size, fill):
    return struct.pack(">i", size) + bytes([fill]) * size


def test_frames_come_whole_and_in_order_whatever_the_reads():
    sizes = [0, 10, READ_BYTES - 4, READ_BYTES - 3, 3 * READ_BYTES, 1, 700_000, 5, 2 * READ_BYTES + 7]
    frames = [_frame(n, i) for i, n in enumerate(sizes)]
    stream = b"".join(frames)
    for seed in range(20):
        server, conn = _connection()
        _feed(conn, stream, random.Random(seed))
        assert server.frames == frames
        assert all(type(f) is bytes for f in server.frames)
        assert conn.buffered() == 0
    server, conn = _connection()
    _feed(conn, stream)
    assert server.frames == frames
    assert b"".join(conn.transport.written) == b"".join(struct.pack(">i", len(f)) for f in frames)


def test_a_declared_size_reserves_nothing_beyond_what_came():
    server, conn = _connection()
    sent = 200_000
    tracemalloc.start()
    try:
        _feed(conn, struct.pack(">i", 90 << 20) + b"\0" * sent, most=4096)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # What came, and one chunk of at most as much again: never the 90 MiB the prefix declared.
    assert peak < 3 * sent
    assert server.frames == [] and conn.buffered() == sent + 4


@pytest.mark.skipif(connection_module._blank is None, reason="no ctypes.pythonapi (not CPython): chunks only")
def test_a_big_frame_is_read_whole_within_the_reserve_and_in_chunks_beyond_it():
    """A frame too big for the read buffer and at most WHOLE_BYTES is read into its own bytes object, the rest
    of it in one read; the frames read so at once take at most WHOLE_RESERVE, the others go to chunks as their
    bytes come, and a connection that ends mid-frame gives its share back."""
    reserved = connection_module._reserved[0]
    size = WHOLE_BYTES - 4
    fits = (WHOLE_RESERVE - reserved) // WHOLE_BYTES
    head = struct.pack(">i", size) + b"\1" * 1000
    conns = [_connection() for _ in range(fits + 2)]
    for _server, conn in conns:
        _feed(conn, head)
    whole = [(server, conn) for server, conn in conns if conn.whole is not None]
    assert len(whole) == fits >= 1
    assert all(conn.parts is not None for _server, conn in conns if conn.whole is None)
    assert connection_module._reserved[0] == reserved + fits * WHOLE_BYTES
    server, conn = whole[0]
    rest = memoryview(conn.get_buffer(-1))
    assert len(rest) == WHOLE_BYTES - len(head)  # the rest of the frame, in one read
    rest[:] = b"\1" * len(rest)
    conn.buffer_updated(len(rest))
    assert server.frames == [struct.pack(">i", size) + b"\1" * size] and type(server.frames[0]) is bytes
    assert conn.buffered() == 0 and conn.whole is None
    # One more frame can now be read whole; ending the others mid-frame gives every byte of the reserve back.
    for _server, conn in conns[1:]:
        conn.connection_lost(None)
    assert connection_module._reserved[0] == reserved


def test_a_bad_size_after_good_frames_answers_them_then_closes():
    for bad in (-5, 1025):
        server, conn = _connection(max_frame_size=1024)
        good = [_frame(30, 1), _frame(1024, 2)]
        _feed(conn, b"".join(good) + struct.pack(">i", bad) + b"junk")
        assert server.frames == good
        assert conn.closed and conn.transport.closed
        assert len(conn.transport.written) == 1  # both answers, in one write


def test_a_produce_bigger_than_the_read_buffer_in_odd_slices_is_stored_as_sent():
    with MockCluster(topics={"t": 1}) as cluster:
        client = Client(cluster)
        data = batch(3000, value=b"v" * 300)
        assert len(data) > 50 * READ_BYTES
        req = codec.ProduceRequest(acks=-1, timeout_ms=1000, transactional_id=None, topic_data=[
            codec.TopicProduceData(name="t", partition_data=[codec.PartitionProduceData(index=0, records=data)])])
        frame = codec.encode_request(req, 9, correlation_id=7, client_id="t")
        small = codec.encode_request(codec.ApiVersionsRequest(), 3, correlation_id=8)
        stream = frame + small
        rng = random.Random(1)
        at = 0
        while at < len(stream):
            n = rng.choice((1, 3, 4, 5, 4093, 70_000))
            client.send_raw(stream[at:at + n])
            at += n
        header, answer = codec.decode_response(client.read_frame(), codec.ProduceRequest.api_key, 9)
        assert header.correlation_id == 7 and answer.responses[0].partition_responses[0].error_code == E.NONE
        header, _ = codec.decode_response(client.read_frame(), codec.ApiVersionsRequest.api_key, 3)
        assert header.correlation_id == 8
        assert produce(client, "t", 0, batch(2)).base_offset == 3000
        (part,) = fetch(client, cluster, "t", [(0, 0, 4 << 20)])
        stored = codec.decode_record_batches(part.records)
        assert [len(b.records) for b in stored] == [3000, 2]
        assert [r.value for r in stored[0].records] == [r.value for r in codec.RecordBatch.decode(data).records]


def _with_trailing_bytes(request, version, correlation_id, extra):
    frame = codec.encode_request(request, version, correlation_id=correlation_id, client_id="t") + extra
    return struct.pack(">i", len(frame) - 4) + frame[4:]


def test_bytes_after_a_request_body_are_ignored_as_kafka_ignores_them():
    # librdkafka's all-topics Metadata v12 (confluent-kafka's list_topics()) ends with three such bytes.
    with MockCluster(topics={"t": 2}) as cluster:
        client = Client(cluster)
        client.send_raw(_with_trailing_bytes(codec.MetadataRequest(topics=None, allow_auto_topic_creation=True), 12,
                                             5, b"\x01\x00\x00"))
        header, answer = codec.decode_response(client.read_frame(), codec.MetadataRequest.api_key, 12)
        assert header.correlation_id == 5 and [t.name for t in answer.topics] == ["t"]
        # A Produce with bytes after its body stores its batch once, as sent.
        req = codec.ProduceRequest(acks=-1, timeout_ms=1000, transactional_id=None, topic_data=[
            codec.TopicProduceData(name="t", partition_data=[codec.PartitionProduceData(index=1, records=batch(3))])])
        client.send_raw(_with_trailing_bytes(req, 9, 6, b"\x00" * 7))
        header, answer = codec.decode_response(client.read_frame(), codec.ProduceRequest.api_key, 9)
        assert header.correlation_id == 6 and answer.responses[0].partition_responses[0].error_code == E.NONE
        assert [r.value for r in cluster.records("t", 1)] == [r.value for r in codec.RecordBatch.decode(batch(3)).records]
        client.close()


class _SlowSocketTransport(_Transport):
    """A transport whose buffer the client drains only when told, with asyncio's flow-control rule: the protocol
    is paused once the buffer is above the high-water mark (never at it) and resumed at or below the low one."""

    def __init__(self, protocol):
        super().__init__()
        self.protocol = protocol
        self.size = 0
        self.high = self.low = 0
        self.protocol_paused = False

    def set_write_buffer_limits(self, high):
        self.high, self.low = high, high // 4

    def get_write_buffer_size(self):
        return self.size

    def write(self, data):
        super().write(data)
        self.size += len(data)
        if self.size > self.high and not self.protocol_paused:
            self.protocol_paused = True
            self.protocol.pause_writing()

    def take(self, n):
        self.size -= min(n, self.size)
        if self.protocol_paused and self.size <= self.low:
            self.protocol_paused = False
            self.protocol.resume_writing()


def test_a_write_buffer_exactly_at_its_bound_does_not_stall_the_connection():
    """The transport pauses above ``max_buffered``, not at it, and only its resume wakes a connection that
    stopped reading for its write buffer.  Answers of 4 bytes under a bound of 64 reach it exactly; a client
    that reads slowly must still get every answer."""
    frames = [_frame(3, i % 256) for i in range(2_000)]
    for take in (1, 3, 4, 5, 7, 16, 60):
        server = _Server(max_buffered=64, max_inflight=1_000)
        conn = Connection(server, 0)
        transport = _SlowSocketTransport(conn)
        conn.connection_made(transport)
        pending = memoryview(b"".join(frames))
        while len(server.frames) < len(frames):
            if pending and not transport.paused:
                buf = memoryview(conn.get_buffer(-1))
                n = min(len(buf), len(pending), 97)
                buf[:n] = pending[:n]
                pending = pending[n:]
                conn.buffer_updated(n)
            elif transport.size:
                transport.take(take)
            else:
                raise AssertionError(f"stalled after {len(server.frames)} frames (client takes {take} bytes a read)")
        assert conn.buffered() <= 64 + 4
