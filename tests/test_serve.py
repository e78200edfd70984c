"""The mock cluster over real sockets: ``kwire serve`` as a process and ``kwire.testing.MockCluster``.

Everything listens on 127.0.0.1; every process is bounded in time and stopped by pid.
"""

import asyncio
import os
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest

from kwire import codec
from kwire.codec import ErrorCode as E
from kwire.testing import MockCluster
from tests.processes import Lines, stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 10


class Client:
    """A blocking client on one socket: send a request, read its answer.  Every read is bounded by the
    socket's timeout and reads exactly the bytes a frame has."""

    def __init__(self, cluster=None, port=None):
        address = (cluster.host, cluster.port) if cluster is not None else ("127.0.0.1", port)
        self.sock = socket.create_connection(address, timeout=TIMEOUT_S)
        self.correlation = 0

    def send_raw(self, data):
        self.sock.sendall(data)

    def read_frame(self):
        head = self._exactly(4)
        (size,) = struct.unpack(">i", head)
        return head + self._exactly(size)

    def _exactly(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the server")
            out += chunk
        return out

    def call(self, request, version):
        self.correlation += 1
        self.send_raw(codec.encode_request(request, version, correlation_id=self.correlation, client_id="t"))
        header, response = codec.decode_response(self.read_frame(), request.api_key, version)
        assert header.correlation_id == self.correlation
        return response

    def is_closed(self):
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()


@pytest.fixture
def cluster():
    with MockCluster(topics={"orders": 12, "audit": 2}) as c:
        yield c


def test_consumer_protocol_apis_leave_api_versions_when_the_protocol_is_off():
    with MockCluster(topics={"orders": 1}, config={"group.coordinator.rebalance.protocols": "classic"}) as c:
        keys = {k.api_key for k in Client(c).call(codec.ApiVersionsRequest(), 3).api_keys}
    assert codec.ApiKey.JOIN_GROUP in keys and codec.ApiKey.CONSUMER_GROUP_HEARTBEAT not in keys
    assert codec.ApiKey.CONSUMER_GROUP_DESCRIBE not in keys


def test_api_versions_and_metadata_at_every_version(cluster):
    client = Client(cluster)
    for version in range(codec.ApiVersionsRequest.min_version, codec.ApiVersionsRequest.max_version + 1):
        keys = {k.api_key: (k.min_version, k.max_version) for k in client.call(codec.ApiVersionsRequest(), version).api_keys}
        assert keys[11] == (0, 9) and keys[1] == (4, 18)
        # KIP-848's apis, which librdkafka's group.protocol=consumer needs at ConsumerGroupHeartbeat v1.
        assert keys[codec.ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 1) and keys[codec.ApiKey.CONSUMER_GROUP_DESCRIBE] == (0, 1)
    for version in range(13):
        topics = None if version >= 1 else []
        response = client.call(codec.MetadataRequest(topics=topics), version)
        assert {t.name: len(t.partitions) for t in response.topics} == {"orders": 12, "audit": 2}
        assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(0, cluster.host, cluster.port)]
    one = client.call(codec.MetadataRequest(topics=[codec.MetadataRequestTopic(name="nope")],
                                            allow_auto_topic_creation=False), 9)
    assert [(t.name, t.error_code) for t in one.topics] == [("nope", E.UNKNOWN_TOPIC_OR_PARTITION)]


def test_an_api_versions_version_beyond_ours_is_answered_at_v0(cluster):
    client = Client(cluster)
    frame = codec.encode_request(codec.ApiVersionsRequest(), 4, correlation_id=3)
    payload = bytearray(frame)
    struct.pack_into(">h", payload, 6, 9)  # claim v9
    client.send_raw(bytes(payload))
    _header, response = codec.decode_response(client.read_frame(), 18, 0)
    assert response.error_code == E.UNSUPPORTED_VERSION and response.api_keys


