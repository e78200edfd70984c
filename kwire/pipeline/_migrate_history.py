"""Classic groups' membership histories, from their timelines and events.

A classic group's :class:`~kwire.pipeline._timeline.Timeline` says which members each generation had, what
each subscribed to and what each was assigned; its events say when each member asked to join each
generation (the JoinGroup response's request time), when each received its assignment (its SyncGroup
response), when it left (LeaveGroup) or last heartbeat, and how long its requests took.  From these:

* a member that first appears in a generation JOINs at its JoinGroup request of that generation;
* a member missing from the next generation LEAVEs at its LeaveGroup request, or else CRASHes at its
  last heartbeat response (it went silent there; the generation formed once its session ran out);
* a member whose topics changed SUBSCRIBEs at its JoinGroup request of the generation with the new topics.

The observed stall is measured with the same :class:`~kwire.pipeline._migrate_ledger.Ledger` the
simulations use, fed with what the capture shows each member consuming: under an eager protocol a member
stops consuming everything when it sends its JoinGroup (``ConsumerCoordinator.onJoinPrepare`` revokes
all), under cooperative-sticky only what its new assignment no longer holds, when it receives it
(``ConsumerCoordinator.onJoinComplete``); a member consumes what its SyncGroup response assigns from then
on; a leaver or a crashed member stops at its leave or last heartbeat.  A generation's time to stable runs
from its first history event (the crash's silence included) to its last SyncGroup response.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, Iterable, List, Tuple

import numpy as np
import pyarrow as pa

from kwire.pipeline._events import (DEFAULT_MAX_PARTITIONS, DEFAULT_SESSION_TIMEOUT_MS, HEARTBEAT, JOIN_GROUP,
                                    LEAVE_GROUP, RESPONSE, SYNC_GROUP)
from kwire.pipeline._membership import MemberEvent, MembershipHistory
from kwire.pipeline._migrate_ledger import Ledger
from kwire.pipeline._timeline import Timeline, completed_generations, timelines_of_arrow

#: The classic protocol's heartbeat interval and rebalance timeout when the capture does not say
#: (``heartbeat.interval.ms`` and ``max.poll.interval.ms`` defaults).
CLASSIC_HEARTBEAT_INTERVAL_MS = 3000
CLASSIC_REBALANCE_TIMEOUT_MS = 300_000
#: A member whose requests were never answered in the capture: its latency is taken as 1 ms.
DEFAULT_LATENCY_US = 1000
#: The classic rebalance protocol an assignor's name implies: cooperative-sticky is the one cooperative
#: assignor Kafka ships (``ConsumerPartitionAssignor.RebalanceProtocol.COOPERATIVE``).
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})

_GROUP_APIS = (JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP)


class MemberTimes:
    """What one group's events say of its members' timing, beside the timeline."""

    __slots__ = ("join", "sync", "latency", "first", "last")

    def __init__(self):
        self.join: Dict[Tuple[str, int], int] = {}   # (member, generation) -> its JoinGroup request ts
        self.sync: Dict[Tuple[str, int], int] = {}   # (member, generation) -> its SyncGroup response ts
        self.latency: Dict[str, List[int]] = defaultdict(list)
        self.first = None
        self.last = None


#: The event columns :func:`member_times` reads (ints but ``member_id``).
_TIMED_COLUMNS = ("ts", "request_ts", "direction", "api_key", "generation_id", "error_code", "member_id")


def member_times(columns, rows) -> MemberTimes:
    """One group's :class:`MemberTimes` from its events at ``rows`` (in ``seq`` order) of ``columns``:
    lists of :data:`_TIMED_COLUMNS`, as a timeline's event source holds them."""
    times = MemberTimes()
    tss, rtss, directions, keys, gens, errs, members = (columns[c] for c in _TIMED_COLUMNS)
    for i in rows:
        ts, rts, direction, key, gen, err = tss[i], rtss[i], directions[i], keys[i], gens[i], errs[i]
        times.first = ts if times.first is None else min(times.first, ts)
        times.last = ts if times.last is None else max(times.last, ts)
        member = members[i]
        if direction != RESPONSE or not member or key not in _GROUP_APIS:
            continue
        if rts is not None:
            times.latency[member].append(ts - rts)
        if err:
            continue
        if key == JOIN_GROUP and gen is not None:
            times.join.setdefault((member, gen), rts if rts is not None else ts)
        elif key == SYNC_GROUP and gen is not None:
            times.sync[(member, gen)] = ts
    return times


