"""The Spark pipeline's figures from one run, as ratios against their goals.

Run: ``python benches/bench_pipeline.py [--groups N] [--seed S | --capture PATH] [--e2e]``.

1. A synthetic capture of N groups (``kwire.pipeline.synth``), cached in the
   temporary directory: generating one takes longer than benchmarking it.
2. **Batch decoder**, in this process: frames per second of each twin
   over the whole capture (``decode_table``), best of ``--repeat``, with how
   many of the frames are group and Metadata frames, so runs on captures with
   and without Metadata traffic can be compared frame for frame.
3. **What-if replay**, in this process, on the same timelines (built from the
   events as Arrow, as the pipeline builds them): members replayed per
   second (a member replayed by one strategy counts once, as
   ``stages.whatif.members`` counts it).  ``batch`` is :func:`replay_batch`,
   the time ``stages.whatif.replay_seconds`` sums; ``batch+pack`` adds
   packing: first the pipeline's, :func:`pack_replayed` straight from the
   events' Arrow columns (with :func:`replayed_rows`, the rows each
   generation reads), then the per-generation packing it replaced
   (``replay_inputs`` and ``packed_inputs``, now the tests' reference in
   tests/whatif_oracle.py), and the batch on its inputs.  Pack and batch are best of ``--repeat``, the cycle collector
   paused as the pipeline pauses it, and the two paths' tables must be
   equal.  ``per-generation`` is the reference ``replay``, one generation at
   a time; ``member-level`` is the replay before arrays (``whatif_rows``),
   both in tests/whatif_oracle.py.  The goal is >= 450,000 members/s of
   replay (``batch``, what ``replay_seconds`` counts).  Then the sticky pair alone: ``assign_sticky_pair_many``
   on all the generations' groups against ``assign_sticky_pair`` group by group.
4. **Decode ÷ do-nothing**, in a started local[2] session that has already
   run a job and both stages once (the JVM and the Python workers warm): the
   decode stage as ``run_pipeline`` runs it (``write_frames``: its tasks
   decode and write ``frames`` to Parquet themselves), against a
   ``mapInArrow`` that passes the same ordered capture through unchanged and
   Spark writes to Parquet.  Best of
   ``--repeat`` runs each, alternated, and the CPU seconds of the session's
   JVM and Python workers for each, as a ratio that moves less with the
   machine's load.  The goal is <= 1.5x.
5. ``--e2e``: ``run_pipeline`` end to end in the same session, with
   report.json's stage seconds and the what-if's members per replay second.

The load average is printed before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

# The what-if's references live with the tests (tests/whatif_oracle.py), at the top of this checkout.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def capture_path(groups, seed):
    from kwire.pipeline import synth

    cache = os.path.join(tempfile.gettempdir(), "kwire-bench-pipeline")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"synth-{groups}-{seed}.parquet")
    if not os.path.exists(path):
        t = time.perf_counter()
        partial = path + ".part"
        frames = synth(partial, groups=groups, seed=seed)
        os.replace(partial, path)
        print(f"synth: {groups:,} groups, {frames:,} frames in {time.perf_counter() - t:.1f} s -> {path}")
    return path


def bench_decoder(path, repeat):
    import numpy as np

    from kwire import _impl
    from kwire.pipeline import decode_table, read_capture

    table = read_capture(path)
    impls = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]
    decoded = None
    for impl in impls:
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            decoded = decode_table(table, impl)
            times.append(time.perf_counter() - t)
        print(f"decoder {impl:<7} {min(times):7.2f} s  {table.num_rows / min(times):>11,.0f} frames/s "
              f"(best of {repeat})")
    keys = decoded.column("api_key").to_numpy(zero_copy_only=False)
    group = int(np.isin(keys, (10, 11, 12, 13, 14)).sum())
    metadata = int((keys == 3).sum())
    print(f"  {table.num_rows:,} frames: {group:,} group frames, {metadata:,} Metadata frames")


def best_of(repeat, fn):
    """``(best seconds, last result)`` of ``repeat`` calls of ``fn``; each
    result is kept until the end, so freeing one is timed in no call."""
    times, results = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        results.append(fn())
        times.append(time.perf_counter() - t)
    return min(times), results[-1]


def bench_whatif(path, repeat):
    import pyarrow as pa
    import pyarrow.compute as pc

    from kwire.pipeline import decode_capture
    from kwire.pipeline._events import WHATIF_SCHEMA
    from kwire.pipeline._spark_stages import collector_paused
    from kwire.pipeline._timeline import timelines_of_arrow
    from kwire.pipeline._whatif_batch import replay_batch
    from kwire.pipeline._whatif_pack import pack_replayed, replayed_rows
    from tests.analysis_frames import events_from_frames
    from tests.whatif_oracle import packed_inputs, replay, replay_inputs, whatif_rows

    t = time.perf_counter()
    events = pa.Table.from_pandas(events_from_frames(decode_capture(path)), preserve_index=False)
    timelines = list(timelines_of_arrow(events))
    print(f"what-if input: {len(timelines):,} groups, {events.num_rows:,} events, timelines built in "
          f"{time.perf_counter() - t:.1f} s (not counted below)")

    def columnar():
        return pack_replayed([r for tl in timelines for r in replayed_rows(tl)])

    def per_generation():
        return [inp for tl in timelines for inp in replay_inputs(tl)]

    with collector_paused():
        pack, packed = best_of(repeat, columnar)
        batch, table = best_of(repeat, lambda: replay_batch(packed))
        old_pack, inputs = best_of(repeat, per_generation)
        old_batch, old_table = best_of(repeat, lambda: replay_batch(packed_inputs(inputs)))
    assert table.equals(old_table)
    rows: list = []
    t = time.perf_counter()
    for inp in inputs:
        replay(inp, rows)
    one_by_one = time.perf_counter() - t
    observed = WHATIF_SCHEMA.names.index("observed")
    count = WHATIF_SCHEMA.names.index("member_count")
    members = sum(r[count] for r in rows if not r[observed])
    assert pc.sum(pc.filter(table.column("member_count"), pc.invert(table.column("observed")))).as_py() == members

    t = time.perf_counter()
    old = [r for tl in timelines for r in whatif_rows(tl)]
    member_level = time.perf_counter() - t
    assert sum(r["member_count"] for r in old if not r["observed"]) == members

    print(f"what-if: {len(inputs):,} generations, {members:,} member replays; pack and batch best of {repeat}, "
          f"the cycle collector paused (as in the pipeline)")
    for name, seconds in (("batch", batch), ("batch+pack", batch + pack),
                          ("  pack alone", pack),
                          ("per-generation packing (the path before)", None),
                          ("batch", old_batch), ("batch+pack", old_batch + old_pack), ("  pack alone", old_pack),
                          ("one generation at a time", None),
                          ("per-generation", one_by_one), ("member-level", member_level)):
        if seconds is None:
            print(f"  {name}:")
            continue
        print(f"  {name:<14} {seconds:8.3f} s  {members / seconds:>11,.0f} members/s")
    print(f"  columnar packing {old_pack / pack:.1f}x the per-generation one; goal 450,000 members/s of replay: "
          f"batch alone {members / batch / 450_000:.2f} of it (batch+pack {members / (batch + pack) / 450_000:.2f})")
    bench_sticky_pair(inputs)


def bench_sticky_pair(inputs):
    """The sticky pair alone on the what-if's groups: one call for all
    (what replay_batch runs) against one call per generation, alternated."""
    from kwire import assignors

    groups = [inp.sticky.group for inp in inputs if inp.sticky.error is None]
    times = {"many": [], "per-group": []}
    for _ in range(3):
        t = time.perf_counter()
        assignors.assign_sticky_pair_many(groups)
        times["many"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for g in groups:
            assignors.assign_sticky_pair(g)
        times["per-group"].append(time.perf_counter() - t)
    many, alone = min(times["many"]), min(times["per-group"])
    print(f"  sticky pair: {len(groups):,} groups, assign_sticky_pair_many {many / len(groups) * 1e6:.1f} us/group, "
          f"assign_sticky_pair one by one {alone / len(groups) * 1e6:.1f} us/group ({alone / many:.1f}x; best of 3)")


def _passthrough(batches):
    yield from batches


def session_cpu_seconds():
    """CPU seconds (user + system) that this process's descendants have used
    so far, from ``/proc``: the local session's JVM, started by this
    process, and its Python workers.  None where there is no ``/proc``.  On
    a shared machine a stage's wall time moves with the neighbours' load;
    its CPU time much less."""
    if not os.path.isdir("/proc"):
        return None
    stats = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))  # parent, utime + stime
    children = {}
    for pid, (parent, _ticks) in stats.items():
        children.setdefault(parent, []).append(pid)
    todo, ticks = list(children.get(os.getpid(), ())), 0
    while todo:
        pid = todo.pop()
        ticks += stats.get(pid, (0, 0))[1]
        todo.extend(children.get(pid, ()))
    return ticks / os.sysconf("SC_CLK_TCK")


def bench_decode(spark, path, out, repeat):
    from kwire.pipeline._spark_stages import ordered_capture, write_frames

    def decode():
        write_frames(spark, path, os.path.join(out, "decoded"))

    def nothing():
        ordered = ordered_capture(spark, path)
        ordered.mapInArrow(_passthrough, ordered.schema).write.mode("overwrite").parquet(
            os.path.join(out, "nothing"))

    times = {"decode": [], "do-nothing": []}
    cpu = {"decode": [], "do-nothing": []}
    for i in range(repeat + 1):  # the first round warms both stages and is not counted
        for name, fn in (("decode", decode), ("do-nothing", nothing)):
            c = session_cpu_seconds()
            t = time.perf_counter()
            fn()
            if i:
                times[name].append(time.perf_counter() - t)
                if c is not None:
                    cpu[name].append(session_cpu_seconds() - c)
    best = {k: min(v) for k, v in times.items()}
    print(f"decode stage: {best['decode']:.2f} s, do-nothing mapInArrow: {best['do-nothing']:.2f} s "
          f"(best of {repeat}); decode / do-nothing = {best['decode'] / best['do-nothing']:.2f}x (goal <= 1.5x)")
    if cpu["decode"]:
        least = {k: min(v) for k, v in cpu.items()}
        print(f"  CPU seconds of the JVM and its Python workers: decode {least['decode']:.2f}, do-nothing "
              f"{least['do-nothing']:.2f} (least of {repeat}); {least['decode'] / least['do-nothing']:.2f}x")


def bench_e2e(spark, path, out):
    from kwire.pipeline import run_pipeline

    t = time.perf_counter()
    s = run_pipeline(path, os.path.join(out, "e2e"), spark=spark, log=lambda *_: None)
    wall = time.perf_counter() - t
    stages = s["stages"]
    print(f"end to end: {wall:.1f} s wall, {s['frames']:,} frames")
    for name, st in stages.items():
        extra = {k: v for k, v in st.items() if k != "seconds"}
        print(f"  {name:<12} {st['seconds']:7.2f} s  {extra if extra else ''}")
    w = stages["whatif"]
    if w.get("replay_seconds"):
        print(f"  what-if replay: {w['members']:,} members in {w['replay_seconds']:.2f} s = "
              f"{w['members'] / w['replay_seconds']:,.0f} members/s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--capture", help="benchmark this capture instead of a synthetic one (--groups, --seed unused)")
    ap.add_argument("--repeat", type=int, default=2,
                    help="timed runs of each decoder, of the what-if's packings and batches, and of decode and do-nothing")
    ap.add_argument("--e2e", action="store_true", help="also run the whole pipeline")
    ap.add_argument("--no-spark", action="store_true", help="the in-process what-if only")
    args = ap.parse_args(argv)
    if args.groups <= 0 or args.repeat <= 0:
        ap.error("--groups and --repeat must be positive")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    path = args.capture or capture_path(args.groups, args.seed)
    bench_decoder(path, args.repeat)
    bench_whatif(path, args.repeat)
    if not args.no_spark:
        from kwire.pipeline import spark_session

        out = tempfile.mkdtemp(prefix="kwire-bench-pipeline-")
        t = time.perf_counter()
        spark = spark_session("local[2]")
        spark.sparkContext.setLogLevel("ERROR")
        spark.range(1).count()
        print(f"spark local[2] started in {time.perf_counter() - t:.1f} s")
        try:
            bench_decode(spark, path, out, args.repeat)
            if args.e2e:
                bench_e2e(spark, path, out)
        finally:
            spark.stop()
            shutil.rmtree(out, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