def test_fetch_is_empty_and_waits_max_wait_ms(cluster):
    client = Client(cluster)
    for version, max_wait in ((4, 0), (12, 300), (13, 0), (18, 0)):
        by_id = version >= 13
        topic = codec.FetchTopic(topic="" if by_id else "orders", topic_id=cluster.server.topic_ids["orders"],
                                 partitions=[codec.FetchPartition(partition=3, fetch_offset=0, partition_max_bytes=1024)])
        start = time.monotonic()
        response = client.call(codec.FetchRequest(max_wait_ms=max_wait, min_bytes=1, topics=[topic]), version)
        waited = time.monotonic() - start
        assert waited >= max_wait / 1000 * 0.9
        (part,) = response.responses[0].partitions
        assert (part.partition_index, part.error_code, part.high_watermark) == (3, 0, 0)
        assert not part.records


def test_fetch_answers_at_once_where_a_broker_would_not_wait(cluster):
    """min_bytes of 0 is met by an empty answer, and a partition in error ends the wait: Kafka's fetch
    purgatory answers both at once, however long max_wait_ms is."""
    client = Client(cluster)
    known = codec.FetchTopic(topic="orders", partitions=[codec.FetchPartition(partition=3, partition_max_bytes=1024)])
    unknown = codec.FetchTopic(topic="nope", partitions=[codec.FetchPartition(partition=0, partition_max_bytes=1024)])
    for min_bytes, topics in ((0, [known]), (1, [known, unknown])):
        start = time.monotonic()
        response = client.call(codec.FetchRequest(max_wait_ms=5000, min_bytes=min_bytes, topics=topics), 12)
        assert time.monotonic() - start < 2.5
        assert [p.error_code for r in response.responses for p in r.partitions] == \
            [E.NONE] + [E.UNKNOWN_TOPIC_OR_PARTITION] * (len(topics) - 1)


def test_list_offsets_are_zero_and_unknown_partitions_refused(cluster):
    client = Client(cluster)
    for version in range(1, 12):
        req = codec.ListOffsetsRequest(replica_id=-1, topics=[codec.ListOffsetsTopic(name="orders", partitions=[
            codec.ListOffsetsPartition(partition_index=0, timestamp=-1),
            codec.ListOffsetsPartition(partition_index=99, timestamp=-2)])])
        good, bad = client.call(req, version).topics[0].partitions
        assert (good.error_code, good.offset) == (0, 0)
        assert bad.error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_a_malformed_frame_closes_only_its_connection(cluster):
    good, bad, worse = Client(cluster), Client(cluster), Client(cluster)
    bad.send_raw(struct.pack(">i", -5))
    assert bad.is_closed()
    # A well-sized frame whose body does not decode.
    worse.send_raw(struct.pack(">ihhih", 10, 11, 9, 1, 1) + b"\xff\xff")
    assert worse.is_closed()
    assert good.call(codec.ApiVersionsRequest(), 3).error_code == 0


def test_an_unknown_api_closes_the_connection(cluster):
    client = Client(cluster)
    # SaslHandshake v1 (api 17), which this cluster does not offer: header v1, then the mechanism "PLAIN".
    body = struct.pack(">hhih", 17, 1, 1, -1) + struct.pack(">h", 5) + b"PLAIN"
    client.send_raw(struct.pack(">i", len(body)) + body)
    assert client.is_closed()
    assert Client(cluster).call(codec.ApiVersionsRequest(), 0).error_code == 0


def test_frame_size_and_connection_limits():
    with MockCluster(topics={"t": 1}, max_frame_size=64, max_connections=2) as cluster:
        a = Client(cluster)
        a.send_raw(struct.pack(">i", 65) + b"\x00" * 65)
        assert a.is_closed()
        # b and the second client fill the two connections; a third is refused.  Each is answered once
        # first: a connect can return before the server's loop has accepted (and counted) it.
        b, second = Client(cluster), Client(cluster)
        for client in (b, second):
            assert client.call(codec.ApiVersionsRequest(), 0).error_code == 0
        d = Client(cluster)
        assert d.is_closed()
        assert b.call(codec.ApiVersionsRequest(), 0).error_code == 0


def test_group_limit_and_members_per_group_limit():
    with MockCluster(topics={"t": 1}, max_groups=1, max_members_per_group=1) as cluster:
        client = Client(cluster)

        def join(group, member_id=""):
            return client.call(codec.JoinGroupRequest(
                group_id=group, session_timeout_ms=6000, rebalance_timeout_ms=6000, member_id=member_id,
                protocol_type="consumer", protocols=[codec.JoinGroupRequestProtocol(name="range", metadata=b"")]), 3)
        assert join("one").error_code == 0
        # A second group is over the limit while the first has a member: a retriable error, logged.
        assert join("two").error_code == E.COORDINATOR_NOT_AVAILABLE
        assert join("one").error_code == E.GROUP_MAX_SIZE_REACHED