def classic_histories(events: pa.Table, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None):
    """The membership history of every classic group of ``events`` with a generation, in group order."""
    return classic_histories_of(timelines_of_arrow(events, max_partitions, counts))


def classic_histories_of(timelines: Iterable[Timeline]):
    """The membership history of every timeline with a generation, in their order; each group's member
    timings read from the events its timeline was built of (:attr:`Timeline.source`, its rows)."""
    for tl in timelines:
        history = timeline_history(tl)
        if history is not None:
            yield history


def timeline_history(tl: Timeline):
    """``tl``'s :class:`MembershipHistory` (None when no generation formed), its member timings read from
    the events its timeline was built of."""
    return classic_history(tl, member_times(tl.source.columns, tl.rows))


def classic_history(tl: Timeline, times: MemberTimes):
    """``tl``'s :class:`MembershipHistory` (None when no generation formed)."""
    gens = completed_generations(tl)
    if not gens:
        return None
    all_topics = sorted(set(tl.partition_counts).union(*(t for g in gens for _m, _i, t in g.members)))
    topic_index = {t: k for k, t in enumerate(all_topics)}
    member_ids: List[str] = []
    index: Dict[str, int] = {}

    def member(m):
        if m not in index:
            index[m] = len(member_ids)
            member_ids.append(m)
        return index[m]

    events = []   # (ts, member index, kind, topics, rebalance)
    leaves = defaultdict(list)
    for ts, m in tl.leaves:
        leaves[m].append(ts)
    prev = None
    subscribed: Dict[str, Tuple[int, ...]] = {}
    starts = []
    for r, gg in enumerate(gens):
        ids = gg.member_ids()
        topics_of = {m: tuple(sorted(topic_index[t] for t in topics)) for m, _i, topics in gg.members}
        everything = tuple(range(len(all_topics)))
        first = gg.start
        if prev is not None:
            for m in prev.member_ids():
                if m in ids:
                    continue
                left = [t for t in leaves.get(m, ()) if prev.start <= t <= gg.start]
                if left:
                    events.append((left[0], member(m), MemberEvent.LEAVE, (), r))
                    first = min(first, left[0])
                else:
                    silent = tl.last_heartbeat.get((m, prev.generation_id),
                                                   times.sync.get((m, prev.generation_id), prev.end or prev.start))
                    events.append((silent, member(m), MemberEvent.CRASH, (), r))
                    first = min(first, silent)
                subscribed.pop(m, None)
        for m in ids:
            topics = topics_of.get(m, subscribed.get(m, everything))
            at = times.join.get((m, gg.generation_id), gg.start)
            if m not in subscribed:
                events.append((at, member(m), MemberEvent.JOIN, topics, r))
            elif subscribed[m] != topics:
                events.append((at, member(m), MemberEvent.SUBSCRIBE, topics, r))
            subscribed[m] = topics
        starts.append(first)
        prev = gg
    events.sort(key=lambda e: e[0])
    # A topic's size is its largest over the generations: the what-if replays the group on the topics as
    # they were at their largest (a generation's assignment never reaches beyond its own sizes).
    sizes = dict(tl.partition_counts)
    for gg in gens:
        for t, n in gg.partition_counts.items():
            sizes[t] = max(sizes.get(t, 0), n)
        for tps in (gg.assignment or gg.leader_assignment).values():
            for t, p in tps:
                sizes[t] = max(sizes.get(t, 0), p + 1)
    unowned = _observed_unowned(gens, events, times, index, all_topics, sizes, starts)
    stable = np.array([(gg.end - s) if gg.end is not None else -1 for gg, s in zip(gens, starts)], np.int64)
    latency = np.array([int(np.median(times.latency[m])) if times.latency.get(m) else DEFAULT_LATENCY_US
                        for m in member_ids], np.int64)
    session = np.array([tl.session_timeout.get(m, DEFAULT_SESSION_TIMEOUT_MS) for m in member_ids], np.int32)
    window = (min(times.first if times.first is not None else gens[0].start, gens[0].start),
              max(times.last if times.last is not None else 0, max(g.end or g.start for g in gens)))
    names = [g.protocol_name for g in gens if g.protocol_name]
    return MembershipHistory(
        group_id=tl.group_id, protocol="classic", assignor=names[-1] if names else None, topics=all_topics,
        partition_counts=np.array([sizes.get(t, 0) for t in all_topics], np.int32),
        member_ids=member_ids, latency_us=np.maximum(latency, 0), session_timeout_ms=np.maximum(session, 1),
        heartbeat_interval_ms=CLASSIC_HEARTBEAT_INTERVAL_MS, rebalance_timeout_ms=CLASSIC_REBALANCE_TIMEOUT_MS,
        window_start_us=int(window[0]), window_end_us=int(window[1]),
        event_ts=np.array([e[0] for e in events], np.int64), event_member=np.array([e[1] for e in events], np.int32),
        event_kind=np.array([int(e[2]) for e in events], np.int8), event_topics=[e[3] for e in events],
        event_rebalance=np.array([e[4] for e in events], np.int32),
        rebalance_start_us=np.array(starts, np.int64),
        rebalance_epoch=np.array([g.generation_id for g in gens], np.int32),
        rebalance_unowned_ps=unowned, rebalance_stable_us=stable)


