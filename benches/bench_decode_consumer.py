"""The batch decoder on consumer-protocol (KIP-848) traffic, against classic heartbeats, frame for frame.

Run: ``python benches/bench_decode_consumer.py [--groups N] [--members M] [--seconds S] [--repeat R]``.

Four captures, cached in the temporary directory:

1. **consumer**: N consumer-protocol groups of M members run for S seconds by kwire's own
   ``ConsumerGroupCoordinator`` and ``ConsumerProtocolMember`` (tests/consumer_captures.py): joins, a member
   added, one leaving, and the keep-alive ConsumerGroupHeartbeats between, each request and response encoded by
   kwire's codec as a capture holds them (plus a Metadata and two ConsumerGroupDescribe exchanges a group);
2. **consumer keep-alives** and **classic heartbeats**: as many plain heartbeat request/response pairs of each
   protocol (ConsumerGroupHeartbeat v0 with every field unchanged, Heartbeat v4), with the same ids, one member a
   connection: the two fast paths frame for frame;
3. **classic synth**: ``kwire.pipeline.synth`` of the same number of groups (JoinGroup, SyncGroup, Heartbeat,
   Metadata), the pipeline's own benchmark capture.

Each is decoded in this process by each twin, batch by batch as a decode task does (the capture sorted by
connection beforehand, untimed), best of ``--repeat``; printed as frames per second and, for the consumer
capture, as the ratio of its frames/s to the classic heartbeats'.  The load average
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


def heartbeats_path(frames, protocol):
    """``frames`` heartbeat request/response pairs of ``protocol``: classic Heartbeat v4, or the consumer
    protocol's keep-alive ConsumerGroupHeartbeat v0 (every field unchanged, so null), with the same ids."""
    from kwire import codec as c
    from kwire.pipeline._capture import CaptureWriter

    def pair(conn, k):
        group, member, client = f"group-{conn % 50}", f"consumer-{conn}-0123456789abcdef", f"consumer-{conn}"
        if protocol == "classic":
            return (c.encode_request(c.HeartbeatRequest(group_id=group, generation_id=7, member_id=member), 4,
                                     correlation_id=k, client_id=client),
                    c.encode_response(c.HeartbeatResponse(error_code=0), 4, correlation_id=k))
        return (c.encode_request(c.ConsumerGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=7), 0,
                                 correlation_id=k, client_id=client),
                c.encode_response(c.ConsumerGroupHeartbeatResponse(member_id=member, member_epoch=7,
                                                                   heartbeat_interval_ms=5000), 0, correlation_id=k))

    def make(path):
        with CaptureWriter(path) as w:
            for k in range(frames // 2):
                conn = 1 + k % 500
                request, response = pair(conn, k)
                w.append(1000 * k, conn, 0, request)
                w.append(1000 * k + 700, conn, 1, response)

    return _cached(f"{protocol}-heartbeats-{frames}.parquet", make)


def classic_synth_path(groups):
    from kwire.pipeline import synth

    return _cached(f"classic-synth-{groups}.parquet", lambda p: synth(p, groups=groups, seed=1))


def frames_per_second(path, impl, repeat):
    """The decoder's own rate: the capture sorted by connection once, then each timed run decodes its batches
    of 65,536 frames with one pairing, as a decode task does (``decode_table`` would add the sorts)."""
    from kwire.codec import batch_decoder
    from kwire.pipeline import read_capture
    from kwire.pipeline._decode import decode_record_batch

    mod = batch_decoder(impl)
    table = read_capture(path).sort_by([("conn", "ascending"), ("seq", "ascending")])
    batches = table.to_batches(max_chunksize=65536)

    def run():
        pairing = mod.Pairing()
        for b in batches:
            decode_record_batch(b, pairing, mod)

    best = min(_timed(run) for _ in range(repeat))
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
    captures = {"consumer": consumer, "consumer keep-alives": heartbeats_path(n, "consumer"),
                "classic heartbeats": heartbeats_path(n, "classic"), "classic synth": classic_synth_path(args.groups)}
    impls = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]
    rates = {}
    for impl in impls:
        for name, path in captures.items():
            frames, rate = frames_per_second(path, impl, args.repeat)
            rates[impl, name] = rate
            print(f"decoder {impl:<7} {name:<19} {frames:>9,} frames {rate:>11,.0f} frames/s (best of {args.repeat})")
        for name in ("consumer", "consumer keep-alives"):
            print(f"  {name} / classic heartbeats, {impl}: {rates[impl, name] / rates[impl, 'classic heartbeats']:.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
