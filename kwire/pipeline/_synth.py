"""``kwire synth``: large, deterministic synthetic captures of consumer groups.

Each group is simulated the way a Kafka coordinator and its Java-style
clients behave, and every frame is encoded by kwire:

* a new member finds its coordinator (FindCoordinator on a bootstrap
  connection), fetches Metadata for the topics it subscribes to (on the same
  connection), joins with an empty member id and, from JoinGroup v4 on, is
  told MEMBER_ID_REQUIRED (79) with its id, then joins again; a member that
  changes its subscription fetches Metadata for it before it rejoins;
* a rebalance is noticed by the other members at their next heartbeat
  (REBALANCE_IN_PROGRESS, 27), after which they rejoin; the leader runs the
  group's assignor (kwire's, on the members' real Subscriptions, with owned
  partitions / sticky userData carried as clients carry them) and every
  member syncs;
* members leave (LeaveGroup), crash (heartbeats stop; the coordinator expels
  them after the session timeout), come back as zombies (Heartbeat answered
  UNKNOWN_MEMBER_ID, 25) and change their subscription; a heartbeat that
  races a new generation is answered ILLEGAL_GENERATION (22);
* cooperative-sticky groups run the follow-up rebalance after revocations.

The same seed gives byte-identical captures.  :class:`GroupSim` is also the
scripting API the tests use to build scenarios with known rebalances.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import kwire
from kwire import codec
from kwire.codec import ErrorCode
from kwire.pipeline._capture import BROKER_TO_CLIENT, CLIENT_TO_BROKER
from kwire.pipeline._synth_stream import MS, SECOND, Frames, SortedRuns, corrupt_frames, stream_groups

__all__ = ["GroupSim", "Frames", "SortedRuns", "MS", "SECOND", "simulate_group", "synth", "topic_pool"]


@dataclass(frozen=True)
class Profile:
    """API versions one kind of client speaks."""

    name: str
    find_coordinator: int
    join: int
    sync: int
    heartbeat: int
    leave: int
    subscription: int
    metadata: int


PROFILES = {
    # A Java 3.x consumer against a 3.x broker.
    "java3": Profile("java3", 4, 9, 5, 4, 5, 3, 12),
    # An older client: no member-id round trip, no static membership fields.
    "legacy": Profile("legacy", 1, 2, 1, 1, 1, 0, 1),
    # librdkafka-like: JoinGroup v5, classic headers.
    "rdkafka": Profile("rdkafka", 2, 5, 3, 3, 3, 1, 4),
}


@dataclass
class Member:
    member_id: str
    client_id: str
    instance_id: Optional[str]
    topics: List[str]
    conn: int
    addr: str
    corr: int = 0
    owned: List[Tuple[str, int]] = field(default_factory=list)
    generation: int = -1
    alive: bool = True
    #: Whether the coordinator has told the member its id yet.
    id_known: bool = False


class GroupSim:
    """One consumer group and its coordinator, writing frames into ``out``."""

    def __init__(self, out: Frames, group_id: str, strategy: str, partitions: Dict[str, int], *,
                 profile="java3", rng=None, session_timeout_ms=45000, heartbeat_interval_ms=3000,
                 broker="broker-1:9092", static=False):
        self.out = out
        self.group_id = group_id
        self.strategy = strategy
        self.partitions = dict(partitions)
        self.profile = PROFILES[profile] if isinstance(profile, str) else profile
        self.rng = rng or random.Random(0)
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.broker = broker
        self.static = static and self.profile.join >= 5
        self.members: Dict[str, Member] = {}  # in join order
        self.generation = 0
        self.leader: Optional[str] = None
        self._client_seq = 0
        # Metadata's timing draws from its own generator, so that adding it
        # left every other draw (member ids, timings, choices) as it was.
        self._metadata_rng = random.Random(f"metadata/{group_id}")
        self._metadata_responses: Dict[tuple, object] = {}
        self.last_heartbeat: Dict[str, int] = {}
        #: Ground truth, one dict per generation: what the analysis should find.
        self.history: List[dict] = []

    # -- frames ------------------------------------------------------------------------------

    def _request(self, m: Member, ts, msg, version, conn=None):
        corr = m.corr
        m.corr += 1
        frame = kwire.encode_request(msg, version, correlation_id=corr, client_id=m.client_id)
        self.out.add(ts, m.conn if conn is None else conn, CLIENT_TO_BROKER, frame, m.addr, self.broker)
        return corr

    def _response(self, m: Member, ts, msg, version, corr, conn=None):
        frame = kwire.encode_response(msg, version, correlation_id=corr)
        self.out.add(ts, m.conn if conn is None else conn, BROKER_TO_CLIENT, frame, m.addr, self.broker)

    def latency(self, lo_ms=0.2, hi_ms=3.0):
        """A network or processing delay in microseconds, uniform between ``lo_ms`` and ``hi_ms``."""
        return int(self.rng.uniform(lo_ms, hi_ms) * MS)

    # -- members -----------------------------------------------------------------------------

    def _new_identity(self):
        self._client_seq += 1
        client_id = f"consumer-{self.group_id}-{self._client_seq}"
        uid = "%08x-%04x-%04x" % (self.rng.getrandbits(32), self.rng.getrandbits(16), self.rng.getrandbits(16))
        addr = f"10.{self.rng.randrange(256)}.{self.rng.randrange(256)}.{self.rng.randrange(1, 255)}:" \
               f"{self.rng.randrange(32768, 61000)}"
        return client_id, f"{client_id}-{uid}", addr

    def connect(self, ts, topics) -> Tuple[Member, int]:
        """A new consumer process: FindCoordinator, then the first JoinGroup
        (and MEMBER_ID_REQUIRED where the version has it).  Returns the
        member (not yet in the group) and the time it is ready to join."""
        client_id, member_id, addr = self._new_identity()
        instance = f"{client_id}-static" if self.static else None
        p = self.profile
        boot = Member("", client_id, instance, list(topics), self.out.new_conn(), addr)
        if p.find_coordinator >= 4:
            fc = kwire.FindCoordinatorRequest(key_type=0, coordinator_keys=[self.group_id])
            fr = kwire.FindCoordinatorResponse(coordinators=[kwire.Coordinator(
                key=self.group_id, node_id=1, host=self.broker.split(":")[0], port=9092)])
        else:
            fc = kwire.FindCoordinatorRequest(key=self.group_id)
            fr = kwire.FindCoordinatorResponse(node_id=1, host=self.broker.split(":")[0], port=9092)
        corr = self._request(boot, ts, fc, p.find_coordinator)
        ts += self.latency()
        self._response(boot, ts, fr, p.find_coordinator, corr)
        ready = ts + self.latency(1, 5)
        self.fetch_metadata(boot, ts, ready)
        # The member's id is chosen now but only told to it by the
        # coordinator: in MEMBER_ID_REQUIRED (v4+, dynamic members) or in
        # its first successful JoinGroup response; until then it joins with "".
        m = Member(member_id, client_id, instance, list(topics), self.out.new_conn(), addr, corr=boot.corr)
        ts = ready
        if p.join >= 4 and instance is None:
            corr = self._request(m, ts, self._join_request(m), p.join)
            ts += self.latency()
            self._response(m, ts, kwire.JoinGroupResponse(
                error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id, generation_id=-1,
                protocol_name=_nullable_name(p)), p.join, corr)
            m.id_known = True
            ts += self.latency()
        return m, ts

    def fetch_metadata(self, m: Member, t_from, t_to=None):
        """``m``'s Metadata request for its topics and the response, both
        between ``t_from`` and ``t_to`` (by default 1-5 ms later) on ``m``'s
        connection.  Returns ``t_to``."""
        if t_to is None:
            t_to = t_from + int(self._metadata_rng.uniform(1, 5) * MS)
        a, b = sorted(self._metadata_rng.uniform(0.05, 0.95) for _ in range(2))
        version = self.profile.metadata
        req = codec.MetadataRequest(topics=[codec.MetadataRequestTopic(name=t) for t in sorted(m.topics)])
        corr = self._request(m, t_from + int((t_to - t_from) * a), req, version)
        self._response(m, t_from + int((t_to - t_from) * b), self._metadata_response(m.topics), version, corr)
        return t_to

    def _metadata_response(self, topics):
        """The cluster's answer: three brokers, each topic's partitions
        replicated three times (UNKNOWN_TOPIC_OR_PARTITION, 3, for a topic the
        cluster does not have).  Built once per set of topics and sizes."""
        key = tuple((t, self.partitions.get(t)) for t in sorted(topics))
        resp = self._metadata_responses.get(key)
        if resp is None:
            brokers = [codec.MetadataResponseBroker(node_id=n, host=f"broker-{n}", port=9092) for n in (1, 2, 3)]
            resp = codec.MetadataResponse(brokers=brokers, controller_id=1, topics=[codec.MetadataResponseTopic(
                error_code=ErrorCode.NONE if n is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=t,
                partitions=[codec.MetadataResponsePartition(
                    error_code=ErrorCode.NONE, partition_index=i, leader_id=i % 3 + 1, replica_nodes=_replicas(i),
                    isr_nodes=_replicas(i)) for i in range(n or 0)]) for t, n in key])
            self._metadata_responses[key] = resp
        return resp

    def _subscription(self, m: Member) -> bytes:
        p = self.profile
        user_data = None
        owned = []
        if self.strategy == "cooperative-sticky":
            # Java always sends this; it is the only generation a v1 Subscription has.
            user_data = kwire.CooperativeStickyUserData(generation=m.generation).encode(0)
        if self.strategy == "sticky":
            user_data = kwire.StickyAssignorUserData(
                previous_assignment=_topic_groups(kwire.StickyTopicAssignment, m.owned),
                generation=m.generation).encode(1)
        if p.subscription >= 1:
            owned = _topic_groups(kwire.SubscriptionTopicPartition, m.owned)
        sub = kwire.Subscription(topics=sorted(m.topics), user_data=user_data, owned_partitions=owned,
                                 generation_id=m.generation if p.subscription >= 2 else -1)
        return sub.encode(p.subscription)

    def _join_request(self, m: Member):
        p = self.profile
        kw = dict(group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
                  member_id=m.member_id if m.id_known else "", protocol_type="consumer",
                  protocols=[kwire.JoinGroupRequestProtocol(name=self.strategy, metadata=self._subscription(m))])
        if p.join >= 1:
            kw["rebalance_timeout_ms"] = 300000
        if p.join >= 5:
            kw["group_instance_id"] = m.instance_id
        return kwire.JoinGroupRequest(**kw)

    # -- the protocol ------------------------------------------------------------------------

    def heartbeats(self, t_from, t_to, error_code=ErrorCode.NONE, members=None):
        """Every live member heartbeats every interval in ``[t_from, t_to)``."""
        iv = self.heartbeat_interval_ms * MS
        for m in list(members or self.members.values()):
            if not m.alive:
                continue
            t = t_from + self.rng.randrange(iv)
            while t < t_to:
                self._heartbeat(m, t, self.generation, error_code)
                t += iv + self.rng.randrange(-iv // 20, iv // 20 + 1)

    def _heartbeat(self, m, t, generation, error_code):
        p = self.profile
        kw = dict(group_id=self.group_id, generation_id=generation, member_id=m.member_id)
        if p.heartbeat >= 3:
            kw["group_instance_id"] = m.instance_id
        corr = self._request(m, t, kwire.HeartbeatRequest(**kw), p.heartbeat)
        t2 = t + self.latency()
        self._response(m, t2, kwire.HeartbeatResponse(error_code=error_code), p.heartbeat, corr)
        self.last_heartbeat[m.member_id] = t
        return t2

    def rebalance(self, t_trigger, joiners=(), early=(), illegal_generation=False):
        """One generation: ``joiners`` (new members, ready at their times)
        and ``early`` members (already rejoining at ``t_trigger``) join at
        once; the rest notice at their next heartbeat (27) and rejoin.
        Returns the completion time (last SyncGroup response)."""
        p = self.profile
        join_at: Dict[str, int] = {}
        for m, t in joiners:
            self.members[m.member_id] = m
            join_at[m.member_id] = t
        for m in early:
            join_at[m.member_id] = t_trigger
        iv = self.heartbeat_interval_ms * MS
        for m in self.members.values():
            if m.member_id in join_at or not m.alive:
                continue
            t = t_trigger + self.rng.randrange(iv)
            join_at[m.member_id] = (self._heartbeat(m, t, self.generation, ErrorCode.REBALANCE_IN_PROGRESS)
                                    + self.latency())
        live = [m for m in self.members.values() if m.alive]
        corrs = {}
        for m in live:
            corrs[m.member_id] = self._request(m, join_at[m.member_id], self._join_request(m), p.join)
        self.generation += 1
        g = self.generation
        if self.leader not in self.members or not self.members[self.leader].alive:
            self.leader = live[0].member_id
        t_joined = max(join_at.values()) + self.latency(1, 10)
        members_meta = [kwire.JoinGroupResponseMember(
            member_id=m.member_id, metadata=self._subscription(m),
            **({"group_instance_id": m.instance_id} if p.join >= 5 else {})) for m in live]
        leader_response = None
        for m in live:
            kw = dict(generation_id=g, protocol_name=self.strategy, leader=self.leader, member_id=m.member_id,
                      members=members_meta if m.member_id == self.leader else [])
            if p.join >= 7:
                kw["protocol_type"] = "consumer"
            resp = kwire.JoinGroupResponse(**kw)
            if m.member_id == self.leader:
                leader_response = resp
            self._response(m, t_joined + self.latency(0, 1), resp, p.join, corrs[m.member_id])
            m.id_known = True
        racer = None
        if illegal_generation and len(live) > 1:
            # A heartbeat sent with the old generation races the new one.
            racer = self.rng.choice([m for m in live if m.member_id != self.leader])
            self._heartbeat(racer, t_joined + self.latency(0.5, 2), g - 1, ErrorCode.ILLEGAL_GENERATION)
        known = {t: n for t, n in self.partitions.items() if any(t in m.topics for m in live)}
        assignments = kwire.leader_assignments(self.strategy, leader_response, known)
        by_member = {a.member_id: a.assignment for a in assignments}
        sync_at = {m.member_id: t_joined + self.latency(1, 20) for m in live}
        sync_at[self.leader] += self.latency(1, 30)  # the leader assigns first
        corrs = {}
        for m in live:
            kw = dict(group_id=self.group_id, generation_id=g, member_id=m.member_id,
                      assignments=[a for a in assignments] if m.member_id == self.leader else [])
            if p.sync >= 3:
                kw["group_instance_id"] = m.instance_id
            if p.sync >= 5:
                kw["protocol_type"] = "consumer"
                kw["protocol_name"] = self.strategy
            corrs[m.member_id] = self._request(m, sync_at[m.member_id], kwire.SyncGroupRequest(**kw), p.sync)
        t_done = max(sync_at.values()) + self.latency(0.5, 2)
        last = t_done
        for m in live:
            kw = dict(assignment=by_member[m.member_id])
            if p.sync >= 5:
                kw["protocol_type"] = "consumer"
                kw["protocol_name"] = self.strategy
            t = t_done + self.latency(0, 1)
            last = max(last, t)
            self._response(m, t, kwire.SyncGroupResponse(**kw), p.sync, corrs[m.member_id])
            a = kwire.Assignment.decode(by_member[m.member_id])
            m.owned = [(tp.topic, q) for tp in a.assigned_partitions for q in tp.partitions]
            m.generation = g
        self.history.append({"generation": g, "start": min(join_at[m.member_id] for m in live), "end": last,
                             "members": [m.member_id for m in live], "leader": self.leader,
                             "assignment": {m.member_id: list(m.owned) for m in live}})
        return last

    def needs_followup(self):
        """Cooperative-sticky withholds revoked partitions for one round."""
        if self.strategy != "cooperative-sticky":
            return False
        live = [m for m in self.members.values() if m.alive]
        owned = sum(len(m.owned) for m in live)
        total = sum(n for t, n in self.partitions.items() if any(t in m.topics for m in live))
        return owned < total

    def leave(self, m: Member, t):
        p = self.profile
        if p.leave >= 3:
            req = kwire.LeaveGroupRequest(group_id=self.group_id, members=[
                kwire.MemberIdentity(member_id=m.member_id, group_instance_id=m.instance_id)])
            resp = kwire.LeaveGroupResponse(members=[kwire.MemberResponse(
                member_id=m.member_id, group_instance_id=m.instance_id, error_code=ErrorCode.NONE)])
        else:
            req = kwire.LeaveGroupRequest(group_id=self.group_id, member_id=m.member_id)
            resp = kwire.LeaveGroupResponse()
        corr = self._request(m, t, req, p.leave)
        self._response(m, t + self.latency(), resp, p.leave, corr)
        del self.members[m.member_id]

    def crash(self, m: Member):
        m.alive = False

    def expel(self, m: Member):
        self.members.pop(m.member_id, None)

    def zombie_heartbeat(self, m: Member, t):
        """A crashed member wakes up and heartbeats with its old identity."""
        return self._heartbeat(m, t, m.generation, ErrorCode.UNKNOWN_MEMBER_ID)


def _replicas(partition):
    return [(partition + k) % 3 + 1 for k in range(3)]


def _topic_groups(cls, owned):
    groups: Dict[str, List[int]] = {}
    for t, p in owned:
        groups.setdefault(t, []).append(p)
    return [cls(topic=t, partitions=ps) for t, ps in groups.items()]


def _nullable_name(profile):
    return None if profile.join >= 7 else ""


STRATEGY_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def simulate_group(out: Frames, index: int, seed: int, t0: int, duration_s: float, topic_pool: Dict[str, int],
                   heartbeat_interval_ms=3000, corrupt_rate=0.0):
    rng = random.Random(seed * 1_000_003 + index)
    strategy = rng.choice(STRATEGY_NAMES)
    # Cooperative rebalancing needs owned partitions in the Subscription (v1+).
    profile = rng.choice(["java3", "java3", "rdkafka"] + ([] if strategy == "cooperative-sticky" else ["legacy"]))
    names = sorted(topic_pool)
    sim = GroupSim(out, f"group-{index:05d}", strategy, topic_pool, profile=profile, rng=rng,
                   session_timeout_ms=rng.choice([10000, 30000, 45000]), heartbeat_interval_ms=heartbeat_interval_ms,
                   broker=f"broker-{index % 3 + 1}:9092", static=rng.random() < 0.15)
    base_topics = rng.sample(names, rng.randint(1, 3))
    t = t0
    joiners = []
    for _ in range(rng.randint(1, 5)):
        m, ready = sim.connect(t + rng.randrange(2 * SECOND), base_topics)
        joiners.append((m, ready))
    t = sim.rebalance(max(r for _, r in joiners), joiners=joiners)
    end = t0 + int(duration_s * SECOND)
    zombie = None
    while True:
        while sim.needs_followup():
            t = sim.rebalance(t + sim.latency(1, 5), early=[m for m in sim.members.values() if m.alive])
        gap = int(rng.uniform(0.1, 0.4) * duration_s * SECOND)
        if t + gap >= end:
            sim.heartbeats(t, end)
            break
        sim.heartbeats(t, t + gap)
        t += gap
        live = [m for m in sim.members.values() if m.alive]
        kind = rng.choice(["join", "join", "leave", "crash", "subscription"]) if len(live) > 1 else "join"
        if zombie is not None:
            # The expelled member wakes up, is refused, and joins afresh.
            sim.zombie_heartbeat(zombie, t)
            zombie = None
            kind = "join"
        if kind == "join":
            m, ready = sim.connect(t, rng.choice([base_topics, base_topics, rng.sample(names, rng.randint(1, 3))]))
            t = sim.rebalance(ready, joiners=[(m, ready)], illegal_generation=rng.random() < 0.2)
        elif kind == "leave":
            sim.leave(rng.choice(live), t)
            t = sim.rebalance(t + sim.latency(), illegal_generation=rng.random() < 0.2)
        elif kind == "crash":
            victim = rng.choice(live)
            sim.crash(victim)
            expel_at = t + sim.session_timeout_ms * MS
            sim.heartbeats(t, expel_at)
            sim.expel(victim)
            t = sim.rebalance(expel_at)
            if rng.random() < 0.5:
                zombie = victim
        else:
            m = rng.choice(live)
            m.topics = rng.sample(names, rng.randint(1, 3))
            t = sim.rebalance(sim.fetch_metadata(m, t), early=[m])
    if corrupt_rate:
        corrupt_frames(out, rng, corrupt_rate)
    return sim


def topic_pool(seed, n_topics=40):
    rng = random.Random(seed)
    return {f"topic-{i:03d}": rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 24, 32]) for i in range(n_topics)}


def synth(path, groups=1000, seed=0, duration_s=600.0, heartbeat_interval_ms=3000, corrupt_rate=0.0,
          start_us=1_767_225_600 * SECOND, chunk_groups=250, batch_rows=8192):
    """Write a capture of ``groups`` classic groups to ``path``; returns the frame count.  Streams as
    :func:`kwire.pipeline._synth_stream.stream_groups` says: memory depends on ``chunk_groups`` and
    ``batch_rows``, not on ``groups``, and the capture is the same whatever they are."""
    pool = topic_pool(seed)

    def simulate(out, i, t0):
        simulate_group(out, i, seed, t0, duration_s, pool, heartbeat_interval_ms)

    return stream_groups(path, groups, simulate, seed=seed, duration_s=duration_s, corrupt_rate=corrupt_rate,
                         start_us=start_us, chunk_groups=chunk_groups, batch_rows=batch_rows)
