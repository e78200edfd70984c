"""One real consumer as a process, for tests/test_group_clients.py.

    python tests/group_client.py LIB STRATEGY BOOTSTRAP GROUP TOPIC [INSTANCE_ID [SESSION_MS]]

LIB is confluent-kafka, kafka-python or aiokafka.  It prints ``ASSIGN [partitions]`` each time its
assignment changes, ``REBALANCE revoked|assigned [partitions]`` from the client's own rebalance callbacks
(so a test sees a rebalance even when the assignment comes back the same), ``COMMITTED p offset`` after
committing, ``OFFSET p offset`` for what it reads back, and reads commands from standard input:
``commit P OFFSET``, ``read P``, ``close`` (leave and exit).
"""

import asyncio
import json
import queue
import sys
import threading

SESSION_MS = 6000
HEARTBEAT_MS = 300
# How long a client may wait for its topic's metadata before it joins: far above a loopback round trip.
METADATA_WAIT_S = 20


def say(text):
    print(text, flush=True)


def said_rebalance(what, partitions):
    say(f"REBALANCE {what} " + json.dumps(sorted(tp.partition for tp in partitions)))


def printing_listener(base):
    """A rebalance listener that prints its callbacks; ``base`` is the client's ConsumerRebalanceListener
    (kafka-python's and aiokafka's are distinct classes with the same two methods)."""
    class Listener(base):
        def on_partitions_revoked(self, revoked):
            said_rebalance("revoked", revoked)

        def on_partitions_assigned(self, assigned):
            said_rebalance("assigned", assigned)
    return Listener()


def commands():
    q = queue.Queue()

    def read():
        for line in sys.stdin:
            q.put(line.split())
        q.put(["close"])
    threading.Thread(target=read, daemon=True).start()
    return q


def said_assignment(partitions, last):
    """Prints ``ASSIGN`` when the assignment differs from ``last``; returns it as the next ``last``."""
    now = sorted(tp.partition for tp in partitions)
    if now != last:
        say("ASSIGN " + json.dumps(now))
    return now


def serve(q, poll, assignment, commit, committed, close):
    """A blocking client's loop: poll, print a changed assignment, run one command from standard input. Each
    argument is one call of the client's own API (the run_* function shows which); commit takes (partition,
    offset), committed a partition and returns what to print for it."""
    last = None
    while True:
        poll()
        last = said_assignment(assignment(), last)
        try:
            cmd = q.get_nowait()
        except queue.Empty:
            continue
        if cmd[0] == "commit":
            commit(int(cmd[1]), int(cmd[2]))
            say(f"COMMITTED {cmd[1]} {cmd[2]}")
        elif cmd[0] == "read":
            say(f"OFFSET {cmd[1]} {committed(int(cmd[1]))}")
        elif cmd[0] == "close":
            close()
            return


def run_kafka_python(strategy, bootstrap, group, topic, instance, session_ms, q):
    import time

    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                "sticky": StickyPartitionAssignor}[strategy]
    extra = {"group_instance_id": instance} if instance else {}
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, partition_assignment_strategy=[assignor],
                             session_timeout_ms=session_ms, heartbeat_interval_ms=HEARTBEAT_MS, fetch_max_wait_ms=100,
                             enable_auto_commit=False, **extra)
    consumer.subscribe([topic], listener=printing_listener(ConsumerRebalanceListener))
    # kafka-python 3.0.12 joins on its first poll. Joined before it knows the topic, a lone leader assigns
    # nothing and rejoins once metadata arrives; when poll(100) times out mid-rejoin the client never applies
    # the finished join (its need_rejoin()/join_group_async bug) and stays unassigned for a session or more.
    # Knowing the topic's partitions first means the first join already carries a full assignment.
    deadline = time.monotonic() + METADATA_WAIT_S
    while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
        time.sleep(0.05)
    serve(q, poll=lambda: consumer.poll(100), assignment=consumer.assignment,
          commit=lambda p, offset: consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(offset, "", -1)}),
          committed=lambda p: consumer.committed(TopicPartition(topic, p)), close=consumer.close)


def run_confluent(strategy, bootstrap, group, topic, instance, session_ms, q):
    from confluent_kafka import Consumer, TopicPartition
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": strategy,
            "session.timeout.ms": session_ms, "heartbeat.interval.ms": HEARTBEAT_MS, "enable.auto.commit": False,
            "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000}
    if instance:
        conf["group.instance.id"] = instance
    consumer = Consumer(conf)
    consumer.subscribe([topic], on_assign=lambda _c, parts: said_rebalance("assigned", parts),
                       on_revoke=lambda _c, parts: said_rebalance("revoked", parts))

    def committed(partition):
        (tp,) = consumer.committed([TopicPartition(topic, partition)], timeout=10)
        return tp.offset
    serve(q, poll=lambda: consumer.poll(0.1), assignment=consumer.assignment,
          commit=lambda p, offset: consumer.commit(offsets=[TopicPartition(topic, p, offset)], asynchronous=False),
          committed=committed, close=consumer.close)


async def run_aiokafka(strategy, bootstrap, group, topic, instance, session_ms, q):
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.structs import OffsetAndMetadata
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AioRange
    assignor = {"range": AioRange, "roundrobin": RoundRobinPartitionAssignor}[strategy]
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance,
                                partition_assignment_strategy=[assignor], session_timeout_ms=session_ms,
                                heartbeat_interval_ms=HEARTBEAT_MS, fetch_max_wait_ms=100, enable_auto_commit=False)
    consumer.subscribe([topic], listener=printing_listener(ConsumerRebalanceListener))
    await consumer.start()
    # serve's loop with awaits: aiokafka's poll, commit, committed and stop are coroutines.
    last = None
    while True:
        await consumer.getmany(timeout_ms=100)
        last = said_assignment(consumer.assignment(), last)
        try:
            cmd = q.get_nowait()
        except queue.Empty:
            continue
        if cmd[0] == "commit":
            await consumer.commit({TopicPartition(topic, int(cmd[1])): OffsetAndMetadata(int(cmd[2]), "")})
            say(f"COMMITTED {cmd[1]} {cmd[2]}")
        elif cmd[0] == "read":
            say(f"OFFSET {cmd[1]} {await consumer.committed(TopicPartition(topic, int(cmd[1])))}")
        elif cmd[0] == "close":
            await consumer.stop()
            return


def main(argv):
    lib, strategy, bootstrap, group, topic = argv[:5]
    instance = argv[5] if len(argv) > 5 and argv[5] else None
    session_ms = int(argv[6]) if len(argv) > 6 else SESSION_MS
    q = commands()
    if lib == "kafka-python":
        run_kafka_python(strategy, bootstrap, group, topic, instance, session_ms, q)
    elif lib == "confluent-kafka":
        run_confluent(strategy, bootstrap, group, topic, instance, session_ms, q)
    elif lib == "aiokafka":
        asyncio.run(run_aiokafka(strategy, bootstrap, group, topic, instance, session_ms, q))
    else:
        raise SystemExit(f"unknown client library {lib!r}")
    say("CLOSED")


if __name__ == "__main__":
    main(sys.argv[1:])
