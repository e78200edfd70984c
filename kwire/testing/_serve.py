"""``kwire serve``: the mock cluster as a process.

Prints ``kwire serve: listening on HOST:PORT`` once it accepts connections and stops cleanly on SIGTERM
or SIGINT.  Faults are armed at start with ``--fail``/``--latency-ms``/``--drop``, and while it runs by
lines on standard input with ``--control stdin``::

    fail API CODE [COUNT]     answer the next COUNT (1) requests of API with error CODE
    latency MS [API]          delay every answer (of API) by MS; 0 removes it
    drop API [COUNT]          close the connection of the next COUNT (1) requests of API
    drop-connections          close every connection now
    move [GROUP]              move GROUP's coordinator (every group's)
    fail-partition API TOPIC PARTITION CODE [COUNT]
                              answer the next COUNT (1) Produce/Fetch/ListOffsets requests for one partition
    leader TOPIC PARTITION [BROKER]
                              move a partition's leader (to the next live broker)
    broker-down BROKER        take a broker down (its partitions and the coordinator move)
    broker-up BROKER          bring it back on its old port
    clear                     disarm every fault
    stats                     print what the cluster holds: ``ok: stats stored=B connections=N buffered=B``

Configuration: ``--config KEY=VALUE`` (repeatable) with Kafka's broker config names (docs/MOCK_CLUSTER.md lists
them); the older flags (``--max-frame-size`` and the others) are aliases of config keys.  ``--brokers N`` runs N
brokers, the first on ``--listen``'s port, the others on free ports (all printed).  The event loop is uvloop's
where it is installed (``pip install kwire[fast]``), asyncio's otherwise.

Each control line is answered on standard output with ``ok: ...`` or ``error: ...``.
"""

import asyncio
import ctypes
import logging
import platform
import sys
import threading

from kwire._stop import stop_signals_handled
from kwire.errors import ArgumentValueError

from ._config import ALIASES, parse_assignments, with_aliases
from ._server import ClusterServer, log

# glibc's mallopt parameters (malloc.h) and the values kwire serve sets: allocations up to 4 MiB come from the heap,
# which keeps up to 8 MiB free at its top rather than giving it back.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 4 << 20
_TRIM_THRESHOLD = 8 << 20


def add_serve_parser(sub):
    """Add the ``serve`` subcommand to an argparse subparsers object; returns its parser."""
    s = sub.add_parser("serve", help="run a mock single-node Kafka cluster that real consumers join")
    s.add_argument("--listen", default="127.0.0.1:9092", help="HOST:PORT to listen on (port 0: any free port)")
    s.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS",
                   help="a topic and its partition count (repeatable)")
    s.add_argument("--brokers", type=int, default=1, help="how many brokers (listeners) to run (default 1)")
    s.add_argument("--advertise", action="append", default=[], metavar="HOST:PORT",
                   help="the address the next broker names in Metadata and FindCoordinator instead of its own "
                        "(repeatable, one per broker in order; Kafka's advertised.listeners), for a proxy in front "
                        "such as kwire record")
    s.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker config key, Kafka's name (repeatable; docs/MOCK_CLUSTER.md lists them)")
    s.add_argument("--initial-rebalance-delay-ms", type=int, help="alias of group.initial.rebalance.delay.ms (0)")
    s.add_argument("--min-session-timeout-ms", type=int, help="alias of group.min.session.timeout.ms")
    s.add_argument("--max-session-timeout-ms", type=int, help="alias of group.max.session.timeout.ms")
    s.add_argument("--max-frame-size", type=int, help="alias of socket.request.max.bytes")
    s.add_argument("--max-members-per-group", type=int, help="alias of group.max.size")
    s.add_argument("--max-groups", type=int, help="alias of kwire.max.groups")
    s.add_argument("--max-connections", type=int, help="alias of max.connections")
    s.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto",
                   help="the event loop: uvloop where installed (auto), or the one named")
    s.add_argument("--fail", action="append", default=[], metavar="API:CODE[:COUNT]",
                   help="answer the next COUNT requests of API with error CODE (repeatable)")
    s.add_argument("--drop", action="append", default=[], metavar="API[:COUNT]",
                   help="close the connection of the next COUNT requests of API (repeatable)")
    s.add_argument("--latency-ms", type=int, default=0, help="delay every answer by this much")
    s.add_argument("--control", choices=["none", "stdin"], default="none",
                   help="read fault commands from standard input while running")
    s.add_argument("--log-level", default="WARNING")
    return s


def _host_port(text, option="--listen"):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit(f"kwire serve: {option} wants HOST:PORT, not {text!r}")
    return host, int(port)


def _topics(specs):
    topics = {}
    for spec in specs:
        name, _, n = spec.rpartition(":")
        if not name or not n.isdigit() or int(n) < 1:
            raise SystemExit(f"kwire serve: --topic wants NAME:PARTITIONS, not {spec!r}")
        topics[name] = int(n)
    return topics


