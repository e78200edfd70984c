"""The replay loop both migration simulations share: a membership history on an injected clock.

:class:`Replay` owns the clock (a heap of timed entries), the history's events, the members' state
machines as a protocol module makes them, and the :class:`~kwire.pipeline._migrate_ledger.Ledger`.  It
does, for either protocol:

* members join, leave, crash and change subscription at the history's times; a crashed member goes
  silent (nothing more is sent to or from it) and what it consumed is no longer consumed;
* a request reaches the coordinator half the member's observed latency after it was sent, and the answer
  reaches the member the other half later (the latency is the capture's request-to-response time);
* a member is polled when its state machine's ``next_deadline`` says, the coordinator ticked when its
  ``next_deadline`` says;
* the members' revoke, lose and assign events go to the ledger.

A protocol module (:mod:`kwire.pipeline._migrate_consumer`, :mod:`kwire.pipeline._migrate_classic`)
subclasses it with how a member is made, how a request reaches the coordinator, and what stable means.

The clock is ms (the state machines' unit) as floats, counted from the history's first event: a member's
deadline is then the very number it is polled at.
"""

from __future__ import annotations

from heapq import heappop, heappush

from kwire.errors import KwireError
from kwire.group import PartitionsAssigned, PartitionsLost, PartitionsRevoked, Send
from kwire.pipeline._membership import MemberEvent, MembershipHistory
from kwire.pipeline._migrate_ledger import Ledger, SimulatedStall

_JOIN, _LEAVE, _CRASH, _SUBSCRIBE = (int(k) for k in (MemberEvent.JOIN, MemberEvent.LEAVE, MemberEvent.CRASH,
                                                      MemberEvent.SUBSCRIBE))
# Heap entry kinds, in the order simultaneous entries are handled.
DELIVER, RESPOND, POLL, TICK = range(4)
#: Steps (heap entries) a replay may take per membership event and member, beyond a base: a replay past it
#: is stuck (a state machine that keeps asking to be polled and does nothing), and stops with an error.
STEP_BUDGET_PER_EVENT_MEMBER = 20_000
STEP_BUDGET_BASE = 1_000_000


class ReplayError(KwireError, RuntimeError):
    """A replay that did not finish within its step budget: its group's rows carry this error."""


class Member:
    """One incarnation of a history member: its state machine and what the replay knows of it."""

    __slots__ = ("machine", "index", "key", "latency", "topics", "version", "live", "poll_at")

    def __init__(self, machine, index, key, latency, topics):
        self.machine = machine
        self.index = index
        self.key = key
        self.latency = latency  # ms
        self.topics = topics
        self.version = 0        # bumped when a queued poll goes stale
        self.live = True
        self.poll_at = None     # when its live queued poll is due


