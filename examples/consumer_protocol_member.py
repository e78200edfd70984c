"""Three KIP-848 consumer-protocol members (``group.protocol=consumer``) share a topic over real sockets.

    python examples/consumer_protocol_member.py                              # a MockCluster started here
    kwire serve --topic orders:12 --config group.consumer.heartbeat.interval.ms=500 \
        --config group.consumer.min.heartbeat.interval.ms=100 &            # or any server that speaks api 68:
    python examples/consumer_protocol_member.py --bootstrap 127.0.0.1:9092
    python tests/librdkafka_mock.py --brokers 1 --topic orders:12 &          # librdkafka's own mock cluster
    python examples/consumer_protocol_member.py --bootstrap 127.0.0.1:PORT

Each member is a :class:`kwire.group.ConsumerProtocolMember` run by a :class:`kwire.group.ConsumerProtocolDriver`.
The three reach disjoint assignments covering every partition; then one leaves and the other two take its
partitions.  Every event is printed as it happens, and the script checks that no partition is ever owned by two
members at once as their events tell it (a partition is given to a new owner only after the old owner revoked
it).  Everything is bounded by ``--seconds``.
"""

import argparse
import asyncio
import sys

from kwire.group import (
    ConsumerProtocolDriver,
    ConsumerProtocolMember,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)

# Kafka's defaults (a 5 s heartbeat) would make the demonstration slow; the bounds must move with the values.
_QUICK = {"group.consumer.heartbeat.interval.ms": 500, "group.consumer.min.heartbeat.interval.ms": 100,
          "group.consumer.session.timeout.ms": 6000, "group.consumer.min.session.timeout.ms": 1000}


class Ownership:
    """Who owns which partition, as the members' events say; ``overlaps`` lists every partition assigned to a
    member while another still owned it."""

    def __init__(self, verbose=True):
        self.owner = {}
        self.overlaps = []
        self.verbose = verbose

    def watcher(self, name):
        def on_event(event):
            if self.verbose:
                print(f"{name}: {type(event).__name__} {list(getattr(event, 'partitions', ()))}", flush=True)
            if isinstance(event, PartitionsAssigned):
                for tp in event.partitions:
                    if self.owner.get(tp, name) != name:
                        self.overlaps.append((tp, self.owner[tp], name))
                    self.owner[tp] = name
            elif isinstance(event, (PartitionsRevoked, PartitionsLost)):
                for tp in event.partitions:
                    if self.owner.get(tp) == name:
                        del self.owner[tp]
        return on_event


def _covered(drivers, topic):
    """Whether the drivers' current assignments are disjoint, each non-empty, and cover the topic."""
    owned = [d.member.assignment for d in drivers]
    flat = [tp for o in owned for tp in o]
    count = drivers[0].partitions_per_topic.get(topic)
    return all(owned) and len(flat) == len(set(flat)) and count is not None and len(flat) == count


async def _until(predicate, deadline, what):
    loop = asyncio.get_running_loop()
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError(f"not reached in time: {what}")
        await asyncio.sleep(0.02)


async def run_group(bootstrap, topic="orders", members=3, seconds=30.0, group="example-848", verbose=True):
    """Form the group, then close its first member; returns ``(before, after, ownership)``: the assignments
    (by member, as (topic, partition) lists) when all ``members`` covered the topic, and after the first left."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    ownership = Ownership(verbose)
    drivers = []
    try:
        for i in range(members):
            member = ConsumerProtocolMember(group, [topic], rebalance_timeout_ms=10_000)
            driver = ConsumerProtocolDriver(member, bootstrap, client_id=f"member-{i}",
                                            on_event=ownership.watcher(f"member-{i}"), request_timeout_ms=5_000)
            drivers.append(await driver.start())

        def names(ds):
            return {d.client_id: sorted(tp for tp, o in ownership.owner.items() if o == d.client_id) for d in ds}

        await _until(lambda: _covered(drivers, topic), deadline, f"{members} members cover {topic}")
        before = names(drivers)
        leaving, rest = drivers[0], drivers[1:]
        await leaving.close()
        await _until(lambda: _covered(rest, topic), deadline, f"{members - 1} members cover {topic}")
        return before, names(rest), ownership
    finally:
        for d in drivers:
            await d.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", help="host:port of a server speaking ConsumerGroupHeartbeat; "
                                            "without it a MockCluster is started on 127.0.0.1")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0, help="give up after this long")
    args = parser.parse_args(argv)

    async def run():
        if args.bootstrap:
            return await run_group(args.bootstrap, args.topic, args.members, args.seconds)
        from kwire.testing import MockCluster
        async with MockCluster(topics={args.topic: 12}, config=_QUICK) as c:
            return await run_group(c.bootstrap_servers, args.topic, args.members, args.seconds)

    before, after, ownership = asyncio.run(run())
    print("with all members:", before)
    print("after the first left:", after)
    if ownership.overlaps:
        print("partitions owned twice:", ownership.overlaps)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
