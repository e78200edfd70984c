"""The consumer's side of the classic group protocol as a sans-IO state machine.

:class:`ConsumerMember` does what Kafka's Java consumer does in ``AbstractCoordinator`` and
``ConsumerCoordinator``: find the coordinator, join (coming back with the id a
MEMBER_ID_REQUIRED hands out), sync (as leader, running kwire's assignor on the fast path), heartbeat
on its interval, react to each error the way the Java client does, and leave.  It never touches a
socket or a clock.  The caller:

* calls :meth:`poll` with ``now`` (ms) whenever :meth:`next_deadline` passes, and gets back an ordered
  list of outputs: :class:`Send` (a request to encode and send; ``to_coordinator`` False means any
  broker) and events (:class:`PartitionsRevoked`, :class:`PartitionsAssigned`, :class:`PartitionsLost`,
  :class:`CoordinatorFound`, :class:`GroupJoined`, :class:`MemberFailed`);
* hands each decoded response to :meth:`receive` with the token of its :class:`Send`, or reports a
  failed request (disconnect, timeout) with :meth:`request_failed`; both return outputs too.

Outputs are in causal order: a revocation event comes before the JoinGroup that follows it, so a caller
that handles outputs in order runs its ``onPartitionsRevoked`` before the rebalance goes on, as Java does.

Not modelled: auto-commit before a rejoin and the application poll timer (``max.poll.interval.ms`` is
sent as the rebalance timeout but nothing here expires it) -- those belong to the consumer built on top.
"""

import random
from itertools import groupby
from operator import itemgetter
from typing import Any, NamedTuple, Optional, Tuple

