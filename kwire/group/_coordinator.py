"""Kafka's group coordinator as a sans-IO state machine: the driving surface and the dispatch by api.

The caller owns sockets and the clock.  It hands :meth:`GroupCoordinator.handle` one decoded request,
its api version, an opaque handle (whatever routes an answer back to its connection) and ``now`` in
milliseconds, and gets back every :class:`Reply` that became ready: the request's own answer if it is
not parked, and the answers of *earlier* parked requests that this one completed.  :meth:`tick` fires
timers; :meth:`next_deadline` says when the next one is due.  Nothing here sleeps, blocks or reads a
clock, so an asyncio server and a unit test drive it the same way.

The tree under it: the classic rebalance (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) is
``_classic_rebalance.py``, one classic group's data and transition table ``_classic_group.py``, the
committed offsets ``_offsets.py``, and which groups exist and how long an unused one lives
``_registry.py``.  The consumer protocol (KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe) is
``_consumer_coordinator.py``'s :class:`ConsumerGroupCoordinator`, owned here and reached through
``_consumer_dispatch.py``, which keeps the two group types' ids apart; both share the offsets and the
timers.  This module answers OffsetCommit, OffsetFetch, DescribeGroups and ListGroups itself, for both.

Semantics follow Apache Kafka's Java ("new") group coordinator for classic groups, check by check; the
Kafka names (``GroupMetadataManager.prepareRebalance``) say where each rule lives in Kafka's source.

One deliberate difference: Kafka iterates members in ``java.util.HashMap`` order, which decides who
becomes leader after the leader leaves and the order of the leader's member list.  Here members are
kept in insertion order (a dict), which clients cannot tell apart from any other arbitrary order.

Cost: every request is O(1) in the group's size apart from the ones whose answer *is* O(n) (the
leader's JoinGroup response lists every member; the leader's SyncGroup carries every assignment) and
the once-per-rebalance steps (completing the join phase, preparing a rebalance from
CompletingRebalance).  Counters kept on the group (members awaiting join, votes per protocol, pending
ids, rebalance timeouts) make ``hasAllMembersJoined`` and ``supportsProtocols`` constant time.
"""

import os

from kwire.codec import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorCode,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
    SyncGroupRequest,
)
from kwire.errors import UnsupportedVersionError

from ._classic_group import COMPLETING_REBALANCE, DEAD, PREPARING_REBALANCE, STABLE, ClassicGroup
from ._classic_rebalance import ClassicRebalance
from ._consumer_config import ConsumerGroupConfig
from ._consumer_coordinator import ConsumerGroupCoordinator
from ._consumer_dispatch import ConsumerDispatch
from ._consumer_views import GROUP_TYPE as CONSUMER_GROUP_TYPE
from ._errors import GroupProtocolError
from ._offsets import OffsetStore
from ._registry import EXPIRE, GroupRegistry
from ._request import Reply, RequestContext
from ._timers import Timers

_new_tuple = tuple.__new__  # builds a namedtuple from a tuple without its Python-level __new__
NONE = int(ErrorCode.NONE)  # a plain int: it goes into every OffsetFetch partition


def _random_member_id(prefix):
    # Kafka's ``prefix + "-" + UUID.randomUUID()``: a version-4 UUID in its canonical text form.  Formatted
    # by hand because uuid.uuid4() costs a third of a whole JoinGroup here.
    h = os.urandom(16).hex()
    return f"{prefix}-{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


_DEFAULT_CONSUMER_CONFIG = []


def _default_consumer_config():
    """``ConsumerGroupConfig({})``, made once: nothing assigns to a config after it is made."""
    if not _DEFAULT_CONSUMER_CONFIG:
        _DEFAULT_CONSUMER_CONFIG.append(ConsumerGroupConfig({}))
    return _DEFAULT_CONSUMER_CONFIG[0]


_CONSUMER_REQUESTS = frozenset({ConsumerGroupHeartbeatRequest, ConsumerGroupDescribeRequest})

CLASSIC_GROUP_TYPE = "classic"   # ListGroups v5's GroupType of a classic group

