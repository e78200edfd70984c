"""``python -m kwire``: the kwire command line.

``demo``: one consumer-group round trip, end to end.  Three consumers join a
group; the leader decodes everyone's Subscription from the JoinGroup
response, runs an assignor and builds the SyncGroup request; each member
decodes its Assignment.  Every frame goes through kwire's codec, so this
doubles as a smoke test of an installation.

``serve``: a mock single-node Kafka cluster that real consumers join
(kwire.testing, docs/GROUP.md).

``synth``, ``pipeline``, ``record``, ``import-pcap``: the rebalance analysis
pipeline (docs/PIPELINE.md); they need the ``pipeline`` extra.
"""

import argparse
import sys

import kwire


def demo(strategy="range"):
    print(f"kwire {kwire.__version__}, codec implementation: {kwire.IMPLEMENTATION}")
    topics = {"orders": 4, "payments": 3}
    members = ["consumer-1", "consumer-2", "consumer-3"]
    joins = []
    for i, member_id in enumerate(members):
        sub = kwire.Subscription(topics=sorted(topics))
        req = kwire.JoinGroupRequest(group_id="demo-group", session_timeout_ms=45000, rebalance_timeout_ms=300000,
                                     member_id=member_id, protocol_type="consumer",
                                     protocols=[kwire.JoinGroupRequestProtocol(name=strategy, metadata=sub.encode(3))])
        frame = kwire.encode_request(req, 9, correlation_id=i, client_id=member_id)
        _header, decoded = kwire.decode_request(frame)
        joins.append(decoded)
        print(f"JoinGroup v9 from {member_id}: {len(frame)} bytes")

    # The coordinator answers the leader with every member's metadata.
    response = kwire.JoinGroupResponse(
        generation_id=1, protocol_type="consumer", protocol_name=strategy, leader=members[0], member_id=members[0],
        members=[kwire.JoinGroupResponseMember(member_id=j.member_id, metadata=j.protocols[0].metadata) for j in joins])
    frame = kwire.encode_response(response, 9, correlation_id=0)
    _header, response = kwire.decode_response(frame, kwire.JoinGroupResponse.api_key, 9)
    print(f"JoinGroup response to the leader: {len(frame)} bytes, {len(response.members)} members")

    sync = kwire.SyncGroupRequest(group_id="demo-group", generation_id=1, member_id=members[0],
                                  protocol_type="consumer", protocol_name=strategy,
                                  assignments=kwire.leader_assignments(strategy, response, topics))
    frame = kwire.encode_request(sync, 5, correlation_id=9, client_id=members[0])
    print(f"SyncGroup v5 from the leader ({strategy}): {len(frame)} bytes")
    for a in kwire.decode_request(frame)[1].assignments:
        assignment = kwire.Assignment.decode(a.assignment)
        parts = ", ".join(f"{tp.topic}{tp.partitions}" for tp in assignment.assigned_partitions)
        print(f"  {a.member_id}: {parts}")
    return 0


def _pipeline_import(what):
    try:
        return __import__(f"kwire.pipeline._{what}", fromlist=[what])
    except ImportError as exc:
        raise SystemExit(f"kwire {what}: {exc}. Install the pipeline extra: pip install 'kwire[pipeline]'") from None


def cmd_synth(args):
    import time

    synth = _pipeline_import("synth_fleet")
    t = time.perf_counter()
    try:
        n = synth.synth(args.out, protocol=args.protocol, groups=args.groups, seed=args.seed,
                        duration_s=args.duration, heartbeat_interval_ms=args.heartbeat_ms,
                        corrupt_rate=args.corrupt_rate, describe_every_ms=args.describe_ms)
    except kwire.KwireError as exc:
        print(f"kwire synth: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: {n:,} frames from {args.groups:,} groups ({args.protocol}) in {time.perf_counter() - t:.1f}s")
    return 0


