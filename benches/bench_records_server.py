"""Records through ``kwire serve`` next to librdkafka's own mock cluster, with the same clients in the same run.

Run: ``python benches/bench_records_server.py [--records N] [--value-bytes B] [--partitions P]``.

For each cluster, one confluent-kafka producer sends N records of B random bytes (no key) to a topic the
cluster auto-creates (kwire with ``num.partitions`` P, librdkafka's mock with its default, 4), and flushes; then one confluent-kafka consumer in a fresh group reads them
all back from the earliest offset.  Reported per cluster: produce and consume records per second (wall time,
from the first send to the flush, and from subscribe to the last record; a consumer that gets nothing for 15 s
is reported as stalled, with its rate over what it read), and for ``kwire serve`` (its own
process, one asyncio thread) its peak RSS (``VmHWM``) against the record-batch bytes it stores (from its
``stats`` control command) and its own CPU seconds.  librdkafka's mock cluster runs inside a client process
(``test.mock.num.brokers``: 3), so it has no RSS of its own to report.

Both clusters are on loopback and the producer and consumer settings are the same (linger.ms 5, the client's
default batch size, acks all, idempotence on).  Each cluster's clients run in a fresh process of their own (and
librdkafka's mock inside it): a process's second run reuses the heap its first one grew, and so takes about 0.1 s
less of the producer's CPU for a million records, whichever cluster it talks to.  With both clients in one process
the cluster measured second had that advantage.  The machine's load average is printed: both figures come from
the same minute.

librdkafka's mock keeps at most 5 MiB (and 100,000 batches) per partition and drops the oldest batches beyond it
(``rd_kafka_mock_partition_log_append``): of a million 100-byte records over 4 partitions it holds about 20 MiB,
which is why its consumer reads only the last 170,000-180,000 of them, and its produce path reuses the memory of
the batches it dropped where kwire maps fresh memory for all 105 MiB.  ``--retention-bytes 5242880`` holds kwire to
the same per-partition cap (Kafka's ``retention.bytes``), for a like-for-like produce figure; its consumer then
reads only what is kept, as the mock's does, and its RSS is no longer measured against a million records.
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPIC = "bench"
TIMEOUT_S = 600
# A consumer that gets nothing for this long has stalled: its rate is reported over what it read.
STALL_S = 15


def _proc_status(pid, field):
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_clients(bootstrap, records, value_bytes):
    from confluent_kafka import Consumer, Producer

    value = os.urandom(value_bytes)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True,
                         "queue.buffering.max.messages": 1_000_000})
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, value)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(TIMEOUT_S)
    produce_s = time.perf_counter() - started
    if left:
        raise SystemExit(f"{left} records were not delivered")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    got = 0
    started = last = time.perf_counter()
    while got < records and time.perf_counter() - last < STALL_S:
        for m in consumer.consume(10_000, 1.0):
            if not m.error():
                got += 1
                last = time.perf_counter()
    consume_s = last - started
    partitions = len(consumer.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions)
    consumer.close()
    return produce_s, consume_s, partitions, got


def _clients_process(target, records, value_bytes):
    """``run_clients`` in a fresh process: ``target`` is a bootstrap address, or "mock" for a librdkafka mock
    cluster inside that process."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--clients", target, "--records", str(records),
                           "--value-bytes", str(value_bytes)], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=2 * TIMEOUT_S + 60, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _clients_main(target, records, value_bytes):
    holder = None
    if target == "mock":
        from confluent_kafka import Producer

        holder = Producer({"test.mock.num.brokers": 3})  # the mock cluster lives as long as this client
        target = ",".join(f"{b.host}:{b.port}" for b in holder.list_topics(timeout=10).brokers.values())
    produce_s, consume_s, partitions, got = run_clients(target, records, value_bytes)
    del holder
    print(json.dumps({"produce_s": produce_s, "consume_s": consume_s, "partitions": partitions, "got": got}))
    return 0


