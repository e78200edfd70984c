"""Throughput of the batch decoder (compiled vs pure) and wall time of the Spark pipeline.

    python scripts/bench_pipeline.py --groups 1000 [--spark]

Generates a capture with ``kwire synth`` (cached under /tmp by seed and size),
times ``decode_record_batch`` over it in capture batches of 10,000 rows (what
mapInArrow hands over), for each available implementation, then optionally
runs the whole pipeline on an embedded local[*] session.
"""

import argparse
import os
import tempfile
import time

from kwire import _impl
from kwire.pipeline._capture import read_capture
from kwire.codec import batch_decoder
from kwire.pipeline._decode import decode_record_batch
from kwire.pipeline._synth import synth


def decoder_rate(table, impl, rows=10_000):
    mod = batch_decoder(impl)
    batches = table.sort_by([("conn", "ascending"), ("seq", "ascending")]).to_batches(max_chunksize=rows)
    pairing = mod.Pairing()
    t = time.perf_counter()
    n = sum(decode_record_batch(b, pairing, mod).num_rows for b in batches)
    return n / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--max-frames", type=int, default=500_000, help="frames timed per decoder")
    ap.add_argument("--spark", action="store_true")
    args = ap.parse_args()
    path = os.path.join(tempfile.gettempdir(), f"kwire-bench-{args.groups}-{args.seed}.parquet")
    if not os.path.exists(path):
        t = time.perf_counter()
        n = synth(path, groups=args.groups, seed=args.seed)
        print(f"synth: {n:,} frames in {time.perf_counter() - t:.1f}s")
    table = read_capture(path)
    sample = table.slice(0, args.max_frames)
    impls = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]
    for impl in impls:
        print(f"batch decoder ({impl}): {decoder_rate(sample, impl):,.0f} frames/s on {sample.num_rows:,} frames")
    if args.spark:
        from kwire.pipeline._spark_stages import run_pipeline, spark_session

        spark = spark_session()
        spark.sparkContext.setLogLevel("ERROR")
        out = tempfile.mkdtemp(prefix="kwire-bench-out-")
        s = run_pipeline(path, out, spark=spark, log=lambda *_: None)
        spark.stop()
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in s["timings"].items())
        print(f"pipeline: {s['frames']:,} frames, {s['groups']:,} groups, {s['rebalances']:,} generations in "
              f"{s['wall_s']:.1f}s ({stages})")


if __name__ == "__main__":
    main()