def cmd_pipeline(args):
    stages = _pipeline_import("spark_stages")
    options = {"shuffle_partitions": args.shuffle_partitions, "driver_memory": args.driver_memory
               or stages.EMBEDDED_DRIVER_MEMORY, "log_level": None if args.verbose else "ERROR"}
    try:
        summary = stages.run_pipeline(args.capture, args.out, master=args.master, buckets=args.buckets,
                                      partitions=args.partitions, implementation=args.decoder,
                                      max_partitions=args.max_partitions, session_options=options,
                                      consumer_session_timeout_ms=args.consumer_session_timeout_ms)
    except stages.CaptureError as exc:
        print(f"kwire pipeline: {exc}", file=sys.stderr)
        return 2
    out = str(args.out).rstrip("/")
    consumer = summary.get("consumer") or {}
    counted = _pipeline_import("report_consumer").counted
    print(f"{counted(summary['frames'], 'frame')}, {counted(summary['groups'], 'classic group')} "
          f"({counted(summary['rebalances'], 'generation')}), {counted(consumer.get('groups', 0), 'consumer group')} "
          f"({counted(consumer.get('reconciliations', 0), 'reconciliation')}), "
          f"{counted(summary['bad_frames'], 'bad frame')} in {summary['wall_s']:.1f}s on "
          f"{summary['spark']['master']}; report: {out}/report.md")
    return 0


def cmd_record(args):
    import asyncio

    from kwire._stop import STOP_SIGNALS

    record = _pipeline_import("record")
    host, port = args.upstream
    try:
        asyncio.run(record.serve(args.out, host, port, listen_port=args.listen_port,
                                 listen_host=args.listen_host, duration=args.duration,
                                 stop_signals=STOP_SIGNALS))
    except KeyboardInterrupt:
        pass
    return 0


def cmd_import_pcap(args):
    pcap = _pipeline_import("pcap")
    stats = pcap.import_pcap(args.pcap, args.out, ports=args.port)
    print(f"{args.out}: {stats['frames']:,} frames ({stats['truncated']:,} truncated) from "
          f"{stats['connections']:,} connections, {stats['packets']:,} packets")
    return 0


# Argument types: argparse refuses a bad value with the command's usage and
# exit status 2, before anything runs.

def _number(convert, accepts, what):
    """An argparse type: ``convert`` the text, then refuse unless ``accepts(value)``."""
    kind = "an integer" if convert is int else "a number"

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {kind}: {text!r}") from None
        if not accepts(value):  # a float NaN fails every test
            raise argparse.ArgumentTypeError(f"must be {what}, not {text}")
        return value

    return parse


_positive_int = _number(int, lambda v: v >= 1, "positive")
_non_negative_int = _number(int, lambda v: v >= 0, "0 or more")
_positive_float = _number(float, lambda v: 0.0 < v < float("inf"), "a positive number of seconds")
_rate = _number(float, lambda v: 0.0 <= v <= 1.0, "a fraction between 0 and 1")


def _port(text):
    value = _positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {value}")
    return value


def _host_port(text):
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {text!r}")
    return host, _port(port)


def _memory(text):
    import re

    if not re.fullmatch(r"[1-9][0-9]*[kmgtKMGT]?", text):
        raise argparse.ArgumentTypeError(f"expected a JVM memory size such as 2g or 512m, not {text!r}")
    return text


