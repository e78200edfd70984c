"""``kwire record`` between real consumer-protocol clients and ``kwire serve``.

``kwire serve`` advertises the recorder's address (``--advertise``), so every connection of the clients, the
coordinator's included, goes through ``kwire record``.  Three confluent-kafka consumers with
``group.protocol=consumer`` (tests/consumer848_client.py, each its own process) join; one closes (a leave
heartbeat at epoch -1), one is killed with SIGKILL (fenced after the session timeout), the last one is then
given everything and asked for the group's state with ConsumerGroupDescribe.  The capture must hold their
ConsumerGroupHeartbeat traffic, paired by the batch decoder (``kwire.codec.batch_decoder()``), with the member
epochs and assignments the server gave: what the clients' own callbacks saw and what the server describes.

Every process listens on 127.0.0.1, is bounded in time and is stopped by its pid.
"""

import collections
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("pyarrow")

from kwire import codec  # noqa: E402
from kwire.codec import ApiKey  # noqa: E402
from tests.processes import stop_process  # noqa: E402
from tests.test_consumer848_clients import Member  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = os.path.join(ROOT, "tests", "consumer848_client.py")
HAVE_CONFLUENT = importlib.util.find_spec("confluent_kafka") is not None
TOPIC, PARTITIONS = "orders", 6
SESSION_MS, HEARTBEAT_MS = 6000, 500
TIMEOUT_S = 40
KIP848 = [f"group.consumer.session.timeout.ms={SESSION_MS}", "group.consumer.min.session.timeout.ms=1000",
          f"group.consumer.heartbeat.interval.ms={HEARTBEAT_MS}", "group.consumer.min.heartbeat.interval.ms=100"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=TIMEOUT_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def test_serve_advertises_the_address_it_is_given(tmp_path):
    # Quick: Metadata and FindCoordinator name the advertised address, not the listener.
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--topic", "t:2",
                             "--advertise", "127.0.0.1:4242"], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        line = proc.stdout.readline()
        assert line.startswith("kwire serve: listening on "), line
        host, _, port = line[len("kwire serve: listening on "):].split()[0].rpartition(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            f = s.makefile("rb")
            for corr, (req, version) in enumerate([(codec.MetadataRequest(topics=None), 9),
                                                   (codec.FindCoordinatorRequest(key="g"), 2)]):
                s.sendall(codec.encode_request(req, version, corr, "t"))
                size = int.from_bytes(f.read(4), "big")
                _, resp = codec.decode_response(size.to_bytes(4, "big") + f.read(size), req.api_key, version)
                if isinstance(resp, codec.MetadataResponse):
                    assert [(b.host, b.port) for b in resp.brokers] == [("127.0.0.1", 4242)]
                else:
                    assert (resp.host, resp.port) == ("127.0.0.1", 4242)
    finally:
        stop_process(proc)


def member(name, bootstrap, tmp_path):
    """One tests/consumer848_client.py process (its events, ``owned`` and ``member_id`` from its callbacks)."""
    return Member([sys.executable, CLIENT, "--bootstrap", bootstrap, "--group", "rec848", "--topic", TOPIC,
                   "--run-seconds", "90"], str(tmp_path / f"{name}.log"), str(tmp_path / "serve.log"))


def wait_for(clients, predicate, what, timeout=TIMEOUT_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for c in clients:
            c.drain()
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"not {what} in {timeout} s: " + "; ".join(f"{c.name}: {c.events[-5:]}" for c in clients))


def describe(bootstrap):
    host, _, port = bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        f = s.makefile("rb")
        req = codec.ConsumerGroupDescribeRequest(group_ids=["rec848"])
        s.sendall(codec.encode_request(req, 0, 1, "test"))
        size = int.from_bytes(f.read(4), "big")
        return codec.decode_response(size.to_bytes(4, "big") + f.read(size), req.api_key, 0)[1].groups[0]


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_CONFLUENT, reason="confluent-kafka is not installed")
def test_record_captures_consumer_protocol_heartbeats(tmp_path):
    from kwire.pipeline import decode_capture

    proxy_port = free_port()
    capture = tmp_path / "capture.parquet"
    procs, clients = [], []
    serve = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--topic",
                              f"{TOPIC}:{PARTITIONS}", "--advertise", f"127.0.0.1:{proxy_port}",
                              *[a for kv in KIP848 for a in ("--config", kv)]],
                             stdout=subprocess.PIPE, stderr=open(tmp_path / "serve.log", "w"), text=True, cwd=ROOT,
                             env=dict(os.environ, PYTHONPATH=ROOT))
    procs.append(serve)
    try:
        line = serve.stdout.readline()
        assert line.startswith("kwire serve: listening on "), line
        upstream = line[len("kwire serve: listening on "):].split()[0]
        record = subprocess.Popen([sys.executable, "-m", "kwire", "record", str(capture), "--upstream", upstream,
                                   "--listen-port", str(proxy_port), "--duration", "120"],
                                  stdout=subprocess.DEVNULL, stderr=open(tmp_path / "record.log", "w"), cwd=ROOT,
                                  env=dict(os.environ, PYTHONPATH=ROOT))
        procs.append(record)
        wait_port(proxy_port, record)
        bootstrap = f"127.0.0.1:{proxy_port}"
        for name in "ABC":
            clients.append(member(name, bootstrap, tmp_path))
            if name == "A":
                wait_for(clients, lambda: len(clients[0].owned) == PARTITIONS, "A owns everything")
        a, b, c = clients
        wait_for(clients, lambda: all(x.owned for x in clients) and
                 sum(len(x.owned) for x in clients) == PARTITIONS, "three members share the topic")
        owned_by_id = {x.member_id: set(x.owned) for x in clients}
        c.close()   # SIGTERM: the consumer closes, a leave heartbeat at -1
        b.kill()    # SIGKILL: fenced after the session timeout
        wait_for([a], lambda: len(a.owned) == PARTITIONS, "A owns everything again", SESSION_MS / 1000 + TIMEOUT_S)
        time.sleep(2 * HEARTBEAT_MS / 1000)
        described = describe(bootstrap)
        a.close()
        record.send_signal(signal.SIGINT)
        record.wait(TIMEOUT_S)
    finally:
        for x in clients:
            x.stop()
        for p in reversed(procs):
            stop_process(p)

    # kwire.codec.batch_decoder(), through the pipeline's decode: every response paired with its request, the
    # consumer protocol's columns (member epoch in generation_id, assignment in topic_partitions).
    rows = decode_capture(capture).to_pylist()
    assert not [r for r in rows if r["decode_error"]], "undecodable frames"
    hb = [r for r in rows if r["api_key"] == ApiKey.CONSUMER_GROUP_HEARTBEAT]
    requests = {r["seq"]: r for r in hb if r["direction"] == 0}
    answered = [(requests[r["request_seq"]], r) for r in hb if r["direction"] == 1]
    assert 0 <= len(requests) - len(answered) <= 1   # only the killed member's last may be unanswered
    assert {r["group_id"] for r in hb} == {"rec848"}
    joins = [r["member_id"] for r in requests.values() if r["generation_id"] == 0]
    leaves = [r["member_id"] for r in requests.values() if r["generation_id"] == -1]
    assert len(set(joins)) >= 3 and leaves.count(c.member_id) == 1 and a.member_id in leaves
    # Per member, the epochs the server gave only go up, and the last assignment it gave before each member's
    # end is what the member's own callbacks held.
    epochs = collections.defaultdict(list)
    last_assignment = {}
    ids = set()
    for req, resp in answered:
        if resp["error_code"] or req["generation_id"] < 0:
            continue
        assert resp["heartbeat_interval_ms"] == HEARTBEAT_MS
        epochs[resp["member_id"]].append(resp["generation_id"])
        if resp["topic_partitions"] is not None:
            last_assignment[resp["member_id"]] = {p for tp in resp["topic_partitions"] for p in tp["partitions"]}
            ids.update(tp["topic_id"] for tp in resp["topic_partitions"])
    for member_id, es in epochs.items():
        assert es == sorted(es) and es[-1] > 0, (member_id, es)
    assert last_assignment[a.member_id] == set(range(PARTITIONS))
    # B, killed while it held its share: the last assignment the server sent it is what its callbacks held then.
    assert last_assignment[b.member_id] == owned_by_id[b.member_id]
    # The server's own account at the end: A alone, at the epoch its last heartbeat answer carried.
    assert described.error_code == 0 and [m.member_id for m in described.members] == [a.member_id]
    assert described.members[0].member_epoch == epochs[a.member_id][-1] == described.assignment_epoch
    # Metadata v10+ through the recorder names the topic id the assignments use.
    named = {i for r in rows if r["api_key"] == ApiKey.METADATA and r["direction"] == 1 and r["topic_ids"]
             for i, name in zip(r["topic_ids"], r["topics"]) if name == TOPIC}
    assert len(ids) == 1 and ids == named


