"""A sans-IO loop for the consumer protocol: ConsumerProtocolMember clients against a ConsumerGroupCoordinator
on an injected clock, every request answered in the same step, the protocol's guarantees checked after every
response.

Guarantees checked (``check``):
* clients' side: no (topic, partition) is held by two clients at once, where a client holds a partition from
  its PartitionsAssigned event until its PartitionsRevoked / PartitionsLost event;
* coordinator's side: no member's epoch is ahead of the group's target epoch, the partition -> epoch map
  holds exactly the members' assigned and pending partitions at their epochs, and no partition is in two
  members' sets.
"""

from kwire.group import (
    ConsumerGroupCoordinator,
    ConsumerProtocolMember,
    MemberFailed,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Send,
)


def topic_ids(names):
    """Stable 16-byte ids for test topic names."""
    return {name: (i + 1).to_bytes(16, "big") for i, name in enumerate(sorted(names))}


class ConsumerLoop:
    def __init__(self, topics, config=None, group_id="g"):
        """``topics``: ``{name: partitions}``."""
        self.ids = topic_ids(topics)
        self.coordinator = ConsumerGroupCoordinator(
            config, topics={n: (self.ids[n], p) for n, p in topics.items()},
            member_id_factory=self._new_id)
        self.group_id = group_id
        self.members = {}      # client name -> ConsumerProtocolMember
        self.held = {}         # (topic, partition) -> client name
        self.events = []       # (client name, event), in order
        self.now = 0
        self._ids = 0

    def _new_id(self):
        self._ids += 1
        return f"member-{self._ids:04d}"

    def add(self, name, topics, **kwargs):
        names = {tid: n for n, tid in self.ids.items()}
        member = ConsumerProtocolMember(self.group_id, topics, topic_names=names, **kwargs)
        self.members[name] = member
        return member

    def crash(self, name):
        """The client stops without a word: its partitions leave the clients' view; the coordinator finds out
        at the session timeout."""
        self.members.pop(name)
        for tp, owner in list(self.held.items()):
            if owner == name:
                del self.held[tp]

    def set_topics(self, topics):
        for n in topics:
            if n not in self.ids:
                self.ids[n] = (len(self.ids) + 1).to_bytes(16, "big")
        names = {tid: n for n, tid in self.ids.items()}
        for member in self.members.values():
            member.set_topic_names(names)
        return self.coordinator.set_topics({n: (self.ids[n], p) for n, p in topics.items()})

    def handle(self, name, outputs, lose=False):
        """Deliver ``outputs`` of client ``name``: requests are answered at once (with ``lose``, the first answer
        is processed by the coordinator but lost on its way back, and the client sees a failed request)."""
        member = self.members[name]
        queue = list(outputs)
        while queue:
            out = queue.pop(0)
            if isinstance(out, Send):
                response = self.coordinator.heartbeat(out.request, out.version, self.now, client_id=name)
                self.check()
                if lose and out.request.member_epoch >= 0:
                    lose = False
                    queue.extend(member.request_failed(out.token, self.now))
                else:
                    queue.extend(member.receive(out.token, response, self.now))
                continue
            self.events.append((name, out))
            if isinstance(out, MemberFailed):
                # The application gives up on a fatal error (an instance id still in use, ...): the client is gone.
                self.members.pop(name, None)
            if isinstance(out, PartitionsAssigned):
                for tp in out.partitions:
                    other = self.held.setdefault(tp, name)
                    assert other == name, f"{tp} assigned to {name} while {other} holds it"
            elif isinstance(out, (PartitionsRevoked, PartitionsLost)):
                for tp in out.partitions:
                    assert self.held.get(tp) == name, f"{name} gives up {tp} it does not hold"
                    del self.held[tp]

    def step(self, ms=100):
        """Advance the clock by ``ms``, fire the coordinator's timers, poll every client once."""
        self.now += ms
        self.coordinator.tick(self.now)
        self.check()
        for name in list(self.members):
            if name in self.members:
                self.handle(name, self.members[name].poll(self.now))

    def run(self, until, max_ms=120_000, ms=100):
        start = self.now
        while not until():
            assert self.now - start < max_ms, f"not reached in {max_ms} ms: {self.describe()}"
            self.step(ms)

    def group(self):
        return self.coordinator.group(self.group_id)

    def stable(self):
        group = self.group()
        if group is None or group.state().value != "Stable":
            return False
        return all(m.state.value == "STABLE" and m.assignment == self.target_of(m) for m in self.members.values())

    def settled(self):
        """Stable, and the coordinator knows exactly the clients alive with the subscriptions they have now."""
        if not self.stable():
            return False
        members = self.group().members
        return (members.keys() == {m.member_id for m in self.members.values()}
                and all(members[m.member_id].subscribed_topic_names == frozenset(m.subscription)
                        for m in self.members.values()))

    def target_of(self, member):
        group = self.group()
        target = group.target_of(member.member_id)
        return frozenset((t, p) for t, ps in target.items() for p in ps)

    def describe(self):
        group = self.group()
        return {"group": None if group is None else (group.state(), group.group_epoch, group.target_epoch,
                                                     list(group.members.values())),
                "clients": {n: (m.state.value, m.member_epoch, len(m.assignment)) for n, m in self.members.items()}}

    def check(self):
        group = self.group()
        if group is None:
            return
        seen = {}
        for member in group.members.values():
            assert member.member_epoch <= group.target_epoch, \
                f"{member.member_id} epoch {member.member_epoch} ahead of target {group.target_epoch}"
            for part in (member.assigned, member.pending):
                for tid, ps in part.items():
                    for p in ps:
                        assert (tid, p) not in seen, f"{tid.hex()}-{p} held by {seen[(tid, p)]} and {member.member_id}"
                        seen[(tid, p)] = member.member_id
                        assert group.partition_epochs[tid][p] == member.member_epoch
        assert sum(len(v) for v in group.partition_epochs.values()) == len(seen)
