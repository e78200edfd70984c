"""The batch decoder on consumer-protocol (KIP-848) traffic, against classic heartbeats, frame for frame.

Run: ``python benches/bench_decode_consumer.py [--groups N] [--members M] [--seconds S] [--repeat R]``.

Three captures, cached in the temporary directory:

1. **consumer**: N consumer-protocol groups of M members run for S seconds by kwire's own
   ``ConsumerGroupCoordinator`` and ``ConsumerProtocolMember`` (tests/consumer_captures.py): joins, a member
   added, one leaving, and the keep-alive ConsumerGroupHeartbeats between, each request and response encoded by
   kwire's codec as a capture holds them (plus a Metadata and two ConsumerGroupDescribe exchanges a group);
2. **classic heartbeats**: as many classic Heartbeat request/response pairs (v4, one member a connection);
3. **classic synth**: ``kwire.pipeline.synth`` of the same number of groups (JoinGroup, SyncGroup, Heartbeat,
   Metadata), the pipeline's own benchmark capture.

Each is decoded whole in this process (``decode_table``) by each twin, best of ``--repeat``; printed as frames per
second and, for the consumer capture, as the ratio of its frames/s to the classic heartbeats'.  The load average
is printed before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

# The consumer-protocol capture is made by the tests' recording loop, at the top of this checkout.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cached(name, make):
    cache = os.path.join(tempfile.gettempdir(), "kwire-bench-decode-consumer")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, name)
    if not os.path.exists(path):
        t = time.perf_counter()
        partial = path + ".part.parquet"
        make(partial)
        os.replace(partial, path)
        print(f"made {name} in {time.perf_counter() - t:.1f} s")
    return path


def consumer_path(groups, members, seconds):
    from tests.consumer_captures import consumer_capture

    return _cached(f"consumer-{groups}-{members}-{seconds}.parquet",
                   lambda p: consumer_capture(p, groups=groups, members=members, seconds=seconds))


def classic_heartbeats_path(frames):
    import kwire
    from kwire.pipeline._capture import CaptureWriter

    def make(path):
        with CaptureWriter(path) as w:
            for k in range(frames // 2):
                conn = 1 + k % 500
                request = kwire.encode_request(kwire.HeartbeatRequest(
                    group_id=f"group-{conn % 50}", generation_id=7, member_id=f"consumer-{conn}-0123456789abcdef"),
                    4, correlation_id=k, client_id=f"consumer-{conn}")
                w.append(1000 * k, conn, 0, request)
                w.append(1000 * k + 700, conn, 1, kwire.encode_response(kwire.HeartbeatResponse(error_code=0), 4,
                                                                        correlation_id=k))

    return _cached(f"classic-heartbeats-{frames}.parquet", make)


def classic_synth_path(groups):
    from kwire.pipeline import synth

    return _cached(f"classic-synth-{groups}.parquet", lambda p: synth(p, groups=groups, seed=1))


def frames_per_second(path, impl, repeat):
    from kwire.pipeline import decode_table, read_capture

    table = read_capture(path)
    best = min(_timed(lambda: decode_table(table, impl)) for _ in range(repeat))
    return table.num_rows, table.num_rows / best


def _timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(argv=None):
    from kwire import _impl

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if min(args.groups, args.members, args.seconds, args.repeat) <= 0:
        ap.error("--groups, --members, --seconds and --repeat must be positive")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    consumer = consumer_path(args.groups, args.members, args.seconds)
    from kwire.pipeline import read_capture

    n = read_capture(consumer).num_rows
    captures = {"consumer": consumer, "classic heartbeats": classic_heartbeats_path(n),
                "classic synth": classic_synth_path(args.groups)}
    impls = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]
    rates = {}
    for impl in impls:
        for name, path in captures.items():
            frames, rate = frames_per_second(path, impl, args.repeat)
            rates[impl, name] = rate
            print(f"decoder {impl:<7} {name:<19} {frames:>9,} frames {rate:>11,.0f} frames/s (best of {args.repeat})")
        print(f"  consumer / classic heartbeats, {impl}: "
              f"{rates[impl, 'consumer'] / rates[impl, 'classic heartbeats']:.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