from kwire.codec import (
    ApiKey,
    Assignment,
    CooperativeStickyUserData,
    ErrorCode,
    error_name,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    StickyAssignorUserData,
    StickyTopicAssignment,
    Subscription,
    SubscriptionTopicPartition,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kwire.errors import ArgumentTypeError, KwireError

from ._errors import GroupMemberFatalError, GroupProtocolError
from ._states import StrState

# The codes this side handles, by name, as plain ints: they are compared on every response.
NONE = int(ErrorCode.NONE)
COORDINATOR_LOAD_IN_PROGRESS = int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
COORDINATOR_NOT_AVAILABLE = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
FENCED_INSTANCE_ID = int(ErrorCode.FENCED_INSTANCE_ID)
ILLEGAL_GENERATION = int(ErrorCode.ILLEGAL_GENERATION)
INCONSISTENT_GROUP_PROTOCOL = int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
MEMBER_ID_REQUIRED = int(ErrorCode.MEMBER_ID_REQUIRED)
NOT_COORDINATOR = int(ErrorCode.NOT_COORDINATOR)
REBALANCE_IN_PROGRESS = int(ErrorCode.REBALANCE_IN_PROGRESS)
UNKNOWN_MEMBER_ID = int(ErrorCode.UNKNOWN_MEMBER_ID)
UNKNOWN_SERVER_ERROR = int(ErrorCode.UNKNOWN_SERVER_ERROR)

_FIND, _JOIN, _HEARTBEAT, _LEAVE, _SYNC = (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT,
                                           ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP)


class MemberState(StrState):
    """Where a :class:`ConsumerMember` is in the group protocol (Java's ``MemberState`` of
    ``AbstractCoordinator``, plus the two ends a sans-IO member has: CLOSED and FAILED).  Str-valued:
    ``member.state == "STABLE"`` holds as well as ``member.state == MemberState.STABLE``."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"
    CLOSED = "CLOSED"
    FAILED = "FAILED"


_LIVE = (MemberState.UNJOINED, MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE, MemberState.STABLE)
# The member's legal transitions: target -> allowed sources (every move goes through ConsumerMember._to).
# A JoinGroup may be sent from any live state: a first join, a rejoin from Stable, a retry after
# REBALANCE_IN_PROGRESS from CompletingRebalance or after a backoff from PreparingRebalance.  Any live state
# may fall back to Unjoined (resetStateAndRejoin, a lost coordinator) or end (close, a fatal error).
_ALLOWED_FROM = {
    MemberState.UNJOINED: _LIVE,
    MemberState.PREPARING_REBALANCE: _LIVE,
    MemberState.COMPLETING_REBALANCE: (MemberState.PREPARING_REBALANCE,),
    MemberState.STABLE: (MemberState.COMPLETING_REBALANCE,),
    MemberState.CLOSED: _LIVE,
    MemberState.FAILED: _LIVE,
}
_ENDED = (MemberState.CLOSED, MemberState.FAILED)
# Heartbeats run from the JoinGroup response until the member leaves the generation (Java's heartbeat
# thread is enabled in onJoinComplete's lead-up and disabled on every path out).
_HEARTBEATING = frozenset({MemberState.COMPLETING_REBALANCE, MemberState.STABLE})
# The states as module constants: an enum member read off its class costs a Python-level attribute lookup.
_UNJOINED, _PREPARING, _COMPLETING, _STABLE, _CLOSED, _FAILED = (
    MemberState.UNJOINED, MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE, MemberState.STABLE,
    MemberState.CLOSED, MemberState.FAILED)
_new_tuple = tuple.__new__  # builds a namedtuple from a tuple without its Python-level __new__
_TOPIC = itemgetter(0)

EAGER = "EAGER"
COOPERATIVE = "COOPERATIVE"

# The versions sent unless the caller negotiated others (ApiVersions): the newest kwire's codec has.
DEFAULT_VERSIONS = {_FIND: 4, _JOIN: 9, _HEARTBEAT: 4, _LEAVE: 5, _SYNC: 5}

# Assignors that support the cooperative protocol (Java: ConsumerPartitionAssignor.supportedProtocols()).
_COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})

_NO_GENERATION = (-1, "", None)

TopicPartitions = Tuple[Tuple[str, int], ...]


class Send(NamedTuple):
    """A request to send: encode ``request`` at ``version``; hand the response to ``receive(token, ...)``.
    ``to_coordinator`` is False for FindCoordinator (any broker answers it)."""

    token: int
    request: Any
    version: int
    to_coordinator: bool


class CoordinatorFound(NamedTuple):
    node_id: int
    host: str
    port: int


class PartitionsRevoked(NamedTuple):
    """``onPartitionsRevoked``: stop processing these (commit first if you commit)."""
    partitions: TopicPartitions


class PartitionsLost(NamedTuple):
    """``onPartitionsLost``: these are already someone else's; do not commit them."""
    partitions: TopicPartitions


class PartitionsAssigned(NamedTuple):
    """``onPartitionsAssigned``: the partitions added by this generation (possibly none)."""
    partitions: TopicPartitions


class GroupJoined(NamedTuple):
    """A generation completed for this member (its SyncGroup succeeded)."""
    generation_id: int
    member_id: str
    leader_id: str
    protocol_name: Optional[str]
    assignment: TopicPartitions


class MemberFailed(NamedTuple):
    """The member stopped on an error the Java consumer throws to the application."""
    error: GroupMemberFatalError


def _subscription_topics(topics):
    """The topics of a Subscription as Java sends them: distinct, in String.compareTo (UTF-16) order,
    which differs from Python's code-point order for names holding a non-BMP character."""
    # A str is iterable too, and would subscribe to its letters.
    if topics is None or isinstance(topics, (str, bytes)) or not hasattr(topics, "__iter__"):
        raise ArgumentTypeError(f"topics must be an iterable of topic names, got {type(topics).__name__}")
    topics = list(topics)
    for topic in topics:
        if not isinstance(topic, str):
            raise ArgumentTypeError(f"a topic name must be str, got {type(topic).__name__}")
    topics = set(topics)
    # Imported here: kwire.assignors loads NumPy, which a member that never leads does not need.
    from kwire.assignors import java_sorted

    return tuple(java_sorted(topics))


def _sorted_tps(tps):
    return tuple(sorted(tps))


def _grouped(tps, cls):
    """``[cls(topic=..., partitions=[...]), ...]`` of ``(topic, partition)`` pairs, topics and partitions sorted."""
    if not tps:
        return []
    # Sorted pairs hold each topic's partitions together: one group per run of a topic.
    return [cls(topic=topic, partitions=[p for _, p in pairs]) for topic, pairs in groupby(sorted(tps), _TOPIC)]


class ConsumerMember:
    """One consumer in one classic group.  See the module docstring for the calling convention.

    ``assignors`` are protocol names in preference order (``range``, ``roundrobin``, ``sticky``,
    ``cooperative-sticky`` or any name registered with ``kwire.register_strategy``); the rebalance
    protocol is COOPERATIVE only if every one supports it, as in Java.  ``partitions_per_topic`` is what
    the member knows of the cluster's metadata; only the leader uses it (:meth:`update_metadata` changes
    it).  ``rng`` provides the heartbeat backoff jitter (``rng.uniform``); inject one for reproducibility.
    """

    def __init__(self, group_id, topics, *, assignors=("range",), client_id="kwire", group_instance_id=None,
                 session_timeout_ms=45_000, rebalance_timeout_ms=300_000, heartbeat_interval_ms=3_000,
                 retry_backoff_ms=100, retry_backoff_max_ms=1_000, rack_id=None, partitions_per_topic=None,
                 versions=None, rng=None):
        if not group_id:
            raise GroupProtocolError("a consumer group needs a non-empty group id")
        if not assignors:
            raise GroupProtocolError("at least one assignor is needed")
        if heartbeat_interval_ms >= session_timeout_ms:
            raise GroupProtocolError("heartbeat.interval.ms must be lower than session.timeout.ms")
        self.versions = {**DEFAULT_VERSIONS, **(versions or {})}
        versions = self.versions
        if group_instance_id is not None and (versions[_JOIN] < 5 or versions[_SYNC] < 3 or versions[_HEARTBEAT] < 3):
            raise GroupProtocolError("static membership needs JoinGroup v5+, SyncGroup v3+ and Heartbeat v3+")
        self.group_id = group_id
        # The consumer's configuration, as the Java client names it (`duplicates` pairs this block by shape
        # with other plain attribute records).
        self.client_id = client_id
        self.group_instance_id = group_instance_id
        self.assignors = tuple(assignors)
        # A loop, not all() over a generator: a member is made at every join of a replayed history.
        self.protocol = COOPERATIVE
        for a in self.assignors:
            if a not in _COOPERATIVE_ASSIGNORS:
                self.protocol = EAGER
                break
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self.rack_id = rack_id
        self.partitions_per_topic = dict(partitions_per_topic or {})
        self._rng = rng or random.Random()

        self.topics = _subscription_topics(topics)
        self.state = _UNJOINED
        self.coordinator = None            # CoordinatorFound once known
        self.generation = _NO_GENERATION   # (generation id, member id, protocol name)
        self.leader_id = ""
        self.owned = ()                    # sorted (topic, partition) pairs this member holds
        self._last_assignment = ()         # what the last sync gave (the sticky assignor's userData)
        self._joined_topics = None         # the subscription the last JoinGroup carried
        self._rejoin_needed = True         # a JoinGroup is due (AbstractCoordinator.rejoinNeeded)
        self._needs_join_prepare = True
        self._out = []
        self._tokens = 0
        self._inflight = {}                # token -> (kind, generation at send time)
        self._find_token = self._join_token = self._sync_token = self._heartbeat_token = None
        self._retry_at = 0                 # no FindCoordinator / JoinGroup before this
        self._find_attempts = 0
        self._heartbeat_enabled = False    # kept equal to state in _HEARTBEATING by _to()
        self._heartbeat_due = 0
        self._heartbeat_attempts = 0
        self._session_deadline = None
        self._metadata_cache = None        # (what the Subscriptions were written from, their bytes)

    # -- properties a caller reads ----------------------------------------------------------------------

    @property
    def member_id(self):
        return self.generation[1]

    @property
    def generation_id(self):
        return self.generation[0]

    @property
    def is_leader(self):
        return bool(self.member_id) and self.member_id == self.leader_id

    # -- the driving surface ----------------------------------------------------------------------------

    def poll(self, now):
        """Advance timers and return everything to send or report now, in order."""
        state = self.state
        if state in _ENDED:
            return self._drain()
        if self._heartbeat_enabled:
            deadline = self._session_deadline
            if deadline is not None and now >= deadline:
                # No successful heartbeat for a whole session: the coordinator is presumed gone (the
                # generation is kept; the coordinator decides whether the member still belongs).
                self._coordinator_unknown(now, backoff=False)
                state = self.state
        if self.coordinator is None:
            if self._find_token is None and now >= self._retry_at:
                self._send_find_coordinator()
            return self._drain()
        joined = self._joined_topics
        if state == _STABLE and joined is not None and joined != self.topics:
            self._request_rejoin()
        if self._rejoin_needed and self._join_token is None and self._sync_token is None and now >= self._retry_at:
            if self._needs_join_prepare:
                self._needs_join_prepare = False
                self._on_join_prepare()
            self._send_join_group()
        if (self._heartbeat_enabled and self._heartbeat_token is None and self._join_token is None
                and now >= self._heartbeat_due):
            self._heartbeat_due = now + self.heartbeat_interval_ms
            version = self.versions[_HEARTBEAT]
            generation = self.generation
            self._heartbeat_token = self._send(
                "heartbeat",
                HeartbeatRequest(group_id=self.group_id, generation_id=generation[0], member_id=generation[1],
                                 group_instance_id=self.group_instance_id if version >= 3 else None),
                version)
        out = self._out
        self._out = []
        return out

    def next_deadline(self):
        """When :meth:`poll` next has something to do (ms), or None while only waiting for responses."""
        if self.state in _ENDED:
            return None
        at = None
        if self.coordinator is None:
            if self._find_token is None:
                at = self._retry_at
        elif self._rejoin_needed and self._join_token is None and self._sync_token is None:
            at = self._retry_at
        if self._heartbeat_enabled:
            if self._heartbeat_token is None and self._join_token is None:
                due = self._heartbeat_due
                if at is None or due < at:
                    at = due
            due = self._session_deadline
            if due is not None and (at is None or due < at):
                at = due
        return at

    def receive(self, token, response, now):
        """Process the response to the request sent with ``token``; returns :meth:`poll`'s outputs."""
        entry = self._inflight.pop(token, None)
        if entry is None:
            raise GroupProtocolError(f"no request with token {token} is in flight")
        kind, generation = entry
        expected, on_response = self._RESPONSES[kind]
        if type(response) is not expected and not isinstance(response, expected):
            raise GroupProtocolError(f"token {token} was a {kind} request; got a {type(response).__name__}")
        if self.state not in _ENDED:
            on_response(self, token, response, generation, now)
            if (kind == "heartbeat" and self.state is _STABLE and not self._out and not self._rejoin_needed
                    and now < self._heartbeat_due and self._joined_topics == self.topics
                    and self.coordinator is not None
                    and (self._session_deadline is None or now < self._session_deadline)):
                # A steady heartbeat's answer: nothing poll() could do now (no session expiry, no rejoin,
                # no heartbeat due), so its outputs are none.
                return []
        return self.poll(now)

    def request_failed(self, token, now):
        """The request sent with ``token`` got no response (disconnected, timed out)."""
        entry = self._inflight.pop(token, None)
        if entry is None:
            raise GroupProtocolError(f"no request with token {token} is in flight")
        kind = entry[0]
        if self.state not in _ENDED:
            if kind == "find":
                self._find_token = None
                self._backoff_find(now)
            elif kind in ("join", "sync", "heartbeat"):
                # Java: a disconnect marks the coordinator unknown; the join chain retries.
                self._coordinator_unknown(now)
        return self.poll(now)

    def subscribe(self, topics):
        """Change the subscription; a STABLE member rejoins at its next poll (cooperative members revoke
        only the partitions of topics they dropped)."""
        self.topics = _subscription_topics(topics)

    def update_metadata(self, partitions_per_topic):
        """The partition counts the leader assigns from."""
        self.partitions_per_topic = dict(partitions_per_topic)

    def close(self, now):
        """Leave the group: revoke (or lose) what is owned and send LeaveGroup if Java would.

        Static members do not send LeaveGroup (they rely on their session timeout, or on being replaced
        when they restart); the outputs still carry the revocation."""
        if self.state in _ENDED:
            return self._drain()
        if self.owned:
            if self.generation_id == -1 or not self.member_id:
                self._out.append(PartitionsLost(self.owned))
            else:
                self._out.append(PartitionsRevoked(self.owned))
            self.owned = ()
        if (self.group_instance_id is None and self.coordinator is not None and self.state != _UNJOINED
                and self.member_id):
            version = self.versions[_LEAVE]
            if version >= 3:
                identity = MemberIdentity(member_id=self.member_id, group_instance_id=None,
                                          reason="the consumer is being closed" if version >= 5 else None)
                request = LeaveGroupRequest(group_id=self.group_id, members=[identity])
            else:
                request = LeaveGroupRequest(group_id=self.group_id, member_id=self.member_id)
            self._send("leave", request, version)
        self._to(_CLOSED)
        return self._drain()

    # -- requests ---------------------------------------------------------------------------------------

    def _send(self, kind, request, version, to_coordinator=True):
        self._tokens += 1
        token = self._tokens
        self._inflight[token] = (kind, self.generation)
        # tuple.__new__ skips the namedtuple's Python-level __new__: a Send goes out with every request.
        self._out.append(_new_tuple(Send, (token, request, version, to_coordinator)))
        return token

    def _drain(self):
        out = self._out
        self._out = []
        return out

    def _send_find_coordinator(self):
        version = self.versions[_FIND]
        if version >= 4:
            request = FindCoordinatorRequest(key_type=0, coordinator_keys=[self.group_id])
        else:
            request = FindCoordinatorRequest(key=self.group_id)
        self._find_token = self._send("find", request, version, to_coordinator=False)

    def _send_join_group(self):
        version = self.versions[_JOIN]
        self._to(_PREPARING)
        self._joined_topics = self.topics
        request = JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms if version >= 1 else -1,
            member_id=self.generation[1],
            group_instance_id=self.group_instance_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name=name, metadata=metadata)
                       for name, metadata in zip(self.assignors, self._all_metadata())],
            reason=None,
        )
        self._join_token = self._send("join", request, version)

    def _all_metadata(self):
        """Each assignor's Subscription bytes.  A JoinGroup sent again with nothing they hold changed (the
        one after MEMBER_ID_REQUIRED, a retry) carries the bytes already written."""
        key = (self.assignors, self.topics, self.owned, self.generation[0], self.rack_id, self._last_assignment)
        cached = self._metadata_cache
        if cached is None or cached[0] != key:
            cached = self._metadata_cache = (key, [self._metadata(name) for name in self.assignors])
        return cached[1]

    def _metadata(self, name):
        # ConsumerCoordinator.metadata(): a v3 Subscription per assignor, topics sorted, owned partitions
        # as held right now (after onJoinPrepare), the current generation, the assignor's userData.
        generation_id = self.generation[0]
        if name == "sticky":
            user_data = StickyAssignorUserData(
                previous_assignment=_grouped(self._last_assignment, StickyTopicAssignment),
                generation=generation_id).encode(1)
        elif name == "cooperative-sticky":
            user_data = CooperativeStickyUserData(generation=generation_id).encode(0)
        else:
            user_data = None
        return Subscription(topics=list(self.topics), user_data=user_data,
                            owned_partitions=_grouped(self.owned, SubscriptionTopicPartition),
                            generation_id=generation_id, rack_id=self.rack_id).encode(3)

    # -- the rebalance callbacks (ConsumerCoordinator.onJoinPrepare / onJoinComplete) -------------------

    def _on_join_prepare(self):
        if self.owned:
            if self.generation[0] == -1 or not self.generation[1]:
                self._out.append(PartitionsLost(self.owned))
                self.owned = ()
            elif self.protocol == EAGER:
                self._out.append(PartitionsRevoked(self.owned))
                self.owned = ()
            else:
                subscribed = set(self.topics)
                gone = tuple([tp for tp in self.owned if tp[0] not in subscribed])
                if gone:
                    self._out.append(PartitionsRevoked(gone))
                    self.owned = tuple([tp for tp in self.owned if tp[0] in subscribed])
        self.leader_id = ""

    def _on_join_complete(self, assignment_bytes):
        if len(assignment_bytes) < 2:
            # Java throws IllegalStateException from poll(): the leader left this member out.
            return self._fail(UNKNOWN_SERVER_ERROR, "the SyncGroup response carries no assignment for this member")
        try:
            assignment = Assignment.decode(assignment_bytes)
        except KwireError as exc:
            return self._fail(UNKNOWN_SERVER_ERROR, f"undecodable assignment: {exc}")
        subscribed = self.topics
        assigned = []
        for tp in assignment.assigned_partitions:
            partitions = tp.partitions
            if partitions:
                topic = tp.topic
                if topic not in subscribed:
                    self._request_rejoin()   # assigned a topic it does not subscribe to
                    return
                assigned += [(topic, p) for p in partitions]
        assigned.sort()
        assigned = tuple(assigned)
        if self.owned and assigned == self.owned:
            # The same partitions as before (a rebalance that moved none of this member's): nothing is revoked
            # and nothing added, which the sets below would find at a cost in the partitions held.
            added = ()
        elif self.owned:
            given = set(assigned)
            owned = set(self.owned)
            if self.protocol == COOPERATIVE:
                revoked = _sorted_tps(owned.difference(given))   # a set: its stored hashes, none recomputed
                if revoked:
                    # Two-phase: give these up now, rejoin so a later round can hand them to someone else.
                    self._out.append(PartitionsRevoked(revoked))
                    self._request_rejoin()
            added = _sorted_tps(given.difference(owned))
        else:
            # Nothing owned (always so in an eager rebalance): everything given is added; ``assigned`` is
            # already sorted, and is the answer unless the leader listed a partition twice.
            given = set(assigned)
            added = assigned if len(given) == len(assigned) else _sorted_tps(given)
        self.owned = assigned
        self._last_assignment = assigned
        generation = self.generation
        self._out += (_new_tuple(PartitionsAssigned, (added,)),
                      _new_tuple(GroupJoined, (generation[0], generation[1], self.leader_id, generation[2], assigned)))

    # -- responses --------------------------------------------------------------------------------------

    def _on_find(self, token, response, generation, now):
        self._find_token = None
        if self.versions[_FIND] >= 4:
            # v4+ answers a batch of keys; take this group's entry
            entry = None
            for c in response.coordinators:
                if c.key == self.group_id:
                    entry = c
                    break
            error = entry.error_code if entry is not None else COORDINATOR_NOT_AVAILABLE
        else:
            entry, error = response, response.error_code
        if error:
            return self._backoff_find(now)
        self._find_attempts = 0
        self.coordinator = CoordinatorFound(entry.node_id, entry.host, entry.port)
        if self._heartbeat_enabled:
            # A fresh session window against the (re)found coordinator; otherwise an expired session
            # timer would mark it unknown again at once.
            self._session_deadline = now + self.session_timeout_ms
        self._out.append(self.coordinator)

    def _on_join(self, token, response, generation, now):
        if token != self._join_token:
            return  # a join the member has since abandoned (coordinator change)
        self._join_token = None
        error = response.error_code
        if error == NONE:
            if response.protocol_type is not None and response.protocol_type != "consumer":
                return self._fail(INCONSISTENT_GROUP_PROTOCOL, f"protocol type {response.protocol_type!r}")
            if self.state != _PREPARING:
                return self._retry_join(now)
            self._to(_COMPLETING)
            self._enable_heartbeat(now)
            self.generation = (response.generation_id, response.member_id, response.protocol_name)
            self.leader_id = response.leader
            assignments = []
            if response.member_id == response.leader and not response.skip_assignment:
                try:
                    from kwire.assignors import leader_assignments

                    assignments = leader_assignments(response.protocol_name, response, self.partitions_per_topic)
                except KwireError as exc:
                    return self._fail(UNKNOWN_SERVER_ERROR, f"the assignor failed: {exc}")
            version = self.versions[_SYNC]
            self._sync_token = self._send("sync", SyncGroupRequest(
                group_id=self.group_id, generation_id=response.generation_id, member_id=response.member_id,
                group_instance_id=self.group_instance_id,
                protocol_type="consumer" if version >= 5 else None,
                protocol_name=self.generation[2] if version >= 5 else None,
                assignments=assignments), version)
        elif error == MEMBER_ID_REQUIRED:
            self.generation = (-1, response.member_id, None)
            self._request_rejoin()
        elif error == UNKNOWN_MEMBER_ID:
            if generation == self.generation:
                self._reset(reset_member_id=True)
            self._request_rejoin()
        elif error == REBALANCE_IN_PROGRESS:
            self._request_rejoin()
        elif error == COORDINATOR_LOAD_IN_PROGRESS:
            self._retry_join(now)
        elif error in (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR):
            self._coordinator_unknown(now)
        else:
            self._fail(error, "JoinGroup failed")

    def _on_sync(self, token, response, generation, now):
        if token != self._sync_token:
            return
        self._sync_token = None
        error = response.error_code
        if error == NONE:
            if response.protocol_type is not None and response.protocol_type != "consumer":
                return self._fail(INCONSISTENT_GROUP_PROTOCOL, f"protocol type {response.protocol_type!r}")
            if generation != self.generation or self.state != _COMPLETING:
                # The heartbeat reset the generation meanwhile: as ILLEGAL_GENERATION, rejoin at once.
                self._reset(reset_member_id=False)
                return
            if response.protocol_name is not None and response.protocol_name != self.generation[2]:
                return self._fail(INCONSISTENT_GROUP_PROTOCOL, f"protocol name {response.protocol_name!r}")
            self._to(_STABLE)
            self._on_join_complete(response.assignment)
            if self.state != _FAILED:
                self._needs_join_prepare = True
        elif error == REBALANCE_IN_PROGRESS:
            self._request_rejoin()  # same member id and generation; onJoinPrepare does not run again
        elif error in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            if generation == self.generation:
                self._reset(reset_member_id=error == UNKNOWN_MEMBER_ID)
            self._request_rejoin()
        elif error in (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR):
            self._coordinator_unknown(now)
        else:
            self._fail(error, "SyncGroup failed")

    def _on_heartbeat(self, token, response, generation, now):
        if token == self._heartbeat_token:
            self._heartbeat_token = None
        error = response.error_code
        if error == NONE:
            self._heartbeat_attempts = 0
            self._session_deadline = now + self.session_timeout_ms
        elif error == REBALANCE_IN_PROGRESS:
            # Counts as a successful heartbeat; a STABLE member rejoins.
            self._session_deadline = now + self.session_timeout_ms
            if self.state == _STABLE:
                self._request_rejoin()
        elif error in (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR):
            self._coordinator_unknown(now)
        elif error in (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID):
            if generation != self.generation:
                return  # a stale answer about a generation already left behind
            if error == FENCED_INSTANCE_ID:
                return self._fail(error, "another instance with this group.instance.id joined")
            self._reset(reset_member_id=error != ILLEGAL_GENERATION)
            self._heartbeat_backoff(now)
        else:
            self._heartbeat_backoff(now)

    def _on_leave(self, token, response, generation, now):
        pass  # best effort, never retried (AbstractCoordinator.maybeLeaveGroup)

    # Each request kind's response type and handler (plain functions here), looked up once per response.
    _RESPONSES = {
        "find": (FindCoordinatorResponse, _on_find),
        "join": (JoinGroupResponse, _on_join),
        "sync": (SyncGroupResponse, _on_sync),
        "heartbeat": (HeartbeatResponse, _on_heartbeat),
        "leave": (LeaveGroupResponse, _on_leave),
    }

    # -- state helpers ----------------------------------------------------------------------------------

    def _to(self, target):
        """Move to ``target`` through the transition table; the heartbeat runs in the states that have one,
        and a member that reaches Stable has rejoined (whatever then asks for another rejoin comes after)."""
        if self.state not in _ALLOWED_FROM[target]:
            raise AssertionError(f"member {self.member_id!r}: illegal transition {self.state} -> {target}")
        self.state = target
        self._heartbeat_enabled = target in _HEARTBEATING
        if target == _STABLE:
            self._rejoin_needed = False

    def _request_rejoin(self):
        self._rejoin_needed = True

    def _reset(self, reset_member_id):
        # AbstractCoordinator.resetStateAndRejoin
        self._to(_UNJOINED)
        self.generation = _NO_GENERATION if reset_member_id else (-1, self.member_id, None)
        self._request_rejoin()
        self._needs_join_prepare = True
        self._sync_token = None
        self._join_token = None

    def _enable_heartbeat(self, now):
        self._heartbeat_due = now + self.heartbeat_interval_ms
        self._session_deadline = now + self.session_timeout_ms
        self._heartbeat_attempts = 0

    def _heartbeat_backoff(self, now):
        self._heartbeat_due = now + self._exponential_backoff(self._heartbeat_attempts)
        self._heartbeat_attempts += 1

    def _exponential_backoff(self, attempts):
        # ExponentialBackoff(retry.backoff.ms, 2, retry.backoff.max.ms, 0.2)
        base = min(self.retry_backoff_ms * (2 ** attempts), self.retry_backoff_max_ms)
        return int(base * (1 + self._rng.uniform(-0.2, 0.2)))

    def _backoff_find(self, now):
        self._retry_at = now + self._exponential_backoff(self._find_attempts)
        self._find_attempts += 1

    def _retry_join(self, now):
        # Join retries use the fixed retry.backoff.ms, not the exponential one.
        self._request_rejoin()
        self._retry_at = now + self.retry_backoff_ms

    def _coordinator_unknown(self, now, backoff=True):
        self.coordinator = None
        # Requests to the old coordinator are abandoned; their late answers are ignored by token.
        if self._join_token is not None or self._sync_token is not None:
            self._request_rejoin()
        self._join_token = self._sync_token = self._heartbeat_token = None
        if self.state in (_PREPARING, _COMPLETING):
            self._to(_UNJOINED)
        if backoff:
            self._retry_at = now + self.retry_backoff_ms

    def _fail(self, error, message):
        name = error_name(error)
        self._to(_FAILED)
        self._out.append(MemberFailed(GroupMemberFatalError(error, f"{message}: {name}")))
