"""Records through ``kwire serve`` next to librdkafka's own mock cluster, with the same clients in the same run.

Run: ``python benches/bench_records_server.py [--records N] [--value-bytes B] [--partitions P] [--rounds R]``.

For each cluster, one confluent-kafka producer sends N records of B random bytes (no key) to a topic of P
partitions (kwire auto-creates it with ``num.partitions`` P; librdkafka's mock has it made before, through its C
API, see below), and flushes; then one confluent-kafka consumer in a fresh group reads them all back from the
earliest offset.  Reported per cluster: produce and consume records per second (wall time,
from the first send to the flush, and from subscribe to the last record; a consumer that gets nothing for 15 s
stops, and its rate is over what it read: with ``--retention-bytes`` that is what the cluster still holds, the
older batches having been dropped by retention), and for ``kwire serve`` (its own
process, one asyncio thread) its peak RSS (``VmHWM``) against the record-batch bytes it stores (from its
``stats`` control command) and its own CPU seconds.  librdkafka's mock cluster runs inside a client process
(``rd_kafka_mock_cluster_new``, as ``test.mock.num.brokers`` starts it), so it has no RSS of its own to report.

Both clusters are on loopback and each side is given the same: every broker's address as the bootstrap servers
(librdkafka's mock names all of its own); one producer
with linger.ms 5, enable.idempotence
(so acks all and at most 5 requests in flight per broker), queue.buffering.max.messages 1,000,000 (the million
records are queued without blocking) and the client's default batch size; one consumer in a fresh group with
auto.offset.reset earliest; 3 brokers and a topic of 4 partitions with the same leaders, spread over the brokers
round-robin (partition p led by broker p mod 3; the table shows each run's).  The mock would draw each leader at
random, and the layout moves the producer's CPU: for one broker it makes one request where three brokers take three,
about a third less of its broker threads' time.  Each cluster's
clients run in a fresh process of their own (and librdkafka's mock inside it, on a thread of its own): a process's
second run reuses the heap its first one grew, and so takes about 0.1 s less of the producer's CPU for a million
records, whichever cluster it talks to.  ``kwire serve`` is a child of the same benchmark process, so both clusters
share one scheduling group (Linux's autogroup) with their clients.  The machine's load average is printed.

The producer's rate is mostly its own thread's: each ``produce()`` call costs about half a microsecond of its CPU,
and the thread does not wait for the cluster before the flush at the end (the queue holds every record), so a
run's time is that CPU, the time the thread waits for a core, and the flush's wait for the last answers (the
thread blocked).  Two more columns say so: the producer thread's CPU seconds, its seconds runnable but waiting
for a core and the rest of the run's time (blocked), and the CPU seconds the cluster spent while it produced (``kwire serve``'s process; librdkafka's mock's ``rdk:mock`` threads), each from
the scheduler's own count.  On a shared machine the wait for a core swings a run's rate by a factor of two either
way, so ``--rounds N`` runs both clusters N times in turns (kwire first, then the mock first, ...) and reports each
cluster's median run with the ratio of every round.

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
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPIC = "bench"
TIMEOUT_S = 600
# A consumer that gets nothing for this long stops: its rate is reported over what it read (all the cluster still
# holds, when retention dropped the rest, or a stall).
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


def _threads_cpu(pid="self", prefix=None):
    """CPU seconds of a process's threads (those whose name starts with ``prefix``, if given), from the
    scheduler's own nanosecond count (``/proc/PID/task/TID/schedstat``)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if prefix is not None:
                with open(f"/proc/{pid}/task/{tid}/comm") as fh:
                    if not fh.read().startswith(prefix):
                        continue
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                total += int(fh.read().split()[0])
        except OSError:  # a thread that ended
            continue
    return total / 1e9


def _this_thread():
    """``(CPU seconds, seconds waiting for a core)`` of the calling thread, from the scheduler's count."""
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as fh:
        ran, waited = fh.read().split()[:2]
    return int(ran) / 1e9, int(waited) / 1e9


def run_clients(bootstrap, records, value_bytes, cluster_cpu=lambda: 0.0):
    from confluent_kafka import Consumer, Producer

    value = os.urandom(value_bytes)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True,
                         "queue.buffering.max.messages": 1_000_000})
    cluster0, (ran0, waited0) = cluster_cpu(), _this_thread()
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
    ran, waited = _this_thread()
    producer_cpu, producer_wait, cluster_produce_cpu = ran - ran0, waited - waited0, cluster_cpu() - cluster0
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
    topic = consumer.list_topics(TOPIC, timeout=10).topics[TOPIC]
    # Each partition's leader as its broker's rank among the leaders' ids: the same list on both clusters
    # means the same layout, whatever each numbers its brokers from.
    leaders = [topic.partitions[p].leader for p in sorted(topic.partitions)]
    leaders = [sorted(set(leaders)).index(b) for b in leaders]
    consumer.close()
    return {"produce_s": produce_s, "consume_s": consume_s, "partitions": len(leaders), "leaders": leaders, "got": got,
            "producer_cpu": producer_cpu, "producer_wait": producer_wait, "cluster_produce_cpu": cluster_produce_cpu}


