"""Real consumers, each its own process, form groups against ``kwire serve``.

confluent-kafka (librdkafka), kafka-python 3.x and aiokafka, alone and mixed: three members reach disjoint
assignments covering every partition; a member that closes hands its partitions to the others; a member
killed with SIGKILL is dropped after its session timeout; offsets committed by one consumer are read back
by a fresh one; a static member (group.instance.id) restarted within its session timeout gets its
partitions back while no other member runs a rebalance callback.  Every process is bounded in time and stopped by pid; the server listens on 127.0.0.1.
"""

import importlib.util
import os
import subprocess
import sys
import time

import pytest

from tests.processes import TIMEOUT_S, Lines, Proc, stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = os.path.join(ROOT, "tests", "group_client.py")
PARTITIONS = 12
SESSION_S = 6  # tests/group_client.py's default session.timeout.ms
HEARTBEAT_S = 0.3  # tests/group_client.py's heartbeat.interval.ms
# The static-membership test restarts a Python process (imports alone take seconds on a loaded 2-core
# machine); its session must outlast that by far, or the coordinator drops the member and rebalances.
STATIC_SESSION_MS = 30_000
# Kafka's default is 3000 ms. With 0 a group forms before a client has its topic's metadata: the lone leader
# assigns nothing and must rejoin, which kafka-python 3.0.12 can fail to finish (a ~40 s flake seen here).
REBALANCE_DELAY_MS = 1000

pytestmark = pytest.mark.slow


def _have(module):
    return importlib.util.find_spec(module) is not None


LIBS = {"confluent-kafka": "confluent_kafka", "kafka-python": "kafka", "aiokafka": "aiokafka"}


@pytest.fixture
def server(tmp_path):
    with open(tmp_path / "serve.log", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--topic",
                                 f"orders:{PARTITIONS}", "--initial-rebalance-delay-ms", str(REBALANCE_DELAY_MS),
                                 "--log-level", "INFO"],
                                stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT,
                                env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        line = Lines(proc.stdout).expect("kwire serve: listening on ", TIMEOUT_S,
                                         why=lambda: (tmp_path / "serve.log").read_text(errors="replace")[-3000:])
        yield line.split("listening on ")[1].split()[0]
    finally:
        stop_process(proc, kill_wait_s=TIMEOUT_S)


@pytest.fixture
def spawn(server, tmp_path):
    """``spawn(lib, strategy, group, *extra)`` starts tests/group_client.py against the server; every client
    is killed by pid at the end."""
    procs = []

    def start(lib, strategy, group, *extra):
        log = tmp_path / f"client-{len(procs)}-{lib}.log"
        procs.append(Proc([sys.executable, CLIENT, lib, strategy, server, group, "orders", *extra], str(log),
                          server_log=str(tmp_path / "serve.log")))
        return procs[-1]
    try:
        yield start
    finally:
        for p in procs:
            p.stop()