def test_the_committed_sample_holds_what_its_readme_says():
    # examples/sample848: A joins, B and C join, C leaves (-1), B is fenced after its session timeout, A leaves.
    from kwire.pipeline import decode_capture

    rows = decode_capture(os.path.join(ROOT, "examples", "sample848", "capture.parquet")).to_pylist()
    hb = [r for r in rows if r["api_key"] == ApiKey.CONSUMER_GROUP_HEARTBEAT]
    assert {r["api_version"] for r in hb} == {1}   # librdkafka 2.16's version
    requests = {r["seq"]: r for r in hb if r["direction"] == 0}
    answers = [(requests[r["request_seq"]], r) for r in hb if r["direction"] == 1]
    joins = [r["member_id"] for r in requests.values() if r["generation_id"] == 0]
    leaves = [r["member_id"] for r in requests.values() if r["generation_id"] == -1]
    assert len(joins) == 3 and len(leaves) == 2 and set(leaves) < set(joins)
    a = joins[0]
    epochs = [resp["generation_id"] for req, resp in answers if req["generation_id"] >= 0]
    assert sorted(set(epochs)) == [1, 2, 3, 4, 5] and not [r for _, r in answers if r["error_code"]]
    given = [(resp["member_id"], sorted((tp["topic_id"], p) for tp in resp["topic_partitions"]
                                        for p in tp["partitions"])) for _, resp in answers
             if resp["topic_partitions"] is not None]
    assert given[0][0] == a and len(given[0][1]) == 9 and given[-1] == given[0]


