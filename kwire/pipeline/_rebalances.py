"""What a group's timeline says happened: its rebalances (when, how long,
why, who came and went, what moved) and who owned each partition at each
generation, as the ``rebalances``, ``assignments`` and ``bad_frames`` tables.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import pyarrow as pa

from kwire.pipeline._events import ASSIGNMENT_SCHEMA, BAD_FRAME_SCHEMA, DEFAULT_SESSION_TIMEOUT_MS, REBALANCE_SCHEMA
from kwire.pipeline._timeline import Generation, Timeline, completed_generations

def rebalance_rows(tl: Timeline) -> List[dict]:
    rows = []
    prev: Optional[Generation] = None
    prev_end = None
    for gg in completed_generations(tl):
        members = gg.member_ids()
        topics_now = {m[0]: m[2] for m in gg.members}
        triggers = []
        joined, left = [], []
        if prev is None:
            triggers.append("initial")
        else:
            before = prev.member_ids()
            joined = [m for m in members if m not in set(before)]
            left = [m for m in before if m not in set(members)]
            leave_window_start = prev.start
            for m in left:
                if any(m == who and leave_window_start <= t <= gg.start for t, who in tl.leaves):
                    triggers.append("member_left")
                    continue
                hb = tl.last_heartbeat.get((m, prev.generation_id), prev.end or prev.start)
                timeout = tl.session_timeout.get(m, DEFAULT_SESSION_TIMEOUT_MS) * 1000
                triggers.append("session_timeout" if hb + timeout <= gg.start else "member_missing")
            if joined:
                triggers.append("member_joined")
            topics_before = {m[0]: m[2] for m in prev.members}
            if any(m in topics_before and set(topics_before[m]) != set(t) for m, t in topics_now.items()):
                triggers.append("subscription_change")
            if not triggers:
                expected = sum(prev.partition_counts.get(t, 0) for t in set().union(*topics_before.values())) \
                    if topics_before else 0
                assigned = len(prev.ownership())
                triggers.append("revocation_followup" if assigned < expected else "unknown")
        triggers = sorted(set(triggers), key=_TRIGGER_ORDER.index)
        lo = prev_end if prev_end is not None else -1
        hi = gg.end if gg.end is not None else gg.start
        errs = [code for t, code in tl.errors if lo < t <= hi]
        own = gg.ownership()
        moved = None
        if prev is not None and (prev.assignment or prev.leader_assignment) and own:
            moved = sum(1 for tp, owner in prev.ownership().items() if own.get(tp) != owner)
        rows.append({
            "group_id": tl.group_id, "generation_id": gg.generation_id, "protocol_name": gg.protocol_name,
            "leader": gg.leader, "start_ts": gg.start, "end_ts": gg.end,
            "stall_ms": (gg.end - gg.start) / 1000.0 if gg.end is not None else None,
            "member_count": len(members), "members": members, "joined": joined, "left": left,
            "trigger": triggers[0], "triggers": triggers, "error_codes": sorted(set(errs)),
            "error_count": len(errs), "partitions": len(own), "moved_partitions": moved,
        })
        prev = gg
        prev_end = gg.end if gg.end is not None else prev_end
    return rows


_TRIGGER_ORDER = ["session_timeout", "member_left", "member_missing", "member_joined", "subscription_change",
                  "revocation_followup", "initial", "unknown"]


def assignment_columns(timelines) -> Dict[str, list]:
    """The :data:`ASSIGNMENT_SCHEMA` rows of ``timelines`` as a list per
    column: a dict per partition cost more to make into Arrow than reading
    the ownership took."""
    columns: Dict[str, list] = {name: [] for name in ASSIGNMENT_SCHEMA.names}
    group_ids, generation_ids, topics, partitions, member_ids, prev_member_ids, moved = columns.values()
    for tl in timelines:
        prev_own = None
        for gg in completed_generations(tl):
            own = gg.ownership()
            if not own:
                continue
            owned = sorted(own)
            owners = [own[tp] for tp in owned]
            group_ids += [tl.group_id] * len(owned)
            generation_ids += [gg.generation_id] * len(owned)
            topics += [t for t, _p in owned]
            partitions += [p for _t, p in owned]
            member_ids += owners
            if prev_own is None:
                prev_member_ids += [None] * len(owned)
                moved += [False] * len(owned)
            else:
                before = [prev_own.get(tp) for tp in owned]
                prev_member_ids += before
                moved += [b is not None and b != m for b, m in zip(before, owners)]
            prev_own = own
    return columns

def timeline_tables(timelines) -> Dict[str, pa.Table]:
    """The rebalances, assignments and bad frames of ``timelines``, read off
    each timeline in one pass: building a group's timeline is most of what
    each of these tables costs, so the pipeline builds it once for the three."""
    rebalances: list = []
    bad: list = []

    def reading(timelines):
        for tl in timelines:
            rebalances.extend(rebalance_rows(tl))
            bad.extend(tl.bad_frames)
            yield tl

    assignments = assignment_columns(reading(timelines))
    return {"rebalances": pa.Table.from_pylist(rebalances, schema=REBALANCE_SCHEMA),
            "assignments": pa.table(assignments, schema=ASSIGNMENT_SCHEMA),
            "bad_frames": pa.Table.from_pylist(bad, schema=BAD_FRAME_SCHEMA)}