def add_pipeline_arguments(p):
    """The ``pipeline`` command's arguments; also ``kwire/pipeline/__main__.py``'s (spark-submit)."""
    p.add_argument("capture", help="capture Parquet file or directory (a path or a URI)")
    p.add_argument("--out", required=True,
                   help="directory for the Parquet tables, report.md and report.json (a path or a URI, e.g. file://)")
    p.add_argument("--master", default=None,
                   help="Spark master URL (default: the one spark-submit, spark-defaults.conf or $MASTER sets; "
                        "without any, an embedded local[*])")
    p.add_argument("--buckets", type=_positive_int, default=None, help="hash buckets of group ids (default 4 per core)")
    p.add_argument("--partitions", type=_positive_int, default=None,
                   help="decode partitions (default: Spark parallelism)")
    p.add_argument("--shuffle-partitions", type=_positive_int, default=None)
    p.add_argument("--driver-memory", type=_memory, default=None,
                   help="heap of the embedded session's JVM (default 1200m: with its other memory, under 2 GB "
                        "at 10,000 groups); spark-submit takes its own --driver-memory")
    p.add_argument("--max-partitions", type=_positive_int, default=100_000,
                   help="partitions per topic beyond which an assignment (for topics whose size is inferred) or "
                        "a Metadata response is a bad frame (default 100000)")
    p.add_argument("--consumer-session-timeout-ms", type=_positive_int, default=None,
                   help="the brokers' group.consumer.session.timeout.ms, which no frame carries (default: where "
                        "the coordinator is seen removing a silent member, that is when; otherwise Kafka's 45000)")
    p.add_argument("--decoder", choices=["cython", "python"], default=None,
                   help="batch decoder implementation (default: as KWIRE_NO_EXTENSIONS says)")
    p.add_argument("--verbose", action="store_true", help="keep Spark's log output")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kwire", description="kwire: the Kafka consumer-group protocol")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="run one consumer-group round trip through the codec and an assignor")
    d.add_argument("--strategy", default="range", choices=["range", "roundrobin", "sticky", "cooperative-sticky"])

    s = sub.add_parser("synth", help="write a deterministic synthetic capture of many consumer groups")
    s.add_argument("out", help="Parquet file to write")
    s.add_argument("--groups", type=_positive_int, default=1000)
    s.add_argument("--seed", type=_non_negative_int, default=0)
    s.add_argument("--duration", type=_positive_float, default=600.0,
                   help="seconds of traffic per group (default 600)")
    s.add_argument("--heartbeat-ms", type=_positive_int, default=3000, help="heartbeat.interval.ms (default 3000)")
    s.add_argument("--corrupt-rate", type=_rate, default=0.0,
                   help="fraction of frames to damage (cut short or bit-flipped), to exercise error handling")
    s.add_argument("--protocol", choices=["classic", "consumer", "mixed"], default="classic",
                   help="classic groups (default), KIP-848 consumer-protocol groups, or groups mid-upgrade with "
                        "members of both")
    s.add_argument("--describe-ms", type=_non_negative_int, default=0,
                   help="consumer and mixed: an admin client polls ConsumerGroupDescribe this often (0: never)")

    p = sub.add_parser("pipeline", help="analyse a capture on Spark: rebalances, ownership, what-if assignors")
    add_pipeline_arguments(p)

    r = sub.add_parser("record", help="recording proxy: forward to a broker and capture every frame")
    r.add_argument("out", help="capture Parquet file to write")
    r.add_argument("--upstream", required=True, type=_host_port, help="broker HOST:PORT to forward to")
    r.add_argument("--listen-port", type=_port, default=19092)
    r.add_argument("--listen-host", default="127.0.0.1")
    r.add_argument("--duration", type=_positive_float, default=None, help="stop after this many seconds")

    i = sub.add_parser("import-pcap", help="convert a pcap of Kafka traffic into a capture")
    i.add_argument("pcap")
    i.add_argument("--out", required=True, help="capture Parquet file to write")
    i.add_argument("--port", type=_port, action="append", default=None,
                   help="broker port (repeatable; default 9092)")

    from kwire import testing  # the mock cluster: imported here, the other commands do not need it
    testing.add_serve_parser(sub)

    args = parser.parse_args(argv)
    if args.command == "serve":
        return testing.serve(args)
    if args.command == "demo":
        return demo(args.strategy)
    return {"synth": cmd_synth, "pipeline": cmd_pipeline, "record": cmd_record,
            "import-pcap": cmd_import_pcap}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
