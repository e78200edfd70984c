"""A group's membership history: what the migration what-if replays.

Whichever protocol a group was captured under, the what-if needs the same
few facts to replay it under another: who joined, left, crashed or changed
subscription and when, how fast each member talked to the coordinator, the
group's timers, its topics' sizes, and what each rebalance cost as observed.
:class:`MembershipHistory` holds them in plain lists and numpy arrays, so the
classic timelines (:mod:`kwire.pipeline._migrate_history`) and the
consumer-protocol timelines build the same thing, and the simulation reads
it without knowing where it came from.

Times are microseconds since the epoch, like the capture's ``ts``; durations
carry their unit in their name.
"""

from __future__ import annotations

from enum import IntEnum
from typing import List, NamedTuple, Tuple

import numpy as np

from kwire.errors import ArgumentValueError


class MemberEvent(IntEnum):
    """What happened to a member at an event (``event_kind``)."""

    #: The member asked to join (classic: its first JoinGroup of the
    #: membership; consumer protocol: its heartbeat with member epoch 0), with
    #: the subscription of the event.  Members already in the group when the
    #: capture starts join at the window's start.
    JOIN = 0
    #: The member left cleanly (LeaveGroup; a heartbeat with member epoch -1).
    LEAVE = 1
    #: The member went silent without leaving, and the coordinator expelled
    #: or fenced it once its session timed out.  The event's time is the
    #: member's last request, when it went silent, not its expulsion: the
    #: replay lets each protocol's own session timer expire.
    CRASH = 2
    #: The member's subscription changed to the event's.
    SUBSCRIBE = 3


#: The protocols a history can be observed under (``protocol``).
PROTOCOLS = ("classic", "consumer", "mixed")


class MembershipHistory(NamedTuple):
    """One group's membership over its capture window.

    Events are sorted by time; a member's events run JOIN, any SUBSCRIBE,
    then LEAVE or CRASH (or nothing, if it was still there at the window's
    end), and may start again with a JOIN (a static member coming back).
    """

    #: The group id.
    group_id: str
    #: The protocol the group was captured under, one of :data:`PROTOCOLS`.
    protocol: str
    #: The assignor observed: classic, the protocol name of its JoinGroup
    #: responses ("range", "cooperative-sticky"...); consumer protocol, the
    #: server assignor ("uniform", "range").  None when none was seen.
    assignor: object
    #: Topic names (a topic's id in ``Uuid.toString()`` form when no Metadata
    #: response named it), indexed by the subscriptions below.
    topics: List[str]
    #: int32 per topic: its partition count.
    partition_counts: np.ndarray
    #: Member ids, indexed by ``event_member``.
    member_ids: List[str]
    #: int64 per member: its observed request latency, µs: the median, over
    #: the member's group requests, of request time to response time.
    latency_us: np.ndarray
    #: int32 per member: its session timeout, ms.
    session_timeout_ms: np.ndarray
    #: The group's heartbeat interval, ms (consumer protocol: the interval the
    #: coordinator gave; classic: the members' interval, or the default).
    heartbeat_interval_ms: int
    #: The group's rebalance timeout, ms.
    rebalance_timeout_ms: int
    #: The capture window of the group, µs: its first and last frame.
    window_start_us: int
    window_end_us: int
    #: int64 per event, sorted: when it happened, µs.
    event_ts: np.ndarray
    #: int32 per event: the member's index in ``member_ids``.
    event_member: np.ndarray
    #: int8 per event: a :class:`MemberEvent`.
    event_kind: np.ndarray
    #: Per event, the member's subscription after it, as sorted indices into
    #: ``topics`` (empty for LEAVE and CRASH).
    event_topics: List[Tuple[int, ...]]
    #: int32 per event: the index of the observed rebalance the event caused
    #: or fell in (into the ``rebalance_*`` arrays), -1 when none was observed.
    event_rebalance: np.ndarray
    #: int64 per observed rebalance, sorted: its trigger, µs (classic: the
    #: generation's first JoinGroup request; consumer protocol: the group
    #: epoch bump).
    rebalance_start_us: np.ndarray
    #: int32 per observed rebalance: its generation id (classic) or group
    #: epoch (consumer protocol).
    rebalance_epoch: np.ndarray
    #: float64 per observed rebalance: partition-seconds unowned, as observed
    #: under ``protocol`` (the measure docs/PIPELINE.md defines).
    rebalance_unowned_ps: np.ndarray
    #: int64 per observed rebalance: time to a stable group, µs; -1 when the
    #: group was not stable again before the capture ended.
    rebalance_stable_us: np.ndarray

    @property
    def n_members(self) -> int:
        return len(self.member_ids)

    @property
    def n_events(self) -> int:
        return len(self.event_ts)

    @property
    def n_rebalances(self) -> int:
        return len(self.rebalance_start_us)

    def validate(self) -> "MembershipHistory":
        """``self`` if its arrays agree with each other, else an :class:`ArgumentValueError` naming the first fault."""
        def fail(why):
            raise ArgumentValueError(f"membership history of group {self.group_id!r}: {why}")

        if self.protocol not in PROTOCOLS:
            fail(f"protocol {self.protocol!r} is none of {PROTOCOLS}")
        if len(self.partition_counts) != len(self.topics):
            fail(f"{len(self.partition_counts)} partition counts for {len(self.topics)} topics")
        if len(self.partition_counts) and int(np.min(self.partition_counts)) < 0:
            fail("a negative partition count")
        n = self.n_members
        if len(self.latency_us) != n or len(self.session_timeout_ms) != n:
            fail(f"per-member arrays of lengths {len(self.latency_us)}, {len(self.session_timeout_ms)} "
                 f"for {n} members")
        if n and (int(np.min(self.latency_us)) < 0 or int(np.min(self.session_timeout_ms)) <= 0):
            fail("a negative latency or a session timeout that is not positive")
        if self.heartbeat_interval_ms <= 0 or self.rebalance_timeout_ms <= 0:
            fail("a heartbeat interval or rebalance timeout that is not positive")
        e = self.n_events
        if not (len(self.event_member) == len(self.event_kind) == len(self.event_topics)
                == len(self.event_rebalance) == e):
            fail("per-event arrays of different lengths")
        if e:
            if np.any(np.diff(self.event_ts) < 0):
                fail("events out of time order")
            if int(np.min(self.event_member)) < 0 or int(np.max(self.event_member)) >= n:
                fail("an event of a member that is not in member_ids")
            if int(np.min(self.event_kind)) < 0 or int(np.max(self.event_kind)) > max(MemberEvent):
                fail("an event kind that is not a MemberEvent")
            if int(np.max(self.event_rebalance)) >= self.n_rebalances or int(np.min(self.event_rebalance)) < -1:
                fail("an event of a rebalance that is not in the rebalance arrays")
        k = len(self.topics)
        for topics in self.event_topics:
            if any(t < 0 or t >= k for t in topics):
                fail(f"a subscription {topics} naming a topic beyond the {k} topics")
        r = self.n_rebalances
        if not (len(self.rebalance_epoch) == len(self.rebalance_unowned_ps) == len(self.rebalance_stable_us) == r):
            fail("per-rebalance arrays of different lengths")
        if r and np.any(np.diff(self.rebalance_start_us) < 0):
            fail("rebalances out of time order")
        return self


