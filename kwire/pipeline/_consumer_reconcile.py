"""The reconciliations of a consumer-protocol group: one per group epoch
bump, read off its :class:`~kwire.pipeline._consumer_timeline.ConsumerTimeline`.

A reconciliation starts when the group epoch ``E`` is first seen (the first
response carrying it, or a ConsumerGroupDescribe's group epoch) and lasts
until the next bump is seen.  Its members are those in the group during it,
those that leave or are fenced during it included.  Each member has a
target: the Describe's target at assignment epoch ``E`` where one was
captured, otherwise the assignment it held last at epoch ``E`` with nothing
left to revoke (the coordinator hands the target out as partitions are
released, ``CurrentAssignmentBuilder.computeNextAssignment``, so what it
holds last at ``E`` is the target).  The member has acknowledged it at its
first snapshot at epoch ``E`` holding exactly it with nothing left to
revoke; the reconciliation is stable at the last member's.

Partition-seconds unowned: each interval during which no member consumed a
partition (from the timeline) is counted in the reconciliation during which
it ended, that is the one that handed the partition to its new owner; one
that never ended counts until the group's last event, in the last
reconciliation (the one still to hand it over when the capture ends).
"""

from __future__ import annotations

import bisect
from typing import List

from kwire.pipeline._consumer_timeline import ConsumerTimeline

#: Causes of a bump, most likely first, as the ``trigger`` column names them.
TRIGGERS = ("initial", "session_timeout", "member_left", "member_fenced", "member_joined", "subscription_change",
            "unknown")
_CAUSE = {"session_timeout": "session_timeout", "leave": "member_left", "static_leave": "member_left",
          "fenced": "member_fenced", "join": "member_joined", "rejoin": "member_joined"}
_EXITS = ("leave", "static_leave", "fenced", "session_timeout")


def _between(ts_list, lo, hi):
    """Indices of sorted ``ts_list`` in ``(lo, hi]`` (``lo`` None: from the start)."""
    start = 0 if lo is None else bisect.bisect_right(ts_list, lo)
    end = bisect.bisect_right(ts_list, hi)
    return range(start, end)


def reconciliations(tl: ConsumerTimeline) -> List[dict]:
    """Rows of :data:`~kwire.pipeline._consumer_schemas.RECONCILIATION_SCHEMA`."""
    bumps = tl.bumps
    if not bumps:
        return []
    membership = sorted(tl.membership, key=lambda r: r[3])
    m_ts = [r[3] for r in membership]
    errors = sorted(tl.errors)
    e_ts = [t for t, _ in errors]
    changes = sorted(tl.subscription_changes)
    c_ts = [t for t, _ in changes]
    bump_ts = [b[1] for b in bumps]
    unowned_of = _unowned_by_bump(tl, bump_ts)
    times = {m: [s[1] for s in snaps] for m, snaps in tl.snapshots.items()}
    early = set()   # membership rows counted as an earlier bump's cause (a fencing told after it)
    out = []
    # A group first seen at an epoch above 1 was there before the capture: its first sighting is no bump.
    first = 0 if tl.created else 1
    for k in range(first, len(bumps)):
        epoch, start, _seq = bumps[k]
        prev = bump_ts[k - 1] if k > 0 else None
        end_window = bump_ts[k + 1] if k + 1 < len(bumps) else None
        causes = [membership[j] for j in _between(m_ts, prev, start) if j not in early]
        later = [j for j in _between(m_ts, start, end_window or tl.last_ts)]
        unseen = _fenced_unseen(tl, times, [membership[j] for j in later], start)
        early.update(j for j in later if membership[j] in unseen)
        causes += unseen
        triggers = [_CAUSE[r[4]] for r in causes if r[4] in _CAUSE]
        triggers += ["subscription_change"] * len(_between(c_ts, prev, start))
        if (k == 0 and tl.created) or k in tl.new_groups:
            triggers.append("initial")
        ranked = sorted(set(triggers), key=TRIGGERS.index) or ["unknown"]
        inside = _inside(tl, times, start, end_window)
        # A member fenced before the bump (told after it) is not in the group the bump made.
        participants = [m for m in _participants(tl, times, inside, start) if m not in {r[0] for r in unseen}]
        stable_at, targets = _stable_at(tl, epoch, inside, participants)
        if not participants:
            outcome, end_ts = "empty", start
        elif stable_at is not None:
            outcome, end_ts = "stable", stable_at
        else:
            outcome, end_ts = ("superseded" if end_window is not None else "open"), None
        intervals = unowned_of.get(k, [])
        window_errors = sorted({errors[j][1] for j in _between(e_ts, prev, end_window if end_window is not None
                                                                 else errors[-1][0] if errors else start)})
        out.append({
            "group_id": tl.group_id, "protocol": tl.protocol, "group_epoch": epoch, "start_ts": start,
            "end_ts": end_ts, "time_to_stable_ms": None if end_ts is None else (end_ts - start) / 1000.0,
            "partition_seconds_unowned": sum(e - s for s, e in intervals) / 1e6, "outcome": outcome,
            "trigger": ranked[0], "triggers": ranked, "members": len(participants),
            "joined": sorted({r[0] for r in causes if r[4] in ("join", "rejoin")}),
            "left": sorted({r[0] for r in causes if r[4] in ("leave", "static_leave")}),
            "fenced": sorted({r[0] for r in causes if r[4] in ("fenced", "session_timeout")}),
            "partitions": sum(len(t) for t in targets.values()),
            "moved_partitions": len(intervals), "error_codes": window_errors,
        })
    return out


