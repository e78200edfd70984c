"""The ``migration`` table: each observed rebalance's stall beside its stall under the other protocol.

One bucket of groups' events in, the bucket's ``migration`` rows out (:func:`migrate_bucket`, what the Spark
stage runs per bucket): classic groups are replayed under the consumer protocol
(:mod:`kwire.pipeline._migrate_consumer`), consumer-protocol groups under classic eager and cooperative
rebalances (:mod:`kwire.pipeline._migrate_classic`).  A group whose history the simulation refuses gets rows
with its error, and the bucket goes on.
"""

from __future__ import annotations

import codecs
import gc
import pickle
import time
from typing import Iterable, List

import pyarrow as pa

from kwire.assignors import import_kernels
from kwire.errors import KwireError
from kwire.pipeline._events import DEFAULT_MAX_PARTITIONS
from kwire.pipeline._membership import MembershipHistory
from kwire.pipeline._migrate_history import COOPERATIVE_ASSIGNORS, classic_histories

MIGRATION_SCHEMA = pa.schema([
    ("group_id", pa.string()),
    # The observed rebalance: its index in the group's history, and its generation (classic) or group epoch.
    ("rebalance", pa.int32()), ("epoch", pa.int32()),
    # "classic-eager", "classic-cooperative", "consumer" (or "mixed" for the observed protocol).
    ("observed_protocol", pa.string()), ("simulated_protocol", pa.string()),
    # Partition-seconds unowned, and the difference simulated minus observed (negative: the other protocol
    # stalls less).
    ("unowned_ps_observed", pa.float64()), ("unowned_ps_simulated", pa.float64()),
    ("unowned_ps_difference", pa.float64()),
    # Time to a stable group, ms; null when the group was not stable again (observed: before the capture
    # ended; simulated: within the settling time after the history's last event).
    ("stable_ms_observed", pa.float64()), ("stable_ms_simulated", pa.float64()),
    ("stable_ms_difference", pa.float64()),
    # Member-events the simulation ran in this rebalance's window: requests a simulated member sent that
    # the simulated coordinator handled.
    ("member_events", pa.int64()),
    ("error", pa.string()),
])


#: Membership histories as an analysis stage hands them to the migration stage: the history of each
#: group, pickled (the timelines stage builds every classic group's timeline once, and the consumer stage
#: every consumer-protocol group's, for their own tables and for these; the migration stage replays them).
HISTORY_SCHEMA = pa.schema([("group_id", pa.string()), ("history", pa.binary())])


def history_table(histories: Iterable[MembershipHistory]) -> pa.Table:
    """:data:`HISTORY_SCHEMA` rows of ``histories``, in their order."""
    ids, blobs = [], []
    for history in histories:
        ids.append(history.group_id)
        blobs.append(pickle.dumps(history, protocol=pickle.HIGHEST_PROTOCOL))
    return pa.table([pa.array(ids, pa.string()), pa.array(blobs, pa.binary())], schema=HISTORY_SCHEMA)


def histories_of_table(table) -> List[MembershipHistory]:
    """The histories of :data:`HISTORY_SCHEMA` rows (an Arrow table or record batch), in their order.
    Only rows kwire's own analysis stages wrote in this job are read."""
    return [pickle.loads(blob) for blob in table.column(table.schema.get_field_index("history")).to_pylist()]


def migrate_histories(batches, timer=None, cpu_timer=None):
    """Runs in the Python worker (``mapInArrow``): record batches of :data:`HISTORY_SCHEMA` to batches of
    their ``migration`` rows.  ``timer``, ``cpu_timer``: as :func:`migration_rows` takes them.

    The whole partition is read, and its histories unpickled, before the first replay: a partition of more
    rows than an Arrow batch holds would otherwise have the JVM reading and sending the next batch while
    this one replays, on the cores the replay is timed on."""
    histories = [h for batch in batches if batch.num_rows for h in histories_of_table(batch)]
    if histories:
        yield from migration_rows(histories, timer, cpu_timer).to_batches()


def observed_protocol(history: MembershipHistory) -> str:
    if history.protocol == "classic":
        return "classic-cooperative" if history.assignor in COOPERATIVE_ASSIGNORS else "classic-eager"
    return history.protocol


def simulations_of(history: MembershipHistory):
    """``[(simulated protocol name, function)]`` for ``history``: the protocol it did not use."""
    from kwire.pipeline._migrate_classic import COOPERATIVE, EAGER, simulate_classic
    from kwire.pipeline._migrate_consumer import CONSUMER, simulate_consumer

    if history.protocol == "classic":
        return [(CONSUMER, simulate_consumer)]
    return [(EAGER, lambda h: simulate_classic(h, cooperative=False)),
            (COOPERATIVE, lambda h: simulate_classic(h, cooperative=True))]


def _ms(us):
    return None if us < 0 else us / 1000.0


