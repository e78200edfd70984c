"""The migration what-if's speed: simulated member-events per second of simulation time.

Run: ``python benches/bench_migrate.py [--groups N] [--seed S] [--spark [--spark-protocol P]]``.

1. A synthetic classic capture of N groups (``kwire.pipeline.synth``, cached in the temporary directory as
   bench_pipeline.py caches it), its events and each group's membership history (not timed).
2. **In one process**: every history replayed under the consumer protocol (what the pipeline does with
   classic groups), then, read as if observed under the consumer protocol, under classic eager and
   cooperative rebalances (what it does with consumer-protocol groups).  A member-event is one request a
   simulated member sent and the simulated coordinator handled (docs/PIPELINE.md).  Reported per
   direction: member-events, wall seconds inside the simulation function (as the pipeline's
   ``stages.migration.replay_seconds`` sums them), member-events per wall second and per CPU second, best
   of ``--repeat``, and per CPU second of the first pass (what a Spark task, which replays each history
   once in its worker, compares with).  The goal is >= 100,000 member-events per second of simulation time.
3. ``--spark``: ``run_pipeline`` on the same capture (or, with ``--spark-protocol consumer``, on a synthetic
   capture of consumer-protocol groups, which the pipeline replays under classic rebalances) on local[2], and
   its ``stages.migration`` figures:
   ``member_events / replay_seconds``, the replay time summed over the tasks, and the same per CPU second
   (``replay_cpu_seconds``), and how many of its tasks ran modules of kwire/_compiled.py as Python
   (``replay_tasks_python``; a worker imports the driver's kwire).

The load average is printed before and after: the machine may be shared, and the figures scale with it.
So is how many of the modules kwire/_compiled.py lists run compiled (an edited one runs as Python until the
next ``python setup.py build_ext --inplace``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

# The events are read as the tests read them (tests/analysis_frames.py), at the top of this checkout.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_pipeline import capture_path  # noqa: E402


def histories_of(path):
    import pyarrow as pa

    from kwire.pipeline import decode_capture
    from kwire.pipeline._events import EVENT_COLUMNS
    from kwire.pipeline._migrate_history import classic_histories
    from tests.analysis_frames import events_from_frames

    t = time.perf_counter()
    events = pa.Table.from_pandas(events_from_frames(decode_capture(path))[EVENT_COLUMNS], preserve_index=False)
    histories = list(classic_histories(events))
    print(f"histories: {len(histories):,} groups, {sum(h.n_events for h in histories):,} membership events, "
          f"{sum(h.n_rebalances for h in histories):,} rebalances, built in {time.perf_counter() - t:.1f} s "
          f"(not counted below)")
    return histories


def bench_direction(name, histories, simulate, repeat):
    best = first = None
    for _ in range(repeat):
        events = 0
        wall = cpu = 0.0
        for h in histories:
            t, c = time.perf_counter(), time.process_time()
            result = simulate(h)
            wall += time.perf_counter() - t
            cpu += time.process_time() - c
            events += result.total_member_events
        if first is None:
            first = (events, wall, cpu)
        if best is None or wall < best[1]:
            best = (events, wall, cpu)
    events, wall, cpu = best
    # The first pass beside the best: a Spark task replays each history once, in a worker whose first
    # replays of the process also fill the assignors' remembered Java hashes and orders (member ids, topic
    # sets), which later passes over the same histories find.
    print(f"  {name:<30} {events:9,} member-events  {wall:6.2f} s  {events / wall:10,.0f}/s wall  "
          f"{events / cpu:10,.0f}/s cpu  (first pass {first[0] / first[2]:,.0f}/s cpu)")
    return events / wall


def consumer_capture_path(protocol, groups, seed):
    """A synthetic capture of consumer-protocol (or mixed) groups, cached beside the classic one: the pipeline
    replays these under classic eager and cooperative rebalances."""
    from kwire.pipeline._synth_fleet import synth

    cache = os.path.join(tempfile.gettempdir(), "kwire-bench-pipeline")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"synth-{protocol}-{groups}-{seed}.parquet")
    if not os.path.exists(path):
        partial = path + ".part"
        synth(partial, protocol=protocol, groups=groups, seed=seed)
        os.replace(partial, path)
    return path


def bench_spark(path, keep=None):
    from kwire.pipeline import run_pipeline, spark_session

    out = keep or tempfile.mkdtemp(prefix="kwire-bench-migrate-")
    spark = spark_session("local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    spark.range(1).count()
    try:
        s = run_pipeline(path, os.path.join(out, "e2e"), spark=spark, log=lambda *_: None)
    finally:
        spark.stop()
        if keep is None:
            shutil.rmtree(out, ignore_errors=True)
    st = s["stages"]["migration"]
    print(f"spark local[2]: migration stage {st['seconds']:.1f} s, {st['rows']:,} rows, "
          f"{st['member_events']:,} member-events in {st['replay_seconds']:.2f} s of replay = "
          f"{st['member_events_per_second']:,.0f} member-events/s; {st['replay_cpu_seconds']:.2f} CPU s = "
          f"{st['member_events_per_cpu_second']:,.0f} per CPU second; {st['replay_tasks_python']} of "
          f"{st['replay_tasks']} tasks replayed with modules running as Python")


def main(argv=None):
    import kwire
    from kwire.pipeline._migrate_classic import simulate_classic
    from kwire.pipeline._migrate_consumer import simulate_consumer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--spark", action="store_true", help="also run the pipeline on local[2]")
    ap.add_argument("--spark-protocol", choices=("classic", "consumer", "mixed"), default="classic",
                    help="the protocol of the capture --spark runs: consumer-protocol groups are replayed under "
                         "classic eager and cooperative rebalances (default: classic)")
    ap.add_argument("--out", help="with --spark: keep the pipeline's output (its report and tables) in this folder")
    args = ap.parse_args(argv)
    if args.groups <= 0 or args.repeat <= 0:
        ap.error("--groups and --repeat must be positive")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    path = capture_path(args.groups, args.seed)
    histories = histories_of(path)
    as_consumer = [h._replace(protocol="consumer") for h in histories]
    from kwire._compiled import COMPILED, compiled_status

    compiled = [name for name, path in compiled_status().items() if path]
    print(f"kwire {kwire.IMPLEMENTATION}: {len(compiled)} of the {len(COMPILED)} modules kwire/_compiled.py lists "
          f"run compiled ({len(compiled_status())} imported)")
    print("in one process (best of %d):" % args.repeat)
    bench_direction("classic -> consumer", histories, simulate_consumer, args.repeat)
    bench_direction("consumer -> classic eager", as_consumer, lambda h: simulate_classic(h), args.repeat)
    bench_direction("consumer -> classic cooperative", as_consumer,
                    lambda h: simulate_classic(h, cooperative=True), args.repeat)
    if args.spark:
        bench_spark(path if args.spark_protocol == "classic" else
                    consumer_capture_path(args.spark_protocol, args.groups, args.seed), args.out)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
