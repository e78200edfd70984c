"""Three kwire ConsumerMembers form a group over real sockets.

    python examples/group/consumer_group.py                      # against a MockCluster started here
    python examples/group/consumer_group.py 127.0.0.1:9092 orders  # against a running broker (kwire serve, Tansu)

Each member prints what it is assigned; the three assignments are disjoint and cover every partition.
"""

import asyncio
import sys

from kwire.group import ConsumerMember, MemberDriver


async def form_group(bootstrap, topic, members=3, strategy="range", timeout_s=30):
    drivers = []
    for i in range(members):
        member = ConsumerMember("example-group", [topic], assignors=(strategy,), client_id=f"example-{i}",
                                session_timeout_ms=10_000, heartbeat_interval_ms=500)
        drivers.append(await MemberDriver(member, bootstrap).start())
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    try:
        while loop.time() < end:
            owned = [d.member.owned for d in drivers]
            flat = [tp for o in owned for tp in o]
            if all(owned) and len(flat) == len(set(flat)) and {p for _t, p in flat} == set(range(
                    drivers[0].member.partitions_per_topic[topic])):
                return {d.member.client_id: sorted(d.member.owned) for d in drivers}
            await asyncio.sleep(0.05)
        raise TimeoutError(f"no disjoint cover within {timeout_s} s")
    finally:
        for d in drivers:
            await d.close()


async def main(argv):
    if argv:
        bootstrap, topic = argv[0], argv[1] if len(argv) > 1 else "orders"
        result = await form_group(bootstrap, topic)
    else:
        from kwire.testing import MockCluster
        async with MockCluster(topics={"orders": 12}) as cluster:
            result = await form_group(cluster.bootstrap_servers, "orders")
    for name, partitions in result.items():
        print(name, partitions)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