def kwire_serve(records, value_bytes, partitions, brokers, retention_bytes=None):
    config = [f"num.partitions={partitions}"] + ([] if retention_bytes is None else [f"retention.bytes={retention_bytes}"])
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--control", "stdin",
                             "--brokers", str(brokers)] + [arg for kv in config for arg in ("--config", kv)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        port = int(proc.stdout.readline().split("listening on 127.0.0.1:")[1].split()[0])
        rss0, cpu0 = _proc_status(proc.pid, "VmRSS"), _cpu_seconds(proc.pid)
        clients = _clients_process(f"127.0.0.1:{port}", records, value_bytes)
        proc.stdin.write("stats\n")
        proc.stdin.flush()
        answer = proc.stdout.readline()
        while not answer.startswith("ok: stats"):  # skip the other brokers' "listening" lines
            answer = proc.stdout.readline()
        stats = dict(kv.split("=") for kv in answer.split()[2:])
        return dict(clients, stored=int(stats["stored"]), rss0=rss0, peak_rss=_proc_status(proc.pid, "VmHWM"),
                    cpu=_cpu_seconds(proc.pid) - cpu0)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def librdkafka_mock(records, value_bytes, partitions):
    return _clients_process("mock", records, value_bytes)


def measure(records=1_000_000, value_bytes=100, partitions=4, brokers=3, retention_bytes=None):
    """Both clusters, one after the other, with the load average before and after."""
    import confluent_kafka

    load_before = os.getloadavg()
    kw = kwire_serve(records, value_bytes, partitions, brokers, retention_bytes)
    rd = librdkafka_mock(records, value_bytes, partitions)
    return {"records": records, "value_bytes": value_bytes, "brokers": brokers, "kwire": kw, "librdkafka": rd,
            "retention_bytes": retention_bytes,
            "confluent_kafka": confluent_kafka.__version__, "librdkafka_version": confluent_kafka.libversion()[0],
            "load_before": load_before, "load_after": os.getloadavg()}


def _rates(r, n):
    return n / r["produce_s"], r["got"] / max(r["consume_s"], 1e-9)


def render(result):
    """A Markdown table of ``measure``'s result: records per second each way, and kwire's memory and CPU."""
    n, kw, rd = result["records"], result["kwire"], result["librdkafka"]
    out = ["| cluster | produce, records/s | consume, records/s | partitions | server peak RSS | server CPU |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, r in (("`kwire serve`", kw), ("librdkafka's mock cluster", rd)):
        produce, consume = _rates(r, n)
        stalled = "" if r["got"] == n else f" (stalled after {r['got']:,})"
        mem = (f"{r['peak_rss'] / 2**20:,.1f} MiB, {r['peak_rss'] / max(r['stored'], 1):.2f}× the "
               f"{r['stored'] / 2**20:,.1f} MiB stored" if "peak_rss" in r else "inside the client")
        cpu = f"{r['cpu']:.2f} s" if "cpu" in r else "–"
        out.append(f"| {name} | {produce:,.0f} | {consume:,.0f}{stalled} | {r['partitions']} | {mem} | {cpu} |")
    (kp, kc), (rp, rc) = _rates(kw, n), _rates(rd, n)
    out.append(f"| kwire ÷ librdkafka's mock | {kp / rp:.2f}× | {kc / max(rc, 1e-9):.2f}× | | | |")
    return "\n".join(out)


def summary(result):
    kept = result.get("retention_bytes")
    kept = "" if kept is None else f" (kwire with retention.bytes {kept:,})"
    return (f"{result['records']:,} records of {result['value_bytes']} bytes, {result['brokers']} brokers{kept}, one "
            f"confluent-kafka {result['confluent_kafka']} producer and consumer (librdkafka "
            f"{result['librdkafka_version']}); load average {result['load_before'][0]:.2f} before, "
            f"{result['load_after'][0]:.2f} after")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4, help="kwire's num.partitions (the mock's is 4)")
    parser.add_argument("--brokers", type=int, default=3, help="kwire's brokers (the mock runs 3)")
    parser.add_argument("--retention-bytes", type=int, help="kwire's retention.bytes (the mock keeps 5 MiB per partition)")
    parser.add_argument("--clients", metavar="BOOTSTRAP", help=argparse.SUPPRESS)  # the clients' own process
    args = parser.parse_args(argv)
    if args.clients:
        return _clients_main(args.clients, args.records, args.value_bytes)
    result = measure(args.records, args.value_bytes, args.partitions, args.brokers, args.retention_bytes)
    print(summary(result) + "\n")
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
