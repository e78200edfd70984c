"""The consumer-protocol analysis's tables (:data:`~kwire.pipeline._consumer_schemas.CONSUMER_TABLES`)
from a bucket of events: each group's timeline built once, every table read
off it."""

from __future__ import annotations

from typing import Dict, Iterable, List

import pyarrow as pa
import pyarrow.compute as pc

from kwire.pipeline._consumer_history import consumer_history
from kwire.pipeline._consumer_reconcile import reconciliations
from kwire.pipeline._consumer_schemas import CONSUMER_HEARTBEAT, CONSUMER_TABLES
from kwire.pipeline._consumer_timeline import ConsumerTimeline, build_consumer_timeline, topic_names_of
from kwire.pipeline._events import EVENT_COLUMNS, METADATA

_INT_COLUMNS = ("seq", "ts", "request_seq", "request_ts")


def event_columns(events: pa.Table) -> Dict[str, list]:
    """The events' columns (:data:`~kwire.pipeline._events.EVENT_COLUMNS`)
    as Python lists; a column the events lack reads as all nulls."""
    n = events.num_rows
    out = {}
    for name in EVENT_COLUMNS:
        if name in events.column_names:
            col = events.column(name)
            if name in _INT_COLUMNS and not pa.types.is_int64(col.type):
                col = col.cast(pa.int64())
            out[name] = col.to_pylist()
        else:
            out[name] = [None] * n
    return out


def consumer_group_ids(events: pa.Table) -> List[str]:
    """The groups with any ConsumerGroupHeartbeat among ``events``: the ones this analysis takes."""
    is_hb = pc.fill_null(pc.equal(events.column("api_key"), CONSUMER_HEARTBEAT), False)
    return sorted(set(pc.unique(events.filter(is_hb).column("group_id")).to_pylist()) - {None})


def consumer_timelines(events: pa.Table, names=None, session_timeout_ms=None) -> Iterable[ConsumerTimeline]:
    """Each group's timeline, in group order, from an Arrow table of events
    (any groups; Metadata responses among them name topic ids unless
    ``names`` is given).  ``session_timeout_ms``: the brokers'
    ``group.consumer.session.timeout.ms``, None when not known."""
    is_metadata = pc.fill_null(pc.equal(events.column("api_key"), METADATA), False)
    if names is None:
        meta = events.filter(is_metadata)
        topic_ids = (meta.column("topic_ids").to_pylist() if "topic_ids" in meta.column_names
                     else [None] * meta.num_rows)
        names = topic_names_of(meta.column("topics").to_pylist(), topic_ids, meta.column("api_key").to_pylist(),
                               meta.column("direction").to_pylist())
    groups = events.filter(pc.and_(pc.invert(is_metadata), pc.is_valid(events.column("group_id"))))
    groups = groups.take(pc.sort_indices(groups, [("group_id", "ascending"), ("seq", "ascending")]))
    columns = event_columns(groups)
    gids = columns["group_id"]
    start = 0
    for end in range(1, len(gids) + 1):
        if end == len(gids) or gids[end] != gids[start]:
            yield build_consumer_timeline(gids[start], columns, range(start, end), names, session_timeout_ms)
            start = end


def _partitions(tps):
    by_topic = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]


def epoch_rows(tl: ConsumerTimeline):
    return [{"group_id": tl.group_id, "protocol": tl.protocol, "seq": seq, "ts": ts, "group_epoch": ge,
             "assignment_epoch": ae, "source": source, "member_id": member}
            for seq, ts, ge, ae, source, member in tl.epochs]


def member_rows(tl: ConsumerTimeline):
    out = []
    for member_id in tl.member_order:
        protocol = tl.members[member_id].protocol
        for seq, ts, epoch, assigned, to_revoke in tl.snapshots.get(member_id, ()):
            out.append({"group_id": tl.group_id, "member_id": member_id, "member_protocol": protocol, "seq": seq,
                        "ts": ts, "member_epoch": epoch, "assigned": _partitions(assigned),
                        "to_revoke": _partitions(to_revoke), "assigned_count": len(assigned),
                        "to_revoke_count": len(to_revoke)})
    return out


def membership_rows(tl: ConsumerTimeline):
    return [{"group_id": tl.group_id, "member_id": member, "member_protocol": protocol, "seq": seq, "ts": ts,
             "kind": kind, "error_code": error, "member_epoch": epoch, "silent_ms": silent}
            for member, protocol, seq, ts, kind, error, epoch, silent in sorted(tl.membership, key=lambda r: r[3])]


def anomaly_rows(tl: ConsumerTimeline):
    return [{"group_id": tl.group_id, "seq": seq, "ts": ts, "member_id": member, "kind": kind, "detail": detail}
            for seq, ts, member, kind, detail in tl.anomalies]


_ROWS = {"consumer_epochs": epoch_rows, "consumer_members": member_rows, "consumer_membership": membership_rows,
         "consumer_anomalies": anomaly_rows}


def consumer_tables(timelines: Iterable[ConsumerTimeline], histories=None) -> Dict[str, pa.Table]:
    """Every table of :data:`CONSUMER_TABLES` from ``timelines`` (each read
    once).  ``histories``: a list that receives each timeline's membership
    history (:func:`~kwire.pipeline._consumer_history.consumer_history`, for
    the migration what-if), read off the same timeline and reconciliations."""
    rows = {name: [] for name in CONSUMER_TABLES}
    for tl in timelines:
        for name, read in _ROWS.items():
            rows[name].extend(read(tl))
        recs = reconciliations(tl)
        rows["reconciliations"].extend(recs)
        if histories is not None:
            histories.append(consumer_history(tl, recs))
    return {name: pa.Table.from_pylist(rows[name], schema=schema) for name, schema in CONSUMER_TABLES.items()}
