"""The ``migration`` stage: the migration what-if over every bucket of groups, as the classic what-if runs.

Classic groups' membership histories come from the timelines stage, and consumer-protocol and mixed
groups' from the consumer stage: each builds a group's timeline once for all its tables and reads the
history off it (:data:`kwire.pipeline._migrate_table.HISTORY_SCHEMA` rows, one bucket a partition).
Both sides' buckets are gathered into one task a core, and ``mapInArrow`` replays them under the other
protocol (:func:`kwire.pipeline._migrate_table.migrate_histories`).
The seconds spent inside the simulations
are summed over the tasks in an accumulator: ``stages.migration.replay_seconds``, and the simulation's
speed is ``member_events / replay_seconds``.  What a replay would import on its first use (the assignors'
kernel modules, a string codec) is imported before the first replay is timed: a fresh worker's imports
are not simulation.  Their CPU seconds are summed beside them
(``replay_cpu_seconds``): the tasks run side by side on shared cores, so their wall seconds grow with the
machine's load while the CPU seconds do not.  On a local master the JVM's just-in-time compilers run at the
lowest CPU priority while the replays run (:mod:`kwire.pipeline._jvm_threads`): compiling what the run's
earlier stages made hot, they had taken a core from the replays for a third of the time.

Each task also says whether its replay ran compiled (:mod:`kwire._compiled`): ``replay_tasks`` counts the
tasks and ``replay_tasks_python`` those in which one or more of the modules kwire/_compiled.py lists ran as
Python (``KWIRE_NO_EXTENSIONS=1``, or a source edited since the last build), which replays at about
two thirds of the compiled speed; the stage logs a line when there are any.
"""

from __future__ import annotations

import contextlib

from kwire.pipeline._jvm_threads import compilers_yielding
from kwire.pipeline._migrate_table import MIGRATION_SCHEMA
from kwire.pipeline._report_migration import summarize_migration
from kwire.pipeline._ship import needs_shipping, remote

#: A ``migration`` row's key: its group, the protocol simulated, the observed rebalance.
ROW_KEY = ("group_id", "simulated_protocol", "rebalance")

def replay_task(batches, timer=None, cpu_timer=None, tasks=None, python_tasks=None):
    """Runs in the Python worker: :func:`~kwire.pipeline._migrate_table.migrate_histories`, then adds 1 to
    ``tasks``, and to ``python_tasks`` when a module of :data:`kwire._compiled.COMPILED` this worker
    imported runs as Python (accumulators, or None)."""
    from kwire._compiled import compiled_status
    from kwire.pipeline._migrate_table import migrate_histories

    yield from migrate_histories(batches, timer, cpu_timer)
    if tasks is not None:
        tasks.add(1)
    if python_tasks is not None and None in compiled_status().values():
        python_tasks.add(1)


def history_rows_stage(histories, spark_schema, archive=None, timer=None, cpu_timer=None, tasks=None,
                       python_tasks=None):
    """The ``migration`` rows of ``histories`` (a DataFrame of
    :data:`~kwire.pipeline._migrate_table.HISTORY_SCHEMA` rows), each partition replayed where it is.
    ``archive``: what :func:`~kwire.pipeline._ship.remote` takes; the rest: :func:`replay_task`'s."""
    run = remote(__name__, "replay_task", archive)
    return histories.mapInArrow(lambda batches: run(batches, timer, cpu_timer, tasks, python_tasks),
                                spark_schema(MIGRATION_SCHEMA))


def migration_stage(spark, histories, path, progress, spark_schema, archive=None, consumer_histories=None):
    """Write the ``migration`` table to ``path``: classic groups' ``histories`` (from the timelines stage)
    replayed under the consumer protocol, and ``consumer_histories`` (consumer-protocol and mixed groups'
    from the consumer stage; None for none) under classic rebalances, both
    :data:`~kwire.pipeline._migrate_table.HISTORY_SCHEMA` rows.  Returns ``(report summary, stage figures)``."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    timer, cpu_timer, tasks, python_tasks = (sc.accumulator(0.0), sc.accumulator(0.0), sc.accumulator(0),
                                             sc.accumulator(0))
    figures = (timer, cpu_timer, tasks, python_tasks)
    with progress.stage("migration") as st:
        # One task a core, both protocols' histories together: with a task a bucket, each task's replay
        # (tens of milliseconds at 300 groups) ran beside the JVM's work for the tasks before and after it on
        # the other core (reading the cache, writing Parquet, committing), and waited for it inside the timer;
        # with a task a core the JVM reads every task's input before the replays and writes after them.
        both = histories if consumer_histories is None else histories.unionByName(consumer_histories)
        rows = history_rows_stage(both.coalesce(sc.defaultParallelism), spark_schema, archive, *figures)
        # The replays are this job's work: on a local master (the executors run in the JVM this process
        # started) the JVM's compilers, which shared the cores with them, take only what the replays leave
        # while it runs (kwire/pipeline/_jvm_threads.py).
        with contextlib.nullcontext() if needs_shipping(sc.master) else compilers_yielding():
            rows.write.mode("overwrite").parquet(path)
        table = spark.read.parquet(path)
        row = table.agg(F.count(F.lit(1)).alias("rows"), F.sum("member_events").alias("events")).first()
        st.done(rows=row["rows"], member_events=row["events"] or 0)
        # In one order whatever the files: the report's sums of floats would otherwise change in their last
        # digits with how the stage's tasks split the rows (and the reader packs the files by size).
        summary = summarize_migration(table.toPandas().sort_values(list(ROW_KEY), ignore_index=True))
    seconds, cpu = timer.value, cpu_timer.value
    events_n = row["events"] or 0
    stage = {"seconds": st.seconds, **st.counts, "replay_seconds": seconds,
             "member_events_per_second": events_n / seconds if seconds > 0 else None,
             "replay_cpu_seconds": cpu, "member_events_per_cpu_second": events_n / cpu if cpu > 0 else None,
             "replay_tasks": tasks.value, "replay_tasks_python": python_tasks.value}
    if python_tasks.value:
        progress.write(f"migration: {python_tasks.value} of {tasks.value} tasks replayed with modules of "
                       "kwire/_compiled.py running as Python, not compiled (KWIRE_NO_EXTENSIONS=1, or "
                       "`python setup.py build_ext --inplace` not run since a source changed)\n")
    return summary, stage
