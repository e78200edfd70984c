"""One consumer group of either protocol, simulated through kwire's own state machines on a simulated clock.

:class:`ConsumerGroupSim` is a small discrete-event network.  Its broker is kwire's sans-IO
:class:`kwire.group.GroupCoordinator` (KIP-848 consumer groups, classic groups, and classic members inside a
consumer group); its clients are kwire's :class:`kwire.group.ConsumerProtocolMember` (``group.protocol=consumer``)
and :class:`kwire.group.ConsumerMember` (a classic consumer).  Every request a client's state machine sends is
encoded into a frame when it leaves the client, reaches the coordinator after a network delay, and every answer
the coordinator gives is encoded when it reaches the client.  Nothing in a frame is invented here: epochs,
assignments, heartbeat intervals and error codes are the coordinator's.  What the simulation adds is what
happens around the protocol: when processes start, stop, crash, pause, or take seconds in a revocation callback.

Times are microseconds (the capture's unit); the state machines run on milliseconds (``t // 1000``).  Events
at the same time run in the order they were scheduled, so a seed gives the same frames every run.

``truth`` records what the analysis should find, from the coordinator's own state after every request that may
change it: the group's epochs, each target assignment, each member's epoch and assigned partitions over time,
joins, leaves, fencing and every error answered.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import random
from typing import Dict, List

import kwire
from kwire import codec
from kwire.codec import ApiKey, ErrorCode
from kwire.group import (
    ConsumerMember,
    ConsumerProtocolMember,
    CoordinatorLost,
    GroupCoordinator,
    MemberFailed,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Send,
)
from kwire.pipeline._capture import BROKER_TO_CLIENT, CLIENT_TO_BROKER
from kwire.pipeline._synth_stream import MS, Frames

__all__ = ["ConsumerGroupSim", "Client", "PROFILES848", "topic_id"]

# ConsumerGroupHeartbeat versions as the clients send them: the Java client builds v0 (it does not enable
# unstable versions; ConsumerGroupHeartbeatRequest.Builder) and lets the coordinator name it; librdkafka
# generates its member id itself (KIP-1082) and sends the newest version it knows.
PROFILES848 = {
    "java": {"heartbeat": 0, "client_ids": False, "find_coordinator": 4, "metadata": 12},
    "rdkafka": {"heartbeat": 1, "client_ids": True, "find_coordinator": 4, "metadata": 12},
}
# Classic clients inside mixed groups: a Java 3.x consumer, and librdkafka's classic versions.
CLASSIC_VERSIONS = {
    "java": None,   # kwire.group.DEFAULT_VERSIONS: FindCoordinator v4, JoinGroup v9, SyncGroup v5, Heartbeat v4
    "rdkafka": {ApiKey.FIND_COORDINATOR: 2, ApiKey.JOIN_GROUP: 5, ApiKey.SYNC_GROUP: 3, ApiKey.HEARTBEAT: 3,
                ApiKey.LEAVE_GROUP: 3},
}
DESCRIBE_VERSION = 0
_C2B, _B2C = CLIENT_TO_BROKER, BROKER_TO_CLIENT


def topic_id(name, seed=0):
    """A topic's 16-byte id, the same for every group of one capture (one cluster)."""
    return hashlib.blake2b(f"{seed}/{name}".encode(), digest_size=16).digest()


