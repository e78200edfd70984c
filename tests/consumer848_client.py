"""One real consumer as a process, for tests/test_consumer848_clients.py.

    python tests/consumer848_client.py --bootstrap HOST:PORT --group g --topic t \
        [--lib confluent-kafka|kafka-python] [--protocol consumer|classic] [--assignor uniform|range|none] \
        [--strategy range|roundrobin|cooperative-sticky] [--instance-id X] [--session-timeout-ms MS] \
        [--commit-offset K] [--read-offsets] [--run-seconds N]

It prints one JSON line per event to standard output, each with ``t``, the process's ``time.monotonic()``
(CLOCK_MONOTONIC, one clock for every process on the machine, so the streams of several members merge by
time) and ``event``:

- ``start`` (pid, library, protocol, instance id);
- ``assigned``, ``revoked``, ``lost`` with ``partitions``, from the client's own rebalance callbacks
  (``assigned`` also names the member id, from confluent-kafka's ``Consumer.memberid()``).
  ``assigned`` is stamped when its callback starts and ``revoked``/``lost`` when theirs returns, so the interval
  between them is the longest the member could have owned the partitions: an overlap check on these intervals
  is strict;
- ``records`` (partition, count, last offset) for what a poll returned;
- ``committed`` (offsets by partition) after a synchronous commit;
- ``offsets`` (committed offsets by partition, ``null`` for none) in ``--read-offsets`` mode, which reads them
  without joining the group and exits;
- ``error`` (name, text, fatal) from the client's error callback or a poll;
- ``closing`` and ``closed`` around closing the consumer, which leaves the group.

It exits after ``--run-seconds``, on SIGTERM, or after a fatal error, closing the consumer first.  ``--commit-offset K`` makes the
member commit offset ``K + partition`` for each partition once, soon after it is assigned, so a test can read
back what was committed under the member's epoch without depending on the server's records.
"""

import argparse
import json
import os
import signal
import sys
import time

HEARTBEAT_MS = 300  # classic members only: the consumer protocol takes its interval from the coordinator
METADATA_WAIT_S = 20


def say(event, t=None, **fields):
    print(json.dumps({"t": time.monotonic() if t is None else t, "event": event, **fields}), flush=True)


class Stop:
    """Set by SIGTERM (and SIGINT): the poll loop ends and the consumer is closed."""

    def __init__(self, run_seconds):
        self.deadline = time.monotonic() + run_seconds
        self.signalled = False
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._set)

    def _set(self, *_):
        self.signalled = True

    def __bool__(self):
        return self.signalled or time.monotonic() >= self.deadline


class Commits:
    """``--commit-offset``: what this member still has to commit (once per partition)."""

    def __init__(self, base):
        self.base = base
        self.done = set()

    def due(self, owned):
        if self.base is None:
            return []
        return sorted(p for p in owned if p not in self.done)


def report_error(err, stop, **fields):
    """A confluent-kafka error as an ``error`` event.  librdkafka hands a fatal error to the error callback as
    ``_FATAL`` with ``fatal()`` false; the consumer is then unusable, so the member stops (and closes)."""
    from confluent_kafka import KafkaError

    fatal = err.fatal() or err.code() == KafkaError._FATAL
    say("error", name=err.name(), text=err.str(), fatal=fatal, **fields)
    if fatal:
        stop.signalled = True


def confluent_conf(args, stop):
    conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000,
            "error_cb": lambda err: report_error(err, stop)}
    if args.protocol == "consumer":
        conf["group.protocol"] = "consumer"
        if args.assignor != "none":
            conf["group.remote.assignor"] = args.assignor
    else:
        # librdkafka refuses these with group.protocol=consumer: the coordinator owns them there.
        conf.update({"group.protocol": "classic", "partition.assignment.strategy": args.strategy,
                     "session.timeout.ms": args.session_timeout_ms, "heartbeat.interval.ms": HEARTBEAT_MS})
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    return conf


def run_confluent(args, stop):
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(confluent_conf(args, stop))
    if args.read_offsets:
        parts = consumer.list_topics(args.topic, timeout=METADATA_WAIT_S).topics[args.topic].partitions
        got = consumer.committed([TopicPartition(args.topic, p) for p in sorted(parts)], timeout=METADATA_WAIT_S)
        say("offsets", offsets={str(tp.partition): tp.offset if tp.offset >= 0 else None for tp in got})
        consumer.close()
        return
    owned = set()

    def on_assign(c, parts):
        t = time.monotonic()
        owned.update(tp.partition for tp in parts)
        say("assigned", t=t, partitions=sorted(tp.partition for tp in parts), member_id=c.memberid())

    def ended(event):
        def callback(_consumer, parts):
            owned.difference_update(tp.partition for tp in parts)
            say(event, partitions=sorted(tp.partition for tp in parts))
        return callback

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=ended("revoked"), on_lost=ended("lost"))
    commits = Commits(args.commit_offset)
    try:
        while not stop:
            msgs = consumer.consume(100, 0.1)
            report_records([(m.partition(), m.offset()) for m in msgs if m.error() is None])
            for m in msgs:
                if m.error() is not None:
                    report_error(m.error(), stop)
            due = commits.due(owned)
            if due:
                offsets = [TopicPartition(args.topic, p, commits.base + p) for p in due]
                try:
                    result = consumer.commit(offsets=offsets, asynchronous=False)
                except KafkaException as exc:
                    report_error(exc.args[0], stop, during="commit")
                    continue
                commits.done.update(due)
                say("committed", offsets={str(tp.partition): tp.offset for tp in result})
    finally:
        say("closing")
        consumer.close()


