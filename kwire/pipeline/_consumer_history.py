"""A consumer-protocol (or mixed) group's :class:`~kwire.pipeline._membership.MembershipHistory`,
read off its timeline and reconciliations: what the migration what-if
replays under the classic protocol.

Joins are the members' epoch-0 heartbeats (classic members: their first
JoinGroup); leaves their epoch -1 / -2 heartbeats and LeaveGroups; a member
fenced, by an error answer or by its session timing out, is a CRASH at the
time it went silent (its last successful heartbeat) or, when it was told by
an error, at that answer.  Members already in the group when the capture
starts join at the window's start.  Topic sizes come from the capture's
Metadata where it has them, otherwise the highest partition seen + 1.
"""

from __future__ import annotations

import bisect
from typing import Dict, Iterable, List, Optional

import numpy as np

from kwire.pipeline._consumer_reconcile import reconciliations
from kwire.pipeline._consumer_schemas import CONSUMER_HEARTBEAT_INTERVAL_MS, DEFAULT_REBALANCE_TIMEOUT_MS
from kwire.pipeline._consumer_timeline import ConsumerTimeline, median
from kwire.pipeline._membership import MemberEvent, MembershipHistory

_KIND = {"join": MemberEvent.JOIN, "rejoin": MemberEvent.JOIN, "leave": MemberEvent.LEAVE,
         "static_leave": MemberEvent.LEAVE, "fenced": MemberEvent.CRASH, "session_timeout": MemberEvent.CRASH}


def consumer_history(tl: ConsumerTimeline, recs: Optional[List[dict]] = None,
                     counts: Optional[Dict[str, int]] = None) -> MembershipHistory:
    """The membership history of ``tl``.  ``recs``: its reconciliation rows
    (computed when None); ``counts``: ``{topic: partitions}`` from Metadata."""
    recs = sorted(reconciliations(tl) if recs is None else recs, key=lambda r: r["start_ts"])
    counts = counts or {}
    highest = {}
    for snaps in tl.snapshots.values():
        for _seq, _ts, _epoch, assigned, to_revoke in snaps:
            for t, p in assigned | to_revoke:
                highest[t] = max(highest.get(t, -1), p)
    for target in tl.described_targets.values():
        for t, p in target:
            highest[t] = max(highest.get(t, -1), p)
    names = sorted(set(highest) | {t for _ts, _m, sub in tl.subscriptions for t in sub})
    index = {t: k for k, t in enumerate(names)}
    members = list(tl.member_order)
    member_index = {m: k for k, m in enumerate(members)}
    subs = {}
    for ts, member_id, sub in tl.subscriptions:
        subs.setdefault(member_id, []).append((ts, tuple(index[t] for t in sub)))

    def subscription_at(member_id, ts):
        entries = subs.get(member_id)
        if not entries:
            return ()
        k = bisect.bisect_right([e[0] for e in entries], ts) - 1
        return entries[max(k, 0)][1]

    start = tl.first_ts or 0
    events = []   # (ts, order, member index, kind, topics)
    joined = set()
    for member_id, _protocol, _seq, ts, kind, _error, _epoch, silent_ms in sorted(tl.membership, key=lambda r: r[3]):
        m = tl.members[member_id]
        if _KIND[kind] is MemberEvent.JOIN:
            joined.add(member_id)
        elif member_id not in joined:
            events.append((start, 0, member_index[member_id], MemberEvent.JOIN, subscription_at(member_id, start)))
            joined.add(member_id)
        if kind == "session_timeout":
            # It went silent at its last heartbeat: a session before it expired, or its silence before the bump
            # that showed the coordinator had removed it.
            ts = ts - int((m.session_ms if silent_ms is None else silent_ms) * 1000)
        topics = subscription_at(member_id, ts) if _KIND[kind] is MemberEvent.JOIN else ()
        events.append((ts, 1, member_index[member_id], _KIND[kind], topics))
    for member_id in members:
        if member_id not in joined:
            events.append((start, 0, member_index[member_id], MemberEvent.JOIN, subscription_at(member_id, start)))
    changes = {(ts, member_id) for ts, member_id in tl.subscription_changes}
    for ts, member_id, sub in tl.subscriptions:
        if (ts, member_id) in changes:
            events.append((ts, 2, member_index[member_id], MemberEvent.SUBSCRIBE, tuple(index[t] for t in sub)))
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    rebalance_start = np.array([r["start_ts"] for r in recs], np.int64)
    event_ts = np.array([e[0] for e in events], np.int64)
    # The rebalance an event caused: the first bump seen at or after it.
    caused = np.searchsorted(rebalance_start, event_ts, side="left").astype(np.int32)
    caused[caused >= len(recs)] = -1
    return MembershipHistory(
        group_id=tl.group_id, protocol=tl.protocol, assignor=tl.assignor, topics=names,
        partition_counts=np.array([counts.get(t, highest.get(t, -1) + 1) for t in names], np.int32),
        member_ids=members,
        latency_us=np.array([int(median(tl.members[m].latencies) or 0) for m in members], np.int64),
        session_timeout_ms=np.array([tl.members[m].session_ms for m in members], np.int32),
        heartbeat_interval_ms=int(tl.heartbeat_interval_ms or CONSUMER_HEARTBEAT_INTERVAL_MS),
        rebalance_timeout_ms=int(tl.rebalance_timeout_ms or DEFAULT_REBALANCE_TIMEOUT_MS),
        window_start_us=int(start), window_end_us=int(tl.last_ts or 0),
        event_ts=event_ts, event_member=np.array([e[2] for e in events], np.int32),
        event_kind=np.array([int(e[3]) for e in events], np.int8), event_topics=[e[4] for e in events],
        event_rebalance=caused, rebalance_start_us=rebalance_start,
        rebalance_epoch=np.array([r["group_epoch"] for r in recs], np.int32),
        rebalance_unowned_ps=np.array([r["partition_seconds_unowned"] for r in recs], np.float64),
        rebalance_stable_us=np.array([-1 if r["end_ts"] is None else r["end_ts"] - r["start_ts"] for r in recs],
                                     np.int64),
    ).validate()


def consumer_histories(timelines: Iterable[ConsumerTimeline], counts=None) -> List[MembershipHistory]:
    """The history of every timeline, in their order."""
    return [consumer_history(tl, None, counts) for tl in timelines]