def _unowned_by_bump(tl: ConsumerTimeline, bump_ts):
    """``{bump index: [(start, end)]}``: each unowned interval where it is counted."""
    out = {}
    last = tl.last_ts
    for _topic, _p, s, e in tl.unowned:
        e = max(last, s) if e is None else e
        out.setdefault(max(bisect.bisect_right(bump_ts, e) - 1, 0), []).append((s, e))
    return out


def _fenced_unseen(tl: ConsumerTimeline, times, exits, start):
    """Of the fencings told after ``start``, those of members silent since
    before it: the coordinator had fenced them already (a session or
    revocation timeout), which is what bumped the epoch; the member learns
    it from its next answer."""
    out = []
    for row in exits:
        member_id, ts = row[0], row[3]
        if row[4] != "fenced":
            continue
        t = times.get(member_id, ())
        lo, hi = bisect.bisect_left(t, start), bisect.bisect_left(t, ts)
        if not any(s[2] is not None and s[2] > 0 for s in tl.snapshots[member_id][lo:hi]):
            out.append(row)
    return out


def _inside(tl: ConsumerTimeline, times, start, end):
    """``{member: its snapshots in [start, end)}`` (``end`` None: to the end)."""
    out = {}
    for member_id, snaps in tl.snapshots.items():
        t = times[member_id]
        lo = bisect.bisect_left(t, start)
        hi = len(t) if end is None else bisect.bisect_left(t, end)
        out[member_id] = snaps[lo:hi]
    return out


def _participants(tl: ConsumerTimeline, times, inside, start):
    """Members in the group during the reconciliation that starts at ``start``."""
    out = []
    for member_id in tl.member_order:
        snaps = tl.snapshots.get(member_id)
        if not snaps:
            continue
        before = bisect.bisect_right(times[member_id], start) - 1
        in_group_at_start = before >= 0 and snaps[before][2] is not None and snaps[before][2] > 0
        # A member that left or was fenced during it still counts: it must have reached its target before,
        # or the reconciliation never was stable (its exit then bumps the epoch again).
        if in_group_at_start or any(s[2] is not None and s[2] > 0 for s in inside[member_id]):
            out.append(member_id)
    return out


def _stable_at(tl: ConsumerTimeline, epoch, inside, participants):
    """``(time the last member acknowledged its target or None, {member: target})``."""
    last = None
    targets = {}
    complete = True
    for member_id in participants:
        at_epoch = [s for s in inside[member_id] if s[2] == epoch and not s[4]]
        target = tl.described_targets.get((epoch, member_id))
        if target is None:
            target = at_epoch[-1][3] if at_epoch else None
        if target is None:
            complete = False
            continue
        targets[member_id] = target
        at = next((s[1] for s in at_epoch if s[3] == target), None)
        if at is None:
            complete = False
        else:
            last = at if last is None else max(last, at)
    return (last if complete else None), targets