def uuid_text(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class Client:
    """One consumer process: its state machine, its identity and connections, and what the simulation does to
    it (a crash, a pause, a slow revocation callback)."""

    __slots__ = ("name", "protocol", "machine", "client_id", "addr", "host", "conn", "boot_conn", "corr",
                 "alive", "paused_until", "busy_until", "poll_at", "revoke_delay_us", "topics", "instance_id",
                 "rebalance_timeout_ms", "lossy_until", "gone")

    def __init__(self, name, protocol, machine, client_id, addr, conn, boot_conn, topics, instance_id):
        self.name = name
        self.protocol = protocol          # "consumer" or "classic"
        self.machine = machine
        self.client_id = client_id
        self.addr = addr
        self.host = "/" + addr.split(":")[0]
        self.conn = conn
        self.boot_conn = boot_conn
        self.corr = 0
        self.alive = True
        self.paused_until = 0             # µs: a stopped process (GC pause, partition) does nothing until then
        self.busy_until = 0               # µs: the application thread is inside a rebalance callback
        self.poll_at = None
        self.revoke_delay_us = 0          # a slow revoker's time inside onPartitionsRevoked
        self.topics = list(topics)
        self.instance_id = instance_id
        self.rebalance_timeout_ms = None
        self.lossy_until = 0              # µs: until then half the answers are lost with the connection
        self.gone = False                 # left or crashed for good: never polled again

    @property
    def member_id(self):
        return self.machine.member_id

    def next_corr(self):
        c = self.corr
        self.corr += 1
        return c


class ConsumerGroupSim:
    """One group and its coordinator.  Clients are added with :meth:`start` at a time; :meth:`run_until` moves
    the clock.  ``partitions`` is the cluster's ``{topic: partitions}``; ``profile`` "java" or "rdkafka"."""

    def __init__(self, out: Frames, group_id: str, partitions: Dict[str, int], *, rng=None, profile="java",
                 session_timeout_ms=45000, heartbeat_interval_ms=5000, rebalance_timeout_ms=300_000,
                 broker="broker-1:9092", static=False, server_assignor=None, classic_assignors=("range",),
                 describe_every_ms=0, restart_after_fatal_ms=10_000, seed=0, t0=0):
        self.out = out
        self.group_id = group_id
        self.partitions = dict(partitions)
        self.rng = rng or random.Random(0)
        self.profile = profile
        self.versions = PROFILES848[profile]
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.broker = broker
        self.static = static
        self.server_assignor = server_assignor
        self.classic_assignors = tuple(classic_assignors)
        self.restart_after_fatal_ms = restart_after_fatal_ms
        self.ids = {t: topic_id(t, seed) for t in self.partitions}
        self.names = {tid: t for t, tid in self.ids.items()}
        config = {
            "group.consumer.session.timeout.ms": session_timeout_ms,
            "group.consumer.min.session.timeout.ms": min(session_timeout_ms, 45000),
            "group.consumer.max.session.timeout.ms": max(session_timeout_ms, 60000),
            "group.consumer.heartbeat.interval.ms": heartbeat_interval_ms,
            "group.consumer.min.heartbeat.interval.ms": min(heartbeat_interval_ms, 5000),
            "group.consumer.max.heartbeat.interval.ms": max(heartbeat_interval_ms, 15000),
            # Kafka 4.0's coordinator: the target is computed in the heartbeat that sees the epoch ahead of it.
            "group.consumer.assignment.interval.ms": 0,
        }
        self.coordinator = GroupCoordinator(
            config=config, topics={t: (self.ids[t], n) for t, n in self.partitions.items()},
            member_id_factory=self._classic_member_id, consumer_member_id_factory=self._consumer_member_id,
            min_session_timeout_ms=min(6000, session_timeout_ms))
        self.now = t0
        self._queue: list = []
        self._seq = 0
        self._tick_at = None
        self._clients: List[Client] = []
        self._client_seq = 0
        self.describe_every_ms = describe_every_ms
        self._admin_conn = None
        self._admin_corr = 0
        self._metadata_responses: dict = {}
        self._seen: dict = {}              # member id -> (epoch, assigned) last recorded
        self._last_group = None            # (type, group epoch, target epoch)
        self._last_target = None
        #: Ground truth: what the coordinator did, in time order.
        self.truth = {"group": [], "targets": [], "members": {}, "events": [], "errors": []}
        if describe_every_ms:
            self.at(t0 + self.rng.randrange(describe_every_ms * MS), self._describe)

    # -- the clock ----------------------------------------------------------------------------------

    def at(self, t, fn, *args):
        self._seq += 1
        heapq.heappush(self._queue, (t, self._seq, fn, args))

    def run_until(self, t_end):
        """Run every event up to and including ``t_end`` (µs); the clock then reads ``t_end``."""
        q = self._queue
        while q and q[0][0] <= t_end:
            t, _, fn, args = heapq.heappop(q)
            self.now = t
            fn(*args)
        self.now = max(self.now, t_end)

    def latency(self, lo_ms=0.2, hi_ms=3.0):
        return int(self.rng.uniform(lo_ms, hi_ms) * MS)

    def _arm_tick(self):
        d = self.coordinator.next_deadline()
        if d is None:
            return
        t = max(d * MS, self.now)
        if self._tick_at is None or t < self._tick_at or self._tick_at < self.now:
            self._tick_at = t
            self.at(t, self._tick, t)

    def _tick(self, t):
        if self._tick_at != t:
            return
        self._tick_at = None
        self._replies(self.coordinator.tick(t // MS))
        self._observe()
        self._arm_tick()

    # -- identities ---------------------------------------------------------------------------------

    def _uuid(self):
        while True:
            text = uuid_text(self.rng.getrandbits(128).to_bytes(16, "big"))
            if not text.startswith("-"):
                return text

    def _consumer_member_id(self):
        return self._uuid()

    def _classic_member_id(self, prefix):
        h = "%032x" % self.rng.getrandbits(128)
        return f"{prefix}-{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"

    def _identity(self):
        self._client_seq += 1
        client_id = f"consumer-{self.group_id}-{self._client_seq}"
        addr = f"10.{self.rng.randrange(256)}.{self.rng.randrange(256)}.{self.rng.randrange(1, 255)}:" \
               f"{self.rng.randrange(32768, 61000)}"
        return client_id, addr

    # -- clients ------------------------------------------------------------------------------------

    def start(self, t, topics, protocol="consumer", instance_id=None, revoke_delay_ms=0, rebalance_timeout_ms=None):
        """A consumer process starts at ``t``: FindCoordinator and Metadata on a bootstrap connection, then the
        group protocol on a connection to the coordinator.  Returns the :class:`Client`."""
        client_id, addr = self._identity()
        if instance_id is None and self.static:
            instance_id = f"{client_id}-static"
        timeout = rebalance_timeout_ms or self.rebalance_timeout_ms
        if protocol == "consumer":
            # librdkafka's own ids are a random Uuid in standard base64 ('+', '/'), not Kafka's URL-safe form.
            member_id = base64.b64encode(self.rng.getrandbits(128).to_bytes(16, "big")).rstrip(b"=").decode() \
                if self.versions["client_ids"] else ""
            machine = ConsumerProtocolMember(self.group_id, (), instance_id=instance_id, rebalance_timeout_ms=timeout,
                                             server_assignor=self.server_assignor, topic_names=self.names,
                                             member_id=member_id)
        else:
            machine = ConsumerMember(self.group_id, topics, assignors=self.classic_assignors, client_id=client_id,
                                     group_instance_id=instance_id, session_timeout_ms=self.session_timeout_ms,
                                     rebalance_timeout_ms=timeout,
                                     heartbeat_interval_ms=min(3000, self.session_timeout_ms // 3),
                                     partitions_per_topic={n: self.partitions[n] for n in topics},
                                     versions=_classic_versions(self.profile), rng=self.rng)
        client = Client(len(self._clients), protocol, machine, client_id, addr, self.out.new_conn(),
                        self.out.new_conn(), topics, instance_id)
        client.revoke_delay_us = revoke_delay_ms * MS
        client.rebalance_timeout_ms = rebalance_timeout_ms
        self._clients.append(client)
        self.at(t, self._boot, client)
        return client

    def _boot(self, client):
        t = self.now
        if client.protocol == "consumer":
            t = self._find_coordinator(client, t, self.versions["find_coordinator"])
        t = self.fetch_metadata(client, t)
        if client.protocol == "consumer":
            client.machine.subscribe(client.topics)
        self.truth["events"].append((t, client.name, "start", client.protocol))
        self.at(t, self._poll, client, t)
        client.poll_at = t

    def _find_coordinator(self, client, t, version):
        if version >= 4:
            req = codec.FindCoordinatorRequest(key_type=0, coordinator_keys=[self.group_id])
            resp = codec.FindCoordinatorResponse(coordinators=[codec.Coordinator(
                key=self.group_id, node_id=1, host=self.broker.split(":")[0], port=9092)])
        else:
            req = codec.FindCoordinatorRequest(key=self.group_id)
            resp = codec.FindCoordinatorResponse(node_id=1, host=self.broker.split(":")[0], port=9092)
        corr = client.next_corr()
        self.out.add(t, client.boot_conn, _C2B, kwire.encode_request(req, version, correlation_id=corr,
                                                                     client_id=client.client_id),
                     client.addr, self.broker)
        t += self.latency()
        self.out.add(t, client.boot_conn, _B2C, kwire.encode_response(resp, version, correlation_id=corr),
                     client.addr, self.broker)
        return t + self.latency(0.1, 1)

    def fetch_metadata(self, client, t):
        """Metadata (v12: topic ids beside the names) for ``client``'s topics on its bootstrap connection, from
        ``t``; returns when the answer is in."""
        version = self.versions["metadata"]
        topics = sorted(client.topics)
        req = codec.MetadataRequest(topics=[codec.MetadataRequestTopic(name=n) for n in topics])
        corr = client.next_corr()
        self.out.add(t, client.boot_conn, _C2B, kwire.encode_request(req, version, correlation_id=corr,
                                                                     client_id=client.client_id),
                     client.addr, self.broker)
        t += self.latency(0.5, 4)
        self.out.add(t, client.boot_conn, _B2C, self._metadata_frame(topics, version, corr), client.addr,
                     self.broker)
        if client.protocol == "classic":
            client.machine.update_metadata({n: self.partitions[n] for n in topics if n in self.partitions})
        return t + self.latency(0.1, 1)

    def _metadata_frame(self, topics, version, corr):
        key = tuple(topics)
        resp = self._metadata_responses.get(key)
        if resp is None:
            brokers = [codec.MetadataResponseBroker(node_id=n, host=f"broker-{n}", port=9092) for n in (1, 2, 3)]
            resp = codec.MetadataResponse(brokers=brokers, controller_id=1, topics=[codec.MetadataResponseTopic(
                error_code=ErrorCode.NONE, name=t, topic_id=self.ids[t], partitions=[
                    codec.MetadataResponsePartition(error_code=ErrorCode.NONE, partition_index=i,
                                                    leader_id=i % 3 + 1, replica_nodes=_replicas(i),
                                                    isr_nodes=_replicas(i)) for i in range(self.partitions[t])])
                for t in topics])
            self._metadata_responses[key] = resp
        return kwire.encode_response(resp, version, correlation_id=corr)

    def live(self, protocol=None) -> List[Client]:
        return [c for c in self._clients if c.alive and not c.gone and (protocol is None or c.protocol == protocol)]

    # -- what happens to processes ------------------------------------------------------------------

    def leave(self, client, t):
        """The application closes the consumer at ``t``: a leave heartbeat (-1, or -2 for a static member), or
        LeaveGroup for a classic member (a static classic member sends none)."""
        self.at(t, self._leave, client)

    def _leave(self, client):
        if client.gone:
            return
        self.truth["events"].append((self.now, client.name, "leave", client.member_id))
        outputs = client.machine.leave(self.now // MS) if client.protocol == "consumer" else \
            client.machine.close(self.now // MS)
        self._outputs(client, outputs)
        client.gone = True

    def crash(self, client, t):
        """The process dies at ``t`` (SIGKILL): nothing more from it; the coordinator fences it after its
        session timeout."""
        self.at(t, self._crash, client)

    def _crash(self, client):
        if client.gone:
            return
        self.truth["events"].append((self.now, client.name, "crash", client.member_id))
        client.alive = False
        client.gone = True

    def pause(self, client, t, for_us):
        """The process stops at ``t`` for ``for_us`` (a long GC pause, a network partition) and then carries on
        where it was; longer than the session timeout, it comes back as a member the coordinator fenced."""
        self.at(t, self._pause, client, t + for_us)

    def _pause(self, client, until):
        if client.gone:
            return
        self.truth["events"].append((self.now, client.name, "pause", until))
        client.paused_until = until
        self.at(until, self._resume, client)

    def _resume(self, client):
        if client.gone:
            return
        self.truth["events"].append((self.now, client.name, "resume", client.member_id))
        client.poll_at = self.now
        self._poll(client, self.now)

    def flaky(self, client, t, for_us):
        """From ``t`` for ``for_us`` the client's connection keeps breaking: half the answers never reach it
        (the coordinator did the work; the client sees a failed request and reconnects)."""
        self.at(t, self._flaky, client, t + for_us)

    def _flaky(self, client, until):
        if not client.gone:
            self.truth["events"].append((self.now, client.name, "flaky", until))
            client.lossy_until = until

    def subscribe(self, client, t, topics):
        """The application changes its subscription at ``t``; the client fetches Metadata for it first."""
        self.at(t, self._subscribe, client, list(topics))

    def _subscribe(self, client, topics):
        if client.gone:
            return
        client.topics = topics
        t = self.fetch_metadata(client, self.now)
        self.truth["events"].append((t, client.name, "subscribe", tuple(sorted(topics))))
        client.machine.subscribe(topics)
        self.at(t, self._poll, client, t)
        client.poll_at = t

    # -- the network --------------------------------------------------------------------------------

    def _poll(self, client, t):
        if client.poll_at != t or client.gone:
            return
        client.poll_at = None
        if self.now < client.paused_until or self.now < client.busy_until:
            return
        outputs = client.machine.poll(self.now // MS)
        self._outputs(client, outputs)
        self._arm_poll(client, idle=not outputs)

    def _arm_poll(self, client, idle=False):
        if client.gone:
            return
        d = client.machine.next_deadline()
        if d is None:
            return
        t = d * MS
        if t <= self.now:
            # Due now; but a poll that just did nothing is not repeated at once (a classic member waiting for
            # FindCoordinator reports its passed session deadline): the application's loop comes back later.
            t = self.now + (_IDLE_POLL if idle else 0)
        else:
            # An application's poll loop comes round within a millisecond or so of the timer.
            t += self.rng.randrange(MS)
        t = max(t, client.paused_until, client.busy_until)
        if client.poll_at is None or t < client.poll_at:
            client.poll_at = t
            self.at(t, self._poll, client, t)

    def _outputs(self, client, outputs):
        for out in outputs:
            kind = type(out)
            if kind is Send:
                self._send(client, out)
            elif kind is MemberFailed:
                # A fatal error: the application gives up, the process exits and its supervisor starts it again.
                self.truth["events"].append((self.now, client.name, "fatal", client.member_id))
                client.gone = True
                if self.restart_after_fatal_ms:
                    self.start(self.now + self.restart_after_fatal_ms * MS, client.topics, client.protocol,
                               client.instance_id, client.revoke_delay_us // MS, client.rebalance_timeout_ms)
            elif kind is CoordinatorLost:
                self.at(self.now + self.latency(5, 50), self._refind, client)
            elif kind in (PartitionsRevoked, PartitionsLost, PartitionsAssigned):
                self.truth["events"].append((self.now, client.name, _EVENT_NAMES[kind], out.partitions))

    def _refind(self, client):
        if client.gone:
            return
        t = self._find_coordinator(client, self.now, self.versions["find_coordinator"])
        self.at(t, self._found, client)

    def _found(self, client):
        if not client.gone:
            self._outputs(client, client.machine.coordinator_found(self.now // MS))
            self._arm_poll(client)

    def _send(self, client, send):
        req, version = send.request, send.version
        if not send.to_coordinator:
            # A classic member's FindCoordinator: answered on the bootstrap connection.
            t = self._find_coordinator(client, self.now, version)
            self.at(t, self._deliver_find, client, send.token)
            return
        if type(req) is codec.ConsumerGroupHeartbeatRequest:
            version = self.versions["heartbeat"]
        corr = client.next_corr()
        t = self.now + self.rng.randrange(20, 400)   # the client's own time to build and write the request
        self.out.add(t, client.conn, _C2B, kwire.encode_request(req, version, correlation_id=corr,
                                                                client_id=client.client_id),
                     client.addr, self.broker)
        self.at(t + self.latency(0.1, 1.5), self._arrive, client, send.token, req, version, corr)

    def _deliver_find(self, client, token):
        if client.gone:
            return
        resp = codec.FindCoordinatorResponse(coordinators=[codec.Coordinator(
            key=self.group_id, node_id=1, host=self.broker.split(":")[0], port=9092)]) \
            if client.machine.versions[ApiKey.FIND_COORDINATOR] >= 4 else \
            codec.FindCoordinatorResponse(node_id=1, host=self.broker.split(":")[0], port=9092)
        self._outputs(client, client.machine.receive(token, resp, self.now // MS))
        self._arm_poll(client)

    def _arrive(self, client, token, req, version, corr):
        replies = self.coordinator.handle((client, token, corr), req, version, self.now // MS,
                                          client_id=client.client_id, client_host=client.host)
        self._replies(replies)
        if type(req) is not codec.ConsumerGroupHeartbeatRequest or _may_change(req, replies):
            self._observe()
        self._arm_tick()

    def _replies(self, replies):
        for reply in replies:
            client, token, corr = reply.handle
            self.at(self.now + self.latency(0.1, 1.5), self._deliver, client, token, reply.response, reply.version,
                    corr)

    def _deliver(self, client, token, response, version, corr):
        if not client.alive:
            return   # the connection died with the process
        self.out.add(self.now, client.conn, _B2C, kwire.encode_response(response, version, correlation_id=corr),
                     client.addr, self.broker)
        if self.now < client.lossy_until and self.rng.random() < 0.5 and not client.gone:
            # Written by the coordinator, lost with the connection: the client reconnects.
            self.truth["events"].append((self.now, client.name, "lost-response", type(response).__name__))
            client.conn = self.out.new_conn()
            self._outputs(client, client.machine.request_failed(token, self.now // MS))
            self._arm_poll(client)
            return
        error = getattr(response, "error_code", 0)
        if error:
            self.truth["errors"].append((self.now, client.name, type(response).__name__, int(error)))
        if client.gone:
            # Left: the leave's answer is read and dropped by the member.
            if client.protocol == "consumer":
                client.machine.receive(token, response, self.now // MS)
            return
        wait = max(client.paused_until, client.busy_until) - self.now
        if client.revoke_delay_us and _revokes(client, response):
            # onPartitionsRevoked runs on the application thread for this long before the ack can go.
            wait = max(wait, client.revoke_delay_us)
            client.busy_until = self.now + wait
            self.truth["events"].append((self.now, client.name, "slow-revoke", wait))
        if wait > 0:
            self.at(self.now + wait, self._receive, client, token, response)
        else:
            self._receive(client, token, response)

    def _receive(self, client, token, response):
        if client.gone:
            return
        self._outputs(client, client.machine.receive(token, response, self.now // MS))
        self._arm_poll(client)

    def _describe(self):
        """An admin client's ConsumerGroupDescribe, on its own connection, every ``describe_every_ms``."""
        if self._admin_conn is None:
            self._admin_conn = self.out.new_conn()
        req = codec.ConsumerGroupDescribeRequest(group_ids=[self.group_id])
        corr = self._admin_corr
        self._admin_corr += 1
        addr = "10.250.0.1:50000"
        self.out.add(self.now, self._admin_conn, _C2B, kwire.encode_request(
            req, DESCRIBE_VERSION, correlation_id=corr, client_id="admin"), addr, self.broker)
        replies = self.coordinator.handle("admin", req, DESCRIBE_VERSION, self.now // MS, client_id="admin")
        t = self.now + self.latency()
        for reply in replies:
            self.out.add(t, self._admin_conn, _B2C, kwire.encode_response(
                reply.response, reply.version, correlation_id=corr), addr, self.broker)
        self._arm_tick()
        self.at(self.now + self.describe_every_ms * MS, self._describe)

    # -- ground truth -------------------------------------------------------------------------------

    def _observe(self):
        """Record what changed in the coordinator's state of the group."""
        now = self.now
        kind = self.coordinator.group_type(self.group_id)
        group = self.coordinator.consumer.group(self.group_id) if kind == "consumer" else None
        epochs = (kind, group.group_epoch, group.target_epoch) if group is not None else (kind, None, None)
        if epochs != self._last_group:
            self._last_group = epochs
            self.truth["group"].append((now,) + epochs)
        if group is None:
            for member_id in list(self._seen):
                self._member(now, member_id, None)
            return
        if group.target_epoch != self._last_target and group.target is not None:
            self._last_target = group.target_epoch
            self.truth["targets"].append((now, group.target_epoch, {
                m: self._names(a) for m, a in group.target.items()}))
        members = group.members
        for member_id, member in members.items():
            seen = self._seen.get(member_id)
            if seen is None or seen[0] != member.member_epoch or seen[1] is not member.assigned:
                self._member(now, member_id, member)
        for member_id in [m for m in self._seen if m not in members]:
            self._member(now, member_id, None)

    def _member(self, now, member_id, member):
        history = self.truth["members"].setdefault(member_id, [])
        if member is None:
            self._seen.pop(member_id)
            history.append((now, None, None))
            return
        self._seen[member_id] = (member.member_epoch, member.assigned)
        entry = (now, member.member_epoch, self._names(member.assigned))
        if not history or history[-1][1:] != entry[1:]:
            history.append(entry)

    def _names(self, assignment):
        names = self.names
        return sorted((names.get(t, uuid_text(t)), p) for t, ps in assignment.items() for p in ps)


_IDLE_POLL = 100 * MS
_EVENT_NAMES = {PartitionsRevoked: "revoked", PartitionsLost: "lost", PartitionsAssigned: "assigned"}


def _may_change(req, replies):
    """Whether a heartbeat may have changed the group: a join, a leave, a new subscription or owned set, an
    error, or an answer with a new epoch or an assignment."""
    if req.member_epoch <= 0 or req.subscribed_topic_names is not None or req.topic_partitions is not None:
        return True
    for reply in replies:
        r = reply.response
        if r.error_code or r.assignment is not None or r.member_epoch != req.member_epoch:
            return True
    return False


def _revokes(client, response):
    """Whether ``response`` takes partitions away from ``client`` (a revocation callback will run)."""
    if client.protocol != "consumer" or type(response) is not codec.ConsumerGroupHeartbeatResponse:
        return False
    if response.error_code or response.assignment is None:
        return False
    target = {(tp.topic_id, p) for tp in response.assignment.topic_partitions for p in tp.partitions}
    return bool(client.machine.assignment - target)


def _classic_versions(profile):
    v = CLASSIC_VERSIONS[profile]
    return None if v is None else dict(v)


def _replicas(partition):
    return [(partition + k) % 3 + 1 for k in range(3)]
