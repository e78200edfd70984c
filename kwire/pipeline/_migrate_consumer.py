"""A membership history replayed under KIP-848's consumer protocol, on kwire's sans-IO state machines.

One :class:`kwire.group.ConsumerGroupCoordinator` (the ``uniform`` assignor) and one
:class:`kwire.group.ConsumerProtocolMember` per member of the history, in the replay loop of
:mod:`kwire.pipeline._migrate_loop`.  What the protocol does is the state machines' own:

* a member heartbeats at once while joining or acknowledging, otherwise on the coordinator's interval;
* it revokes before it acknowledges, and the coordinator gives a revoked partition to its new owner only
  once the revoker's acknowledgement has freed it (``CurrentAssignmentBuilder``): the new owner learns of
  it at its own next heartbeat;
* a crashed member's partitions go to others only after the coordinator's session timer fences it.

The requests go to the coordinator as message objects, not bytes: the simulation measures the protocol,
and the codec is proven elsewhere.
"""

from __future__ import annotations

from functools import lru_cache

from kwire.group import (ConsumerGroupConfig, ConsumerGroupCoordinator, ConsumerGroupState, ConsumerMembershipState,
                         ConsumerProtocolMember, MemberFenced)
from kwire.pipeline._membership import MembershipHistory
from kwire.pipeline._migrate_ledger import SimulatedStall
from kwire.pipeline._migrate_loop import Replay, median_session_ms

#: The protocol name of this simulation in the ``migration`` table.
CONSUMER = "consumer"
#: ``group.consumer.heartbeat.interval.ms``'s default.
CONSUMER_HEARTBEAT_INTERVAL_MS = 5000

_STEADY = ConsumerMembershipState.STABLE
_SETTLED = (ConsumerGroupState.STABLE, ConsumerGroupState.EMPTY)


@lru_cache(maxsize=64)
def _config(session, interval, assignment_interval):
    """The coordinator's configuration, made once per set of values: checking one costs as much as a small
    group's replay.  The broker's bounds are widened to take the values asked for: the replay sets them, no
    client does."""
    return ConsumerGroupConfig({
        "group.consumer.session.timeout.ms": session,
        "group.consumer.min.session.timeout.ms": min(session, 45000),
        "group.consumer.max.session.timeout.ms": max(session, 60000),
        "group.consumer.heartbeat.interval.ms": interval,
        "group.consumer.min.heartbeat.interval.ms": min(interval, 5000),
        "group.consumer.max.heartbeat.interval.ms": max(interval, 15000),
        "group.consumer.assignment.interval.ms": assignment_interval,
        "group.consumer.assignors": "uniform"})


def topic_id(index: int) -> bytes:
    """The simulated topic id of topic ``index``: its 16 bytes only need to be distinct."""
    return (index + 1).to_bytes(16, "big")


def simulate_consumer(history: MembershipHistory, *, heartbeat_interval_ms=CONSUMER_HEARTBEAT_INTERVAL_MS,
                      session_timeout_ms=None, assignment_interval_ms=0, settle_us=None) -> SimulatedStall:
    """The stall of each observed rebalance of ``history`` had its group used the consumer protocol.

    ``heartbeat_interval_ms``: the coordinator's ``group.consumer.heartbeat.interval.ms``.
    ``session_timeout_ms``: ``group.consumer.session.timeout.ms``; None takes the median of the history's
    members' session timeouts, so a crash costs what it cost the observed group.
    ``assignment_interval_ms``: 0 computes a target in the heartbeat that finds it behind, as Kafka 4.0
    does.  ``settle_us``: how long after the last history event the replay may still run to become
    stable (None: twice the longest session or rebalance timeout)."""
    return ConsumerReplay(history, heartbeat_interval_ms, session_timeout_ms, assignment_interval_ms,
                          settle_us).run()


class ConsumerReplay(Replay):
    def __init__(self, history, heartbeat_interval_ms, session_timeout_ms, assignment_interval_ms, settle_us):
        session = int(session_timeout_ms) if session_timeout_ms is not None else median_session_ms(history)
        super().__init__(history, heartbeat_interval_ms, settle_us, session)
        self.protocol = CONSUMER
        self.coordinator_config = _config(session, int(heartbeat_interval_ms), int(assignment_interval_ms))
        self.coordinator = ConsumerGroupCoordinator(
            self.coordinator_config, topics={name: (topic_id(k), int(n)) for k, (name, n)
                            in enumerate(zip(self.names, history.partition_counts.tolist()))})
        # The members learn each topic id's "name" as the topic's index: their partition events then carry
        # (topic index, partition) pairs, what the ledger counts, and no event is translated back.  The names
        # only label events: the members subscribe by the real names, which the coordinator resolves.
        self.topic_ids = {topic_id(k): k for k in range(len(self.names))}
        self.topic_index = None
        self.deadlines_seen = -1

    def make_machine(self, key, index, topic_names):
        return ConsumerProtocolMember(self.h.group_id, topic_names, topic_names=self.topic_ids, member_id=key,
                                      rebalance_timeout_ms=int(self.h.rebalance_timeout_ms))

    def after_coordinator(self, t):
        # A tick already queued is never later than the coordinator's next deadline; unless a timer was queued
        # since, that deadline can only have moved later, and the queued tick still comes first.
        queued = self.coordinator.deadlines_queued
        if queued == self.deadlines_seen and self.tick_at is not None:
            return
        Replay.after_coordinator(self, t)
        self.deadlines_seen = self.coordinator.deadlines_queued

    def send(self, m, out, t):
        self.request(m, out.token, out.request, t)

    def deliver(self, m, token, request, t):
        coordinator = self.coordinator
        response = coordinator.heartbeat(request, 0, t)
        if coordinator.has_events:
            self.fenced(coordinator.take_events())
        self.respond(m, token, response, t)

    def tick(self, t):
        coordinator = self.coordinator
        self.fenced(coordinator.tick(t))

    def fenced(self, events):
        for event in events:
            if type(event) is MemberFenced:
                self.silent.discard(event.member_id)

    def leave(self, m, t):
        return m.machine.leave(t)

    def settled(self):
        coordinator = self.coordinator
        return coordinator.group_state(self.h.group_id) in _SETTLED

    def steady(self, m):
        return m.machine.state is _STEADY

    def all_steady(self):
        for m in self.members.values():
            machine = m.machine
            if machine.state is not _STEADY:
                return False
        coordinator = self.coordinator
        return not self.members or coordinator.group_state(self.h.group_id) in _SETTLED
