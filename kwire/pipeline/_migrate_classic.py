"""A membership history replayed under the classic protocol, eager or cooperative, on kwire's sans-IO state
machines.

One :class:`kwire.group.GroupCoordinator` and one :class:`kwire.group.ConsumerMember` per member of the
history, in the replay loop of :mod:`kwire.pipeline._migrate_loop`, with ``range`` as the eager assignor
and ``cooperative-sticky`` as the cooperative one (the Java consumer's defaults before and after
cooperative rebalancing).  What the protocol does is the state machines' own:

* a new member, a leaver or a subscription change makes every member rejoin (JoinGroup); the coordinator
  waits for all of them, or their rebalance timeout, then the leader assigns and SyncGroup hands out the
  assignment; new groups wait ``group.initial.rebalance.delay.ms`` first;
* eager: a member revokes everything before its JoinGroup; cooperative: only what its new assignment
  lacks, after its SyncGroup, and a second rebalance hands those partitions to their new owners;
* a crashed member is expelled when its session times out on the coordinator.

FindCoordinator is answered by the replay after the member's latency (any broker answers it; it is not
a request the coordinator handles, so it is not a member-event).
"""

from __future__ import annotations

import random

from kwire.codec import Coordinator, FindCoordinatorResponse
from kwire.group import ConsumerMember, GroupCoordinator, GroupState, MemberState
from kwire.pipeline._membership import MembershipHistory
from kwire.pipeline._migrate_ledger import SimulatedStall
from kwire.pipeline._migrate_loop import RESPOND, Replay

#: The protocol names of these simulations in the ``migration`` table.
EAGER = "classic-eager"
COOPERATIVE = "classic-cooperative"
#: The Java consumer's ``heartbeat.interval.ms`` default, and the broker's
#: ``group.initial.rebalance.delay.ms`` default.
CLASSIC_HEARTBEAT_INTERVAL_MS = 3000
INITIAL_REBALANCE_DELAY_MS = 3000

_STEADY = MemberState.STABLE
_SETTLED = (None, GroupState.STABLE, GroupState.EMPTY)


def simulate_classic(history: MembershipHistory, *, cooperative=False,
                     heartbeat_interval_ms=CLASSIC_HEARTBEAT_INTERVAL_MS,
                     initial_rebalance_delay_ms=INITIAL_REBALANCE_DELAY_MS, settle_us=None) -> SimulatedStall:
    """The stall of each observed rebalance of ``history`` had its group used classic rebalances:
    ``range`` (eager) or, with ``cooperative``, ``cooperative-sticky``.  Each member keeps its observed
    session timeout; ``heartbeat_interval_ms`` is every member's ``heartbeat.interval.ms`` (lowered to a
    third of a shorter session timeout)."""
    replay = ClassicReplay(history, cooperative, heartbeat_interval_ms, initial_rebalance_delay_ms, settle_us)
    try:
        return replay.run()
    finally:
        # Freed here, by reference counts, rather than by a later cyclic collection.
        replay.coordinator.close()


class ClassicReplay(Replay):
    def __init__(self, history, cooperative, heartbeat_interval_ms, initial_rebalance_delay_ms, settle_us):
        sessions = [int(s) for s in history.session_timeout_ms.tolist()] or [45000]
        interval = min(int(heartbeat_interval_ms), max(1, min(sessions) // 3))
        super().__init__(history, interval, settle_us, max(sessions))
        self.protocol = COOPERATIVE if cooperative else EAGER
        self.assignors = ("cooperative-sticky",) if cooperative else ("range",)
        self.counts = {name: int(n) for name, n in zip(self.names, history.partition_counts.tolist())}
        ids = iter(range(1, 1 << 62))
        self.coordinator = GroupCoordinator(
            initial_rebalance_delay_ms=int(initial_rebalance_delay_ms),
            min_session_timeout_ms=min(sessions), max_session_timeout_ms=max(sessions),
            member_id_factory=lambda prefix: f"{prefix}-{next(ids)}")
        self.deadlines_seen = -1

    def after_coordinator(self, t):
        # A tick already queued is never later than the coordinator's next deadline; unless a timer was queued
        # since, that deadline can only have moved later, and the queued tick still comes first.
        if self.tick_at is not None and self.coordinator.deadlines_queued == self.deadlines_seen:
            return
        Replay.after_coordinator(self, t)
        self.deadlines_seen = self.coordinator.deadlines_queued

    def make_machine(self, key, index, topic_names):
        h = self.h
        session = int(h.session_timeout_ms[index])
        return ConsumerMember(h.group_id, topic_names, assignors=self.assignors, client_id=key,
                              session_timeout_ms=session, rebalance_timeout_ms=int(h.rebalance_timeout_ms),
                              heartbeat_interval_ms=int(self.interval), partitions_per_topic=self.counts,
                              rng=_LazyRandom(index))

    def send(self, m, out, t):
        if out.to_coordinator:
            self.request(m, out.token, out, t)   # the Send itself carries the request and its version
            return
        # FindCoordinator: answered after the member's whole latency, by the replay.
        self.in_flight += 1
        self.push(t + m.latency, RESPOND, m, out.token, _found(out.request, out.version))

    def deliver(self, m, token, out, t):
        for reply in self.coordinator.handle((m, token), out.request, out.version, t, client_id=m.key):
            to, its_token = reply.handle
            self.respond(to, its_token, reply.response, t)
        if self.silent:
            self.expelled()

    def tick(self, t):
        self.route(self.coordinator.tick(t), t)
        if self.silent:
            self.expelled()

    def route(self, replies, t):
        for reply in replies:
            m, token = reply.handle
            self.respond(m, token, reply.response, t)

    def silent_id(self, m):
        return m.machine.member_id or None

    def expelled(self):
        """Forget the crashed members the coordinator no longer has (their session ran out)."""
        has_member, group_id = self.coordinator.has_member, self.h.group_id
        self.silent.difference_update([member_id for member_id in self.silent if not has_member(group_id, member_id)])

    def leave(self, m, t):
        return m.machine.close(t)

    def settled(self):
        coordinator = self.coordinator
        return coordinator.group_state(self.h.group_id) in _SETTLED

    def steady(self, m):
        return m.machine.state is _STEADY   # states are the enum's members

    def all_steady(self):
        # The loop's answer with the group's state asked first: during a rebalance the group is not stable,
        # and that one look answers without a call per member.
        members = self.members
        if not members:
            return True
        coordinator = self.coordinator
        if coordinator.group_state(self.h.group_id) not in _SETTLED:
            return False
        for m in members.values():
            machine = m.machine
            if machine.state is not _STEADY:
                return False
        return True


class _LazyRandom:
    """``random.Random(seed)`` made on its first use: a member draws from it only to back off after an
    error, and seeding one costs half of making the member."""

    __slots__ = ("seed", "rng")

    def __init__(self, seed):
        self.seed = seed
        self.rng = None

    def uniform(self, a, b):
        if self.rng is None:
            self.rng = random.Random(self.seed)
        return self.rng.uniform(a, b)


def _found(request, version):
    """The FindCoordinator answer: the one coordinator there is."""
    if version >= 4:
        return FindCoordinatorResponse(coordinators=[Coordinator(key=request.coordinator_keys[0], node_id=0,
                                                                  host="127.0.0.1", port=9092)])
    return FindCoordinatorResponse(node_id=0, host="127.0.0.1", port=9092)
