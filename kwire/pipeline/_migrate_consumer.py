"""A membership history replayed under KIP-848's consumer protocol, on kwire's sans-IO state machines.

One :class:`kwire.group.ConsumerGroupCoordinator` (the ``uniform`` assignor) and one
:class:`kwire.group.ConsumerProtocolMember` per member of the history, on one injected clock:

* members join, leave, crash and change subscription at the history's times;
* a member's request reaches the coordinator half its observed latency after it was sent, and the response
  reaches the member the other half later (the latency is the capture's request-to-response time);
* a member heartbeats when its state machine says so: at once while joining or acknowledging, otherwise on
  the coordinator's interval; it revokes before it acknowledges, and the coordinator gives a revoked
  partition to its new owner only once the revoker's acknowledgement has freed it;
* a crashed member just goes silent: its partitions stop being consumed at once and are given to others
  only after the coordinator's session timer fences it;
* the coordinator's timers (session, revocation, deferred assignment) fire when due.

The ledger (:mod:`kwire.pipeline._migrate_ledger`) watches the members' revoke, lose and assign events.
"""

from __future__ import annotations

import heapq

import numpy as np

from kwire.group import (ConsumerGroupCoordinator, ConsumerGroupState, ConsumerMembershipState, ConsumerProtocolMember,
                         MemberFenced, PartitionsAssigned, PartitionsLost, PartitionsRevoked, Send)
from kwire.pipeline._membership import MemberEvent, MembershipHistory
from kwire.pipeline._migrate_ledger import Ledger, SimulatedStall

_JOIN, _LEAVE, _CRASH, _SUBSCRIBE = (int(k) for k in (MemberEvent.JOIN, MemberEvent.LEAVE, MemberEvent.CRASH,
                                                      MemberEvent.SUBSCRIBE))
# Heap entry kinds, in the order simultaneous entries are handled.
_HISTORY, _DELIVER, _RESPOND, _POLL, _TICK = range(5)
_STABLE_MEMBER = ConsumerMembershipState.STABLE
_GROUP_SETTLED = (ConsumerGroupState.STABLE, ConsumerGroupState.EMPTY)

#: The protocol name of this simulation in the ``migration`` table.
CONSUMER = "consumer"


def topic_id(index: int) -> bytes:
    """The simulated topic id of topic ``index``: its 16 bytes only need to be distinct."""
    return (index + 1).to_bytes(16, "big")


class _Member:
    """One incarnation of a history member: the state machine and what the simulation knows of it."""

    __slots__ = ("machine", "index", "key", "latency", "topics", "version", "live")

    def __init__(self, machine, index, key, latency, topics):
        self.machine = machine
        self.index = index
        self.key = key
        self.latency = latency
        self.topics = topics
        self.version = 0        # bumped when a queued poll goes stale
        self.live = True


def simulate_consumer(history: MembershipHistory, *, heartbeat_interval_ms=5000, session_timeout_ms=None,
                      assignment_interval_ms=0, settle_us=None) -> SimulatedStall:
    """The stall of each observed rebalance of ``history`` had its group used the consumer protocol.

    ``heartbeat_interval_ms``: the coordinator's ``group.consumer.heartbeat.interval.ms`` (Kafka's default).
    ``session_timeout_ms``: ``group.consumer.session.timeout.ms``; None takes the median of the history's
    members' session timeouts, so a crash costs what it cost the observed group.
    ``assignment_interval_ms``: 0 computes a target in the heartbeat that finds it behind, as Kafka 4.0
    does.  ``settle_us``: how long after the last history event the simulation may still run to become
    stable (None: twice the longest session or rebalance timeout)."""
    return _ConsumerReplay(history, heartbeat_interval_ms, session_timeout_ms, assignment_interval_ms,
                           settle_us).run()