# Actions on the ledger, in the order simultaneous ones apply.
_ENTER, _GONE, _UNSUB, _SUB, _REVOKE_ALL, _SYNC = range(6)


def _observed_unowned(gens, events, times, index, topics, counts, starts):
    """Partition-seconds unowned per generation, from what the capture shows each member consuming."""
    ledger = Ledger([counts.get(t, 0) for t in topics], len(gens))
    topic_index = {t: k for k, t in enumerate(topics)}
    actions = [(s, _ENTER, r, None) for r, s in enumerate(starts)]
    for ts, m, kind, subscription, _r in events:
        if kind == MemberEvent.JOIN:
            actions.append((ts, _SUB, m, subscription))
        elif kind == MemberEvent.SUBSCRIBE:
            actions.append((ts, _UNSUB, m, None))
            actions.append((ts, _SUB, m, subscription))
        else:
            actions.append((ts, _GONE, m, None))
    for gg in gens:
        cooperative = gg.protocol_name in COOPERATIVE_ASSIGNORS
        assignment = gg.assignment or gg.leader_assignment
        for mid in gg.member_ids():
            m = index[mid]
            if not cooperative:
                actions.append((times.join.get((mid, gg.generation_id), gg.start), _REVOKE_ALL, m, None))
            tps = [(topic_index[t], p) for t, p in assignment.get(mid, ()) if t in topic_index]
            at = times.sync.get((mid, gg.generation_id), gg.end if gg.end is not None else gg.start)
            actions.append((at, _SYNC, m, tps))
    actions.sort(key=lambda a: (a[0], a[1]))
    subscribed = {}
    for ts, kind, who, payload in actions:
        if kind == _ENTER:
            ledger.enter(who, ts)
        elif kind == _SUB:
            subscribed[who] = payload
            ledger.subscribe(payload, ts, 1)
        elif kind == _UNSUB or kind == _GONE:
            ledger.subscribe(subscribed.pop(who, ()), ts, -1)
            if kind == _GONE:
                ledger.release(who, None, ts)
        elif kind == _REVOKE_ALL:
            ledger.release(who, None, ts)
        else:
            keep = set(payload)
            ledger.release(who, [tp for tp in ledger.consumed(who) if tp not in keep], ts)
            ledger.consume(who, payload, ts)
    end = max(a[0] for a in actions)
    return ledger.result("observed", end).unowned_ps
