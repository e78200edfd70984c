"""The mock cluster's topics, configuration, brokers and faults, and what it survives: a client that never reads,
a Metadata request it could not answer, a good request followed by a bad frame."""

import asyncio
import struct

import pytest

from kwire import codec
from kwire.codec import ErrorCode as E
from kwire.errors import ArgumentValueError
from kwire.group import ConsumerGroupConfig
from kwire.testing import CONFIG_KEYS, MockCluster
from kwire.testing._config import resolve
from tests.test_mock_records import batch, fetch, produce
from tests.test_serve import Client


def metadata(client, names, version=12, auto=True):
    topics = None if names is None else [codec.MetadataRequestTopic(name=n) for n in names]
    return client.call(codec.MetadataRequest(topics=topics, allow_auto_topic_creation=auto), version)


def test_create_delete_and_grow_topics():
    with MockCluster(config={"num.partitions": 3}) as cluster:
        client = Client(cluster)
        req = codec.CreateTopicsRequest(topics=[
            codec.CreatableTopic(name="a", num_partitions=4, replication_factor=1),
            codec.CreatableTopic(name="b", num_partitions=-1, replication_factor=-1),
            codec.CreatableTopic(name="a", num_partitions=1, replication_factor=1),
            codec.CreatableTopic(name="bad name", num_partitions=1, replication_factor=1),
            codec.CreatableTopic(name="c", num_partitions=1, replication_factor=3)])
        results = client.call(req, 7).topics
        assert [(t.name, t.error_code, t.num_partitions) for t in results] == [
            ("a", E.NONE, 4), ("b", E.NONE, 3), ("a", E.INVALID_REQUEST, -1),
            ("bad name", E.INVALID_TOPIC_EXCEPTION, -1), ("c", E.INVALID_REPLICATION_FACTOR, -1)]
        again = client.call(codec.CreateTopicsRequest(topics=[codec.CreatableTopic(name="a", num_partitions=1,
                                                                                    replication_factor=1)]), 2)
        assert again.topics[0].error_code == E.TOPIC_ALREADY_EXISTS
        grow = client.call(codec.CreatePartitionsRequest(topics=[
            codec.CreatePartitionsTopic(name="a", count=6, assignments=None),
            codec.CreatePartitionsTopic(name="b", count=2, assignments=None)]), 3)
        assert [r.error_code for r in grow.results] == [E.NONE, E.INVALID_PARTITIONS]
        assert {t.name: len(t.partitions) for t in metadata(client, None).topics} == {"a": 6, "b": 3}
        cluster.produce("a", b"x", partition=5)
        tid = cluster.server.topic_ids["a"]
        gone = client.call(codec.DeleteTopicsRequest(topics=[codec.DeleteTopicState(name=None, topic_id=tid)]), 6)
        assert [(r.name, r.error_code) for r in gone.responses] == [("a", E.NONE)]
        gone = client.call(codec.DeleteTopicsRequest(topic_names=["a", "b"], timeout_ms=1000), 5)
        assert [(r.name, r.error_code) for r in gone.responses] == [("a", E.UNKNOWN_TOPIC_OR_PARTITION), ("b", E.NONE)]
        assert metadata(client, None).topics == [] and cluster.server.store.held == 0


def test_metadata_auto_creates_unless_the_request_or_the_config_says_no():
    with MockCluster(config={"num.partitions": 2}) as cluster:
        client = Client(cluster)
        assert [(t.error_code, len(t.partitions)) for t in metadata(client, ["x"], version=3).topics] == [(E.NONE, 2)]
        assert metadata(client, ["y"], auto=False).topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert metadata(client, [".."]).topics[0].error_code == E.INVALID_TOPIC_EXCEPTION
    with MockCluster(config={"auto.create.topics.enable": "false"}) as cluster:
        assert metadata(Client(cluster), ["x"]).topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_metadata_with_a_null_name_is_answered_as_kafka_answers_it():
    with MockCluster(topics={"t": 1}) as cluster:
        client = Client(cluster)
        unknown = [codec.MetadataRequestTopic(name=None, topic_id=b"\x07" * 16)]
        for version in (10, 11):
            (t,) = client.call(codec.MetadataRequest(topics=unknown), version).topics
            assert (t.error_code, t.name) == (E.INVALID_REQUEST, "")
        (t,) = client.call(codec.MetadataRequest(topics=unknown), 12).topics
        assert (t.error_code, t.name) == (E.UNKNOWN_TOPIC_ID, None)
        known = [codec.MetadataRequestTopic(name=None, topic_id=cluster.server.topic_ids["t"])]
        assert client.call(codec.MetadataRequest(topics=known), 12).topics[0].name == "t"
        # The connection stayed open through all of it.
        assert client.call(codec.ApiVersionsRequest(), 3).error_code == E.NONE


