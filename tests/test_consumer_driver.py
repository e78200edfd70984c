"""KIP-848's consumer-protocol member over real sockets (ConsumerProtocolDriver): three members share a topic,
one leaves and the others take its partitions, against kwire's MockCluster and (slow) librdkafka's own mock
cluster as an independent server.  Servers listen on 127.0.0.1, are bounded in time and stopped by pid."""

import asyncio
import os
import sys

import pytest

from kwire.codec import ErrorCode
from kwire.errors import UnsupportedVersionError
from kwire.group import (
    ConsumerMembershipState,
    ConsumerProtocolDriver,
    ConsumerProtocolMember,
    CoordinatorLost,
    PartitionsLost,
)
from kwire.testing import MockCluster
from tests.processes import stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
from consumer_protocol_member import Ownership, run_group  # noqa: E402 - the runnable example, tested as is

# Kafka's defaults (5 s heartbeats, 45 s sessions) lowered, with their bounds, so a group forms in well under 1 s.
QUICK = {"group.consumer.heartbeat.interval.ms": 200, "group.consumer.min.heartbeat.interval.ms": 100,
         "group.consumer.session.timeout.ms": 3000, "group.consumer.min.session.timeout.ms": 1000}
PARTITIONS = 12
EVERY = {("orders", p) for p in range(PARTITIONS)}


def _check_handover(before, after, ownership):
    assert len(before) == 3 and all(before.values())
    flat = [tp for tps in before.values() for tp in tps]
    assert len(flat) == len(set(flat)) and set(flat) == EVERY
    assert set(after) == {"member-1", "member-2"}
    flat = [tp for tps in after.values() for tp in tps]
    assert len(flat) == len(set(flat)) and set(flat) == EVERY
    assert ownership.overlaps == []


def test_three_members_cover_the_topic_and_hand_over_when_one_leaves():
    async def run():
        async with MockCluster(topics={"orders": PARTITIONS}, config=QUICK) as cluster:
            return await run_group(cluster.bootstrap_servers, "orders", seconds=15, verbose=False)

    _check_handover(*asyncio.run(run()))


async def _group(cluster, n, ownership, first=0):
    drivers = []
    for i in range(first, first + n):
        member = ConsumerProtocolMember("g", ["orders"], rebalance_timeout_ms=5_000)
        drivers.append(await ConsumerProtocolDriver(member, cluster.bootstrap_servers.split(",")[0],
                                                    client_id=f"member-{i}", on_event=ownership.watcher(f"member-{i}"),
                                                    request_timeout_ms=3_000).start())
    return drivers


async def _until(predicate, seconds=10):
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not predicate():
        assert loop.time() < end, "not reached in time"
        await asyncio.sleep(0.02)


def _covered(drivers):
    flat = [tp for d in drivers for tp in d.member.assignment]
    return all(d.member.assignment for d in drivers) and len(flat) == len(set(flat)) == PARTITIONS


def _settled_pair(scenario, brokers=1):
    """Two members settle on a MockCluster, then ``await scenario(cluster, drivers, ownership)``; whatever it
    did, no member may have lost a partition or shared one, and every member is STABLE at the end."""
    async def run():
        async with MockCluster(topics={"orders": PARTITIONS}, brokers=brokers, config=QUICK) as cluster:
            ownership = Ownership(verbose=False)
            drivers = await _group(cluster, 2, ownership)
            try:
                await _until(lambda: _covered(drivers))
                await scenario(cluster, drivers, ownership)
                assert all(d.member.state is ConsumerMembershipState.STABLE for d in drivers)
                assert not any(isinstance(e, PartitionsLost) for d in drivers for e in d.events)
                assert ownership.overlaps == []
            finally:
                for d in drivers:
                    await d.close()
    asyncio.run(run())