def test_at_the_group_limit_a_group_nobody_joined_makes_room():
    # One JoinGroup v4+ per group id creates a group held only by the id it hands out: at max_groups the next
    # new group takes its place instead of being refused (the id's owner is told UNKNOWN_MEMBER_ID and rejoins).
    with MockCluster(topics={"t": 1}, max_groups=1) as cluster:
        client = Client(cluster)

        def join(group, member_id=""):
            return client.call(codec.JoinGroupRequest(
                group_id=group, session_timeout_ms=6000, rebalance_timeout_ms=6000, member_id=member_id,
                protocol_type="consumer", protocols=[codec.JoinGroupRequestProtocol(name="range", metadata=b"")]), 9)
        first = join("one")
        assert first.error_code == E.MEMBER_ID_REQUIRED
        assert join("two").error_code == E.MEMBER_ID_REQUIRED
        assert cluster.describe_group("one") is None and cluster.describe_group("two") is not None
        assert join("one", first.member_id).error_code == E.UNKNOWN_MEMBER_ID


def test_injected_errors_count_down_and_latency_delays(cluster):
    client = Client(cluster)
    cluster.fail("FindCoordinator", E.COORDINATOR_NOT_AVAILABLE, count=2)
    req = codec.FindCoordinatorRequest(key="g")
    assert [client.call(req, 3).error_code for _ in range(3)] == [E.COORDINATOR_NOT_AVAILABLE] * 2 + [0]
    cluster.add_latency(200, "ApiVersions")
    start = time.monotonic()
    client.call(codec.ApiVersionsRequest(), 3)
    assert time.monotonic() - start >= 0.18
    cluster.add_latency(0, "ApiVersions")
    cluster.drop("Metadata")
    client.send_raw(codec.encode_request(codec.MetadataRequest(topics=None), 9, correlation_id=9))
    assert client.is_closed()


def test_coordinator_move_answers_not_coordinator_until_found_again(cluster):
    client = Client(cluster)
    join = codec.JoinGroupRequest(group_id="g", session_timeout_ms=6000, rebalance_timeout_ms=6000, member_id="",
                                  protocol_type="consumer",
                                  protocols=[codec.JoinGroupRequestProtocol(name="range", metadata=b"")])
    assert client.call(join, 3).error_code == 0
    cluster.move_coordinator("g")
    assert client.call(join, 3).error_code == E.NOT_COORDINATOR
    assert client.call(codec.HeartbeatRequest(group_id="g", generation_id=1, member_id="x"), 3).error_code == \
        E.NOT_COORDINATOR
    client.call(codec.FindCoordinatorRequest(coordinator_keys=["g"]), 4)
    assert client.call(join, 3).error_code == 0


def test_drop_connections_closes_every_client(cluster):
    a, b = Client(cluster), Client(cluster)
    # A connect returns once the kernel has the connection, which can be before the server's loop has
    # accepted it; an answered request proves the server holds each connection it is asked to drop.
    a.call(codec.ApiVersionsRequest(), 0)
    b.call(codec.ApiVersionsRequest(), 0)
    cluster.drop_connections()
    assert a.is_closed() and b.is_closed()
    assert Client(cluster).call(codec.ApiVersionsRequest(), 0).error_code == 0


def test_async_context_manager():
    asyncio.run(_async_round_trip())


async def _async_round_trip():
    async with MockCluster(topics={"t": 3}) as cluster:
        reader, writer = await asyncio.open_connection(cluster.host, cluster.port)
        writer.write(codec.encode_request(codec.ApiVersionsRequest(), 3, correlation_id=1))
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        frame = struct.pack(">i", size) + await reader.readexactly(size)
        assert codec.decode_response(frame, 18, 3)[1].error_code == 0
        writer.close()


