"""Real consumers speaking KIP-848's consumer protocol, each its own process, against a server.

The server is a parameter:

- ``librdkafka-mock``: librdkafka's own mock cluster (tests/librdkafka_mock.py), three brokers, an independent
  implementation of the protocol; it runs now and keeps the harness honest;
- ``kwire-serve``: ``kwire serve``, skipped until it advertises ConsumerGroupHeartbeat in its ApiVersions (asked
  at run time).

The members are confluent-kafka consumers with ``group.protocol=consumer`` (tests/consumer848_client.py), which
print their own rebalance callbacks with CLOCK_MONOTONIC stamps.  Every case checks, on the members' merged
streams, that no partition is ever owned by two members at once (see :func:`overlaps` for the rule at equal
instants), and then what the case is about: a disjoint cover of every partition by three members, a member
that closes and one killed with SIGKILL, a static member restarting within its session timeout, offsets
committed under member epochs, ``describe_consumer_groups`` and a mixed group with classic members.

Every process is bounded in time and stopped by pid; everything listens on 127.0.0.1.
"""

import importlib.util
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest

from kwire.codec import ApiKey
from tests.processes import Lines, Proc, stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = os.path.join(ROOT, "tests", "consumer848_client.py")
MOCK = os.path.join(ROOT, "tests", "librdkafka_mock.py")
TAP = os.path.join(ROOT, "tests", "wire_tap.py")
TOPIC = "orders"
PARTITIONS = 12
SESSION_MS = 6000  # the servers' group.consumer.session.timeout.ms
HEARTBEAT_MS = 500  # the servers' group.consumer.heartbeat.interval.ms
CLASSIC_SESSION_MS = 6000  # tests/consumer848_client.py's session.timeout.ms for classic members
TIMEOUT_S = 40
# Each client process exits on its own after this long, whatever the test does.
CLIENT_RUN_S = 90
SERVERS = ["librdkafka-mock", "kwire-serve"]
HAVE_CONFLUENT = importlib.util.find_spec("confluent_kafka") is not None

# Why a case cannot run on librdkafka's mock (librdkafka 2.16.0), as observed through tests/wire_tap.py.
MOCK_HAS_NO_DESCRIBE = ("librdkafka's mock advertises neither ConsumerGroupDescribe (69) nor DescribeGroups (15) nor "
                        "ListGroups (16): AdminClient.describe_consumer_groups fails with _UNSUPPORTED_FEATURE")
MOCK_HAS_NO_MIXED_GROUPS = ("librdkafka's mock keeps classic and consumer groups apart: a classic JoinGroup with a "
                            "consumer group's id forms a second, classic group that is given every partition; and "
                            "kafka-python 3.0.12 cannot talk to it (it asks ApiVersions v4, the mock answers "
                            "UNSUPPORTED_VERSION in a form kafka-python cannot parse and it reconnects forever)")


# ---------------------------------------------------------------------------------------------------------------
# Ownership on merged event streams

def ownership_events(members):
    """Every member's ownership changes as ``(t, member index, +1 or -1, partitions)``: ``assigned``
    acquires, ``revoked`` and ``lost`` release; ``closed`` (the consumer is closed, even when no revoke
    callback ran, as after a fatal error) and a kill with SIGKILL release everything (``None``)."""
    out = []
    for i, m in enumerate(members):
        for e in m.events:
            if e["event"] == "assigned":
                out.append((e["t"], i, +1, frozenset(e["partitions"])))
            elif e["event"] in ("revoked", "lost"):
                out.append((e["t"], i, -1, frozenset(e["partitions"])))
            elif e["event"] == "closed":
                out.append((e["t"], i, -1, None))
        if m.killed_at is not None:
            out.append((m.killed_at, i, -1, None))
    return out