def _clients_process(target, records, value_bytes, server_pid=None, brokers=3, partitions=4):
    """``run_clients`` in a fresh process: ``target`` is a bootstrap address (of ``kwire serve``, whose pid is
    ``server_pid``), or "mock" for a librdkafka mock cluster of ``brokers`` inside that process, its topic of
    ``partitions`` made there."""
    pid = [] if server_pid is None else ["--server-pid", str(server_pid)]
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--clients", target, "--records", str(records),
                           "--value-bytes", str(value_bytes), "--brokers", str(brokers),
                           "--partitions", str(partitions)] + pid, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=2 * TIMEOUT_S + 60, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _librdkafka_mock(brokers, partitions):
    """librdkafka's mock cluster in this process, with the topic created and its leaders placed as ``kwire serve``
    places them: ``(bootstrap servers, a function that stops it)``.

    Left to itself the mock gives each partition a leader drawn at random from its brokers
    (``rd_kafka_mock_partition_assign_replicas``): the four partitions landed on one, two or three of the brokers
    from run to run, and the producer then works for one, two or three connections.  One broker takes about a
    third less of the producer's broker threads' CPU than three do (one request carries every partition), so
    with random leaders the mock's runs were unlike kwire's, and unlike each other.  Here partition p is led by
    the mock's p-th broker modulo their count, as kwire's round-robin (``TopicTable.grow``) leads it by its
    broker p, through the mock's C API (rdkafka_mock.h) in the librdkafka that confluent-kafka loaded."""
    from tests.librdkafka_mock import load_librdkafka, new_mock_cluster

    lib = load_librdkafka()
    rk, mcluster = new_mock_cluster(lib, brokers)

    def stop():
        lib.rd_kafka_mock_cluster_destroy(mcluster)
        lib.rd_kafka_destroy(rk)

    # The mock numbers its brokers from 1 (rd_kafka_mock_cluster_new), kwire from 0.
    err = lib.rd_kafka_mock_topic_create(mcluster, TOPIC.encode(), partitions, min(3, brokers))
    for p in range(partitions):
        err = err or lib.rd_kafka_mock_partition_set_leader(mcluster, TOPIC.encode(), p, 1 + p % brokers)
    if err:
        stop()
        raise SystemExit(f"librdkafka's mock: {lib.rd_kafka_err2str(err).decode()}")
    return lib.rd_kafka_mock_cluster_bootstraps(mcluster).decode(), stop


def _clients_main(target, records, value_bytes, server_pid=None, brokers=3, partitions=4):
    stop = None
    if target == "mock":
        target, stop = _librdkafka_mock(brokers, partitions)
        # The mock's brokers are threads of this process, named "rdk:mock" by librdkafka.
        cluster_cpu = lambda: _threads_cpu("self", "rdk:mock")  # noqa: E731
    else:
        cluster_cpu = lambda: _threads_cpu(server_pid)  # noqa: E731
    try:
        result = run_clients(target, records, value_bytes, cluster_cpu)
    finally:
        if stop is not None:
            stop()
    print(json.dumps(result))
    return 0