class Serve:
    """``kwire serve`` as a process: its port, its output lines (read with a deadline), its stderr in a
    file whose tail failures quote; stopped by pid."""

    def __init__(self, tmp_path, *args):
        self.log = tmp_path / f"serve-{time.monotonic_ns()}.log"
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", *args],
                                         stdout=subprocess.PIPE, stderr=err, stdin=subprocess.PIPE, text=True,
                                         env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
        self.lines = Lines(self.proc.stdout)

    def tail(self):
        return "\n--- kwire serve stderr ---\n" + self.log.read_text(errors="replace")[-3000:]

    def listening(self):
        line = self.lines.expect("kwire serve: listening on 127.0.0.1:", TIMEOUT_S, why=self.tail)
        return int(line.split("listening on 127.0.0.1:")[1].split()[0])

    def control(self, line, answer="ok: "):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.lines.expect(answer, TIMEOUT_S, why=self.tail)

    def stop(self):
        if self.proc.poll() is None:
            stop_process(self.proc, kill_wait_s=TIMEOUT_S)


@pytest.fixture
def serve(tmp_path):
    """``serve(*args)`` starts ``kwire serve --listen 127.0.0.1:0 *args``; each is stopped by pid at the end."""
    started = []

    def start(*args):
        started.append(Serve(tmp_path, *args))
        return started[-1]
    try:
        yield start
    finally:
        for s in started:
            s.stop()


def test_kwire_serve_prints_its_port_answers_and_stops_on_sigterm(serve):
    server = serve("--topic", "orders:12", "--topic", "audit:1", "--initial-rebalance-delay-ms", "0",
                   "--control", "stdin")
    client = Client(port=server.listening())
    topics = client.call(codec.MetadataRequest(topics=None), 12).topics
    assert {t.name: len(t.partitions) for t in topics} == {"orders": 12, "audit": 1}
    assert server.control("fail Heartbeat 27 2").startswith("ok: fail Heartbeat 27 2")
    assert server.control("fail Nope 1", answer="error:")
    client.close()
    start = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(5) == 0
    assert time.monotonic() - start < 5


def _heartbeat(client, group="g"):
    return client.call(codec.HeartbeatRequest(group_id=group, generation_id=1, member_id="m"), 4).error_code


def _join(client, group="g"):
    return client.call(codec.JoinGroupRequest(
        group_id=group, session_timeout_ms=6000, rebalance_timeout_ms=6000, member_id="", protocol_type="consumer",
        protocols=[codec.JoinGroupRequestProtocol(name="range", metadata=b"")]), 3).error_code


# An added latency, and the bound that tells a delayed answer from a prompt one on a loaded machine.
LATENCY_MS = 600
LATE_S = LATENCY_MS / 1000 * 0.95


def _timed(call):
    start = time.monotonic()
    call()
    return time.monotonic() - start


def test_kwire_serve_arms_faults_from_its_command_line(serve):
    server = serve("--topic", "t:1", "--fail", f"FindCoordinator:{E.COORDINATOR_NOT_AVAILABLE}:2",
                   "--fail", f"heartbeat:{E.REBALANCE_IN_PROGRESS}", "--drop", "Metadata:1", "--latency-ms", str(LATENCY_MS))
    port = server.listening()
    client = Client(port=port)
    find = codec.FindCoordinatorRequest(key="g")
    assert [client.call(find, 3).error_code for _ in range(3)] == [E.COORDINATOR_NOT_AVAILABLE] * 2 + [E.NONE]
    assert _heartbeat(client) == E.REBALANCE_IN_PROGRESS  # api names in any case; COUNT defaults to 1
    assert _heartbeat(client) == E.UNKNOWN_MEMBER_ID
    assert _timed(lambda: client.call(codec.ApiVersionsRequest(), 3)) >= LATE_S  # every answer is late
    client.send_raw(codec.encode_request(codec.MetadataRequest(topics=None), 9, correlation_id=99))
    assert client.is_closed()
    again = Client(port=port)
    assert [t.name for t in again.call(codec.MetadataRequest(topics=None), 9).topics] == ["t"]  # only the first