# The classic settings under Kafka's broker config names (GroupCoordinatorConfig), and the keyword each sets.
_CLASSIC_KEYS = {
    "group.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
    "group.min.session.timeout.ms": "min_session_timeout_ms",
    "group.max.session.timeout.ms": "max_session_timeout_ms",
    "group.max.size": "max_group_size",
}


class GroupCoordinator(ClassicRebalance, ConsumerDispatch):
    """Many consumer groups, classic and consumer-protocol, sans-IO.  See the module docstring for the calling
    convention.

    Configuration mirrors the broker's: ``initial_rebalance_delay_ms`` (group.initial.rebalance.delay.ms),
    ``min_session_timeout_ms`` / ``max_session_timeout_ms`` (group.min/max.session.timeout.ms),
    ``max_group_size`` (group.max.size).  ``member_id_factory(prefix)`` makes member ids; the default is
    Kafka's ``prefix + "-" + uuid4``; tests inject a deterministic one.

    ``config`` is a dict of Kafka's broker config names: the consumer protocol's ``group.consumer.*`` keys and
    ``group.coordinator.rebalance.protocols`` (:class:`ConsumerGroupConfig` checks them as Kafka does), and the
    classic ``group.initial.rebalance.delay.ms``, ``group.min.session.timeout.ms``,
    ``group.max.session.timeout.ms`` and ``group.max.size``, which override the keywords of the same meaning.
    ``topics`` (``{name: (topic_id_16_bytes, partitions)}``) is what :meth:`set_topics` takes;
    ``consumer_member_id_factory()`` makes consumer-protocol member ids (default: a random Uuid's text).

    Group lifetimes (see ``_registry.py``): a group with no members and no committed offsets is deleted
    ``empty_group_retention_ms`` after it became so (Kafka deletes it on its periodic cleanup); with
    ``max_groups`` set, a new group takes the place of the oldest such group, and is refused with
    COORDINATOR_NOT_AVAILABLE (logged) only when none is idle.  Kafka itself has no cap (None).
    """

    def __init__(self, *, initial_rebalance_delay_ms=3000, min_session_timeout_ms=6000,
                 max_session_timeout_ms=1_800_000, max_group_size=2**31 - 1, member_id_factory=None,
                 partition_exists=None, offset_metadata_max_bytes=4096, max_groups=None,
                 empty_group_retention_ms=600_000, config=None, topics=None, consumer_member_id_factory=None):
        config = dict(config or {})
        for key, name in _CLASSIC_KEYS.items():
            if key in config:
                value = config[key]
                try:
                    value = int(str(value).strip())
                except ValueError:
                    raise GroupProtocolError(f"{key} must be an integer, got {value!r}") from None
                if name == "initial_rebalance_delay_ms":
                    initial_rebalance_delay_ms = value
                elif name == "min_session_timeout_ms":
                    min_session_timeout_ms = value
                elif name == "max_session_timeout_ms":
                    max_session_timeout_ms = value
                else:
                    max_group_size = value
        # Most coordinators (every migration replay's, every test's) take the defaults: read them once.
        consumer_config = _default_consumer_config() if not config else ConsumerGroupConfig(config)
        if max_group_size < 1:
            raise GroupProtocolError("max_group_size must be at least 1 (group.max.size)")
        if max_groups is not None and max_groups < 1:
            raise GroupProtocolError("max_groups must be at least 1, or None for no cap")
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.max_group_size = max_group_size
        self._new_member_id = member_id_factory or _random_member_id
        # ``partition_exists(topic, partition)``: the cluster's answer to "is this a partition?", for
        # OffsetCommit's UNKNOWN_TOPIC_OR_PARTITION; None accepts every partition (a coordinator alone).
        self._partition_exists = partition_exists
        self.offset_metadata_max_bytes = offset_metadata_max_bytes
        self._timers = Timers()
        # Committed offsets are kept apart from the groups: they live in Kafka's log and outlast a group's
        # unloading (a coordinator move) and its members.
        self._offsets = OffsetStore()
        self._groups = GroupRegistry(self._timers, self._offsets, self._tear_down, max_groups=max_groups,
                                     empty_group_retention_ms=empty_group_retention_ms)
        # Consumer-protocol groups: their own registry (ids kept disjoint from the classic ones by
        # _consumer_dispatch), on the same timers and offsets, without the cap (a consumer group exists only
        # while a member's session lasts or offsets keep it).
        self._consumer_groups = GroupRegistry(self._timers, self._offsets, self._tear_down_consumer,
                                              empty_group_retention_ms=empty_group_retention_ms)
        self._now_ms = 0   # the clock of the request or tick being handled, for the consumer side's callbacks
        self._consumer = ConsumerGroupCoordinator(
            consumer_config, topics=topics, member_id_factory=consumer_member_id_factory,
            classic_group_lookup=self._classic_group_lookup, classic_group_remove=self._classic_group_remove,
            groups=self._consumer_groups, classic_group_convert=self._classic_group_convert,
            classic_group_downgrade=self._consumer_group_downgrade)
        self._consumer_may_be_due = self._consumer.may_be_due
        # The consumer side holds no group and arms no timer before the first consumer-protocol request (or a
        # caller reaching it through set_topics or the consumer property): until then a classic request or
        # tick skips asking it for timers.
        self._consumer_active = False
        self._out = []
        self._handlers = {
            JoinGroupRequest: self._join_group_routed,
            SyncGroupRequest: self._sync_group_routed,
            HeartbeatRequest: self._heartbeat_routed,
            LeaveGroupRequest: self._leave_group_routed,
            OffsetCommitRequest: self._offset_commit,
            OffsetFetchRequest: self._offset_fetch,
            DescribeGroupsRequest: self._describe_groups,
            ListGroupsRequest: self._list_groups,
            ConsumerGroupHeartbeatRequest: self._consumer_heartbeat,
            ConsumerGroupDescribeRequest: self._consumer_describe,
        }
        # Until the consumer side is first reached no consumer group exists, so the classic requests go
        # straight to their classic handlers (the routed ones would find no consumer group of the id).
        self._classic_handlers = {**self._handlers, JoinGroupRequest: self._join_group,
                                  SyncGroupRequest: self._sync_group, HeartbeatRequest: self._heartbeat,
                                  LeaveGroupRequest: self._leave_group}

    # -- the driving surface ----------------------------------------------------------------------------

    def handle(self, handle, request, version, now, *, client_id="", client_host="/127.0.0.1"):
        """Process one request; return every Reply ready now (possibly none: the request is parked).

        ``client_id`` is the request header's client id (the prefix of a dynamic member's new id) and
        ``client_host`` the peer address as Java prints it; both are reported by DescribeGroups."""
        handler = (self._handlers if self._consumer_active else self._classic_handlers).get(type(request))
        if handler is None:
            if not self._classic_handlers:
                raise GroupProtocolError("the coordinator is closed")
            raise GroupProtocolError(
                f"GroupCoordinator handles JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, "
                f"DescribeGroups, ListGroups, ConsumerGroupHeartbeat and ConsumerGroupDescribe requests, "
                f"not {type(request).__name__}")
        if not request.min_version <= version <= request.max_version:
            raise UnsupportedVersionError(
                f"{type(request).__name__} has versions {request.min_version}-{request.max_version}, not {version}")
        self._now_ms = now
        if self._timers.may_be_due(now):
            self._fire_due(now)
        if self._consumer_active or type(request) in _CONSUMER_REQUESTS:
            self._consumer_active = True
            if self._consumer_may_be_due(now):
                self._fire_consumer_due(now)
        # tuple.__new__ skips the namedtuple's Python-level __new__, a sixth of a Heartbeat's cost otherwise.
        handler(request, _new_tuple(RequestContext, (handle, version, now, client_id, client_host)))
        out = self._out
        self._out = []
        return out

    def tick(self, now):
        """Fire every timer due at ``now`` (both protocols'); return the replies that became ready."""
        self._now_ms = now
        self._fire_due(now)
        if self._consumer_active:
            self._fire_consumer_due(now)
        return self._drain()

    def next_deadline(self):
        """The time (ms) at which :meth:`tick` has work to do, or None if no timer is armed."""
        mine = self._timers.next_deadline()
        if not self._consumer_active:
            return mine
        theirs = self._consumer.next_deadline()
        if mine is None or theirs is None:
            return theirs if mine is None else mine
        return min(mine, theirs)

    def close(self):
        """Let go of everything: afterwards a request is refused (GroupProtocolError) and a tick does nothing.

        Its request tables, its group registries and its consumer-protocol side hold its own bound methods,
        so a dropped coordinator is a reference cycle that only the cyclic garbage collector frees, with all
        its groups and members.  After this it is freed as soon as its caller drops it; a caller that makes
        many short-lived coordinators (the migration what-if makes one per replayed group) spares the
        collector that work."""
        self._handlers = {}
        self._classic_handlers = {}
        self._groups = self._consumer_groups = self._consumer = self._consumer_may_be_due = None
        self._consumer_active = False
        self._timers = Timers()   # nothing left to fire: tick() answers nothing, next_deadline() None

    @property
    def deadlines_queued(self):
        """A count that grows whenever a timer of either protocol is queued: while it stands still,
        :meth:`next_deadline` can only have moved later (a session timer re-armed, a timer cancelled or fired)
        or stayed, so a caller that already waits for an earlier time need not ask again."""
        if self._consumer_active:
            return self._timers.pushes + self._consumer.deadlines_queued
        return self._timers.pushes

    def set_topics(self, topics):
        """The cluster's topics, ``{name: (topic_id_16_bytes, partitions)}``, replacing the previous set: the
        server calls it whenever a topic is created, grows or is deleted.  Consumer groups subscribed to a
        changed topic refresh their metadata, and bump their epoch, on their next heartbeat
        (``GroupMetadataManager.onNewMetadataImage``).  Returns the ids of those groups."""
        self._consumer_active = True
        return self._consumer.set_topics(topics)

    @property
    def consumer(self):
        """The :class:`ConsumerGroupCoordinator` that runs the consumer-protocol groups (inspection: its
        ``group(id)``, ``assignments_computed``, ``config``)."""
        self._consumer_active = True
        return self._consumer

    def unload_group(self, group_id, now):
        """The coordinator stops owning ``group_id`` (Kafka: its offsets partition moved away).

        Parked requests are answered NOT_COORDINATOR, as ``GroupMetadataManager.onUnloaded`` does, the
        group passes through Dead and is forgotten with its timers (its offsets stay).  Returns the replies."""
        group = self._groups.pop(group_id)
        if group is not None:
            if group.state == PREPARING_REBALANCE:
                for member in group.members.values():
                    if member.join is not None:
                        self._reply_join(member.join, self._join_error(member.join[1], ErrorCode.NOT_COORDINATOR, ""))
                        group.park_join(member, None)
            elif group.state in (COMPLETING_REBALANCE, STABLE):
                for member in group.parked_syncs.values():
                    self._reply_sync(member.sync, ErrorCode.NOT_COORDINATOR)
                    member.sync = None
                group.parked_syncs.clear()
            self._tear_down(group, now)
        return self._drain()

    def _tear_down(self, group, now):
        # The end of a group the registry has already forgotten (unloaded, or deleted by the lifetime
        # rule, when it has no members and so nothing parked).
        group.to(DEAD, now)
        self._cancel_timers(group)

    # -- the read surface for DescribeGroups, ListGroups and offsets -----------------------------------

    def group_ids(self):
        """Every group's id, classic then consumer-protocol."""
        return self._groups.ids() + self._consumer_groups.ids()

    def has_group(self, group_id):
        return group_id in self._groups or group_id in self._consumer_groups

    def group_type(self, group_id):
        """"classic", "consumer" (ListGroups v5's GroupType), or None for an id no group has."""
        if group_id in self._groups:
            return CLASSIC_GROUP_TYPE
        return CONSUMER_GROUP_TYPE if group_id in self._consumer_groups else None

    def group_state(self, group_id):
        """The classic group's :class:`GroupState`, or None for a group this coordinator does not have: what
        :meth:`describe_group` says of the state, without building the view."""
        group = self._groups.get(group_id)
        return None if group is None else group.state

    def has_member(self, group_id, member_id):
        """Whether the classic group ``group_id`` has the member ``member_id`` (joined, not pending)."""
        group = self._groups.get(group_id)
        return group is not None and member_id in group.members

    def describe_group(self, group_id):
        """A :class:`GroupView`, or None for a group this coordinator does not have (DescribeGroups then
        answers NONE with state "Dead")."""
        group = self._groups.get(group_id)
        return None if group is None else group.describe()

    def list_groups(self, states=None, types=None):
        """``[(group_id, protocol_type, state, group_type)]`` of both group types, as ``GroupMetadataManager
        .listGroups``: ``states`` compares lower-cased names (ListGroups v4+); ``types`` is parsed
        case-insensitively and an unknown type matches nothing (v5+); empty or None filters nothing."""
        wanted = {s.strip().lower() for s in states} if states else None
        kinds = {t.strip().lower() for t in types} if types else None
        out = []
        if kinds is None or CLASSIC_GROUP_TYPE in kinds:
            out = [(g.group_id, g.protocol_type or "", g.state, CLASSIC_GROUP_TYPE) for g in self._groups.values()
                   if wanted is None or g.state.lower() in wanted]
        return out + self._consumer.list_groups(states, types)

    def committed(self, group_id, topic, partition):
        """``(offset, leader_epoch, metadata)`` committed for a partition, or ``(-1, -1, "")``."""
        return self._offsets.committed(group_id, topic, partition)

    def validate_offset_commit(self, group_id, generation_id, member_id, group_instance_id, *, version, now):
        """The group-level checks of OffsetCommit (``ClassicGroup.validateOffsetCommit`` and
        ``OffsetMetadataManager.validateOffsetCommit``): returns the error code every partition gets, NONE
        if the commit may be stored.

        Side effects as Kafka's: an unknown group with ``generation_id < 0`` is created as a simple
        group (Empty, no protocol type); an accepted member commit in Stable or PreparingRebalance
        re-arms that member's session timer."""
        error = self._consumer.validate_offset_commit(group_id, member_id, generation_id, version)
        if error is not None:
            return error   # a consumer group: its member-epoch checks (ConsumerGroup.validateOffsetCommit)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id < 0:
                if self._groups.create(group_id, ClassicGroup, now) is None:
                    return ErrorCode.COORDINATOR_NOT_AVAILABLE
                return NONE
            return ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
        error = group.validate_offset_commit(generation_id, member_id, group_instance_id)
        if not error and group.state in (STABLE, PREPARING_REBALANCE):
            member = group.members[member_id]
            self._arm_session(group, member_id, now + member.session_timeout_ms)
        return error

    # -- OffsetCommit (GroupMetadataManager / OffsetMetadataManager.commitOffset) -----------------------

    def _offset_commit(self, req, ctx):
        version, now = ctx.version, ctx.now
        generation = req.generation_id_or_member_epoch if version >= 1 else -1
        member_id = req.member_id if version >= 1 else ""
        instance_id = req.group_instance_id if version >= 7 else None
        # The group-level verdict, copied into every partition (OffsetCommitRequest.getErrorResponse).
        error = self.validate_offset_commit(req.group_id, generation, member_id, instance_id, version=version,
                                            now=now)
        if error == ErrorCode.COORDINATOR_NOT_AVAILABLE and req.group_id not in self._groups:
            self._refuse_new_group(req.group_id, ctx)
        exists = self._partition_exists
        stored = self._offsets.partitions_of(req.group_id) if not error else None
        topics = []
        for topic in req.topics:
            partitions = []
            for p in topic.partitions:
                code = error
                if not code and exists is not None and not exists(topic.name, p.partition_index):
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                metadata = p.committed_metadata or ""  # null is stored as ""
                if not code and len(metadata.encode()) > self.offset_metadata_max_bytes:
                    code = ErrorCode.OFFSET_METADATA_TOO_LARGE
                if not code:
                    epoch = p.committed_leader_epoch if version >= 6 else -1
                    stored[(topic.name, p.partition_index)] = (p.committed_offset, epoch, metadata)
                partitions.append(OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code))
            topics.append(OffsetCommitResponseTopic(name=topic.name, partitions=partitions))
        if stored is not None:
            self._offsets.drop_if_empty(req.group_id)  # a commit of nothing stored leaves no offsets behind
        self._out.append(Reply(ctx.handle, version, OffsetCommitResponse(topics=topics)))
        self._groups.settle(req.group_id, now)
        self._consumer_groups.settle(req.group_id, now)

    # -- OffsetFetch: every state, no member or generation checks for classic groups; a consumer group
    #    checks the member and its epoch from v9 (ConsumerGroup.validateOffsetFetch) ------------------------

    def _offset_fetch(self, req, ctx):
        version = ctx.version
        fetch = self._offsets.fetch
        if version >= 8:
            groups = []
            for g in req.groups:
                error = self._consumer.validate_offset_fetch(g.group_id, g.member_id, g.member_epoch) \
                    if version >= 9 else None
                if error:
                    groups.append(OffsetFetchResponseGroup(group_id=g.group_id, error_code=error, topics=[]))
                    continue
                topics = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
                rows = fetch(g.group_id, topics)
                groups.append(OffsetFetchResponseGroup(group_id=g.group_id, error_code=NONE, topics=[
                    OffsetFetchResponseTopics(name=name, partitions=[
                        OffsetFetchResponsePartitions(partition_index=i, committed_offset=o, committed_leader_epoch=e,
                                                      metadata=m, error_code=NONE)
                        for i, o, e, m in parts])
                    for name, parts in rows]))
            self._out.append(Reply(ctx.handle, version, OffsetFetchResponse(groups=groups)))
            return
        topics = None if req.topics is None else [(t.name, t.partition_indexes) for t in req.topics]
        rows = fetch(req.group_id, topics)
        with_epoch = version >= 5
        response = OffsetFetchResponse(topics=[
            OffsetFetchResponseTopic(name=name, partitions=[
                OffsetFetchResponsePartition(partition_index=i, committed_offset=o,
                                             committed_leader_epoch=e if with_epoch else -1, metadata=m,
                                             error_code=NONE)
                for i, o, e, m in parts])
            for name, parts in rows])
        self._out.append(Reply(ctx.handle, version, response))

    # -- DescribeGroups and ListGroups (GroupMetadataManager.describeGroups / listGroups) ---------------

    def _describe_groups(self, req, ctx):
        version = ctx.version
        described = []
        for group_id in req.groups:
            view = self.describe_group(group_id)
            if view is None:
                # Unknown: NONE with state Dead, as GroupMetadataManager.describeGroups answers.
                described.append(DescribedGroup(group_id=group_id, group_state=DEAD))
                continue
            described.append(DescribedGroup(
                group_id=group_id, group_state=view.state, protocol_type=view.protocol_type,
                protocol_data=view.protocol_name,
                members=[DescribedGroupMember(member_id=m.member_id,
                                              group_instance_id=m.group_instance_id if version >= 4 else None,
                                              client_id=m.client_id, client_host=m.client_host,
                                              member_metadata=m.metadata, member_assignment=m.assignment)
                         for m in view.members]))
        self._out.append(Reply(ctx.handle, version, DescribeGroupsResponse(groups=described)))

    def _list_groups(self, req, ctx):
        version = ctx.version
        states = req.states_filter if version >= 4 else None
        types = req.types_filter if version >= 5 else None
        listed = [ListedGroup(group_id=g, protocol_type=p, group_state=s if version >= 4 else "",
                              group_type=t if version >= 5 else "")
                  for g, p, s, t in self.list_groups(states, types)]
        self._out.append(Reply(ctx.handle, version, ListGroupsResponse(groups=listed)))

    # -- timers ---------------------------------------------------------------------------------------

    def _fire_due(self, now):
        timers, groups = self._timers, self._groups
        while True:
            due = timers.pop_due(now)
            if due is None:
                return
            key, payload = due
            group_id = key[1]
            if key[0] == EXPIRE:
                groups.expire(group_id, now)   # the id is one type's; the other registry has no such group
                self._consumer_groups.expire(group_id, now)
                continue
            group = groups.get(group_id)
            if group is None:
                continue
            self._classic_timer(group, key, payload, now)
            groups.settle(group_id, now)

    def _drain(self):
        out = self._out
        self._out = []
        return out
