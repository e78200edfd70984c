"""``kwire pipeline``: the Spark stages from a capture to rebalance tables.

1. **decode**: the capture is partitioned by connection and sorted by
   ``seq`` inside each partition, so every response follows its request in
   the same Python worker; ``mapInArrow`` feeds each Arrow batch to the
   batch decoder (``kwire.codec._batch_c``) as zero-copy NumPy views, and
   each task writes its decoded partition to ``OUT/frames`` with pyarrow
   (:func:`write_frames`), handing Spark back only its counts.
2. **metadata**: topic sizes from the Metadata responses, capture-wide
   (Metadata is the cluster's, not a group's): each partition reduced to
   where a topic's size changes, then the driver reduces those
   (:func:`kwire.pipeline._metadata.metadata_partition_counts`); the small
   table goes to every analysis task.
   **events**: group frames only; heartbeat requests dropped and successful
   heartbeats folded into the last one per (group, member, generation) --
   the bulk of the traffic, reduced in the JVM before Python sees it.
   ConsumerGroupHeartbeat keep-alives are folded alike per (group, member,
   member epoch) (:func:`kwire.pipeline._spark_events.consumer_events`), and ConsumerGroupDescribe
   responses give a row per group they describe.
3. **timelines / what-if**: ``applyInArrow`` over buckets of groups (not
   one task per group) balanced by the groups' event counts, each bucket
   analysed by :mod:`kwire.pipeline._timeline`,
   :mod:`kwire.pipeline._rebalances` and the what-if (``_whatif_pack``, ``_whatif_batch``).  Each group's timeline is
   built once, in one pass that reads the rebalances, assignments and the
   analysis's bad frames off it and notes, for the what-if, which event rows
   each generation reads; the what-if then packs the bucket's generations
   from its Arrow event columns at once and replays them (NumPy from those
   columns to its Arrow rows); the
   ``whatif`` stage then only writes its table out of that pass's cached result,
   and the migration stage replays the membership histories the pass read off
   the same timelines (:mod:`kwire.pipeline._spark_migrate`).
4. ``bad_frames``: undecodable frames and the frames the analysis left out,
   Metadata responses' among them
   (:data:`kwire.pipeline._events.BAD_FRAME_SCHEMA`), with their reasons.
5. ``report.md``, ``report.json`` and charts from small aggregates
   (:mod:`kwire.pipeline._report`).

The session is the user's whenever they configured one (see
:func:`spark_session`); on a cluster kwire ships itself to the executors
(:mod:`kwire.pipeline._ship`).
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import os
import re
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc

from kwire.errors import ArgumentTypeError, CaptureFormatError
from kwire.pipeline._events import (ASSIGNMENT_SCHEMA, BAD_FRAME_SCHEMA, COUNT_SCHEMA, DEFAULT_MAX_PARTITIONS,
                                    EVENT_COLUMNS, GROUP_API_KEYS, HEARTBEAT, METADATA, REBALANCE_SCHEMA, REQUEST,
                                    RESPONSE, WHATIF_SCHEMA)
from kwire.pipeline._metadata import count_changes, metadata_partition_counts
from kwire.pipeline._migrate_history import timeline_history
from kwire.pipeline._migrate_table import HISTORY_SCHEMA, history_table
from kwire.pipeline._rebalances import timeline_tables
from kwire.pipeline._spark_events import consumer_events
from kwire.pipeline._timeline import timelines_of, timelines_of_arrow
from kwire.pipeline._whatif_batch import timed_replay
from kwire.pipeline._whatif_pack import pack_replayed, replayed_rows
from kwire.pipeline import _report as report
from kwire.pipeline._capture import SCHEMA as CAPTURE_SCHEMA
from kwire.pipeline._progress import Progress
from kwire.pipeline._spark_consumer import consumer_stage, consumer_summary, split_protocols
from kwire.pipeline._ship import kwire_for_workers, remote
from kwire.pipeline._spark_migrate import migration_stage

DEFAULT_BUCKETS_PER_CORE = 4
#: Capture columns the decode stage reads.
DECODE_COLUMNS = ("seq", "ts", "conn", "direction", "frame", "truncated")


class CaptureError(CaptureFormatError):
    """The capture cannot be read: missing, not Parquet, or without the
    columns of the capture schema.  The command line exits 2 on it."""


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


def configured_master(environ=None):
    """Where a master is configured outside kwire, or None: ``spark-submit``
    (its gateway is already running), ``PYSPARK_SUBMIT_ARGS --master``,
    ``$MASTER``, or ``spark.master`` in ``spark-defaults.conf``.  Returns a
    description of the source (the master itself when it is known here)."""
    env = os.environ if environ is None else environ
    if env.get("PYSPARK_GATEWAY_PORT"):
        return "spark-submit"
    m = re.search(r"--master[ =](\S+)", env.get("PYSPARK_SUBMIT_ARGS", ""))
    if m:
        return m.group(1)
    if env.get("MASTER"):
        return env["MASTER"]
    conf_dir = env.get("SPARK_CONF_DIR") or (os.path.join(env["SPARK_HOME"], "conf") if env.get("SPARK_HOME")
                                             else None)
    if conf_dir:
        try:
            with open(os.path.join(conf_dir, "spark-defaults.conf")) as fh:
                for line in fh:
                    parts = line.split(None, 1)
                    if len(parts) == 2 and parts[0] == "spark.master":
                        return parts[1].strip()
        except OSError:
            pass
    return None


#: The embedded session's JVM, which in ``local[*]`` also runs the executors:
#: sized so that its whole footprint stays under 2 GB.  Measured on 10,000
#: groups (docs/PIPELINE.md): a 2 GB heap is never needed, 1.2 GB is used
#: to the full.  Outside the heap, each thread that reads a file into a heap
#: buffer keeps a temporary direct buffer as large as its largest read (21 MB
#: reads here), for good unless the JDK is told a size past which it frees
#: them; capping direct memory instead made those reads fail.
EMBEDDED_DRIVER_MEMORY = "1200m"
EMBEDDED_JAVA_OPTIONS = "-Djdk.nio.maxCachedBufferSize=1048576"


#: Session settings every stage runs under (``run_pipeline`` sets them on a
#: session it is given for the run, and puts the session's own back after).
#: ``maxBytesPerBatch``: Spark 4 measures the Arrow batch it fills for a
#: Python task after every row, unless this limit is Int.MaxValue, and the
#: measure walks every list column's offsets: with the events' nested
#: columns, a bucket's rows cost time quadratic in the rows of a batch (a
#: third of the timelines stage on 1,000 groups).  Batches stay bounded by
#: ``maxRecordsPerBatch``.
ARROW_CONF = {"spark.sql.execution.arrow.maxBytesPerBatch": str(2 ** 31 - 1)}


def spark_session(master=None, shuffle_partitions=None, driver_memory=EMBEDDED_DRIVER_MEMORY, app_name="kwire-pipeline",
                  conf=None):
    """The SparkSession to run on.

    In order: an active session (a notebook's, a test's); ``master`` when
    given; a master configured outside kwire (:func:`configured_master`:
    ``spark-submit --master``, ``spark.master`` in spark-defaults.conf or
    the environment), which kwire then leaves to Spark.  Only when none is
    set does kwire start an embedded ``local[*]`` bound to 127.0.0.1."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        if shuffle_partitions:
            active.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
        return active
    external = None if master else configured_master()
    embedded = master is None and external is None
    effective = master or ("local[*]" if embedded else external)
    local = effective == "local" or effective.startswith("local[")
    if local or effective.startswith("local-cluster["):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Workers on this machine must be this interpreter (this venv, its
        # pyarrow), not whatever "python3" is first on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = SparkSession.builder.appName(app_name)
    if master or embedded:
        b = b.master(effective)
    b = b.config("spark.sql.session.timeZone", "UTC").config("spark.sql.execution.arrow.pyspark.enabled", "true")
    b = b.config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")  # INT96 reads back without a zone
    if embedded or local:
        # Settings of a session kwire owns; a configured one keeps its own.
        b = b.config("spark.ui.enabled", "false").config("spark.driver.memory", driver_memory)
        b = b.config("spark.driver.extraJavaOptions", EMBEDDED_JAVA_OPTIONS)
        b = b.config("spark.ui.showConsoleProgress", "false")  # kwire draws its own (_progress)
        b = b.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    if shuffle_partitions:
        b = b.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for k, v in {**ARROW_CONF, **(conf or {})}.items():
        b = b.config(k, v)
    return b.getOrCreate()


def warm_worker(batches):
    """Runs in a Python worker when the session starts: the imports every
    stage's tasks make (pyarrow, NumPy, pandas, the batch decoder, the
    timelines and the what-if's assignors), so the first stage's figure is
    its own work and not a worker's start (about 5 s on two cores)."""
    from kwire.codec import batch_decoder
    from kwire.pipeline import _spark_stages  # noqa: F401  (the timelines' and what-if's modules with it)

    batch_decoder()
    yield from batches


def warm_workers(spark, archive=None):
    """Start the session's Python workers, one task per core, each through
    :func:`warm_worker`.  PySpark keeps a worker for the next task
    (``spark.python.worker.reuse``, on by default), so the stages find them
    started and their modules imported."""
    n = spark.sparkContext.defaultParallelism
    warm = remote(__name__, "warm_worker", archive)
    spark.range(0, n, 1, n).mapInArrow(warm, "id long").collect()


# -- input ---------------------------------------------------------------------------------------


def check_capture(spark, capture_path):
    """Raise :class:`CaptureError` unless ``capture_path`` exists and has the
    capture's columns.  Local paths and URIs pyarrow knows are checked
    without Spark (before a session starts, and no Java trace for a typo);
    others through Spark's reader.  Returns False when ``spark`` is None and
    the check needs it."""
    from pyarrow import fs

    try:
        filesystem, path = report.output_fs(capture_path)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        filesystem = None
    if filesystem is None and spark is None:
        return False
    if filesystem is not None:
        info = filesystem.get_file_info(path)
        if info.type == fs.FileType.NotFound:
            raise CaptureError(f"capture not found: {capture_path}")
        import pyarrow.dataset as ds

        try:
            names = ds.dataset(path, filesystem=filesystem, format="parquet").schema.names
        except (pa.ArrowInvalid, OSError) as exc:
            raise CaptureError(f"{capture_path} is not a Parquet capture: {str(exc).splitlines()[0]}") from None
    else:
        try:
            names = spark.read.parquet(str(capture_path)).schema.names
        except Exception as exc:  # Spark's AnalysisException and Py4J errors: one line, not a Java trace
            raise CaptureError(f"cannot read the capture {capture_path}: {str(exc).splitlines()[0]}") from None
    missing = [c for c in CAPTURE_SCHEMA.names if c in DECODE_COLUMNS and c not in names]
    if missing:
        raise CaptureError(f"{capture_path} is not a kwire capture: missing column{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(missing)} (docs/PIPELINE.md, 'The capture format')")
    return True


# -- stages ------------------------------------------------------------------------------------


def ordered_capture(spark, capture_path, partitions=None):
    """The capture's :data:`DECODE_COLUMNS`, partitioned by connection and
    sorted by ``seq`` within each: the order the decoder's pairing needs."""
    capture = spark.read.parquet(str(capture_path)).select(*DECODE_COLUMNS)
    n = partitions or spark.sparkContext.defaultParallelism
    return capture.repartition(n, "conn").sortWithinPartitions("conn", "seq")


#: What each task of :func:`write_frames` returns: its partition's counts.
WRITTEN_SCHEMA = pa.schema([("frames", pa.int64()), ("errors", pa.int64()), ("connections", pa.int64())])


def decode_write_partition(batches, out, implementation=None):
    """Runs in the Python worker: decodes one partition and writes it as one
    file of ``out`` (``part-NNNNN.parquet`` by partition: a retried or
    speculative attempt replaces it with the same rows); yields the counts."""
    from pyspark import TaskContext

    from kwire.codec import batch_decoder
    from kwire.pipeline._decode import decode_to_parquet

    mod = batch_decoder(implementation)
    task = TaskContext.get()
    filesystem, base = report.output_fs(out)
    name = f"part-{task.partitionId():05d}.parquet"
    counts = decode_to_parquet(batches, mod.Pairing(), filesystem, f"{base}/{name}",
                               f"{base}/.{name}.{task.taskAttemptId()}", mod)
    yield pa.RecordBatch.from_arrays([pa.array([c], pa.int64()) for c in counts], schema=WRITTEN_SCHEMA)


def write_frames(spark, capture_path, out, partitions=None, implementation=None, archive=None):
    """The decode stage, written to ``out`` (replaced if present) by its own
    tasks with pyarrow's Parquet writer, a file per partition; returns
    ``{"frames", "decode_errors", "connections"}``.

    The tasks write the decoded columns themselves rather than hand them back
    to the JVM: Spark's Parquet writer takes Arrow batches a row and a value
    at a time (most of the 34 columns of a heartbeat's row are nulls, each
    written one by one into nested columns' levels), which cost more than
    the decoding and the rest of the stage.  ``out`` is a local path or a URI
    ``pyarrow.fs`` knows, reachable from the executors."""
    from pyarrow import fs

    filesystem, base = report.output_fs(out)
    if filesystem.get_file_info(base).type != fs.FileType.NotFound:
        filesystem.delete_dir(base)
    filesystem.create_dir(base, recursive=True)
    run = remote(__name__, "decode_write_partition", archive)
    rows = ordered_capture(spark, capture_path, partitions).mapInArrow(
        lambda it: run(it, out, implementation), spark_schema(WRITTEN_SCHEMA)).collect()
    return {"frames": sum(r["frames"] for r in rows), "decode_errors": sum(r["errors"] for r in rows),
            "connections": sum(r["connections"] for r in rows)}


def read_frames(spark, out, implementation=None):
    """``out``'s frames (:func:`write_frames`) as a DataFrame of the decoder's schema."""
    from kwire.codec import batch_decoder

    return spark.read.schema(spark_schema(batch_decoder(implementation).FRAMES_SCHEMA)).parquet(out)


#: What the metadata stage's tasks return: bad Metadata frames (``kind``
#: set) and, with ``kind`` null, count changes (``topic``, ``seq``, ``partitions``).
METADATA_STAGE_SCHEMA = pa.schema(list(BAD_FRAME_SCHEMA) + [pa.field("topic", pa.string()),
                                                                    pa.field("partitions", pa.int32())])


def metadata_partition(batches, max_partitions):
    """Runs in the Python worker: one partition's Metadata responses, reduced
    to their count changes, and their bad frames."""
    batches = list(batches)
    if not batches:
        return
    counts, bad = metadata_partition_counts(pa.Table.from_batches(batches), max_partitions)
    out = pa.concat_tables([bad, counts], promote_options="default")
    yield from out.select(METADATA_STAGE_SCHEMA.names).cast(METADATA_STAGE_SCHEMA).to_batches()


def metadata_stage(frames, max_partitions=DEFAULT_MAX_PARTITIONS, archive=None):
    """``(counts, bad)``: the capture's :data:`~kwire.pipeline._events.COUNT_SCHEMA`
    changes and its bad Metadata frames (:data:`~kwire.pipeline._events.BAD_FRAME_SCHEMA`),
    both small Arrow tables on the driver."""
    from pyspark.sql import functions as F

    responses = frames.where((F.col("api_key") == METADATA) & (F.col("direction") == RESPONSE)
                             & F.col("partition_counts").isNotNull()).select(
        "seq", F.unix_micros("ts").alias("ts"), "api_key", "direction", "topics", "partition_counts")
    run = remote(__name__, "metadata_partition", archive)
    rows = responses.mapInArrow(lambda it: run(it, max_partitions), spark_schema(METADATA_STAGE_SCHEMA))
    table = rows.toArrow().cast(METADATA_STAGE_SCHEMA)
    is_bad = pc.is_valid(table.column("kind"))
    counts = count_changes(table.filter(pc.invert(is_bad)).select(COUNT_SCHEMA.names))
    return counts, table.filter(is_bad).select(BAD_FRAME_SCHEMA.names)


def events_stage(frames):
    from pyspark.sql import functions as F

    frames = frames.where(F.col("decode_error").isNull())
    f = frames.where(F.col("group_id").isNotNull() & F.col("api_key").isin(*GROUP_API_KEYS))
    is_hb = F.col("api_key") == HEARTBEAT
    hb_ok = is_hb & (F.col("direction") == RESPONSE) & (F.col("error_code") == 0)
    keep = f.where(~hb_ok & ~(is_hb & (F.col("direction") == REQUEST))).select(
        *[F.unix_micros(c).alias(c) if c in ("ts", "request_ts") else F.col(c) for c in EVENT_COLUMNS])
    hb = f.where(hb_ok).groupBy("group_id", "member_id", "generation_id").agg(
        F.max(F.unix_micros("request_ts")).alias("ts"), F.max("seq").alias("seq"))
    hb = hb.select(*[
        F.col(c) if c in ("group_id", "member_id", "generation_id", "ts", "seq")
        else (F.lit(HEARTBEAT).cast("short").alias(c) if c == "api_key"
              else F.lit(RESPONSE).cast("byte").alias(c) if c == "direction"
              else F.lit(0).cast("short").alias(c) if c == "error_code"
              else F.lit(None).cast(keep.schema[c].dataType).alias(c))
        for c in EVENT_COLUMNS])
    return keep.unionByName(hb).unionByName(consumer_events(frames))


def balanced_buckets(sizes, buckets):
    """``{group_id: bucket index}`` from ``{group_id: events}``: largest group
    first into the lightest bucket, so one large group does not share a task
    with many others while another task idles."""
    load = [(0, b) for b in range(buckets)]
    out = {}
    for gid, n in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        total, b = heapq.heappop(load)
        out[gid] = b
        heapq.heappush(load, (total + n, b))
    return out


def spark_int_hash(value, seed=42):
    """Spark's ``hash()`` of an int column (Murmur3 x86-32, seed 42), which
    its hash partitioning takes modulo the partition count."""
    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k = rotl((value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
    h = (rotl(seed ^ k, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 4  # the input's length in bytes
    h = (h ^ (h >> 16)) * 0x85EBCA6B & 0xFFFFFFFF
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def partition_labels(n):
    """For each of ``n`` hash partitions, an int that Spark's hash
    partitioning sends there: bucketing by these labels gives one bucket a
    task, where bucket numbers 0..n-1 collide (8 buckets have landed in 4
    partitions of 8).  Computed here, without a Spark job."""
    labels = {}
    label = 0
    while len(labels) < n:
        labels.setdefault(spark_int_hash(label) % n, label)
        label += 1
    return [labels[k] for k in range(n)]


def bucketed(events, buckets):
    """``events`` with a ``bucket`` column, balanced by each group's event
    count (:func:`balanced_buckets`) and repartitioned one bucket a partition."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    spark = events.sparkSession
    sizes = {r["group_id"]: r["n"] for r in events.groupBy("group_id").agg(F.count(F.lit(1)).alias("n")).collect()}
    labels = partition_labels(buckets)
    plan = spark.createDataFrame([(gid, labels[b]) for gid, b in balanced_buckets(sizes, buckets).items()],
                                 T.StructType([T.StructField("group_id", T.StringType(), False),
                                               T.StructField("bucket", T.IntegerType(), False)]))
    out = events.join(F.broadcast(plan), "group_id").repartition(buckets, "bucket")
    # No group (a capture of one protocol only): cached, so that the plan
    # keeps its ``buckets`` partitions.  Adaptive execution would replace the
    # empty plan by an empty relation of no known partitioning, the stage's
    # groupBy would shuffle it to spark.sql.shuffle.partitions (200), and a
    # cached result of that keeps them: a task each, for every table written.
    return out.persist() if not sizes else out


#: The tables read off each group's timeline in one pass per bucket (see
#: :func:`kwire.pipeline._rebalances.timeline_tables`), the what-if's among them:
#: building a group's timeline cost the what-if, in a pass of its own, as much
#: as the other three tables together.  ``histories``: each group's membership
#: history, which the migration stage replays (built there again from the
#: events, the timelines cost that stage as much as its replays).
TIMELINE_TABLES = {"rebalances": REBALANCE_SCHEMA, "assignments": ASSIGNMENT_SCHEMA,
                   "bad_frames": BAD_FRAME_SCHEMA, "whatif": WHATIF_SCHEMA, "histories": HISTORY_SCHEMA}


def _wide_name(table, column):
    return f"{table}__{column}"


#: The tables as one, which is what one ``applyInArrow`` can return:
#: ``table`` names the table a row belongs to, and each table's columns sit
#: under its own prefix (null in the other tables' rows).
WIDE_SCHEMA = pa.schema([pa.field("table", pa.string())] + [
    pa.field(_wide_name(name, f.name), f.type) for name, schema in TIMELINE_TABLES.items() for f in schema])


def _wide(tables):
    """:data:`WIDE_SCHEMA` rows of ``{table name: table}``."""
    parts = []
    for name, table in tables.items():
        columns = {"table": pa.array([name] * table.num_rows, pa.string())}
        for other, schema in TIMELINE_TABLES.items():
            for f in schema:
                columns[_wide_name(other, f.name)] = (table.column(f.name) if other == name
                                                      else pa.nulls(table.num_rows, f.type))
        parts.append(pa.Table.from_pydict(columns, schema=WIDE_SCHEMA))
    return pa.concat_tables(parts)


def unwide(wide, name):
    """Table ``name`` of a Spark DataFrame of :data:`WIDE_SCHEMA` rows."""
    from pyspark.sql import functions as F

    return wide.where(F.col("table") == name).select(
        *(F.col(_wide_name(name, f.name)).alias(f.name) for f in TIMELINE_TABLES[name]))


def _timelines_of(events, max_partitions, counts):
    if isinstance(events, pa.Table):
        return timelines_of_arrow(events, max_partitions, counts)
    return timelines_of(events.drop(columns=["bucket"]), max_partitions, counts)


def analyse_bucket(pdf, max_partitions, timer=None, counts=None, cpu_timer=None):
    """Runs in the Python worker: one bucket of groups' events (pandas: the
    Spark versions without ``applyInArrow``) to its :data:`WIDE_SCHEMA` rows.
    ``timer`` gets the seconds spent replaying the what-if, not building
    timelines.  ``counts``: the capture's Metadata counts (from
    :func:`metadata_stage`)."""
    return analyse_bucket_arrow(pdf, max_partitions, timer, counts, cpu_timer).to_pandas()


@contextlib.contextmanager
def collector_paused():
    """Python's cycle collector off for a bucket's analysis, and back as it
    was after.  The analysis makes a few objects per event and per partition
    and keeps most of them to the end, so each collection walks more of
    them and frees nothing: at 1,000 groups the collector took half of
    building the timelines.  The objects hold no cycles; what little cyclic
    garbage there is (an assignor's error and its traceback) waits for the
    next collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def analyse_bucket_arrow(events, max_partitions, timer=None, counts=None, cpu_timer=None):
    """One bucket of groups' events (Arrow, or pandas) to its
    :data:`WIDE_SCHEMA` rows: every table of :data:`TIMELINE_TABLES` from one
    timeline build per group.  ``timer``, ``cpu_timer``: get the what-if
    replay's seconds and CPU seconds (:func:`~kwire.pipeline._whatif_batch.timed_replay`)."""
    # What the what-if reads of each generation it replays: a few ints (rows
    # of the bucket's events), taken as the one pass goes by each timeline;
    # the generations are packed from the event columns together at the end.
    # The migration what-if's membership histories are read off the same timelines.
    replayed, histories = [], []

    def noting(timelines):
        for tl in timelines:
            replayed.extend(replayed_rows(tl))
            history = timeline_history(tl)
            if history is not None:
                histories.append(history)
            yield tl

    with collector_paused():
        tables = timeline_tables(noting(_timelines_of(events, max_partitions, counts)))
        tables["whatif"] = timed_replay(pack_replayed(replayed), timer=timer, cpu_timer=cpu_timer)
        tables["histories"] = history_table(histories)
        return _wide(tables)


def bucket_stage(events, max_partitions=DEFAULT_MAX_PARTITIONS, archive=None, timer=None, counts=None,
                 cpu_timer=None):
    """The :data:`WIDE_SCHEMA` rows of every bucket.  ``timer``, ``cpu_timer``:
    accumulators of the what-if's replay seconds and CPU seconds.  ``counts``: the capture's
    Metadata counts, an Arrow table (a kwire object in the closure would make
    the workers import kwire before :func:`~kwire.pipeline._ship.remote` can
    find it); None for none."""
    counts = COUNT_SCHEMA.empty_table() if counts is None else counts
    grouped = events.groupBy("bucket")
    if hasattr(grouped, "applyInArrow"):
        run = remote(__name__, "analyse_bucket_arrow", archive)
        return grouped.applyInArrow(lambda t: run(t, max_partitions, timer, counts, cpu_timer),
                                    spark_schema(WIDE_SCHEMA))
    run = remote(__name__, "analyse_bucket", archive)
    return grouped.applyInPandas(lambda pdf: run(pdf, max_partitions, timer, counts, cpu_timer),
                                 spark_schema(WIDE_SCHEMA))


def undecodable_frames(frames):
    """Rows of ``bad_frames`` for the frames the decoder could not read."""
    from pyspark.sql import functions as F

    return frames.where(F.col("decode_error").isNotNull()).select(
        "seq", F.unix_micros("ts").alias("ts"), "group_id", "api_key", "direction", "member_id", "generation_id",
        F.lit("undecodable").alias("kind"), F.col("decode_error").alias("reason"))


# -- the whole pipeline -----------------------------------------------------------------------


def _path(out, name):
    return f"{str(out).rstrip('/')}/{name}"


def _spark_out(out):
    # Spark and pyarrow must agree on where a plain path is: this machine's
    # file system, made absolute.  URIs go to Spark as they are.
    return str(out) if "://" in str(out) else os.path.abspath(str(out))


def run_pipeline(capture_path, out_dir, spark=None, master=None, buckets=None, partitions=None,
                 implementation=None, log=print, max_partitions=DEFAULT_MAX_PARTITIONS,
                 progress=None, session_options=None, consumer_session_timeout_ms=None):
    """Run every stage; returns the summary (the figures of report.json).

    ``spark``: a session to use (left running); otherwise one from
    :func:`spark_session` (``master``, ``session_options``), stopped at the
    end.  ``progress``: a :class:`~kwire.pipeline._progress.Progress`, or
    None to draw on stderr when it is a terminal and log a line a stage
    through ``log`` otherwise.  ``consumer_session_timeout_ms``: the brokers'
    ``group.consumer.session.timeout.ms``, which no frame carries (None: read
    from the traffic where the coordinator is seen removing a silent member,
    Kafka's default otherwise)."""
    from pyspark.sql import functions as F

    t_start = time.perf_counter()
    stages = {}
    checked = check_capture(spark, capture_path)
    own_session = spark is None
    if own_session:
        t = time.perf_counter()
        options = dict(session_options or {})
        log_level = options.pop("log_level", "ERROR")
        spark = spark_session(master, **options)
        if log_level:
            spark.sparkContext.setLogLevel(log_level)
        archive = kwire_for_workers(spark.sparkContext)
        warm_workers(spark, archive)
        stages["spark_start"] = {"seconds": time.perf_counter() - t}
    else:
        stages["spark_start"] = {"seconds": 0.0}
    sc = spark.sparkContext
    saved_conf = {k: spark.conf.get(k) for k in ARROW_CONF}
    for k, v in ARROW_CONF.items():
        spark.conf.set(k, v)
    if progress is None:
        progress = Progress(sc, stream=_LogStream(log) if not sys.stderr.isatty() else None)
    elif progress.sc is None:
        progress.sc = sc
    # What this run keeps in the session's block managers, released when it ends however it ends: a
    # caller's session outlives the run, and a second run in it would otherwise hold both runs' events.
    held = []
    try:
        if not checked:
            check_capture(spark, capture_path)
        out = _spark_out(out_dir)
        if not own_session:
            archive = kwire_for_workers(sc)
        par = sc.defaultParallelism
        buckets = buckets or DEFAULT_BUCKETS_PER_CORE * par

        with progress.stage("decode") as st:
            s = write_frames(spark, capture_path, _path(out, "frames"), partitions, implementation, archive)
            frames = read_frames(spark, _path(out, "frames"), implementation)
            st.done(frames=s["frames"])
        stages["decode"] = {"seconds": st.seconds, "frames": s["frames"]}

        with progress.stage("metadata") as st:
            metadata_counts, metadata_bad = metadata_stage(frames, max_partitions, archive)
            st.done(topics=len(pc.unique(metadata_counts.column("topic"))))
        stages["metadata"] = {"seconds": st.seconds, **st.counts}

        tables = {}
        replay, replay_cpu = sc.accumulator(0.0), sc.accumulator(0.0)
        with progress.stage("timelines") as st:
            # The events, reduced from the frames once and kept: the split by
            # protocol, each side's bucket plan and the report all read them,
            # and each read of the plan scanned the frames again (several
            # times: a scan per kind of event).  Kept as rows
            # (``localCheckpoint``): Spark's columnar cache took longer to
            # fill and to read with these nested columns than the scans.
            all_events = events_stage(frames).localCheckpoint()
            held.append(all_events)
            # Groups with ConsumerGroupHeartbeat traffic (consumer and mixed) go to the consumer-protocol analysis.
            kip848_events, classic_events = split_protocols(all_events)
            events = bucketed(classic_events, buckets)
            kip848 = bucketed(kip848_events, buckets)
            held += [events, kip848]
            # Each group's timeline is built once here for every table of
            # TIMELINE_TABLES, the what-if's included (its replay is timed
            # by ``replay``); the first write computes and caches them all,
            # for this stage's tables, the what-if's and the migration's
            # histories.  (Kept as rows like the events, the pass cost less
            # CPU on 1,000 groups; but a wide row, mostly nulls, is several
            # hundred bytes as a row, 1.4 million assignments' rows on 10,000
            # groups, where the columnar cache compresses the nulls away.)
            wide = bucket_stage(events, max_partitions, archive, replay, metadata_counts, replay_cpu).persist()
            held.append(wide)
            rows = {}
            for name in ("rebalances", "assignments", "bad_frames"):
                table = unwide(wide, name)
                if name == "bad_frames":
                    table = undecodable_frames(frames).unionByName(table).unionByName(
                        spark.createDataFrame(metadata_bad.to_pylist(), spark_schema(BAD_FRAME_SCHEMA)))
                table.write.mode("overwrite").parquet(_path(out, name))
                tables[name] = spark.read.parquet(_path(out, name))
                rows[name] = tables[name].count()
            st.done(**rows)
        stages["timelines"] = {"seconds": st.seconds, **st.counts}
        with progress.stage("whatif") as st:
            # Its rows were replayed in the pass above (``replay_seconds``);
            # this stage writes them out of the cache.
            unwide(wide, "whatif").write.mode("overwrite").parquet(_path(out, "whatif"))
            tables["whatif"] = spark.read.parquet(_path(out, "whatif"))
            counts = tables["whatif"].where(~F.col("observed")).agg(F.sum("member_count").alias("members")).first()
            st.done(members=counts["members"] or 0)
        stages["whatif"] = {"seconds": st.seconds, **st.counts, "replay_seconds": replay.value,
                            "replay_cpu_seconds": replay_cpu.value}
        with progress.stage("consumer") as st:
            consumer_tables, consumer_rows, _topic_ids, consumer_histories = consumer_stage(
                kip848, frames, out, spark_schema=spark_schema, archive=archive,
                session_timeout_ms=consumer_session_timeout_ms)
            held.append(consumer_histories)
            st.done(**consumer_rows)
        stages["consumer"] = {"seconds": st.seconds, **st.counts}
        # The classic groups' membership histories were read off their timelines in the cached pass.
        s["migration"], stages["migration"] = migration_stage(
            spark, unwide(wide, "histories"), _path(out, "migration"), progress, spark_schema, archive,
            consumer_histories)
        wide.unpersist()
        events.unpersist()
        kip848.unpersist()
        consumer_histories.unpersist()

        with progress.stage("report") as st:
            error_kinds = frames.where(F.col("decode_error").isNotNull()).groupBy(
                F.substring_index("decode_error", ":", 1).alias("kind")).agg(F.count(F.lit(1)).alias("n")).collect()
            s["error_kinds"] = sorted(((r["kind"], r["n"]) for r in error_kinds), key=lambda kv: (-kv[1], kv[0]))
            reb = tables["rebalances"].select("group_id", "generation_id", "protocol_name", "stall_ms", "trigger",
                                              "error_codes", "member_count", "start_ts", "end_ts",
                                              "moved_partitions").toPandas()
            wi = tables["whatif"].toPandas()
            bad = tables["bad_frames"].where(F.col("kind") == "inconsistent").select("reason").toPandas()
            report.summarize(s, reb, wi, bad)
            consumer_summary(s, consumer_tables, all_events)
            stages["report"] = {"seconds": time.perf_counter() - st.t0}  # so far: the files are written next
            run = {"spark": {"master": sc.master, "app_id": sc.applicationId, "version": spark.version,
                             "default_parallelism": par}, "stages": stages}
            report.write_report(out_dir, capture_path, s, reb, wi, run)
        stages["report"]["seconds"] = st.seconds
        s["stages"] = stages
        s["timings"] = {k: v["seconds"] for k, v in stages.items()}
        s["spark"] = run["spark"]
        s["wall_s"] = time.perf_counter() - t_start
        return s
    finally:
        if own_session:
            spark.stop()
        else:
            for df in held:
                try:
                    release(df)
                except Exception as exc:  # noqa: BLE001 - a session that failed must not hide the run's error
                    log(f"could not free a kept table of this run: {exc}")
            for k, v in saved_conf.items():
                spark.conf.set(k, v)


def release(df):
    """Free what ``df`` holds in the block managers: its cache, or the blocks of a ``localCheckpoint``.

    ``unpersist`` frees a cache only: a local checkpoint's blocks belong to the RDD under the checkpointed
    plan (``Dataset.checkpoint`` wraps it in a ``LogicalRDD``), which only that RDD's own ``unpersist`` frees."""
    df.unpersist()
    plan = df._jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)


class _LogStream:
    """Progress lines to a ``log`` function (``print`` by default)."""

    def __init__(self, log):
        self.log = log

    def isatty(self):
        return False

    def write(self, text):
        text = text.strip("\r\n")
        if text:
            self.log(text)

    def flush(self):
        pass