@pytest.mark.parametrize("spec", [["--fail", "Heartbeat"], ["--fail", "Nope:1"], ["--drop", "Heartbeat:x"]])
def test_kwire_serve_refuses_a_fault_it_cannot_read(tmp_path, spec):
    proc = subprocess.run([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", *spec],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT,
                          timeout=TIMEOUT_S * 3)
    assert proc.returncode != 0 and "kwire serve:" in proc.stderr, proc.stderr


def test_kwire_serve_takes_fault_commands_on_stdin(serve):
    server = serve("--topic", "t:1", "--control", "stdin", "--initial-rebalance-delay-ms", "0")
    port = server.listening()
    client = Client(port=port)
    # latency, for one api, then removed
    server.control(f"latency {LATENCY_MS} ApiVersions")
    assert _timed(lambda: client.call(codec.ApiVersionsRequest(), 3)) >= LATE_S
    assert _timed(lambda: _heartbeat(client)) < LATE_S
    server.control("latency 0 ApiVersions")
    assert _timed(lambda: client.call(codec.ApiVersionsRequest(), 3)) < LATE_S
    # drop: the connection of the next request of an api closes unanswered
    server.control("drop Heartbeat")
    client.send_raw(codec.encode_request(codec.HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 4,
                                         correlation_id=50))
    assert client.is_closed()
    # drop-connections: every connection closes now
    a, b = Client(port=port), Client(port=port)
    for c in (a, b):
        assert c.call(codec.ApiVersionsRequest(), 3).error_code == 0  # held by the server before the drop
    server.control("drop-connections")
    assert a.is_closed() and b.is_closed()
    # move: the group's requests get NOT_COORDINATOR until FindCoordinator is asked again
    client = Client(port=port)
    assert _join(client) == E.NONE
    server.control("move g")
    assert _join(client) == E.NOT_COORDINATOR
    client.call(codec.FindCoordinatorRequest(key="g"), 3)
    assert _join(client) == E.NONE
    # clear disarms every fault
    server.control(f"fail Heartbeat {E.REBALANCE_IN_PROGRESS} 5")
    server.control(f"latency {LATENCY_MS}")
    server.control("clear")
    assert _timed(lambda: _heartbeat(client)) < LATE_S
    assert _heartbeat(client) == E.UNKNOWN_MEMBER_ID
    for bad in ("latency", "drop", "move a b", "clear now", "frobnicate"):
        assert server.control(bad, answer="error:")


def test_bad_arguments_to_the_mock_cluster_are_typed_errors():
    from kwire.errors import ArgumentValueError
    from kwire.testing import Limits, api_key

    cases = {
        "unknown api": lambda: api_key("NoSuchApi"),
        "fail count 0": lambda: MockCluster(topics={"t": 1}).server.faults.fail("Heartbeat", 27, count=0),
        "drop count 0": lambda: MockCluster(topics={"t": 1}).server.faults.drop("Heartbeat", count=0),
        "negative latency": lambda: MockCluster(topics={"t": 1}).server.faults.add_latency(-1),
        "limit 0": lambda: Limits(max_groups=0),
        "topic of 0 partitions": lambda: MockCluster(topics={"t": 0}),
    }
    for what, call in cases.items():
        with pytest.raises(ArgumentValueError):
            call()
        try:
            call()
        except ValueError as e:  # callers who caught the builtin still do
            assert type(e).__module__ == "kwire.errors", what


def test_no_error_answer_is_a_typed_error():
    from kwire.errors import ArgumentValueError
    from kwire.testing._faults import error_response

    with pytest.raises(ArgumentValueError, match="no error answer for api key 9999"):
        error_response(codec.HeartbeatRequest(), 9999, 4, 27)


def test_a_thread_that_does_not_stop_is_a_typed_error(monkeypatch):
    import threading

    import kwire.testing._cluster as cluster_module
    from kwire.errors import KwireError, ShutdownError

    release = threading.Event()
    stuck = threading.Thread(target=release.wait, daemon=True)
    stuck.start()
    monkeypatch.setattr(cluster_module, "_START_STOP_TIMEOUT_S", 0.05)
    cluster = MockCluster(topics={"t": 1})
    cluster._thread = stuck
    try:
        with pytest.raises(ShutdownError, match="did not stop"):
            cluster.__exit__(None, None, None)
    finally:
        release.set()
        stuck.join(TIMEOUT_S)
    assert issubclass(ShutdownError, KwireError) and issubclass(ShutdownError, RuntimeError)
