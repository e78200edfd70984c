"""``kwire pipeline``: the Spark stages from a capture to rebalance tables.

1. **decode**: the capture is partitioned by connection and sorted by
   ``seq`` inside each partition, so every response follows its request in
   the same Python worker; ``mapInArrow`` feeds each Arrow batch to the
   batch decoder (``kwire.codec._batch_c``) as zero-copy NumPy views.  Written to
   ``OUT/frames``.
2. **events**: group frames only; heartbeat requests dropped and successful
   heartbeats folded into the last one per (group, member, generation) --
   the bulk of the traffic, reduced in the JVM before Python sees it.
3. **rebalances / assignments / what-if**: ``applyInArrow`` over hash
   buckets of group ids (not one task per group), each bucket analysed by
   :mod:`kwire.pipeline._analysis`.
4. a Markdown report from small aggregates.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter

import pyarrow as pa

from kwire.errors import ArgumentTypeError
from kwire.pipeline import _analysis as analysis
DEFAULT_BUCKETS_PER_CORE = 4


# -- schema conversion -------------------------------------------------------------------------


# Arrow's scalar types and the Spark type each becomes (by name in pyspark.sql.types,
# which is imported only when a Spark stage runs).
_SCALAR_TYPES = (
    (pa.types.is_int8, "ByteType"), (pa.types.is_int16, "ShortType"), (pa.types.is_int32, "IntegerType"),
    (pa.types.is_int64, "LongType"), (pa.types.is_float64, "DoubleType"), (pa.types.is_boolean, "BooleanType"),
    (pa.types.is_string, "StringType"), (pa.types.is_binary, "BinaryType"), (pa.types.is_timestamp, "TimestampType"),
)


def spark_type(t):
    from pyspark.sql import types as T

    for is_arrow_type, spark_name in _SCALAR_TYPES:
        if is_arrow_type(t):
            return getattr(T, spark_name)()
    if pa.types.is_list(t):
        return T.ArrayType(spark_type(t.value_type), True)
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in t])
    raise ArgumentTypeError(f"no Spark type for {t}")


def spark_schema(schema: pa.Schema):
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in schema])


# -- session -------------------------------------------------------------------------------------


def spark_session(master=None, shuffle_partitions=None, driver_memory="2g", app_name="kwire-pipeline", conf=None):
    """A SparkSession; ``master=None`` starts an embedded ``local[*]`` one
    bound to 127.0.0.1."""
    from pyspark.sql import SparkSession

    local = master is None or master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Workers must be this interpreter (this venv, this kwire), not
        # whatever "python3" is first on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = SparkSession.builder.appName(app_name).master(master or "local[*]")
    b = b.config("spark.sql.session.timeZone", "UTC").config("spark.sql.execution.arrow.pyspark.enabled", "true")
    b = b.config("spark.ui.enabled", "false").config("spark.driver.memory", driver_memory)
    # INT96 (Spark's default) reads back without a time zone elsewhere.
    b = b.config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    if local:
        b = b.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    if shuffle_partitions:
        b = b.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    return b.getOrCreate()


# -- stages ------------------------------------------------------------------------------------


def _decode_partition(batches, implementation=None):
    # Runs in the Python worker: one Pairing per partition, so pairing state
    # survives batch boundaries (the partition is sorted by conn, seq).
    from kwire.pipeline._decode import batch_module, decode_record_batch

    mod = batch_module(implementation)
    pairing = mod.Pairing()
    for batch in batches:
        yield decode_record_batch(batch, pairing, mod)


def decode_stage(spark, capture_path, partitions=None, implementation=None):
    from kwire.pipeline._decode import batch_module

    capture = spark.read.parquet(capture_path).select("seq", "ts", "conn", "direction", "frame", "truncated")
    n = partitions or spark.sparkContext.defaultParallelism
    ordered = capture.repartition(n, "conn").sortWithinPartitions("conn", "seq")
    schema = spark_schema(batch_module(implementation).FRAMES_SCHEMA)
    return ordered.mapInArrow(lambda it: _decode_partition(it, implementation), schema)


def events_stage(frames, buckets):
    from pyspark.sql import functions as F

    f = frames.where(F.col("group_id").isNotNull() & F.col("api_key").isin(11, 12, 13, 14)
                     & F.col("decode_error").isNull())
    is_hb = F.col("api_key") == 12
    hb_ok = is_hb & (F.col("direction") == 1) & (F.col("error_code") == 0)
    keep = f.where(~hb_ok & ~(is_hb & (F.col("direction") == 0))).select(
        *[F.unix_micros(c).alias(c) if c in ("ts", "request_ts") else F.col(c) for c in analysis.EVENT_COLUMNS])
    hb = f.where(hb_ok).groupBy("group_id", "member_id", "generation_id").agg(
        F.max(F.unix_micros("request_ts")).alias("ts"), F.max("seq").alias("seq"))
    hb = hb.select(*[
        F.col(c) if c in ("group_id", "member_id", "generation_id", "ts", "seq")
        else (F.lit(12).cast("short").alias(c) if c == "api_key"
              else F.lit(1).cast("byte").alias(c) if c == "direction"
              else F.lit(0).cast("short").alias(c) if c == "error_code"
              else F.lit(None).cast(keep.schema[c].dataType).alias(c))
        for c in analysis.EVENT_COLUMNS])
    events = keep.unionByName(hb)
    return events.withColumn("bucket", F.pmod(F.xxhash64("group_id"), F.lit(buckets))).repartition(
        buckets, "bucket")


def _bucket_fn(kind):
    fn = {"rebalances": analysis.rebalances_of, "assignments": analysis.assignments_of,
          "whatif": analysis.whatif_of}[kind]
    schema = {"rebalances": analysis.REBALANCE_SCHEMA, "assignments": analysis.ASSIGNMENT_SCHEMA,
              "whatif": analysis.WHATIF_SCHEMA}[kind]

    def run(table: pa.Table) -> pa.Table:
        return pa.Table.from_pandas(fn(table.drop(["bucket"]).to_pandas()), schema=schema, preserve_index=False)

    def run_pandas(pdf):
        return fn(pdf.drop(columns=["bucket"]))

    return run, run_pandas, schema


def bucket_stage(events, kind):
    run, run_pandas, schema = _bucket_fn(kind)
    grouped = events.groupBy("bucket")
    if hasattr(grouped, "applyInArrow"):
        return grouped.applyInArrow(run, spark_schema(schema))
    return grouped.applyInPandas(run_pandas, spark_schema(schema))


# -- the whole pipeline -----------------------------------------------------------------------


def run_pipeline(capture_path, out_dir, spark=None, master=None, buckets=None, partitions=None,
                 implementation=None, log=print):
    """Run every stage; returns a dict of timings and counts."""
    from pyspark.sql import functions as F

    own_session = spark is None
    t_start = time.perf_counter()
    spark = spark or spark_session(master)
    try:
        os.makedirs(out_dir, exist_ok=True)
        par = spark.sparkContext.defaultParallelism
        buckets = buckets or DEFAULT_BUCKETS_PER_CORE * par
        timings = {}

        t = time.perf_counter()
        frames_path = os.path.join(out_dir, "frames")
        decode_stage(spark, capture_path, partitions, implementation).write.mode("overwrite").parquet(frames_path)
        frames = spark.read.parquet(frames_path)
        timings["decode"] = time.perf_counter() - t
        log(f"decode: {timings['decode']:.1f}s")

        t = time.perf_counter()
        events = events_stage(frames, buckets).persist()
        tables = {}
        for kind in ("rebalances", "assignments", "whatif"):
            path = os.path.join(out_dir, kind)
            bucket_stage(events, kind).write.mode("overwrite").parquet(path)
            tables[kind] = spark.read.parquet(path)
            timings[kind] = time.perf_counter() - t
            log(f"{kind}: {timings[kind]:.1f}s")
            t = time.perf_counter()
        events.unpersist()

        t = time.perf_counter()
        summary = summarize(frames, tables, F)
        summary["timings"] = timings
        with open(os.path.join(out_dir, "report.md"), "w") as fh:
            fh.write(render_report(capture_path, summary))
        timings["report"] = time.perf_counter() - t
        summary["wall_s"] = time.perf_counter() - t_start
        return summary
    finally:
        if own_session:
            spark.stop()


def summarize(frames, tables, F):
    """Report figures.  The per-generation tables are small next to the
    capture (one row per group and generation), so they are aggregated in
    pandas after one collect each rather than in a dozen Spark jobs."""
    s = {}
    row = frames.agg(F.count(F.lit(1)).alias("frames"), F.sum(F.col("decode_error").isNotNull().cast("long"))
                     .alias("errors"), F.countDistinct("conn").alias("conns")).first()
    s["frames"], s["decode_errors"], s["connections"] = row["frames"], row["errors"] or 0, row["conns"]
    kinds = frames.where(F.col("decode_error").isNotNull()).groupBy(
        F.substring_index("decode_error", ":", 1).alias("kind")).agg(F.count(F.lit(1)).alias("n")).collect()
    s["error_kinds"] = sorted(((r["kind"], r["n"]) for r in kinds), key=lambda kv: (-kv[1], kv[0]))[:8]
    reb = tables["rebalances"].select("group_id", "generation_id", "protocol_name", "stall_ms", "trigger",
                                      "error_codes").toPandas()
    wi = tables["whatif"].toPandas()
    return summarize_tables(s, reb, wi)


def summarize_tables(s, reb, wi):
    s["groups"], s["rebalances"] = int(reb.group_id.nunique()), len(reb)
    stall = reb.stall_ms.dropna()
    s["stall"] = {"p50": _q(stall, 0.5), "p95": _q(stall, 0.95), "max": _q(stall, 1.0),
                  "total": float(stall.sum()) if len(stall) else None}
    counts = reb.trigger.value_counts()
    s["triggers"] = sorted(((t, int(n)) for t, n in counts.items()), key=lambda kv: (-kv[1], kv[0]))
    codes = Counter(int(c) for codes in reb.error_codes if codes is not None for c in codes)
    s["errors"] = sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))
    top = []
    for gid, g in reb.sort_values("generation_id").groupby("group_id"):
        top.append({"group_id": gid, "rebalances": len(g), "stall_ms": float(g.stall_ms.sum()),
                    "protocol": g.protocol_name.iloc[-1],
                    "triggers": ", ".join(dict.fromkeys(g.trigger))})
    s["top_groups"] = sorted(top, key=lambda r: (-r["rebalances"], -r["stall_ms"], r["group_id"]))[:10]
    moved = wi[wi.moved.notna()].copy()
    moved["label"] = moved.strategy.where(~moved.observed.astype(bool), "observed")
    s["whatif"] = []
    for label, g in sorted(moved.groupby("label"), key=lambda kv: kv[0]):
        s["whatif"].append({"strategy": label, "generations": len(g), "moved": int(g.moved.sum()),
                            "mean_imbalance": float(g.imbalance.mean()), "max_imbalance": int(g.imbalance.max())})
    proto = wi[wi.observed.astype(bool)].set_index(["group_id", "generation_id"]).strategy
    runs = wi[~wi.observed.astype(bool)]
    same = runs[[proto.get((g, n)) == st for g, n, st in zip(runs.group_id, runs.generation_id, runs.strategy)]]
    s["reproduced"] = (int(same.reproduces_observed.astype(bool).sum()), len(same))
    return s


def _q(series, q):
    return float(series.quantile(q)) if len(series) else None


def _fmt(v, unit=""):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.1f}{unit}"
    return f"{v:,}{unit}"


def render_report(capture_path, s):
    lines = [f"# Consumer-group rebalances in `{os.path.basename(str(capture_path))}`", ""]
    lines.append(f"{_fmt(s['frames'])} frames on {_fmt(s['connections'])} connections, "
                 f"{_fmt(s['decode_errors'])} not decodable; {_fmt(s['groups'])} groups, "
                 f"{_fmt(s['rebalances'])} generations.")
    lines += ["", "## How long rebalances stall consumption", "",
              "Stall = first JoinGroup of a generation to its last successful SyncGroup response.", "",
              "| p50 | p95 | max | total |", "|---|---|---|---|",
              "| " + " | ".join(_fmt(s["stall"][k], " ms") for k in ("p50", "p95", "max", "total")) + " |"]
    lines += ["", "## Why groups rebalance", "", "| likely trigger | generations |", "|---|---|"]
    lines += [f"| {t} | {_fmt(n)} |" for t, n in s["triggers"]]
    if s["errors"]:
        lines += ["", "Errors answered during rebalances:", "", "| error | generations |", "|---|---|"]
        lines += [f"| {c} {analysis.ERROR_NAMES.get(c, '')} | {_fmt(n)} |" for c, n in s["errors"]]
    lines += ["", "## Groups that rebalance most", "", "| group | protocol | generations | total stall | triggers |",
              "|---|---|---|---|---|"]
    lines += [f"| {g['group_id']} | {g['protocol']} | {g['rebalances']} | {_fmt(g['stall_ms'], ' ms')} | "
              f"{g['triggers']} |" for g in s["top_groups"]]
    lines += ["", "## What if the groups used another assignor", "",
              "Every observed generation after the first, re-run with kwire's assignors on the observed "
              "subscriptions and the previous generation's observed ownership. *moved* counts partitions whose "
              "owner changed (a partition held back by cooperative-sticky counts as moved).", "",
              "| strategy | generations | partitions moved | mean imbalance (max−min per member) | worst imbalance |",
              "|---|---|---|---|---|"]
    for w in s["whatif"]:
        lines.append(f"| {w['strategy']} | {_fmt(w['generations'])} | {_fmt(w['moved'])} | "
                     f"{_fmt(w['mean_imbalance'])} | {_fmt(w['max_imbalance'])} |")
    ok, n = s["reproduced"]
    lines += ["", f"kwire reproduced the leader's assignment exactly in {ok:,} of {n:,} generations whose protocol "
              "it ran (a mismatch means the leader saw other inputs: partition counts, racks or claims not in "
              "the capture)."]
    if s["decode_errors"]:
        lines += ["", "## Frames that did not decode", "", "| error | frames |", "|---|---|"]
        lines += [f"| {k} | {_fmt(n)} |" for k, n in s["error_kinds"]]
    t = s.get("timings", {})
    if t:
        lines += ["", "Stage times: " + ", ".join(f"{k} {v:.1f} s" for k, v in t.items()) + "."]
    return "\n".join(lines) + "\n"