def kwire_serve(records, value_bytes, partitions, brokers, retention_bytes=None):
    config = [f"num.partitions={partitions}"] + ([] if retention_bytes is None else [f"retention.bytes={retention_bytes}"])
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--control", "stdin",
                             "--brokers", str(brokers)] + [arg for kv in config for arg in ("--config", kv)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        # Every broker's address, as the clients of librdkafka's mock are given its every broker's.
        ports = [int(proc.stdout.readline().split("listening on 127.0.0.1:")[1].split()[0]) for _ in range(brokers)]
        rss0, cpu0 = _proc_status(proc.pid, "VmRSS"), _cpu_seconds(proc.pid)
        clients = _clients_process(",".join(f"127.0.0.1:{port}" for port in ports), records, value_bytes, proc.pid)
        proc.stdin.write("stats\n")
        proc.stdin.flush()
        answer = proc.stdout.readline()
        while not answer.startswith("ok: stats"):
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


def librdkafka_mock(records, value_bytes, partitions, brokers):
    return _clients_process("mock", records, value_bytes, brokers=brokers, partitions=partitions)


def measure(records=1_000_000, value_bytes=100, partitions=4, brokers=3, retention_bytes=None, rounds=1):
    """Both clusters, one after the other, ``rounds`` times (kwire first in the first round, then in turns),
    with the load average before and after.  ``kwire`` and ``librdkafka`` are each cluster's run with the
    median produce rate; ``rounds`` holds every pair."""
    import confluent_kafka

    load_before = os.getloadavg()
    pairs = []
    for i in range(rounds):
        if i % 2 == 0:
            kw = kwire_serve(records, value_bytes, partitions, brokers, retention_bytes)
            rd = librdkafka_mock(records, value_bytes, partitions, brokers)
        else:
            rd = librdkafka_mock(records, value_bytes, partitions, brokers)
            kw = kwire_serve(records, value_bytes, partitions, brokers, retention_bytes)
        pairs.append((kw, rd))
    return {"records": records, "value_bytes": value_bytes, "brokers": brokers,
            "kwire": _median_run([kw for kw, _ in pairs]), "librdkafka": _median_run([rd for _, rd in pairs]),
            "rounds": pairs, "retention_bytes": retention_bytes,
            "confluent_kafka": confluent_kafka.__version__, "librdkafka_version": confluent_kafka.libversion()[0],
            "load_before": load_before, "load_after": os.getloadavg()}


def _median_run(runs):
    """The run with the median produce time (the lower middle one of an even count)."""
    return sorted(runs, key=lambda r: r["produce_s"])[(len(runs) - 1) // 2]


def _rates(r, n):
    return n / r["produce_s"], r["got"] / max(r["consume_s"], 1e-9)


def render(result):
    """A Markdown table of ``measure``'s result: records per second each way, and kwire's memory and CPU."""
    n, kw, rd = result["records"], result["kwire"], result["librdkafka"]
    out = ["| cluster | produce, records/s | producer thread: CPU, waiting for a core, blocked "
           "| cluster CPU while producing "
           "| consume, records/s "
           "| partitions (each one's leader) | server peak RSS | server CPU |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in (("`kwire serve`", kw), ("librdkafka's mock cluster", rd)):
        produce, consume = _rates(r, n)
        stalled = "" if r["got"] == n else f" (read {r['got']:,}, then nothing for {STALL_S} s)"
        mem = (f"{r['peak_rss'] / 2**20:,.1f} MiB, {r['peak_rss'] / max(r['stored'], 1):.2f}× the "
               f"{r['stored'] / 2**20:,.1f} MiB stored" if "peak_rss" in r else "inside the client")
        cpu = f"{r['cpu']:.2f} s" if "cpu" in r else "–"
        blocked = r["produce_s"] - r["producer_cpu"] - r["producer_wait"]
        leaders = f" ({', '.join(map(str, r['leaders']))})" if "leaders" in r else ""
        out.append(f"| {name} | {produce:,.0f} | {r['producer_cpu']:.2f} s, {r['producer_wait']:.2f} s, {blocked:.2f} s "
                   f"| {r['cluster_produce_cpu']:.3f} s "
                   f"| {consume:,.0f}{stalled} | {r['partitions']}{leaders} | {mem} | {cpu} |")
    (kp, kc), (rp, rc) = _rates(kw, n), _rates(rd, n)
    out.append(f"| kwire ÷ librdkafka's mock | {kp / rp:.2f}× | | | {kc / max(rc, 1e-9):.2f}× | | | |")
    pairs = result.get("rounds", ())
    if len(pairs) > 1:
        ratios = ", ".join(f"{_rates(k, n)[0] / _rates(r, n)[0]:.2f}×" for k, r in pairs)
        out += ["", f"Produce, kwire ÷ librdkafka's mock, round by round: {ratios} (the rows above are each "
                    f"cluster's median of {len(pairs)} runs)."]
    unlike = [str(i + 1) for i, (k, r) in enumerate(pairs) if k.get("leaders") != r.get("leaders")]
    if unlike:
        out += ["", f"The two clusters' partition leaders differed in round(s) {', '.join(unlike)}."]
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
    parser.add_argument("--partitions", type=int, default=4,
                        help="the topic's partitions (kwire's num.partitions; the mock's topic is made with as many)")
    parser.add_argument("--brokers", type=int, default=3, help="each cluster's brokers")
    parser.add_argument("--retention-bytes", type=int, help="kwire's retention.bytes (the mock keeps 5 MiB per partition)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run both clusters this many times, in turns, and report each one's median")
    parser.add_argument("--clients", metavar="BOOTSTRAP", help=argparse.SUPPRESS)  # the clients' own process
    parser.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)  # kwire serve's, for its CPU
    args = parser.parse_args(argv)
    if args.clients:
        return _clients_main(args.clients, args.records, args.value_bytes, args.server_pid, args.brokers,
                             args.partitions)
    result = measure(args.records, args.value_bytes, args.partitions, args.brokers, args.retention_bytes,
                     args.rounds)
    print(summary(result) + "\n")
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