def control(server, line):
    """Apply one control line to ``server``; returns what to print."""
    words = line.split()
    if not words:
        return None
    cmd, rest = words[0], words[1:]
    faults = server.faults
    try:
        if cmd == "fail" and len(rest) in (2, 3):
            faults.fail(rest[0], int(rest[1]), int(rest[2]) if len(rest) == 3 else 1)
        elif cmd == "latency" and len(rest) in (1, 2):
            faults.add_latency(int(rest[0]), rest[1] if len(rest) == 2 else None)
        elif cmd == "drop" and len(rest) in (1, 2):
            faults.drop(rest[0], int(rest[1]) if len(rest) == 2 else 1)
        elif cmd == "drop-connections" and not rest:
            server.drop_connections()
        elif cmd == "move" and len(rest) <= 1:
            server.move_coordinator(rest[0] if rest else None)
        elif cmd == "fail-partition" and len(rest) in (4, 5):
            faults.fail_partition(rest[0], rest[1], int(rest[2]), int(rest[3]), int(rest[4]) if len(rest) == 5 else 1)
        elif cmd == "leader" and len(rest) in (2, 3):
            leader = server.move_leader(rest[0], int(rest[1]), int(rest[2]) if len(rest) == 3 else None)
            return f"ok: {line.strip()} -> broker {leader}"
        elif cmd == "broker-down" and len(rest) == 1:
            server.broker_down(int(rest[0]))
        elif cmd == "broker-up" and len(rest) == 1:
            server.topics.broker_up(int(rest[0]))  # refuses an unknown broker here, before the listener starts
            asyncio.ensure_future(server.broker_up(int(rest[0])))
        elif cmd == "stats" and not rest:
            return (f"ok: stats stored={server.store.held} connections={len(server.connections)} "
                    f"buffered={server.buffered()}")
        elif cmd == "clear" and not rest:
            faults.clear()
        else:
            return f"error: cannot read {line.strip()!r}"
    except ValueError as e:
        return f"error: {e}"
    return f"ok: {line.strip()}"


def _server(args):
    host, port = _host_port(args.listen)
    try:
        config = with_aliases(parse_assignments(args.config), {
            alias: getattr(args, alias) for alias in ALIASES})
        return ClusterServer(_topics(args.topic), host=host, port=port, brokers=args.brokers, config=config,
                             advertised=[_host_port(a, "--advertise") for a in args.advertise])
    except ValueError as e:
        raise SystemExit(f"kwire serve: {e}") from None


async def _serve(args, server):
    try:
        for spec in args.fail:
            parts = spec.split(":")
            if len(parts) not in (2, 3):
                raise ArgumentValueError(f"--fail wants API:CODE[:COUNT], not {spec!r}")
            server.faults.fail(parts[0], int(parts[1]), int(parts[2]) if len(parts) == 3 else 1)
        for spec in args.drop:
            api, _, count = spec.partition(":")
            server.faults.drop(api, int(count) if count else 1)
        server.faults.add_latency(args.latency_ms)
    except ValueError as e:
        raise SystemExit(f"kwire serve: {e}") from None
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    with stop_signals_handled(loop, stop.set):
        await server.start()
        if args.control == "stdin":
            def read():
                for line in sys.stdin:
                    loop.call_soon_threadsafe(lambda line=line: _print(control(server, line)))
            threading.Thread(target=read, name="kwire-serve-control", daemon=True).start()
        topics = ", ".join(f"{n}:{p}" for n, p in server.topics.counts.items()) or "no topics"
        print(f"kwire serve: listening on {server.host}:{server.port} ({topics})", flush=True)
        for broker in server.topics.brokers[1:]:
            print(f"kwire serve: broker {broker} listening on {server.host}:{server.ports[broker]}", flush=True)
        await stop.wait()
        await server.stop()
    print("kwire serve: stopped", flush=True)


def _print(text):
    if text:
        print(text, flush=True)


def _tune_malloc():
    """Keep request frames on glibc's heap, whose freed memory is reused, rather than in mappings of their own.

    glibc maps each allocation above its mmap threshold afresh, faults its pages in one at a time as they are first
    written and unmaps it when freed; it raises the threshold, from 128 KiB, only once it has freed such a mapping.
    A fresh server stores a producer's half-megabyte Produce frames as they came, and frees them only when retention
    drops them: until then each one is a new mapping, and after it the heap grows to take the next ones.  For a
    million 100-byte records that was about 11,000 page faults, on the path of each answer (the client's next batch
    of a partition waits for it), against 6,500 with the thresholds set at the start where glibc's own rule would
    raise them (the trim threshold at twice the mmap threshold).  A process, not a library, setting: ``kwire serve``
    only, never a :class:`MockCluster` inside someone else's process; elsewhere than glibc nothing is done."""
    if platform.libc_ver()[0] != "glibc":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


def serve(args):
    """Run ``kwire serve`` with parsed arguments until SIGTERM/SIGINT; returns the exit status."""
    _tune_malloc()
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
                        format="kwire serve: %(levelname)s %(message)s", stream=sys.stderr)
    log.debug("starting")
    server = _server(args)
    runner = _loop_runner(args.loop)
    runner(_serve(args, server))
    return 0


def _loop_runner(choice):
    """``asyncio.run`` or uvloop's: uvloop reads and writes sockets with fewer Python frames per request."""
    if choice in ("auto", "uvloop"):
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                raise SystemExit("kwire serve: --loop uvloop needs uvloop (pip install kwire[fast])") from None
        else:
            return uvloop.run
    return asyncio.run