def empty_history(group_id: str, protocol: str) -> MembershipHistory:
    """A history with no topic, member, event or rebalance, every array of its type."""
    return MembershipHistory(
        group_id=group_id, protocol=protocol, assignor=None, topics=[],
        partition_counts=np.zeros(0, np.int32), member_ids=[], latency_us=np.zeros(0, np.int64),
        session_timeout_ms=np.zeros(0, np.int32), heartbeat_interval_ms=3000, rebalance_timeout_ms=300_000,
        window_start_us=0, window_end_us=0, event_ts=np.zeros(0, np.int64), event_member=np.zeros(0, np.int32),
        event_kind=np.zeros(0, np.int8), event_topics=[], event_rebalance=np.zeros(0, np.int32),
        rebalance_start_us=np.zeros(0, np.int64), rebalance_epoch=np.zeros(0, np.int32),
        rebalance_unowned_ps=np.zeros(0, np.float64), rebalance_stable_us=np.zeros(0, np.int64))


def history(group_id: str, protocol: str, topics, members, events, rebalances=(), *, assignor=None,
            heartbeat_interval_ms=3000, rebalance_timeout_ms=300_000, window=None) -> MembershipHistory:
    """A validated :class:`MembershipHistory` from rows, for builders and tests.

    ``topics``: ``[(name, partitions)]``; ``members``: ``[(member id, latency µs, session timeout ms)]``;
    ``events``: ``[(ts µs, member index, MemberEvent, topic indices, rebalance index)]`` in any order (sorted
    here, stably); ``rebalances``: ``[(start µs, epoch, unowned partition-seconds, time to stable µs)]``;
    ``window``: ``(start, end)`` µs, else the events' span."""
    events = sorted(events, key=lambda e: e[0])
    ts = np.array([e[0] for e in events], np.int64)
    if window is None:
        window = (int(ts[0]), int(ts[-1])) if len(ts) else (0, 0)
    rebalances = list(rebalances)
    return MembershipHistory(
        group_id=group_id, protocol=protocol, assignor=assignor, topics=[t for t, _n in topics],
        partition_counts=np.array([n for _t, n in topics], np.int32), member_ids=[m[0] for m in members],
        latency_us=np.array([m[1] for m in members], np.int64),
        session_timeout_ms=np.array([m[2] for m in members], np.int32),
        heartbeat_interval_ms=int(heartbeat_interval_ms), rebalance_timeout_ms=int(rebalance_timeout_ms),
        window_start_us=int(window[0]), window_end_us=int(window[1]), event_ts=ts,
        event_member=np.array([e[1] for e in events], np.int32),
        event_kind=np.array([int(e[2]) for e in events], np.int8),
        event_topics=[tuple(sorted(e[3])) for e in events],
        event_rebalance=np.array([e[4] for e in events], np.int32),
        rebalance_start_us=np.array([r[0] for r in rebalances], np.int64),
        rebalance_epoch=np.array([r[1] for r in rebalances], np.int32),
        rebalance_unowned_ps=np.array([r[2] for r in rebalances], np.float64),
        rebalance_stable_us=np.array([r[3] for r in rebalances], np.int64)).validate()