def overlaps(events):
    """``[(t, partition, holder, acquirer)]``: each time a member acquired a partition another member still
    owned.

    Stamps come from CLOCK_MONOTONIC, one clock for every process.  A member stamps ``assigned`` when its callback
    starts and ``revoked`` when its callback returns, so each ownership interval is the longest the member could
    have held the partition.  The rule at equal instants is strict: events are ordered by time and, at the same
    instant, acquisitions before releases, so a hand-over stamped at one instant counts as an overlap.  (The
    protocol orders them strictly: the coordinator gives a partition away only after the old owner's heartbeat
    acknowledged the revocation, which it sends after the callback returned.)"""
    owner = {}
    found = []
    for t, member, sign, parts in sorted(events, key=lambda e: (e[0], -e[2])):
        if sign > 0:
            for p in parts:
                holder = owner.get(p)
                if holder is not None and holder != member:
                    found.append((t, p, holder, member))
                owner[p] = member
        else:
            for p in (parts if parts is not None else [p for p, h in owner.items() if h == member]):
                if owner.get(p) == member:
                    del owner[p]
    return found


def assert_no_overlap(members):
    found = overlaps(ownership_events(members))
    assert not found, (f"partitions owned by two members at once (t, partition, holder, acquirer): {found[:10]}"
                       + "".join(m.tail() for m in members))


# ---------------------------------------------------------------------------------------------------------------
# Processes

class Member(Proc):
    """One tests/consumer848_client.py process; its JSON events are collected in ``events`` and its current
    partitions, from its own callbacks, in ``owned``."""

    def __init__(self, args, log, server_log):
        super().__init__(args, log, server_log=server_log)
        self.events = []
        self.owned = set()
        self.member_id = None
        self.killed_at = None

    def _note(self, line):
        try:
            e = json.loads(line)
        except ValueError:
            return
        self.events.append(e)
        if e["event"] == "assigned":
            self.owned.update(e["partitions"])
            self.member_id = e.get("member_id") or self.member_id
        elif e["event"] in ("revoked", "lost"):
            self.owned.difference_update(e["partitions"])
        elif e["event"] == "closed":
            self.owned.clear()

    def seen(self, event):
        return [e for e in self.events if e["event"] == event]

    def close(self):
        """SIGTERM: the client closes its consumer, which leaves the group; wait for its exit and its last
        lines."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(TIMEOUT_S)
        self.wait_for(lambda: self.seen("closed"), 5, "closed")

    def kill(self):
        self.killed_at = time.monotonic()
        self.stop()

    def wait_for(self, predicate, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.drain()
            if predicate():
                return
            time.sleep(0.05)
        raise AssertionError(f"not {what} within {timeout} s: {self.events[-10:]}{self.tail()}")


class Server:
    """A running server: ``bootstrap`` (HOST:PORT,...), ``kind``, and its process and log."""

    def __init__(self, kind, proc, bootstrap, log):
        self.kind, self.proc, self.bootstrap, self.log = kind, proc, bootstrap, log


def _start(args, log, ready_prefix):
    """A server process and the address it prints after ``ready_prefix``, or None (and the process stopped)
    if it exits first."""
    with open(log, "w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT,
                                env=dict(os.environ, PYTHONPATH=ROOT))
    lines = Lines(proc.stdout)
    end = time.monotonic() + TIMEOUT_S
    while time.monotonic() < end and proc.poll() is None:
        line = lines.take(0.1)
        if line is not None and line.startswith(ready_prefix):
            return proc, line[len(ready_prefix):].split()[0]
    if proc.poll() is None:
        stop_process(proc, kill_wait_s=TIMEOUT_S)
    return None, None


def start_librdkafka_mock(log):
    proc, bootstrap = _start([sys.executable, MOCK, "--brokers", "3", "--topic", f"{TOPIC}:{PARTITIONS}",
                              "--session-timeout-ms", str(SESSION_MS), "--heartbeat-interval-ms", str(HEARTBEAT_MS),
                              "--run-seconds", "900"], log, "librdkafka mock: listening on ")
    if proc is None:
        with open(log, errors="replace") as f:
            raise AssertionError("librdkafka's mock did not start:\n" + f.read()[-3000:])
    return proc, bootstrap


def start_kwire_serve(log):
    """``kwire serve`` with the consumer-group settings under Kafka's own names (the minimum bounds lowered, as
    Kafka's defaults are 45 s and 5 s); skipped while it does not advertise ConsumerGroupHeartbeat."""
    base = [sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--topic", f"{TOPIC}:{PARTITIONS}",
            "--log-level", "INFO"]
    config = ["--config", f"group.consumer.session.timeout.ms={SESSION_MS}",
              "--config", "group.consumer.min.session.timeout.ms=1000",
              "--config", f"group.consumer.heartbeat.interval.ms={HEARTBEAT_MS}",
              "--config", "group.consumer.min.heartbeat.interval.ms=100"]
    proc, bootstrap = _start(base + config, log, "kwire serve: listening on ")
    if proc is not None and advertises(bootstrap, ApiKey.CONSUMER_GROUP_HEARTBEAT):
        return proc, bootstrap
    if proc is not None:
        stop_process(proc, kill_wait_s=TIMEOUT_S)
    # Started without the settings, to tell "cannot take them yet" from "does not speak the protocol yet".
    plain, bootstrap = _start(base, log + ".plain", "kwire serve: listening on ")
    if plain is None:
        with open(log + ".plain", errors="replace") as f:
            raise AssertionError("kwire serve did not start:\n" + f.read()[-3000:])
    try:
        speaks = advertises(bootstrap, ApiKey.CONSUMER_GROUP_HEARTBEAT)
    finally:
        stop_process(plain, kill_wait_s=TIMEOUT_S)
    if not speaks:
        pytest.skip("kwire serve does not advertise ConsumerGroupHeartbeat (api 68) in its ApiVersions response yet")
    with open(log, errors="replace") as f:
        raise AssertionError("kwire serve speaks ConsumerGroupHeartbeat but did not start with "
                             f"{' '.join(config)}:\n" + f.read()[-3000:])


