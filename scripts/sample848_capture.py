"""Re-create examples/sample848/capture.parquet: real consumer-protocol clients through ``kwire record``.

``kwire serve`` (KIP-848's consumer groups on kwire's coordinator) listens on 127.0.0.1 and advertises the
recording proxy's address (``--advertise``), so every client connection, the coordinator's included, goes
through ``kwire record``.  One group, ``sample848``, of confluent-kafka (librdkafka) consumers with
``group.protocol=consumer`` and the coordinator's ``uniform`` assignor, subscribed to ``orders`` (6 partitions)
and ``payments`` (3):

member A starts, B and C join, C closes (a leave heartbeat, epoch -1), B is killed with SIGKILL (fenced after
the 6 s session timeout), then A stops (epoch -1).  Everything listens on 127.0.0.1 and is stopped by this
script; the run takes about a minute.

    pip install confluent-kafka
    python scripts/sample848_capture.py examples/sample848
"""

import argparse
import os
import signal
import subprocess
import sys

from sample_capture import free_port, membership_scenario, stop_all, wait_members, wait_port

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TOPICS = {"orders": 6, "payments": 3}
GROUP = "sample848"
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000
BROKER_CONFIG = {"group.consumer.session.timeout.ms": SESSION_TIMEOUT_MS,
                 "group.consumer.min.session.timeout.ms": 1000,
                 "group.consumer.heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
                 "group.consumer.min.heartbeat.interval.ms": 100}


def run_consumer(bootstrap, name):
    """Poll until SIGTERM, then close (which leaves the group with epoch -1)."""
    from confluent_kafka import Consumer

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
                  "group.protocol": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe(sorted(TOPICS))
    while not stop:
        c.poll(0.2)
    c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", nargs="?", default=os.path.join(REPO, "examples", "sample848"))
    ap.add_argument("--consumer", nargs=1, metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    ap.add_argument("--name", default="consumer", help=argparse.SUPPRESS)
    ap.add_argument("--step", type=float, default=6.0, help="seconds between membership changes")
    args = ap.parse_args()
    if args.consumer:
        run_consumer(args.consumer[0], args.name)
        return

    os.makedirs(args.outdir, exist_ok=True)
    capture = os.path.join(args.outdir, "capture.parquet")
    broker_port, proxy_port = free_port(), free_port()
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = []

    def spawn(cmd, **kw):
        p = subprocess.Popen(cmd, env=env, **kw)
        procs.append(p)
        return p

    serve = [sys.executable, "-m", "kwire", "serve", "--listen", f"127.0.0.1:{broker_port}",
             "--advertise", f"127.0.0.1:{proxy_port}"]
    for topic, n in TOPICS.items():
        serve += ["--topic", f"{topic}:{n}"]
    for key, value in BROKER_CONFIG.items():
        serve += ["--config", f"{key}={value}"]
    spawn(serve, stdout=subprocess.DEVNULL)
    proxy = spawn([sys.executable, "-m", "kwire", "record", capture, "--upstream", f"127.0.0.1:{broker_port}",
                   "--listen-port", str(proxy_port), "--duration", "600"])
    try:
        wait_port(broker_port)
        wait_port(proxy_port)
        bootstrap = f"127.0.0.1:{proxy_port}"
        members = {}

        def start(tag):
            members[tag] = spawn([sys.executable, __file__, "--consumer", bootstrap, "--name", f"{GROUP}-{tag}"])

        def signal_member(tag, sig):
            members[tag].send_signal(sig)

        membership_scenario(start, signal_member, args.step, SESSION_TIMEOUT_MS)
        wait_members(members.values())
    finally:
        stop_all(proxy, procs)
    print(f"wrote {capture}")


if __name__ == "__main__":
    main()
