"""The Spark stage of the consumer-protocol analysis.

Groups with any ConsumerGroupHeartbeat among their events (consumer and
mixed groups) are split off the classic path (:func:`split_protocols`) and
analysed here, a bucket of groups per ``applyInArrow`` call as the classic
analysis does: each bucket's groups get their timelines built once
(:mod:`kwire.pipeline._consumer_timeline`) and every table of
:data:`~kwire.pipeline._consumer_schemas.CONSUMER_TABLES` read off them.  A
bucket returns its tables as one (a ``table`` column names each row's
table), which the driver splits and writes under ``OUT/<table>``.

Topic id → name comes from the decoded frames, capture-wide: the Metadata
responses' ``topic_ids`` beside their ``topics``, a small table handed to
every task.  ConsumerGroupDescribe responses are among the events already,
one row per described group (the ``events`` stage), so each goes to its
group's bucket.
"""

from __future__ import annotations

import gc

import pyarrow as pa

from kwire.pipeline._consumer_schemas import CONSUMER_HEARTBEAT, CONSUMER_TABLES
from kwire.pipeline._consumer_tables import consumer_tables, consumer_timelines
from kwire.pipeline._events import METADATA, RESPONSE
from kwire.pipeline._migrate_table import HISTORY_SCHEMA, history_table
from kwire.pipeline._report_consumer import summarize_consumer
from kwire.pipeline._ship import remote

#: topic id text -> name, as handed to the tasks.
TOPIC_NAME_SCHEMA = pa.schema([("topic_id", pa.string()), ("topic", pa.string())])


def _column(table, name):
    return f"{table}__{name}"


#: What one bucket returns: the tables written out, and the groups' membership histories for the migration stage.
WIDE_TABLES = {**CONSUMER_TABLES, "histories": HISTORY_SCHEMA}

#: What one bucket returns: every table's columns under its own prefix, and ``table`` naming the row's table.
CONSUMER_WIDE_SCHEMA = pa.schema([pa.field("table", pa.string())] + [
    pa.field(_column(table, f.name), f.type) for table, schema in WIDE_TABLES.items() for f in schema])


def wide_rows(tables) -> pa.Table:
    """:data:`CONSUMER_WIDE_SCHEMA` rows holding ``{table name: table}``."""
    parts = [CONSUMER_WIDE_SCHEMA.empty_table()]
    for name, table in tables.items():
        renamed = table.rename_columns([_column(name, c) for c in table.column_names])
        parts.append(renamed.append_column("table", pa.array([name] * table.num_rows, pa.string())))
    wide = pa.concat_tables(parts, promote_options="default")
    return wide.select(CONSUMER_WIDE_SCHEMA.names).cast(CONSUMER_WIDE_SCHEMA)


def analyse_consumer_bucket(events: pa.Table, names: pa.Table, session_timeout_ms=None) -> pa.Table:
    """Runs in the Python worker: one bucket of consumer-protocol groups' events to its wide rows
    (``session_timeout_ms``: the brokers' ``group.consumer.session.timeout.ms``, None when not known)."""
    topic_names = dict(zip(names.column("topic_id").to_pylist(), names.column("topic").to_pylist()))
    if "bucket" in events.column_names:
        events = events.drop_columns(["bucket"])
    # The cycle collector is off for the bucket, as for the classic analysis
    # (``_spark_stages.collector_paused``): the walk keeps a few objects per
    # event to the end and makes no cycles, so each collection only walked them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        histories = []
        tables = consumer_tables(consumer_timelines(events, topic_names, session_timeout_ms), histories)
        tables["histories"] = history_table(histories)
        return wide_rows(tables)
    finally:
        if collecting:
            gc.enable()


def analyse_consumer_bucket_pandas(pdf, names: pa.Table, session_timeout_ms=None):
    """:func:`analyse_consumer_bucket` for the Spark versions without ``applyInArrow``."""
    return analyse_consumer_bucket(pa.Table.from_pandas(pdf, preserve_index=False), names,
                                   session_timeout_ms).to_pandas()


def split_protocols(events):
    """``(consumer, classic)``: the events of groups with any
    ConsumerGroupHeartbeat (consumer and mixed groups), and the others."""
    from pyspark.sql import functions as F

    groups = events.where(F.col("api_key") == CONSUMER_HEARTBEAT).select("group_id").distinct()
    return (events.join(F.broadcast(groups), "group_id", "left_semi"),
            events.join(F.broadcast(groups), "group_id", "left_anti"))


def topic_names(frames) -> pa.Table:
    """The capture's topic id → name pairs (Metadata v10+), a small table on the driver."""
    from pyspark.sql import functions as F

    if "topic_ids" not in frames.columns:
        return TOPIC_NAME_SCHEMA.empty_table()
    pairs = frames.where((F.col("api_key") == METADATA) & (F.col("direction") == RESPONSE)
                         & F.col("topic_ids").isNotNull()).select(
        F.explode(F.arrays_zip("topic_ids", "topics")).alias("p")).select(
        F.col("p.topic_ids").alias("topic_id"), F.col("p.topics").alias("topic")).where(
        F.col("topic_id").isNotNull() & F.col("topic").isNotNull()).distinct().collect()
    return pa.Table.from_pylist([r.asDict() for r in pairs], schema=TOPIC_NAME_SCHEMA)