def test_the_committed_samples_analysis_reads_bs_removal_as_its_session_timeout():
    # The coordinator's 6 s session is in no frame: B's removal is read from A being given B's partitions at
    # epoch 5 after B fell silent, not from Kafka's 45 s default (which the 40 s capture never reaches).
    import pyarrow as pa

    from kwire.pipeline import decode_capture
    from kwire.pipeline._consumer_tables import consumer_tables, consumer_timelines
    from kwire.pipeline._events import EVENT_COLUMNS
    from tests.analysis_frames import events_from_frames

    events = events_from_frames(decode_capture(os.path.join(ROOT, "examples", "sample848", "capture.parquet")))
    t = consumer_tables(consumer_timelines(pa.Table.from_pandas(events[EVENT_COLUMNS], preserve_index=False)))
    recs = t["reconciliations"].to_pylist()
    assert [r["trigger"] for r in recs] == ["initial", "member_joined", "member_joined", "member_left",
                                            "session_timeout"]
    assert [r["outcome"] for r in recs] == ["stable"] * 5
    (timeout,) = [r for r in t["consumer_membership"].to_pylist() if r["kind"] == "session_timeout"]
    assert recs[-1]["fenced"] == [timeout["member_id"]] and timeout["ts"] == recs[-1]["start_ts"]
    assert 6000 <= timeout["silent_ms"] < 7000     # the coordinator's 6 s session, and at most one heartbeat more