class Replay:
    """One history's replay; subclasses set ``protocol``, ``coordinator`` and the hooks below."""

    def __init__(self, history: MembershipHistory, heartbeat_interval_ms, settle_us, session_timeout_ms):
        self.protocol = ""
        self.h = history
        self.interval = float(heartbeat_interval_ms)
        self.names = list(history.topics)
        # Topic name -> index, to read the members' partition events; None when a protocol's members name
        # each topic by its index already.
        self.topic_index = {name: k for k, name in enumerate(self.names)}
        self.ledger = Ledger(history.partition_counts, history.n_rebalances, unit_us=1000)
        self.heap = []
        self.seq = 0
        self.members = {}          # history index -> its current Member
        self.incarnations = {}     # history index -> how many times it joined
        self.silent = set()        # keys of crashed members the coordinator has not removed yet
        self.in_flight = 0         # requests and answers on their way
        self.tick_at = None        # the coordinator tick queued
        self.offset = 0.0          # ms of steady state skipped so far
        self.t0 = int(history.event_ts[0]) if history.n_events else 0
        longest = max([int(session_timeout_ms), int(history.rebalance_timeout_ms)]
                      + [int(s) for s in history.session_timeout_ms.tolist()])
        self.settle = settle_us / 1000.0 if settle_us is not None else 2.0 * longest

    # -- hooks ------------------------------------------------------------------------------------------

    def make_machine(self, key, index, topic_names):
        raise NotImplementedError

    def send(self, m, out, t):
        """A member's Send output at ``t``: queue it (``DELIVER``) or answer it."""
        raise NotImplementedError

    def deliver(self, m, token, request, t):
        """A request reaches the coordinator at ``t``."""
        raise NotImplementedError

    def leave(self, m, t):
        """The member's outputs when it leaves cleanly at ``t``."""
        raise NotImplementedError

    def silent_id(self, m):
        """The id the coordinator knows crashed member ``m`` by, or None if it never knew it."""
        return m.key

    def settled(self):
        """Whether the coordinator's group is stable (or empty)."""
        raise NotImplementedError

    def steady(self, m):
        """Whether member ``m`` is in its protocol's steady state (heartbeating, nothing to do)."""
        raise NotImplementedError

    # -- the clock --------------------------------------------------------------------------------------

    def push(self, t, kind, a=None, b=None, c=None):
        self.seq += 1
        heappush(self.heap, (t, kind, self.seq, a, b, c))

    def run(self) -> SimulatedStall:
        h = self.h
        # The history's columns as Python values once: the loop reads one per step.
        t0 = self.t0
        at = [(v - t0) / 1000.0 for v in h.event_ts.tolist()]
        who, kinds, rebalance = h.event_member.tolist(), h.event_kind.tolist(), h.event_rebalance.tolist()
        n = len(at)
        i = 0
        heap = self.heap
        ledger = self.ledger
        interval2 = 2 * self.interval
        t = 0.0
        end = None
        budget = STEP_BUDGET_BASE + STEP_BUDGET_PER_EVENT_MEMBER * (n + 1) * max(h.n_members, 1)
        steps = 0
        while True:
            steps += 1
            if steps > budget:
                raise ReplayError(f"the {self.protocol} replay of group {h.group_id!r} did not finish within "
                                  f"{budget:,} steps")
            if i < n:
                next_history = at[i] - self.offset
                # The earliest queued time read as a number once (compiled: a C double, not a float object
                # compared through Python); an empty heap has nothing before the history's event.
                head = heap[0][0] if heap else next_history
                if head < next_history:
                    # quiet(), its cheap tests first: most steps have something in flight.
                    if (next_history - t > interval2 and not self.in_flight and not self.silent
                            and not ledger.open and self.all_steady()):
                        self.skip_steady(t, next_history)
                        continue
                    entry = heappop(heap)
                    t = entry[0]
                    self.handle(entry)
                    continue
                t = max(t, next_history)
                self.history_event(t, who[i], kinds[i], h.event_topics[i], rebalance[i])
                i += 1
                if i == n:
                    end = t + self.settle
                continue
            if not heap or self.quiet():
                break   # nothing left to happen but steady heartbeats
            entry = heappop(heap)
            t = entry[0]
            if end is not None and t > end:
                break
            self.handle(entry)
        return self.ledger.result(self.protocol, min(t, end) if end is not None else t)

    def quiet(self):
        """True when nothing but steady heartbeats can happen before the next history event: every member
        steady with nothing on its way, no crashed member waiting to be removed, the group stable."""
        if self.in_flight or self.silent or self.ledger.open:
            return False
        return self.all_steady()

    def all_steady(self):
        """Every member in its steady state (a joiner still on its way is not), and the coordinator says the
        group is stable (or it has no member).  A protocol may answer this without a call per member."""
        for m in self.members.values():
            if not self.steady(m):
                return False
        return not self.members or self.settled()

    def skip_steady(self, now, next_history):
        """Skip whole heartbeat intervals of steady state up to ``next_history``.

        In a stable group a heartbeat only re-arms its member's session timer: the coordinator answers it
        with nothing new, and no other timer is armed (no revocation or rebalance timeout, no deferred
        assignment).  Every member heartbeats once per interval, the same interval for all, so moving the
        history's remaining events earlier by a whole number of intervals leaves every member's and every
        timer's phase relative to them as it was: the replay after the gap is the one it would have been.
        The skipped time is added to ``offset`` and the history's times are read minus it."""
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
            self.outputs(m, self.leave(m, t), t)
            self.gone(m, t)
        elif kind == _CRASH:
            ledger.release(m.key, None, t)
            self.gone(m, t)
            silent = self.silent_id(m)
            if silent is not None:
                self.silent.add(silent)

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
        # A member back after leaving or crashing is a new member to the coordinator.
        key = h.member_ids[index] if k == 0 else f"{h.member_ids[index]}#{k}"
        machine = self.make_machine(key, index, [self.names[j] for j in topics])
        m = Member(machine, index, key, int(h.latency_us[index]) / 1000.0, tuple(topics))
        self.members[index] = m
        self.ledger.subscribe(m.topics, t, 1)
        self.outputs(m, machine.poll(t), t)

    def handle(self, entry):
        t, kind, _seq, a, b, c = entry
        ledger = self.ledger
        if kind == DELIVER:
            self.in_flight -= 1
            if ledger.current >= 0:
                ledger.events[ledger.current] += 1   # a member-event: the coordinator handles a request
            self.deliver(a, b, c, t)
            self.after_coordinator(t)
        elif kind == RESPOND:
            self.in_flight -= 1
            m = a
            if m.live:
                outs = m.machine.receive(b, c, t)
                if outs:
                    self.outputs(m, outs, t)
                else:
                    self.schedule_poll(m, t)
        elif kind == POLL:
            m = a
            if m.live and m.version == b:
                m.poll_at = None
                outs = m.machine.poll(t)
                if outs:
                    self.outputs(m, outs, t)
                else:
                    # Nothing to do at its deadline (a backoff that ends now): asked again a millisecond on,
                    # not at once, so that no member can hold the clock still.
                    self.schedule_poll(m, t + 1.0)
        elif kind == TICK:
            if self.tick_at == t:
                self.tick_at = None
                self.tick(t)
                self.after_coordinator(t)
        # An open rebalance settles once every partition is owned, no crashed member waits to be removed and
        # every member is steady (tested here, after every entry, cheapest first).
        if ledger.open and not ledger.unowned and not self.silent and self.all_steady():
            ledger.settle(t)

    def respond(self, m, token, response, t):
        """Queue ``response`` to reach ``m`` half its latency after ``t``."""
        if m.live:
            self.in_flight += 1
            self.seq += 1
            heappush(self.heap, (t + m.latency / 2, RESPOND, self.seq, m, token, response))

    def request(self, m, token, payload, t):
        """Queue ``payload`` (what :meth:`deliver` takes) to reach the coordinator half ``m``'s latency after
        ``t``."""
        self.in_flight += 1
        self.seq += 1
        heappush(self.heap, (t + m.latency / 2, DELIVER, self.seq, m, token, payload))

    def tick(self, t):
        raise NotImplementedError

    def after_coordinator(self, t):
        deadline = self.coordinator.next_deadline()
        if deadline is not None:
            at = deadline if deadline > t else t
            if self.tick_at is None or at < self.tick_at:
                self.tick_at = at
                self.push(at, TICK)

    def outputs(self, m, outs, t):
        ledger, index = self.ledger, self.topic_index
        for out in outs:
            kind = type(out)
            if kind is Send:
                self.send(m, out, t)
            elif kind is PartitionsAssigned:
                ledger.consume(m.key, out.partitions if index is None else
                               [(index[topic], p) for topic, p in out.partitions], t)
            elif kind is PartitionsRevoked or kind is PartitionsLost:
                ledger.release(m.key, out.partitions if index is None else
                               [(index[topic], p) for topic, p in out.partitions], t)
        if m.live:
            self.schedule_poll(m, t)

    def schedule_poll(self, m, t):
        deadline = m.machine.next_deadline()
        if deadline is None:
            return
        at = deadline if deadline > t else t
        if at == m.poll_at:
            return   # already queued
        m.version += 1
        m.poll_at = at
        self.seq += 1
        heappush(self.heap, (at, POLL, self.seq, m, m.version, None))


def median_session_ms(history: MembershipHistory, default=45000) -> int:
    """The group's session timeout for a protocol that has one per group: the members' median."""
    # numpy's median in plain Python: for a handful of members its call costs more than a small replay.
    sessions = sorted(history.session_timeout_ms.tolist())
    n = len(sessions)
    if not n:
        return default
    return int(sessions[n // 2]) if n % 2 else int((sessions[n // 2 - 1] + sessions[n // 2]) / 2)