def migration_rows(histories: Iterable[MembershipHistory], timer=None, cpu_timer=None) -> pa.Table:
    """The ``migration`` rows of ``histories``.  ``timer``: something with ``add(seconds)`` (a Spark
    accumulator) that gets the seconds spent inside the simulations, nothing else; ``cpu_timer`` the same
    for the CPU seconds of this process in them (on a loaded machine the wall seconds are several times
    those: the task waits for a core)."""
    columns = {name: [] for name in MIGRATION_SCHEMA.names}
    # What a replay imports on its first use, imported before the first one is timed: a fresh worker's
    # imports are not simulation.  The assignors' kernel modules, and the codec by whose UTF-16 code units
    # they order member ids as Java orders strings (Python imports a codec's module when it is first used).
    import_kernels()
    codecs.lookup("utf-16-be")
    # Python's cycle collector is off while the bucket replays, as for the classic analysis
    # (``_spark_stages.collector_paused``): a replay makes many short-lived objects, and each collection
    # would walk everything the worker holds.  A replay is freed by reference counts (the classic one closes
    # its coordinator); should one leave cycles, the youngest generation is collected every so often
    # (:func:`_replay_all`), which bounds what a bucket holds.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _replay_all(histories, columns, timer, cpu_timer)
    finally:
        if collecting:
            gc.enable()
    return pa.table(columns, schema=MIGRATION_SCHEMA)


#: Objects in the youngest generation past which a bucket's replays collect it, while the collector is off:
#: it bounds what a bucket holds.  One collection per replay instead cost twice as much, in calls more than
#: in objects freed.
_YOUNG_LIMIT = 2000


def _replay_all(histories, columns, timer, cpu_timer):
    """Replay each history under its other protocols into ``columns``; the seconds inside the
    simulations go to ``timer``, their CPU seconds to ``cpu_timer``."""
    spent = cpu = 0.0
    for history in histories:
        observed = observed_protocol(history)
        # The history's check of its own arrays is not simulation: once a history, outside the timed region.
        try:
            history, invalid = history.validate(), None
        except KwireError as exc:
            invalid = f"{type(exc).__name__}: {exc}"
        for name, simulate in simulations_of(history):
            if invalid is not None:
                _append(columns, history, observed, name, None, invalid)
                continue
            t, c = time.perf_counter(), time.process_time()
            try:
                result, error = simulate(history), None
            except KwireError as exc:
                result, error = None, f"{type(exc).__name__}: {exc}"
            # Any cyclic garbage a simulation leaves, freed while it is young: the collector is off for the
            # bucket, which would otherwise hold it all to the end.  Timed: it is the simulations' cost.  (The
            # classic replay's coordinator, once a cycle of some hundred objects a group, is now closed and
            # freed by reference counts, so this seldom finds anything.)
            if gc.get_count()[0] > _YOUNG_LIMIT:
                gc.collect(0)
            spent += time.perf_counter() - t
            cpu += time.process_time() - c
            _append(columns, history, observed, name, result, error)
    if timer is not None:
        timer.add(spent)
    if cpu_timer is not None:
        cpu_timer.add(cpu)


def _append(columns, history, observed, name, result, error):
    n = history.n_rebalances
    obs_stable = [_ms(int(v)) for v in history.rebalance_stable_us]
    obs_unowned = [float(v) for v in history.rebalance_unowned_ps]
    if result is None:
        sim_unowned: List = [None] * n
        sim_stable: List = [None] * n
        events: List = [None] * n
    else:
        sim_unowned = [float(v) for v in result.unowned_ps]
        sim_stable = [_ms(int(v)) for v in result.stable_us]
        events = [int(v) for v in result.member_events]
    columns["group_id"] += [history.group_id] * n
    columns["rebalance"] += list(range(n))
    columns["epoch"] += [int(v) for v in history.rebalance_epoch]
    columns["observed_protocol"] += [observed] * n
    columns["simulated_protocol"] += [name] * n
    columns["unowned_ps_observed"] += obs_unowned
    columns["unowned_ps_simulated"] += sim_unowned
    columns["unowned_ps_difference"] += [None if s is None else s - o for s, o in zip(sim_unowned, obs_unowned)]
    columns["stable_ms_observed"] += obs_stable
    columns["stable_ms_simulated"] += sim_stable
    columns["stable_ms_difference"] += [None if s is None or o is None else s - o
                                        for s, o in zip(sim_stable, obs_stable)]
    columns["member_events"] += events
    columns["error"] += [error] * n


def migrate_bucket(events, max_partitions=DEFAULT_MAX_PARTITIONS, timer=None, counts=None, names=None,
                   cpu_timer=None, session_timeout_ms=None) -> pa.Table:
    """Runs in the Python worker: one bucket of groups' events (Arrow, or pandas) to its ``migration``
    rows.  Classic groups' events, or with ``names`` (the capture's topic id → name pairs, an Arrow table
    of ``topic_id`` and ``topic``) consumer-protocol and mixed groups' events.  ``counts``: the capture's
    Metadata counts (an Arrow table of ``COUNT_SCHEMA``) for the classic timelines, or None.  ``timer``,
    ``cpu_timer``: as :func:`migration_rows` takes them.  ``session_timeout_ms``: the brokers'
    ``group.consumer.session.timeout.ms`` (None: not known)."""
    if not isinstance(events, pa.Table):
        events = pa.Table.from_pandas(events, preserve_index=False)
    if "bucket" in events.column_names:
        events = events.drop_columns(["bucket"])
    if names is None:
        return migration_rows(classic_histories(events, max_partitions, counts), timer, cpu_timer)
    from kwire.pipeline._consumer_history import consumer_histories
    from kwire.pipeline._consumer_tables import consumer_timelines

    topic_names = dict(zip(names.column("topic_id").to_pylist(), names.column("topic").to_pylist()))
    return migration_rows(consumer_histories(consumer_timelines(events, topic_names, session_timeout_ms)), timer,
                          cpu_timer)