class _ConsumerReplay:
    def __init__(self, history, heartbeat_interval_ms, session_timeout_ms, assignment_interval_ms, settle_us):
        self.h = history
        sessions = history.session_timeout_ms
        session = int(session_timeout_ms if session_timeout_ms is not None
                      else (np.median(sessions) if len(sessions) else 45000))
        interval = int(heartbeat_interval_ms)
        self.interval = float(interval)
        config = {"group.consumer.session.timeout.ms": session,
                  "group.consumer.min.session.timeout.ms": min(session, 45000),
                  "group.consumer.max.session.timeout.ms": max(session, 60000),
                  "group.consumer.heartbeat.interval.ms": interval,
                  "group.consumer.min.heartbeat.interval.ms": min(interval, 5000),
                  "group.consumer.max.heartbeat.interval.ms": max(interval, 15000),
                  "group.consumer.assignment.interval.ms": int(assignment_interval_ms),
                  "group.consumer.assignors": "uniform"}
        self.names = list(history.topics)
        self.topic_index = {name: k for k, name in enumerate(self.names)}
        self.coordinator = ConsumerGroupCoordinator(
            config, topics={name: (topic_id(k), int(n)) for k, (name, n)
                            in enumerate(zip(self.names, history.partition_counts))})
        self.topic_names = {topic_id(k): name for k, name in enumerate(self.names)}
        self.ledger = Ledger(history.partition_counts, history.n_rebalances, unit_us=1000)
        self.heap = []
        self.seq = 0
        self.members = {}          # history index -> its current _Member
        self.incarnations = {}     # history index -> how many times it joined
        self.silent = set()        # keys of crashed members the coordinator has not fenced yet
        self.in_flight = 0         # requests and responses on their way
        self.tick_at = None        # the coordinator tick queued, µs
        self.offset = 0.0          # ms of steady state skipped so far
        # The clock is ms (the state machines' unit) as floats, from the first event: a member's deadline is
        # then the very number it is polled at.
        self.t0 = int(history.event_ts[0]) if history.n_events else 0
        longest = max([session, int(history.rebalance_timeout_ms)] + [int(s) for s in sessions])
        self.settle = settle_us / 1000.0 if settle_us is not None else 2.0 * longest

    # -- the clock --------------------------------------------------------------------------------------

    def push(self, t, kind, a=None, b=None, c=None):
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, a, b, c))

    def run(self) -> SimulatedStall:
        h = self.h
        ts, who, kinds, rebalance = h.event_ts, h.event_member, h.event_kind, h.event_rebalance
        n = len(ts)
        i = 0
        heap = self.heap
        t = 0.0
        end = None
        while True:
            next_history = (int(ts[i]) - self.t0) / 1000.0 - self.offset if i < n else None
            if next_history is None and self.quiet():
                break   # nothing left to happen but steady heartbeats
            if next_history is not None and heap and heap[0][0] < next_history or next_history is None and heap:
                if next_history is not None and next_history - t > 2 * self.interval and self.quiet():
                    self.skip_steady(t, next_history)
                    continue
                entry = heapq.heappop(heap)
                t = entry[0]
                if end is not None and t > end:
                    break
                self.handle(entry)
                continue
            if next_history is None:
                break
            t = max(t, next_history)
            self.history_event(t, int(who[i]), int(kinds[i]), h.event_topics[i], int(rebalance[i]))
            i += 1
            if i == n:
                end = t + self.settle
        return self.ledger.result(CONSUMER, min(t, end) if end is not None else t)

    def quiet(self):
        """True when nothing but steady heartbeats can happen before the next history event: every member
        stable with nothing on its way, no crashed member waiting to be fenced, the group stable."""
        if self.in_flight or self.silent or self.ledger.open:
            return False
        if self.members and self.coordinator.group_state(self.h.group_id) is not ConsumerGroupState.STABLE:
            return False
        for m in self.members.values():
            if m.machine.state is not _STABLE_MEMBER:
                return False
        return True

    def skip_steady(self, now, next_history):
        """Skip whole heartbeat intervals of steady state up to ``next_history``.

        In a stable group a heartbeat only re-arms its member's session timer: the coordinator answers it on
        its steady path, with no assignment, and nothing else is due (no revocation timer, the target is
        not behind).  Every member heartbeats every interval, so moving the history's remaining events
        earlier by a whole number of intervals leaves every member's and timer's phase relative to them as
        it was: the replay after the gap is the one it would have been.  The skipped time is added to
        ``offset`` and the history's times are read minus it."""
        skip = (next_history - now) // self.interval - 1
        if skip > 0:
            self.offset += skip * self.interval

    # -- what happens ------------------------------------------------------------------------------------

    def history_event(self, t, index, kind, topics, rebalance):
        ledger = self.ledger
        ledger.enter(rebalance, t)
        if kind == _JOIN:
            self.join(t, index, topics)
            return
        m = self.members.get(index)
        if m is None or not m.live:
            return
        if kind == _SUBSCRIBE:
            ledger.subscribe(m.topics, t, -1)
            m.topics = tuple(topics)
            ledger.subscribe(m.topics, t, 1)
            m.machine.subscribe([self.names[k] for k in topics])
            self.schedule_poll(m, t)
        elif kind == _LEAVE:
            self.outputs(m, m.machine.leave(t), t)
            self.gone(m, t)
        elif kind == _CRASH:
            # Gone silent: nothing more is sent or read; what it consumed is no longer consumed.
            ledger.release(m.key, None, t)
            self.gone(m, t)
            self.silent.add(m.key)

    def gone(self, m, t):
        m.live = False
        m.version += 1
        self.ledger.subscribe(m.topics, t, -1)
        del self.members[m.index]

    def join(self, t, index, topics):
        old = self.members.get(index)
        if old is not None:
            self.gone(old, t)
        k = self.incarnations.get(index, 0)
        self.incarnations[index] = k + 1
        h = self.h
        key = h.member_ids[index] if k == 0 else f"{h.member_ids[index]}#{k}"
        machine = _make_member(h.group_id, [self.names[j] for j in topics], key, h.rebalance_timeout_ms,
                               self.topic_names)
        m = _Member(machine, index, key, int(h.latency_us[index]) / 1000.0, tuple(topics))
        self.members[index] = m
        self.ledger.subscribe(m.topics, t, 1)
        self.outputs(m, machine.poll(t), t)

    def handle(self, entry):
        t, kind, _seq, a, b, c = entry
        if kind == _POLL:
            m = a
            if m.live and m.version == b:
                self.outputs(m, m.machine.poll(t), t)
        elif kind == _DELIVER:
            self.in_flight -= 1
            m, token, request = a, b, c
            response = self.coordinator.heartbeat(request, 0, t)
            self.ledger.count_event()
            self.after_coordinator(t)
            if m.live:
                self.in_flight += 1
                self.push(t + m.latency / 2, _RESPOND, m, token, response)
        elif kind == _RESPOND:
            self.in_flight -= 1
            m, token, response = a, b, c
            if m.live:
                self.outputs(m, m.machine.receive(token, response, t), t)
        elif kind == _TICK:
            if self.tick_at == t:
                self.tick_at = None
                self.coordinator_events(self.coordinator.tick(t), t)
                self.after_coordinator(t)
        self.check_stable(t)

    def after_coordinator(self, t):
        self.coordinator_events(self.coordinator.take_events(), t)
        deadline = self.coordinator.next_deadline()
        if deadline is not None:
            at = deadline
            if at < t:
                at = t
            if self.tick_at is None or at < self.tick_at:
                self.tick_at = at
                self.push(at, _TICK)

    def coordinator_events(self, events, t):
        for event in events:
            if type(event) is MemberFenced:
                self.silent.discard(event.member_id)

    def outputs(self, m, outs, t):
        ledger, index = self.ledger, self.topic_index
        for out in outs:
            kind = type(out)
            if kind is Send:
                if m.live or out.request.member_epoch < 0:
                    self.in_flight += 1
                    self.push(t + m.latency / 2, _DELIVER, m, out.token, out.request)
            elif kind is PartitionsAssigned:
                ledger.consume(m.key, [(index[name], p) for name, p in out.partitions], t)
            elif kind is PartitionsRevoked or kind is PartitionsLost:
                ledger.release(m.key, [(index[name], p) for name, p in out.partitions], t)
        if m.live:
            self.schedule_poll(m, t)

    def schedule_poll(self, m, t):
        deadline = m.machine.next_deadline()
        if deadline is None:
            return
        m.version += 1
        at = deadline
        self.push(at if at > t else t, _POLL, m, m.version)

    def check_stable(self, t):
        ledger = self.ledger
        if not ledger.open or ledger.unowned or self.silent:
            return
        if self.coordinator.group_state(self.h.group_id) in _GROUP_SETTLED or not self.members:
            ledger.settle(t)


def _make_member(group_id, topic_names, member_id, rebalance_timeout_ms, topic_ids):
    return ConsumerProtocolMember(group_id, topic_names, rebalance_timeout_ms=int(rebalance_timeout_ms),
                                  topic_names=topic_ids, member_id=member_id)
