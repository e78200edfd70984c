"""One real consumer as a process, for tests/test_group_clients.py.

    python tests/group_client.py LIB STRATEGY BOOTSTRAP GROUP TOPIC [INSTANCE_ID]

LIB is confluent-kafka, kafka-python or aiokafka.  It prints ``ASSIGN [partitions]`` each time its
assignment changes, ``COMMITTED p offset`` after committing, ``OFFSET p offset`` for what it reads back,
and reads commands from standard input: ``commit P OFFSET``, ``read P``, ``close`` (leave and exit).
"""

import asyncio
import json
import queue
import sys
import threading

SESSION_MS = 6000
HEARTBEAT_MS = 300


def say(text):
    print(text, flush=True)


def commands():
    q = queue.Queue()

    def read():
        for line in sys.stdin:
            q.put(line.split())
        q.put(["close"])
    threading.Thread(target=read, daemon=True).start()
    return q


# The three run_* functions share the shape of their loop (poll, report a changed assignment, serve one
# command) but not one call: each client names poll, assignment, commit and committed differently, and aiokafka's
# are coroutines. A loop taking seven callables would hide which client API each line exercises.
def run_kafka_python(strategy, bootstrap, group, topic, instance, q):
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                "sticky": StickyPartitionAssignor}[strategy]
    extra = {"group_instance_id": instance} if instance else {}
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, partition_assignment_strategy=[assignor],
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS, fetch_max_wait_ms=100,
                             enable_auto_commit=False, **extra)
    last = None
    while True:
        consumer.poll(100)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != last:
            say("ASSIGN " + json.dumps(now))
            last = now
        try:
            cmd = q.get_nowait()
        except queue.Empty:
            continue
        if cmd[0] == "commit":
            consumer.commit({TopicPartition(topic, int(cmd[1])): OffsetAndMetadata(int(cmd[2]), "", -1)})
            say(f"COMMITTED {cmd[1]} {cmd[2]}")
        elif cmd[0] == "read":
            say(f"OFFSET {cmd[1]} {consumer.committed(TopicPartition(topic, int(cmd[1])))}")
        elif cmd[0] == "close":
            consumer.close()
            return


def run_confluent(strategy, bootstrap, group, topic, instance, q):
    from confluent_kafka import Consumer, TopicPartition
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": strategy,
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS, "enable.auto.commit": False,
            "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000}
    if instance:
        conf["group.instance.id"] = instance
    consumer = Consumer(conf)
    consumer.subscribe([topic])
    last = None
    while True:
        consumer.poll(0.1)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != last:
            say("ASSIGN " + json.dumps(now))
            last = now
        try:
            cmd = q.get_nowait()
        except queue.Empty:
            continue
        if cmd[0] == "commit":
            consumer.commit(offsets=[TopicPartition(topic, int(cmd[1]), int(cmd[2]))], asynchronous=False)
            say(f"COMMITTED {cmd[1]} {cmd[2]}")
        elif cmd[0] == "read":
            (tp,) = consumer.committed([TopicPartition(topic, int(cmd[1]))], timeout=10)
            say(f"OFFSET {cmd[1]} {tp.offset}")
        elif cmd[0] == "close":
            consumer.close()
            return


async def run_aiokafka(strategy, bootstrap, group, topic, instance, q):
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.structs import OffsetAndMetadata
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AioRange
    assignor = {"range": AioRange, "roundrobin": RoundRobinPartitionAssignor}[strategy]
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                partition_assignment_strategy=[assignor], session_timeout_ms=SESSION_MS,
                                heartbeat_interval_ms=HEARTBEAT_MS, fetch_max_wait_ms=100, enable_auto_commit=False)
    await consumer.start()
    last = None
    while True:
        await consumer.getmany(timeout_ms=100)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != last:
            say("ASSIGN " + json.dumps(now))
            last = now
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
    instance = argv[5] if len(argv) > 5 else None
    q = commands()
    if lib == "kafka-python":
        run_kafka_python(strategy, bootstrap, group, topic, instance, q)
    elif lib == "confluent-kafka":
        run_confluent(strategy, bootstrap, group, topic, instance, q)
    elif lib == "aiokafka":
        asyncio.run(run_aiokafka(strategy, bootstrap, group, topic, instance, q))
    else:
        raise SystemExit(f"unknown client library {lib!r}")
    say("CLOSED")


if __name__ == "__main__":
    main(sys.argv[1:])