@pytest.fixture(scope="module", params=SERVERS)
def server(request, tmp_path_factory):
    if not HAVE_CONFLUENT:
        pytest.skip("confluent-kafka is not installed")
    log = str(tmp_path_factory.mktemp(request.param) / "server.log")
    start = start_librdkafka_mock if request.param == "librdkafka-mock" else start_kwire_serve
    proc, bootstrap = start(log)
    try:
        yield Server(request.param, proc, bootstrap, log)
    finally:
        stop_process(proc, kill_wait_s=TIMEOUT_S)


@pytest.fixture
def spawn(server, tmp_path):
    """``spawn(group, *args)`` starts tests/consumer848_client.py against the server; every process is
    killed by pid at the end."""
    procs = []

    def start(group, *args, bootstrap=None):
        log = tmp_path / f"client-{len(procs)}.log"
        m = Member([sys.executable, CLIENT, "--bootstrap", bootstrap or server.bootstrap, "--group", group,
                    "--topic", TOPIC, "--run-seconds", str(CLIENT_RUN_S), *args], str(log), server.log)
        procs.append(m)
        return m
    try:
        yield start
    finally:
        for m in procs:
            m.stop()


class Tap:
    """tests/wire_tap.py in front of the server: clients given ``bootstrap`` go through it, and ``rows()``
    is every frame it decoded so far."""

    def __init__(self, proc, bootstrap, out):
        self.proc, self.bootstrap, self.out = proc, bootstrap, out

    def rows(self):
        with open(self.out) as f:
            return [json.loads(line) for line in f]


@pytest.fixture
def tap(server, tmp_path):
    out = tmp_path / "tap.jsonl"
    proc, bootstrap = _start([sys.executable, TAP, "--upstream", server.bootstrap, "--out", str(out),
                              "--run-seconds", str(CLIENT_RUN_S * 2)], str(tmp_path / "tap.err"),
                             "wire tap: listening on ")
    assert proc is not None, (tmp_path / "tap.err").read_text()
    try:
        yield Tap(proc, bootstrap, str(out))
    finally:
        stop_process(proc, kill_wait_s=TIMEOUT_S)


# ---------------------------------------------------------------------------------------------------------------
# Raw requests (kwire's codec on a socket), to ask a server what no client library shows

def request(address, msg, version, timeout=10):
    """One request to ``HOST:PORT`` and its decoded response."""
    from kwire import decode_response, encode_request

    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(encode_request(msg, version, 1, "kwire-test"))
        size = struct.unpack(">i", _read(s, 4))[0]
        frame = struct.pack(">i", size) + _read(s, size)
    return decode_response(frame, msg.api_key, version)[1]