def test_config_keys_defaults_bounds_and_aliases():
    config = resolve()
    assert {k: config[k] for k in ("num.partitions", "auto.create.topics.enable")} == {
        "num.partitions": 1, "auto.create.topics.enable": True}
    # The consumer-group keys are kwire.group's, with Kafka's defaults, handed to its coordinator.
    consumer = ConsumerGroupConfig(config)
    assert (consumer.session_timeout_ms, consumer.heartbeat_interval_ms, consumer.assignors,
            consumer.migration_policy) == (45_000, 5_000, ("uniform", "range"), "bidirectional")
    assert config["kwire.storage.total.bytes"] >= 1 << 30 and config["socket.request.max.bytes"] > 1 << 20
    assert ConsumerGroupConfig(resolve({"group.consumer.assignors":
                                        "org.apache.kafka.coordinator.group.assignor.RangeAssignor"})).assignors == (
        "range",)
    for bad, words in (({"nope": 1}, "unknown config key"), ({"num.partitions": 0}, "num.partitions"),
                       ({"num.partitions": "x"}, "integer"), ({"auto.create.topics.enable": "yes"}, "true or false"),
                       ({"group.consumer.session.timeout.ms": 30_000}, "greater than or equal to group.consumer.min"),
                       ({"group.consumer.heartbeat.interval.ms": 20_000}, "less than or equal"),
                       ({"group.consumer.assignors": "sticky"}, "unknown assignor"),
                       ({"group.coordinator.rebalance.protocols": "consumer"}, "must contain classic"),
                       ({"group.min.session.timeout.ms": 10, "group.max.session.timeout.ms": 5}, "not be greater")):
        with pytest.raises(ArgumentValueError, match=words):
            resolve(bad)
    assert all(spec.doc or key.startswith("group.consumer") for key, spec in CONFIG_KEYS.items())
    with pytest.raises(ArgumentValueError, match="same setting"):
        MockCluster(max_groups=3, config={"kwire.max.groups": 4})
    assert MockCluster(max_groups=3).server.limits.max_groups == 3


def test_three_brokers_spread_leaders_and_refuse_what_they_do_not_lead():
    with MockCluster(topics={"t": 6}, brokers=3) as cluster:
        client = Client(cluster)
        meta = metadata(client, None)
        assert sorted(b.node_id for b in meta.brokers) == [0, 1, 2] and len({b.port for b in meta.brokers}) == 3
        leaders = {p.partition_index: p.leader_id for p in meta.topics[0].partitions}
        assert set(leaders.values()) == {0, 1, 2}
        ports = {b.node_id: b.port for b in meta.brokers}
        on = {b: Client(port=ports[b]) for b in ports}
        assert produce(on[leaders[0]], "t", 0, batch(1)).error_code == E.NONE
        wrong = (leaders[0] + 1) % 3
        refused = produce(on[wrong], "t", 0, batch(1), version=10)
        assert refused.error_code == E.NOT_LEADER_OR_FOLLOWER and refused.current_leader.leader_id == leaders[0]
        # Moving the leader: the old one refuses, Metadata names the new one with a new epoch.
        new = cluster.move_leader("t", 0, wrong)
        assert fetch(on[leaders[0]], cluster, "t", [(0, 0, 1 << 20)])[0].error_code == E.NOT_LEADER_OR_FOLLOWER
        part = metadata(client, ["t"]).topics[0].partitions[0]
        assert (part.leader_id, part.leader_epoch) == (new, 1)
        assert fetch(on[new], cluster, "t", [(0, 0, 1 << 20)])[0].error_code == E.NONE
        # The group coordinator is broker 0; the others answer NOT_COORDINATOR.
        hb = codec.HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
        assert on[1].call(hb, 4).error_code == E.NOT_COORDINATOR
        # A broker down: its partitions and the coordinator move; back up on its port.
        cluster.broker_down(0)
        assert on[0].is_closed()
        meta = metadata(on[1], None)
        assert sorted(b.node_id for b in meta.brokers) == [1, 2]
        assert all(p.leader_id in (1, 2) for p in meta.topics[0].partitions)
        coordinator = on[1].call(codec.FindCoordinatorRequest(key="g"), 3)
        assert coordinator.node_id in (1, 2)
        cluster.broker_up(0)
        assert sorted(b.node_id for b in metadata(Client(port=ports[0]), None).brokers) == [0, 1, 2]


def test_partition_faults_count_down():
    with MockCluster(topics={"t": 2}) as cluster:
        client = Client(cluster)
        cluster.fail_partition("Produce", "t", 0, E.NOT_ENOUGH_REPLICAS, count=2)
        assert [produce(client, "t", 0, batch(1)).error_code for _ in range(3)] == [
            E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS, E.NONE]
        assert produce(client, "t", 1, batch(1)).error_code == E.NONE
        cluster.fail_partition("Fetch", "t", 0, E.KAFKA_STORAGE_ERROR)
        assert fetch(client, cluster, "t", [(0, 0, 1 << 20)])[0].error_code == E.KAFKA_STORAGE_ERROR
        assert fetch(client, cluster, "t", [(0, 0, 1 << 20)])[0].error_code == E.NONE
        with pytest.raises(ArgumentValueError):
            cluster.fail_partition("Heartbeat", "t", 0, 1)