def consumer_stage(events, frames, out_path, *, spark_schema, archive=None, session_timeout_ms=None):
    """Analyse the consumer-protocol groups of ``events`` (bucketed: a
    ``bucket`` column, as :func:`kwire.pipeline._spark_stages.bucketed`
    gives them) and write every table of :data:`CONSUMER_TABLES` under
    ``out_path``.  ``spark_schema``: the pipeline's schema conversion.
    ``session_timeout_ms``: the brokers' ``group.consumer.session.timeout.ms``
    (None: not known).  Returns ``{table: DataFrame read back}``, ``{table:
    rows}``, the topic id → name table (:func:`topic_names`) and the groups'
    membership histories for the migration stage (a DataFrame of
    :data:`~kwire.pipeline._migrate_table.HISTORY_SCHEMA` rows, one bucket a
    partition, persisted: the caller unpersists it once replayed)."""
    from pyspark.sql import functions as F

    spark = events.sparkSession
    if events.is_cached and not events.take(1):
        # No consumer-protocol group (a classic capture): the tables are written empty from the driver, with
        # no scan of the frames for topic names and no task per bucket and table.  Only a cached side is
        # looked at (``bucketed`` caches an empty one): on any other, finding a first row would shuffle it.
        return _empty_stage(spark, out_path, spark_schema)
    names = topic_names(frames)
    grouped = events.groupBy("bucket")
    if hasattr(grouped, "applyInArrow"):
        run = remote(__name__, "analyse_consumer_bucket", archive)
        wide = grouped.applyInArrow(lambda t: run(t, names, session_timeout_ms), spark_schema(CONSUMER_WIDE_SCHEMA))
    else:  # Spark < 4
        run = remote(__name__, "analyse_consumer_bucket_pandas", archive)
        wide = grouped.applyInPandas(lambda pdf: run(pdf, names, session_timeout_ms), spark_schema(CONSUMER_WIDE_SCHEMA))
    wide = wide.persist()
    tables, counts = {}, {}
    for name, schema in CONSUMER_TABLES.items():
        path = f"{str(out_path).rstrip('/')}/{name}"
        wide.where(F.col("table") == name).select(
            *(F.col(_column(name, f.name)).alias(f.name) for f in schema)).write.mode("overwrite").parquet(path)
        tables[name] = spark.read.parquet(path)
        counts[name] = tables[name].count()
    histories = wide.where(F.col("table") == "histories").select(
        *(F.col(_column("histories", f.name)).alias(f.name) for f in HISTORY_SCHEMA)).persist()
    histories.count()  # kept while the pass's result is still cached
    wide.unpersist()
    return tables, counts, names, histories


def _empty_stage(spark, out_path, spark_schema):
    """:func:`consumer_stage`'s answer when there is no consumer-protocol group."""
    tables, counts = {}, {}
    for name, schema in CONSUMER_TABLES.items():
        path = f"{str(out_path).rstrip('/')}/{name}"
        spark.createDataFrame([], spark_schema(schema)).coalesce(1).write.mode("overwrite").parquet(path)
        tables[name] = spark.read.parquet(path)
        counts[name] = 0
    return tables, counts, TOPIC_NAME_SCHEMA.empty_table(), spark.createDataFrame([], spark_schema(HISTORY_SCHEMA))


def consumer_summary(s, tables, events):
    """Fill ``s`` with the consumer-protocol figures of the report
    (:func:`kwire.pipeline._report_consumer.summarize_consumer`) from the
    written tables, and ``s["group_traffic"]``: whether ``events`` (every
    group's) hold anything at all."""
    from pyspark.sql import functions as F

    recs = tables["reconciliations"].select("group_id", "protocol", "outcome", "trigger", "time_to_stable_ms",
                                            "partition_seconds_unowned").toPandas()
    membership = [(r["kind"], r["error_code"], r["n"]) for r in tables["consumer_membership"].groupBy(
        "kind", "error_code").agg(F.count(F.lit(1)).alias("n")).collect()]
    anomalies = [(r["kind"], r["n"]) for r in tables["consumer_anomalies"].groupBy("kind").agg(
        F.count(F.lit(1)).alias("n")).collect()]
    per_group = tables["consumer_members"].groupBy("group_id").agg(
        F.max((F.col("member_protocol") == "classic").cast("int")).alias("mixed"))
    protocols = {("mixed" if r["mixed"] else "consumer"): r["n"]
                 for r in per_group.groupBy("mixed").agg(F.count(F.lit(1)).alias("n")).collect()}
    silent_ms = tables["consumer_membership"].agg(F.min("silent_ms").alias("m")).first()["m"]
    s["group_traffic"] = bool(events.limit(1).count())
    summarize_consumer(s, recs, membership, anomalies, protocols, silent_ms)