def run_kafka_python(args, stop):
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                "sticky": StickyPartitionAssignor}[args.strategy]
    extra = {"group_instance_id": args.instance_id} if args.instance_id else {}
    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group,
                             partition_assignment_strategy=[assignor], session_timeout_ms=args.session_timeout_ms,
                             heartbeat_interval_ms=HEARTBEAT_MS, fetch_max_wait_ms=100, enable_auto_commit=False,
                             auto_offset_reset="earliest", **extra)
    if args.read_offsets:
        parts = None
        deadline = time.monotonic() + METADATA_WAIT_S
        while not parts and time.monotonic() < deadline:
            parts = consumer.partitions_for_topic(args.topic)
            time.sleep(0.05)
        offsets = {}
        for p in sorted(parts or ()):
            got = consumer.committed(TopicPartition(args.topic, p))
            offsets[str(p)] = got if got is None or got >= 0 else None
        say("offsets", offsets=offsets)
        consumer.close()
        return
    owned = set()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            owned.difference_update(tp.partition for tp in revoked)
            say("revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):
            t = time.monotonic()
            owned.update(tp.partition for tp in assigned)
            say("assigned", t=t, partitions=sorted(tp.partition for tp in assigned))

    consumer.subscribe([args.topic], listener=Listener())
    # As in tests/group_client.py: kafka-python 3.0.12 joins on its first poll, and a join made before it
    # knows the topic's partitions can leave it unassigned for a session; wait for the metadata first.
    deadline = time.monotonic() + METADATA_WAIT_S
    while not consumer.partitions_for_topic(args.topic) and time.monotonic() < deadline:
        time.sleep(0.05)
    commits = Commits(args.commit_offset)
    try:
        while not stop:
            batches = consumer.poll(100)
            report_records([(tp.partition, r.offset) for tp, recs in batches.items() for r in recs])
            due = commits.due(owned)
            if due:
                offsets = {TopicPartition(args.topic, p): OffsetAndMetadata(commits.base + p, "", -1) for p in due}
                try:
                    consumer.commit(offsets)
                except Exception as exc:  # kafka-python raises its own KafkaError subclasses, and CommitFailedError
                    say("error", name=type(exc).__name__, text=str(exc), fatal=False, during="commit")
                    continue
                commits.done.update(due)
                say("committed", offsets={str(p): commits.base + p for p in due})
    finally:
        say("closing")
        consumer.close()


def report_records(pairs):
    by_partition = {}
    for partition, offset in pairs:
        count, last = by_partition.get(partition, (0, -1))
        by_partition[partition] = (count + 1, max(last, offset))
    for partition, (count, last) in sorted(by_partition.items()):
        say("records", partition=partition, count=count, last_offset=last)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--lib", choices=("confluent-kafka", "kafka-python"), default="confluent-kafka")
    ap.add_argument("--protocol", choices=("consumer", "classic"), default="consumer")
    ap.add_argument("--assignor", choices=("uniform", "range", "none"), default="none",
                    help="group.remote.assignor (consumer protocol); none leaves it unset")
    ap.add_argument("--strategy", default="range", help="the classic protocol's partition.assignment.strategy")
    ap.add_argument("--instance-id", help="group.instance.id: a static member")
    ap.add_argument("--session-timeout-ms", type=int, default=6000, help="classic members only")
    ap.add_argument("--commit-offset", type=int, help="commit K + partition for each partition once, when owned")
    ap.add_argument("--read-offsets", action="store_true", help="print the group's committed offsets and exit")
    ap.add_argument("--run-seconds", type=float, default=60)
    args = ap.parse_args(argv)
    if args.lib == "kafka-python" and args.protocol != "classic":
        ap.error("kafka-python speaks only the classic protocol")
    return args


def main(argv=None):
    args = parse_args(argv)
    stop = Stop(args.run_seconds)
    say("start", pid=os.getpid(), lib=args.lib, protocol=args.protocol, instance_id=args.instance_id)
    if args.lib == "confluent-kafka":
        run_confluent(args, stop)
    else:
        run_kafka_python(args, stop)
    say("closed")


if __name__ == "__main__":
    sys.exit(main())