def test_a_moved_coordinator_is_found_again_and_heartbeats_resume():
    """NOT_COORDINATOR (the coordinator moved): a member reports CoordinatorLost, the driver runs FindCoordinator
    and calls coordinator_found, and the members carry on with their assignments (a consumer group's state lives
    in the log, so the new coordinator knows them): a third member joining gets its share, which needs the first
    two to heartbeat and revoke."""
    async def scenario(cluster, drivers, ownership):
        owned = [d.member.assignment for d in drivers]
        cluster.move_coordinator("g")
        await _until(lambda: any(isinstance(e, CoordinatorLost) for d in drivers for e in d.events))
        await asyncio.sleep(0.5)
        assert [d.member.assignment for d in drivers] == owned
        drivers += await _group(cluster, 1, ownership, first=2)
        await _until(lambda: _covered(drivers))
    _settled_pair(scenario, brokers=2)


def test_coordinator_not_available_is_retried_without_losing_the_assignment():
    async def scenario(cluster, drivers, ownership):
        owned = [d.member.assignment for d in drivers]
        cluster.fail("ConsumerGroupHeartbeat", ErrorCode.COORDINATOR_NOT_AVAILABLE, 2)
        cluster.fail("FindCoordinator", ErrorCode.COORDINATOR_NOT_AVAILABLE, 1)
        await _until(lambda: sum(isinstance(e, CoordinatorLost) for d in drivers for e in d.events) == 2)
        assert [d.member.assignment for d in drivers] == owned
        # Heartbeats resume once the (retried) lookup answers: a third member gets its share from the others.
        drivers += await _group(cluster, 1, ownership, first=2)
        await _until(lambda: _covered(drivers))
    _settled_pair(scenario)


def test_dropped_connections_are_reopened_and_the_members_stay():
    async def scenario(cluster, drivers, ownership):
        opened = [d.connections_opened for d in drivers]
        cluster.drop_connections()
        await _until(lambda: all(d.connections_opened > o for d, o in zip(drivers, opened)))
        await asyncio.sleep(0.5)
        assert _covered(drivers)
    _settled_pair(scenario)


def test_a_server_without_the_consumer_protocol_is_refused_at_start():
    async def run():
        async with MockCluster(topics={"orders": 1},
                               config={"group.coordinator.rebalance.protocols": "classic"}) as cluster:
            driver = ConsumerProtocolDriver(ConsumerProtocolMember("g", ["orders"]), cluster.bootstrap_servers)
            with pytest.raises(UnsupportedVersionError, match="ConsumerGroupHeartbeat"):
                await driver.start()
            await driver.close(linger_s=0)
    asyncio.run(run())


@pytest.mark.slow
def test_three_members_against_librdkafkas_mock_cluster(tmp_path):
    """librdkafka's own mock cluster (three brokers, the coordinator not necessarily the bootstrap broker) as an
    independent server for the same handover."""
    pytest.importorskip("confluent_kafka")
    from tests.test_consumer848_clients import start_librdkafka_mock

    proc, bootstrap = start_librdkafka_mock(str(tmp_path / "mock.log"))
    try:
        first = bootstrap.split(",")[0]
        _check_handover(*asyncio.run(run_group(first, "orders", seconds=40, verbose=False)))
    finally:
        stop_process(proc)


def test_a_response_with_bytes_after_its_body_is_read_as_java_reads_it():
    """librdkafka's mock writes one byte past its flexible Metadata bodies; Java's clients read the fields and
    ignore the rest, and so does the driver.  A frame cut short is still an error."""
    import struct

    from kwire.codec import MetadataResponse, MetadataResponseTopic, encode_response
    from kwire.errors import DecodeError
    from kwire.group._driver import _decode

    frame = encode_response(MetadataResponse(topics=[MetadataResponseTopic(name="orders", topic_id=b"\x02" * 16)]),
                            12, correlation_id=3)
    longer = struct.pack(">i", len(frame) - 3) + frame[4:] + b"\x00"
    assert _decode(longer, 3, 12).topics[0].topic_id == b"\x02" * 16
    shorter = struct.pack(">i", len(frame) - 5) + frame[4:-1]
    with pytest.raises(DecodeError):
        _decode(shorter, 3, 12)
