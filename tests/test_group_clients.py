"""Real consumers, each its own process, form groups against ``kwire serve``.

confluent-kafka (librdkafka), kafka-python 3.x and aiokafka, alone and mixed: three members reach disjoint
assignments covering every partition; a member that closes hands its partitions to the others; a member
killed with SIGKILL is dropped after its session timeout; offsets committed by one consumer are read back
by a fresh one.  Every process is bounded in time and stopped by pid; the server listens on 127.0.0.1.
"""

import importlib.util
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = os.path.join(ROOT, "tests", "group_client.py")
PARTITIONS = 12
TIMEOUT_S = 40
SESSION_S = 6  # tests/group_client.py's session.timeout.ms

pytestmark = pytest.mark.slow


def _have(module):
    return importlib.util.find_spec(module) is not None


LIBS = {"confluent-kafka": "confluent_kafka", "kafka-python": "kafka", "aiokafka": "aiokafka"}


class Proc:
    """A child process whose output lines are collected by a thread."""

    def __init__(self, args):
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
        self.lines = queue.Queue()
        self.assignment = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def drain(self):
        out = []
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return out
            if line.startswith("ASSIGN "):
                self.assignment = tuple(int(p) for p in line[7:].strip("[]").split(",") if p.strip())
            out.append(line)

    def expect(self, prefix, timeout=TIMEOUT_S):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if line.startswith("ASSIGN "):
                self.assignment = tuple(int(p) for p in line[7:].strip("[]").split(",") if p.strip())
            if line.startswith(prefix):
                return line
        raise AssertionError(f"no {prefix!r} line within {timeout} s")

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(TIMEOUT_S)


@pytest.fixture
def server():
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--topic",
                             f"orders:{PARTITIONS}", "--initial-rebalance-delay-ms", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        line = proc.stdout.readline()
        assert "listening on " in line, line
        yield line.split("listening on ")[1].split()[0]
    finally:
        stop_process(proc, kill_wait_s=TIMEOUT_S)


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
    raise AssertionError(f"no disjoint cover within {timeout} s: {[m.assignment for m in members]}")


CASES = [
    (("confluent-kafka",) * 3, "range"),
    (("confluent-kafka",) * 3, "cooperative-sticky"),
    (("kafka-python",) * 3, "range"),
    (("kafka-python",) * 3, "roundrobin"),
    (("kafka-python",) * 3, "sticky"),
    (("aiokafka",) * 3, "range"),
    (("confluent-kafka", "kafka-python", "confluent-kafka"), "range"),
]


@pytest.mark.parametrize("libs,strategy", CASES, ids=lambda v: v if isinstance(v, str) else "+".join(sorted(set(v))))
def test_group_covers_rebalances_and_keeps_offsets(server, libs, strategy):
    for lib in set(libs):
        if not _have(LIBS[lib]):
            pytest.skip(f"{lib} is not installed")
    group = f"g-{'-'.join(sorted(set(libs)))}-{strategy}"
    members = [Proc([sys.executable, CLIENT, lib, strategy, server, group, "orders"]) for lib in libs]
    fresh = None
    try:
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
        fresh = Proc([sys.executable, CLIENT, libs[0], strategy, server, group + "-reader", "orders"])
        fresh.send(f"read {partition}")
        assert fresh.expect("OFFSET").split()[2] in ("-1", "None", "-1001")  # another group: none (librdkafka: -1001)
        fresh.stop()
        fresh = Proc([sys.executable, CLIENT, libs[0], strategy, server, group, "orders"])
        fresh.send(f"read {partition}")
        assert fresh.expect("OFFSET").split()[2] in ("1234", "OffsetAndMetadata(offset=1234,")
    finally:
        for m in members + ([fresh] if fresh else []):
            m.stop()


STATIC_CASES = [("kafka-python", "range"), ("confluent-kafka", "range")]


@pytest.mark.parametrize("lib,strategy", STATIC_CASES, ids=lambda v: v)
def test_static_member_restart_gets_its_partitions_back_without_a_rebalance(server, lib, strategy):
    if not _have(LIBS[lib]):
        pytest.skip(f"{lib} is not installed")
    group = f"static-{lib}-{strategy}"
    members = [Proc([sys.executable, CLIENT, lib, strategy, server, group, "orders", f"instance-{i}"])
               for i in range(3)]
    try:
        before = wait_cover(members)
        for m in members[1:]:
            m.drain()
        seen = [m.assignment for m in members[1:]]
        # Restart member 0 with its instance id, well within the session timeout.
        members[0].stop()
        members[0] = Proc([sys.executable, CLIENT, lib, strategy, server, group, "orders", "instance-0"])
        after = wait_cover(members, timeout=SESSION_S)
        assert after == before
        # The others printed no new assignment: no rebalance reached them.
        for m, was in zip(members[1:], seen):
            assert [line for line in m.drain() if line.startswith("ASSIGN ")] == []
            assert m.assignment == was
    finally:
        for m in members:
            m.stop()