def wait_cover(members, timeout=TIMEOUT_S):
    """Until the members' latest assignments are non-empty, disjoint and cover every partition."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for m in members:
            m.drain()
        got = [m.assignment for m in members]
        if all(got):
            flat = [p for a in got for p in a]
            if len(flat) == len(set(flat)) and set(flat) == set(range(PARTITIONS)):
                return got
        time.sleep(0.05)
    raise AssertionError(f"no disjoint cover within {timeout} s: {[m.assignment for m in members]}"
                         + "".join(m.tail() for m in members) + members[0].tail(log=members[0].server_log))


CASES = [
    (("confluent-kafka",) * 3, "range"),
    (("confluent-kafka",) * 3, "cooperative-sticky"),
    (("kafka-python",) * 3, "range"),
    (("kafka-python",) * 3, "roundrobin"),
    (("kafka-python",) * 3, "sticky"),
    (("aiokafka",) * 3, "range"),
    (("confluent-kafka", "kafka-python", "confluent-kafka"), "range"),
]


IDS = [f"{'+'.join(sorted(set(libs)))}-{strategy}" for libs, strategy in CASES]


def _skip_missing(libs):
    for lib in set(libs):
        if not _have(LIBS[lib]):
            pytest.skip(f"{lib} is not installed")


@pytest.mark.parametrize("libs,strategy", CASES, ids=IDS)
def test_group_covers_rebalances_and_keeps_offsets(spawn, libs, strategy):
    _skip_missing(libs)
    group = f"g-{'-'.join(sorted(set(libs)))}-{strategy}"
    members = [spawn(lib, strategy, group) for lib in libs]
    wait_cover(members)
    # Offsets committed by one member are read back by a fresh consumer of the same library.
    owner = members[0]
    partition = owner.assignment[0]
    owner.send(f"commit {partition} 1234")
    owner.expect("COMMITTED")
    # A member that closes: the others cover everything again.
    members[2].send("close")
    members[2].expect("CLOSED")
    wait_cover(members[:2])
    # A member killed outright is dropped after its session timeout.
    members[1].stop()
    got = wait_cover(members[:1], timeout=SESSION_S * 3)
    assert got == [tuple(range(PARTITIONS))]
    fresh = spawn(libs[0], strategy, group + "-reader")
    fresh.send(f"read {partition}")
    assert fresh.expect("OFFSET").split()[2] in ("-1", "None", "-1001")  # another group: none (librdkafka: -1001)
    fresh.stop()
    fresh = spawn(libs[0], strategy, group)
    fresh.send(f"read {partition}")
    assert fresh.expect("OFFSET").split()[2] in ("1234", "OffsetAndMetadata(offset=1234,")


def wait_quiet(members, quiet_s, timeout=TIMEOUT_S):
    """Until no member has run a rebalance callback for ``quiet_s`` (a cooperative rebalance's second
    round, or a rejoin on fresh metadata, may follow the first full cover)."""
    end = time.monotonic() + timeout
    last = time.monotonic()
    while (now := time.monotonic()) < end:
        if any(line.startswith("REBALANCE ") for m in members for line in m.drain()):
            last = now
        elif now - last >= quiet_s:
            return
        time.sleep(0.05)
    raise AssertionError(f"rebalance callbacks still running after {timeout} s" + "".join(m.tail() for m in members))


# Every client here supports static membership: librdkafka's group.instance.id, kafka-python's and aiokafka's
# (0.14) group_instance_id, all sent on JoinGroup v5+.
@pytest.mark.parametrize("libs,strategy", CASES, ids=IDS)
def test_static_member_restart_gets_its_partitions_back_without_a_rebalance(spawn, libs, strategy):
    _skip_missing(libs)
    group = f"static-{'-'.join(sorted(set(libs)))}-{strategy}"
    session = str(STATIC_SESSION_MS)
    members = [spawn(lib, strategy, group, f"instance-{i}", session) for i, lib in enumerate(libs)]
    before = wait_cover(members)
    quiet_s = 10 * HEARTBEAT_S
    wait_quiet(members, quiet_s)
    # The callbacks are wired: without this the "no callback since" check below could pass vacuously.
    for m in members:
        assert any(line.startswith("REBALANCE assigned ") for line in m.lines.history), m.lines.history
    others = members[1:]
    marks = [len(m.lines.history) for m in others]
    seen = [m.assignment for m in others]
    # Restart member 0 with its instance id, well within the session timeout.
    members[0].stop()
    members[0] = spawn(libs[0], strategy, group, "instance-0", session)
    after = wait_cover(members, timeout=STATIC_SESSION_MS / 1000)
    assert after == before
    # Several heartbeat intervals later the others still ran no rebalance callback since the restart: a
    # rebalance would have reached each of them through a heartbeat's REBALANCE_IN_PROGRESS.
    time.sleep(quiet_s)
    for m, mark, was in zip(others, marks, seen):
        m.drain()
        since = [line for line in m.lines.history[mark:] if line.startswith(("REBALANCE ", "ASSIGN "))]
        assert since == [], f"{since}{m.tail()}"
        assert m.assignment == was