def test_a_readable_request_before_a_bad_frame_is_answered_then_the_connection_closes():
    with MockCluster(topics={"t": 1}) as cluster:
        client = Client(cluster)
        good = codec.encode_request(codec.MetadataRequest(topics=None), 9, correlation_id=5, client_id="t")
        client.send_raw(good + struct.pack(">i", -5) + b"junk")
        header, response = codec.decode_response(client.read_frame(), codec.MetadataRequest.api_key, 9)
        assert header.correlation_id == 5 and [t.name for t in response.topics] == ["t"]
        assert client.is_closed()


def test_a_client_that_never_reads_holds_a_bounded_number_of_server_bytes():
    """Pipelined Metadata requests, never read: the server stops reading the connection at its bound and
    resumes once the answers are taken."""
    bound = 64 << 10
    requests = 20_000

    async def run():
        config = {"kwire.connection.max.buffered.bytes": bound, "kwire.connection.max.inflight.requests": 16}
        async with MockCluster(topics={f"topic-{i}": 8 for i in range(4)}, config=config) as cluster:
            reader, writer = await asyncio.open_connection(cluster.host, cluster.port)
            frame = codec.encode_request(codec.MetadataRequest(topics=None), 9, correlation_id=1, client_id="t")
            writer.write(frame * requests)
            peak = 0
            for _ in range(40):
                await asyncio.sleep(0.01)
                peak = max(peak, cluster.server.buffered())
            answer = len(codec.encode_response(codec.MetadataResponse(), 9, 1)) + 4 * 8 * 60
            # The bound, the answer that crossed it, one socket read (256 KiB) of split frames.
            assert 0 < peak < bound + 4 * answer + (256 << 10) + 16 * answer
            got = 0
            while got < requests:
                size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 10))[0]
                await asyncio.wait_for(reader.readexactly(size), 10)
                got += 1
            writer.close()
            assert cluster.server.buffered() < bound
    asyncio.run(run())


def test_kwire_serve_takes_config_keys_and_brokers(tmp_path):
    import os
    import subprocess
    import sys

    from tests.processes import stop_process
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    bad = subprocess.run([sys.executable, "-m", "kwire", "serve", "--config", "no.such.key=1"], capture_output=True,
                         text=True, timeout=60, cwd=root, env=env)
    assert bad.returncode != 0 and "unknown config key 'no.such.key'" in bad.stderr
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--brokers", "2",
                             "--config", "num.partitions=3", "--max-groups", "5", "--control", "stdin"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=root, env=env)
    try:
        first, second = proc.stdout.readline(), proc.stdout.readline()
        port = int(first.split("listening on 127.0.0.1:")[1].split()[0])
        assert "broker 1 listening on 127.0.0.1:" in second
        client = Client(port=port)
        assert [len(t.partitions) for t in metadata(client, ["auto"]).topics] == [3]
        for line, answer in (("broker-down 9", "error: "), ("broker-down 1", "ok: "), ("stats", "ok: stats stored=0"),
                             ("leader auto 0 0", "ok: leader auto 0 0 -> broker 0")):
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            assert proc.stdout.readline().startswith(answer), line
        assert [b.node_id for b in metadata(client, None).brokers] == [0]
    finally:
        stop_process(proc)


def test_a_consumer_that_never_reads_its_fetch_answers_holds_about_one_of_them():
    """Megabyte Fetch answers pipelined and never read: the server holds about one answer beyond its bound."""
    from tests.test_mock_records import fetch_request

    bound = 64 << 10
    answer = 1 << 20

    async def run():
        config = {"kwire.connection.max.buffered.bytes": bound}
        async with MockCluster(topics={"t": 1}, config=config) as cluster:
            for _ in range(24):
                cluster.produce("t", b"x" * (answer // 2), partition=0)
            reader, writer = await asyncio.open_connection(cluster.host, cluster.port)
            frame = codec.encode_request(fetch_request(cluster, "t", [(0, 0, answer)], max_bytes=answer), 12,
                                         correlation_id=1, client_id="t")
            writer.write(frame * 200)
            peak = 0
            for _ in range(40):
                await asyncio.sleep(0.01)
                peak = max(peak, cluster.server.buffered())
            # 200 answers of 1 MiB were asked for; what stays in the server is the bound and about one answer
            # (the sockets' own buffers take a few more).
            assert 0 < peak < bound + 2 * answer + (256 << 10)
            for _ in range(200):
                size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 10))[0]
                await asyncio.wait_for(reader.readexactly(size), 10)
            writer.close()
    asyncio.run(run())
