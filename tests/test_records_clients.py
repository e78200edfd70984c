"""Real producers and consumers, each its own process (tests/records_client.py), through the mock cluster.

Each case checks that every record comes back exactly as sent (key, value, headers, timestamp, null key and
value), in order within its partition, at contiguous offsets from 0, and that the cluster stored each once.
The one case in the default run (confluent-kafka to confluent-kafka, three brokers) takes a few seconds; the
matrix of producers, compressions and consumers is marked slow.  Every process is bounded in time.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

from kwire.testing import MockCluster
from tests.records_client import null_header_values, records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = os.path.join(ROOT, "tests", "records_client.py")
TIMEOUT_S = 90
COUNT = 400
LIBS = {"confluent-kafka": "confluent_kafka", "kafka-python": "kafka", "aiokafka": "aiokafka"}
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


def _need(lib):
    if importlib.util.find_spec(LIBS[lib]) is None:
        pytest.skip(f"{lib} is not installed")


def _run(*args):
    try:
        done = subprocess.run([sys.executable, CLIENT, *map(str, args)], capture_output=True, text=True,
                              timeout=TIMEOUT_S, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    except subprocess.TimeoutExpired as e:  # subprocess.run has killed it
        raise AssertionError(f"{args[:2]} did not finish in {TIMEOUT_S} s: {(e.stderr or '')[-2000:]}") from None
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def _check_stored(cluster, topic, sent):
    for partition in range(4):
        want = [(k, v, [(hk, hv) for hk, hv in h], t) for p, k, v, h, t in sent if p == partition]
        stored = cluster.records(topic, partition)
        assert [r.offset for r in stored] == list(range(len(want))), "offsets contiguous, stored once"
        got = [(r.key, r.value, [(x.key, x.value) for x in r.headers], r.timestamp) for r in stored]
        assert got == want


def _check_consumed(lines, sent):
    assert lines[-1] == f"DONE {len(sent)}", lines[-3:]
    by_partition = {}
    for text in lines[:-1]:
        row = json.loads(text)
        unhex = (lambda h: None if h is None else bytes.fromhex(h))
        by_partition.setdefault(row["p"], []).append(
            (row["o"], unhex(row["k"]), unhex(row["v"]), [(k, unhex(v)) for k, v in row["h"]], row["t"]))
    for partition in range(4):
        want = [(k, v, list(h), t) for p, k, v, h, t in sent if p == partition]
        got = by_partition.get(partition, [])
        assert [o for o, *_ in got] == list(range(len(want)))
        assert [rest for _o, *rest in got] == [list(w) for w in want]


def _round_trip(producer, compression, consumer, brokers=1, count=COUNT):
    _need(producer)
    _need(consumer)
    sent = records(count, len(compression), null_header_values(producer))
    with MockCluster(topics={"rt": 4}, brokers=brokers) as cluster:
        assert _run("produce", producer, cluster.bootstrap_servers, "rt", count, compression, len(compression)) == [
            f"SENT {count}"]
        _check_stored(cluster, "rt", sent)
        _check_consumed(_run("consume", consumer, cluster.bootstrap_servers, "rt", count, "g"), sent)
        assert cluster.committed("g") == {("rt", p): count // 4 for p in range(4)}


def _wait_for(condition, what, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
        time.sleep(0.005)


def test_confluent_producer_to_confluent_consumer_through_three_brokers():
    _round_trip("confluent-kafka", "lz4", "confluent-kafka", brokers=3, count=200)


@pytest.mark.slow
@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("producer", list(LIBS))
def test_every_producer_and_compression(producer, compression):
    # Each producer's records are read back by another library's consumer.
    consumer = {"confluent-kafka": "kafka-python", "kafka-python": "aiokafka", "aiokafka": "confluent-kafka"}[producer]
    _round_trip(producer, compression, consumer)


@pytest.mark.slow
@pytest.mark.parametrize("consumer", list(LIBS))
def test_every_consumer_through_three_brokers(consumer):
    _round_trip("confluent-kafka", "zstd", consumer, brokers=3)


@pytest.mark.slow
def test_an_idempotent_producer_survives_lost_answers_leader_moves_and_a_broker_restart():
    """Answers delayed then lost with their connections (the batches were stored): the producer retries and
    the duplicates are acknowledged, not stored; leaders move and a broker restarts mid-stream."""
    _need("confluent-kafka")
    count = 4000
    sent = records(count, 1, True)
    with MockCluster(topics={"rt": 4}, brokers=3) as cluster:
        bootstrap = cluster.bootstrap_servers
        store = cluster.server.store
        appends = []
        append = store.append
        store.append = lambda *args: appends.append(args[:2]) or append(*args)  # counts the retried batches too
        proc = subprocess.Popen([sys.executable, CLIENT, "produce", "confluent-kafka", bootstrap, "rt", str(count),
                                 "none", "1", "0.05"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
        try:
            _wait_for(lambda: appends, "the producer's first batch")
            cluster.add_latency(500, "Produce")
            seen = len(appends)
            _wait_for(lambda: len(appends) > seen, "a batch stored while its answer waits")
            cluster.drop_connections()          # answers in flight are lost; the batches are stored
            cluster.add_latency(0, "Produce")
            time.sleep(0.2)
            for p in range(4):
                cluster.move_leader("rt", p)
            time.sleep(0.2)
            cluster.broker_down(1)
            time.sleep(0.3)
            cluster.broker_up(1)
            out, err = proc.communicate(timeout=TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        assert proc.returncode == 0 and out.split() == ["SENT", str(count)], err[-3000:]
        _check_stored(cluster, "rt", sent)
        stored = sum(len(log.batches) for log in store.logs.values())
        assert len(appends) > stored, "no batch was sent again: the lost answers did not happen"
        _check_consumed(_run("consume", "confluent-kafka", cluster.bootstrap_servers, "rt", count, "g"), sent)


def _member(bootstrap, idle_s=10.0, pace_s=0.002):  # idle longer than a session (6 s)
    return subprocess.Popen([sys.executable, CLIENT, "member", "confluent-kafka", bootstrap, "rt", str(idle_s), "g",
                             str(pace_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))


def _offsets_read(*outputs):
    seen = {}
    for out in outputs:
        for text in out.splitlines():
            if text.startswith("{"):
                row = json.loads(text)
                seen.setdefault(row["p"], set()).add(row["o"])
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("how", ["close", "SIGKILL"])
def test_a_group_that_loses_and_gains_a_member_mid_stream_reads_every_record(how):
    """Two slow members share four partitions; one leaves (closes, or is killed) mid-stream and a third joins:
    every offset is read at least once, none is skipped, and the group commits the end of every partition."""
    _need("confluent-kafka")
    count = 3000
    with MockCluster(topics={"rt": 4}, config={"group.initial.rebalance.delay.ms": 500}) as cluster:
        for i in range(count):
            cluster.produce("rt", b"v%d" % i, partition=i % 4)
        first, second = _member(cluster.bootstrap_servers), _member(cluster.bootstrap_servers)
        procs = [first, second]
        try:
            _wait_for(lambda: sum(cluster.committed("g").values()) > 200, "the group's first commits")
            if how == "close":
                first.stdin.write("close\n")
                first.stdin.flush()
            else:
                first.kill()
            third = _member(cluster.bootstrap_servers)
            procs.append(third)
            outputs = [p.communicate(timeout=TIMEOUT_S)[0] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(10)
        seen = _offsets_read(*outputs)
        assert {p: sorted(seen.get(p, ())) for p in range(4)} == {p: list(range(count // 4)) for p in range(4)}
        assert cluster.committed("g") == {("rt", p): count // 4 for p in range(4)}