def _read(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("server closed the connection mid-response")
        out += chunk
    return out


def advertises(bootstrap, api_key):
    """Whether the first bootstrap server lists ``api_key`` in its ApiVersions (v0: every broker answers it)."""
    from kwire.codec import ApiVersionsRequest

    got = request(bootstrap.split(",")[0], ApiVersionsRequest(), 0)
    return any(k.api_key == api_key for k in got.api_keys)


def describe_group_raw(bootstrap, group):
    """ConsumerGroupDescribe (v0) at the group's coordinator: the epochs that AdminClient does not show."""
    from kwire.codec import ConsumerGroupDescribeRequest, FindCoordinatorRequest

    coord = request(bootstrap.split(",")[0], FindCoordinatorRequest(key=group, key_type=0), 3)
    got = request(f"{coord.host}:{coord.port}", ConsumerGroupDescribeRequest(group_ids=[group]), 0)
    (described,) = got.groups
    return described


# ---------------------------------------------------------------------------------------------------------------
# Waiting on members

def wait_cover(members, timeout=TIMEOUT_S, partitions=PARTITIONS):
    """Until every member owns something and the members' partitions are disjoint and cover all of them."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for m in members:
            m.drain()
        assert_no_fatal_error(members)
        got = [frozenset(m.owned) for m in members]
        flat = [p for a in got for p in a]
        if all(got) and len(flat) == len(set(flat)) and set(flat) == set(range(partitions)):
            return got
        time.sleep(0.05)
    raise AssertionError(f"no disjoint cover within {timeout} s: {[sorted(m.owned) for m in members]}"
                         + "".join(m.tail() for m in members) + members[0].tail(log=members[0].server_log))


def assert_no_fatal_error(members):
    """A member whose client reported a fatal error has stopped; say so at once rather than time out."""
    fatal = [(i, e) for i, m in enumerate(members) for e in m.seen("error") if e["fatal"]]
    assert not fatal, f"fatal client errors (member, event): {fatal}" + "".join(m.tail() for m in members)


def wait_quiet(members, quiet_s=3 * HEARTBEAT_MS / 1000, timeout=TIMEOUT_S):
    """Until no member has run a rebalance callback for ``quiet_s``: the group has settled."""
    end = time.monotonic() + timeout
    counts = None
    last = time.monotonic()
    while (now := time.monotonic()) < end:
        for m in members:
            m.drain()
        now_counts = [len(m.events) for m in members]
        if now_counts != counts:
            counts, last = now_counts, now
        elif now - last >= quiet_s:
            return
        time.sleep(0.05)
    raise AssertionError(f"callbacks still running after {timeout} s" + "".join(m.tail() for m in members))


# ---------------------------------------------------------------------------------------------------------------
# The cases

@pytest.mark.slow
@pytest.mark.parametrize("assignor", ["none", "uniform", "range"])
def test_members_cover_then_one_closes_and_one_is_killed(server, spawn, assignor):
    group = f"cover-{server.kind}-{assignor}"
    members = [spawn(group, "--assignor", assignor) for _ in range(3)]
    wait_cover(members)
    # A member that closes leaves at once (epoch -1): the other two cover everything again.
    members[2].close()
    assert members[2].seen("closed"), members[2].tail()
    wait_cover(members[:2], timeout=SESSION_MS / 1000 * 0.8)
    # A member killed outright sends nothing: the coordinator drops it when its session times out, and only
    # then are its partitions given to the survivor.
    members[1].kill()
    wait_cover(members[:1], timeout=SESSION_MS / 1000 * 3)
    waited = time.monotonic() - members[1].killed_at
    assert waited >= SESSION_MS / 1000 * 0.8, f"the killed member's partitions moved after {waited:.1f} s"
    assert_no_overlap(members)
    assert not any(m.seen("lost") for m in members), [m.seen("lost") for m in members]


@pytest.mark.slow
def test_static_member_restarting_within_its_session_gets_its_partitions_back(server, spawn):
    group = f"static-{server.kind}"
    members = [spawn(group, "--instance-id", f"instance-{i}") for i in range(3)]
    before = wait_cover(members)
    wait_quiet(members)
    marks = [len(m.events) for m in members[1:]]
    # Closing a static member leaves with epoch -2: the coordinator keeps its assignment for the session
    # timeout, and a member with the same instance id that joins within it takes the assignment over.
    members[0].close()
    closed_at = time.monotonic()
    members.append(spawn(group, "--instance-id", "instance-0"))
    after = wait_cover(members[1:], timeout=SESSION_MS / 1000)
    assert time.monotonic() - closed_at < SESSION_MS / 1000, "restarted too late to test this"
    assert after == [before[1], before[2], before[0]], (before, after)
    wait_quiet(members[1:])
    for m, mark in zip(members[1:3], marks):
        since = [e for e in m.events[mark:] if e["event"] in ("assigned", "revoked", "lost")]
        assert since == [], f"{since}{m.tail()}"
    assert_no_overlap(members)


@pytest.mark.slow
def test_offsets_committed_under_member_epochs_are_read_back(server, spawn, tap):
    group = f"offsets-{server.kind}"
    members = [spawn(group, "--commit-offset", "1000", bootstrap=tap.bootstrap) for _ in range(3)]
    wait_cover(members)
    end = time.monotonic() + TIMEOUT_S
    while {p for m in members for e in m.seen("committed") for p in e["offsets"]} != {
            str(p) for p in range(PARTITIONS)}:
        assert time.monotonic() < end, [m.seen("committed") for m in members]
        for m in members:
            m.drain()
        time.sleep(0.05)
    for m in members:
        m.close()
    assert_no_overlap(members)
    reader = spawn(group, "--read-offsets")
    reader.wait_for(lambda: reader.seen("offsets"), TIMEOUT_S, "read the offsets")
    (got,) = reader.seen("offsets")
    assert got["offsets"] == {str(p): 1000 + p for p in range(PARTITIONS)}
    # On the wire: the commits carried the epochs the coordinator had given the members.
    assert check_commit_epochs(tap.rows()) >= 3


def check_commit_epochs(rows):
    """OffsetCommit requests against the epochs the coordinator gave each member in ConsumerGroupHeartbeat
    responses, in the order the tap saw them; returns how many commits were accepted.

    A commit must carry an epoch the member was given.  One sent while the member's acknowledging heartbeat
    was in flight may carry the epoch before, and then only STALE_MEMBER_EPOCH may refuse it (the client
    commits again); an accepted commit carries the member's latest epoch."""
    from kwire.codec import ErrorCode

    given = {}  # member id -> epochs given, in order
    requests = {}  # (connection, correlation id) -> the request's body
    accepted = 0
    for r in rows:
        key = (r["conn"], r["correlation_id"])
        body = r.get("body")
        if r["dir"] == "request" and r["api"] in ("CONSUMER_GROUP_HEARTBEAT", "OFFSET_COMMIT"):
            requests[key] = body
        elif r["api"] == "CONSUMER_GROUP_HEARTBEAT" and body["error_code"] == 0 and body["member_epoch"] > 0:
            member = body["member_id"] or requests[key]["member_id"]
            given.setdefault(member, []).append(body["member_epoch"])
        elif r["api"] == "OFFSET_COMMIT" and r["dir"] == "response":
            sent = requests[key]
            assert r["version"] >= 9, r
            epochs = given.get(sent["member_id"], [])
            assert sent["generation_id_or_member_epoch"] in epochs, (sent, given)
            errors = {p["error_code"] for t in body["topics"] for p in t["partitions"]}
            if errors == {0}:
                assert sent["generation_id_or_member_epoch"] == epochs[-1], (sent, given)
                accepted += 1
            else:
                assert errors == {ErrorCode.STALE_MEMBER_EPOCH}, (sent, body)
    return accepted


@pytest.mark.slow
def test_what_librdkafka_members_send(server, spawn, tap):
    """The heartbeats a server must accept from librdkafka 2.16, as seen on the wire: a full one to join, with
    a member id the client made up; deltas with every optional field null or repeating the first request's
    (a static member's instance id too); each assignment acknowledged with the partitions applied; and the leave, epoch -1, or -2 with the
    instance id for a static member."""
    group = f"wire-{server.kind}"
    members = [spawn(group, "--assignor", "uniform", bootstrap=tap.bootstrap),
               spawn(group, "--instance-id", "static-1", bootstrap=tap.bootstrap)]
    wait_cover(members)
    wait_quiet(members)
    for m in members:
        m.close()
    rows = tap.rows()
    offered = {k["api_key"]: k["max_version"] for r in rows if r["api"] == "API_VERSIONS" and r["dir"] == "response"
               and r.get("body") and r["body"]["error_code"] == 0 for k in r["body"]["api_keys"]}
    heartbeats = [r for r in rows if r["api"] == "CONSUMER_GROUP_HEARTBEAT"]
    assert {r["version"] for r in heartbeats} == {min(1, offered[ApiKey.CONSUMER_GROUP_HEARTBEAT])}
    by_member = {}
    responses = {}
    for r in heartbeats:
        if r["dir"] == "request":
            by_member.setdefault(r["body"]["member_id"], []).append(r)
        else:
            responses[(r["conn"], r["correlation_id"])] = r["body"]
    assert set(by_member) == {m.member_id for m in members}
    for member_id, sent in by_member.items():
        static = sent[0]["body"]["instance_id"] is not None
        first = sent[0]["body"]
        assert len(member_id) == 22  # a base64 Uuid, made by the client before it joined
        assert first["member_epoch"] == 0 and first["topic_partitions"] == []
        assert first["subscribed_topic_names"] == [TOPIC] and first["rebalance_timeout_ms"] == 300_000
        # An empty regex, not a null one: a server must read "" as "no regex".
        assert first["subscribed_topic_regex"] in ("", None)
        assert first["server_assignor"] == (None if static else "uniform")
        assert first["instance_id"] == ("static-1" if static else None)
        leave = sent[-1]["body"]
        assert leave["member_epoch"] == (-2 if static else -1)
        assert leave["instance_id"] == ("static-1" if static else None)
        assert (leave["rebalance_timeout_ms"], leave["subscribed_topic_names"], leave["topic_partitions"]) == (
            -1, None, None)
        pending_ack = None
        for r in sent[:-1]:
            body = r["body"]
            if body["member_epoch"] == 0:  # joining: librdkafka repeats the full request until it has an epoch
                assert body["subscribed_topic_names"] == [TOPIC] and body["topic_partitions"] == [], body
            else:
                # A delta leaves every optional field null; librdkafka may also repeat its subscription after it
                # re-reads the topic's metadata (its "send new subscription" flag), with the first request's
                # values: never anything else.
                assert body["instance_id"] in (None, first["instance_id"]), body
                assert body["rebalance_timeout_ms"] in (-1, first["rebalance_timeout_ms"]), body
                assert body["subscribed_topic_names"] in (None, first["subscribed_topic_names"]), body
                assert body["subscribed_topic_regex"] in (None, first["subscribed_topic_regex"]), body
                if pending_ack is not None:
                    assert _partitions(body["topic_partitions"]) == pending_ack, (body, pending_ack)
                else:
                    assert body["topic_partitions"] is None, body
            pending_ack = None
            answer = responses.get((r["conn"], r["correlation_id"]))
            assert answer is not None and answer["error_code"] == 0, answer
            if answer["assignment"] is not None:
                pending_ack = _partitions(answer["assignment"]["topic_partitions"])


def _partitions(topic_partitions):
    return {(t["topic_id"], p) for t in topic_partitions or () for p in t["partitions"]}


@pytest.mark.slow
def test_describe_consumer_groups_shows_members_assignments_and_epochs(server, spawn):
    if not advertises(server.bootstrap, ApiKey.CONSUMER_GROUP_DESCRIBE):
        pytest.skip(MOCK_HAS_NO_DESCRIBE if server.kind == "librdkafka-mock" else
                    f"{server.kind} does not advertise ConsumerGroupDescribe (api 69)")
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    group = f"describe-{server.kind}"
    members = [spawn(group) for _ in range(3)]
    wait_cover(members)
    wait_quiet(members)
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    described = admin.describe_consumer_groups([group], request_timeout=10)[group].result(TIMEOUT_S)
    assert described.type == ConsumerGroupType.CONSUMER
    assert described.state == ConsumerGroupState.STABLE
    by_id = {d.member_id: d for d in described.members}
    assert set(by_id) == {m.member_id for m in members}
    for m in members:
        d = by_id[m.member_id]
        assert {tp.partition for tp in d.assignment.topic_partitions} == m.owned
        assert {tp.partition for tp in d.target_assignment.topic_partitions} == m.owned
    raw = describe_group_raw(server.bootstrap, group)
    assert raw.error_code == 0 and raw.group_epoch >= 1
    assert raw.assignment_epoch == raw.group_epoch  # settled: the target is the group's latest
    assert {x.member_id: x.member_epoch for x in raw.members} == {m.member_id: raw.group_epoch for m in members}


@pytest.mark.slow
def test_mixed_group_of_classic_and_consumer_protocol_members(server, spawn):
    if server.kind == "librdkafka-mock":
        pytest.skip(MOCK_HAS_NO_MIXED_GROUPS)
    if importlib.util.find_spec("kafka") is None:
        pytest.skip("kafka-python is not installed")
    group = f"mixed-{server.kind}"
    # Kafka lets a classic member into a consumer group when its protocol type is "consumer" and its
    # protocols share a name with the other classic members' (ConsumerGroup.supportsClassicProtocols).
    members = [spawn(group), spawn(group),
               spawn(group, "--protocol", "classic", "--strategy", "range"),
               spawn(group, "--protocol", "classic", "--lib", "kafka-python", "--strategy", "range")]
    wait_cover(members, timeout=TIMEOUT_S * 1.5)
    wait_quiet(members)
    # A classic member leaves with LeaveGroup; the others cover its partitions.
    members[2].close()
    wait_cover([members[0], members[1], members[3]])
    # A classic member killed outright is dropped after its own session timeout (its JoinGroup's).
    members[3].kill()
    wait_cover(members[:2], timeout=CLASSIC_SESSION_MS / 1000 * 3)
    waited = time.monotonic() - members[3].killed_at
    assert waited >= CLASSIC_SESSION_MS / 1000 * 0.8, f"the killed member's partitions moved after {waited:.1f} s"
    assert_no_overlap(members)


# ---------------------------------------------------------------------------------------------------------------
# The overlap rule itself, on hand-made streams (no processes: these run in the default suite)

def _stream(*events):
    return [(t, member, +1 if what == "assigned" else -1, frozenset(parts)) for t, member, what, parts in events]


def test_overlap_rule_accepts_a_hand_over_after_the_release():
    assert overlaps(_stream((1.0, 0, "assigned", [0, 1]), (2.0, 0, "revoked", [1]),
                            (2.5, 1, "assigned", [1]))) == []


def test_overlap_rule_flags_an_acquisition_before_the_release():
    assert overlaps(_stream((1.0, 0, "assigned", [0, 1]), (2.0, 1, "assigned", [1]),
                            (2.5, 0, "revoked", [1]))) == [(2.0, 1, 0, 1)]


def test_overlap_rule_counts_equal_instants_as_an_overlap():
    assert overlaps(_stream((1.0, 0, "assigned", [3]), (2.0, 0, "revoked", [3]),
                            (2.0, 1, "assigned", [3]))) == [(2.0, 3, 0, 1)]


def test_overlap_rule_frees_a_killed_members_partitions_at_the_kill():
    events = _stream((1.0, 0, "assigned", [0, 1]), (4.0, 1, "assigned", [0]))
    assert overlaps(events + [(3.0, 0, -1, None)]) == []
    assert overlaps(events + [(5.0, 0, -1, None)]) == [(4.0, 0, 0, 1)]


def test_overlap_rule_frees_everything_a_member_owned_when_it_closed():
    class Closed:
        killed_at = None
        events = [{"t": 1.0, "event": "assigned", "partitions": [0, 1]}, {"t": 3.0, "event": "closed"}]

    class Next:
        killed_at = None
        events = [{"t": 4.0, "event": "assigned", "partitions": [0, 1]}]

    assert overlaps(ownership_events([Closed, Next])) == []
    Next.events[0]["t"] = 2.0
    assert overlaps(ownership_events([Closed, Next])) == [(2.0, 0, 0, 1), (2.0, 1, 0, 1)]
