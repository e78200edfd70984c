"""Classic-protocol members inside a consumer group (Kafka's mixed groups, the online upgrade and downgrade).

A mixin of :class:`~kwire.group._consumer_coordinator.ConsumerGroupCoordinator`.  A consumer that still speaks
the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) may belong to a consumer group: the group
computes its assignment with the server assignor like any member's, and the member learns of it through rounds
of JoinGroup and SyncGroup.  It rejoins when the group's Heartbeat answer is REBALANCE_IN_PROGRESS, which it
gets whenever its share moves.  The methods follow ``GroupMetadataManager.classicGroupJoinToConsumerGroup``,
``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup`` and
``classicGroupLeaveToConsumerGroup``.  The conversions of a whole group (``convertToConsumerGroup``,
``convertToClassicGroup``) are built here from and into :class:`ClassicMemberInfo`, the neutral description
the classic side reads and writes.
"""

from typing import NamedTuple, Optional

from kwire.codec import (
    Assignment,
    AssignmentTopicPartition,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ErrorCode,
    JoinGroupResponse,
    LeaveGroupResponse,
    MemberResponse,
    Subscription,
    SyncGroupResponse,
)
from kwire.errors import KwireError

from ._consumer_group import ConsumerGroup, ConsumerGroupMember, GroupInvariantError
from ._reconcile import ConsumerMemberState

__all__ = ["ClassicMetadata", "ClassicMemberInfo", "CONSUMER_PROTOCOL_TYPE", "subscription_of"]

CONSUMER_PROTOCOL_TYPE = "consumer"
_MAX_EMBEDDED_VERSION = 3   # ConsumerProtocolSubscription / ConsumerProtocolAssignment versions kwire has

# Timer kinds of a classic member (with the group id and member id): it must SyncGroup within its rebalance
# timeout after a JoinGroup, and JoinGroup within it after a REBALANCE_IN_PROGRESS (Kafka's sync-/join- keys).
CLASSIC_SYNC = "consumer-classic-sync"
CLASSIC_JOIN = "consumer-classic-join"


class ClassicMetadata(NamedTuple):
    """``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``: what a classic member told its JoinGroup."""
    session_timeout_ms: int
    protocols: tuple   # ((name, metadata bytes), ...) in the client's order

    def first_protocol(self):
        return self.protocols[0][0]

    def embedded_version(self):
        """The version its first protocol's Subscription was written at (its Assignment is written at it too,
        ``GroupMetadataManager.prepareAssignment``), clamped to the versions kwire has."""
        metadata = self.protocols[0][1]
        version = int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0
        return min(max(version, 0), _MAX_EMBEDDED_VERSION)


class ClassicMemberInfo(NamedTuple):
    """One member crossing between the group types: a classic group's member, as a conversion reads or writes
    it.  ``assignment`` is the embedded protocol's Assignment bytes."""
    member_id: str
    instance_id: Optional[str]
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple
    assignment: bytes
    selected_protocol: Optional[str] = None   # whose metadata holds the subscription (None: the first)

    def subscription_metadata(self):
        for name, metadata in self.protocols:
            if name == self.selected_protocol:
                return metadata
        return self.protocols[0][1] if self.protocols else None


class _Bad(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


def subscription_of(metadata):
    """The classic member's ConsumerProtocolSubscription; a malformed one is ``_Bad(INCONSISTENT_GROUP_PROTOCOL)``."""
    try:
        return Subscription.decode(metadata)
    except (KwireError, ValueError) as error:
        raise _Bad(ErrorCode.INCONSISTENT_GROUP_PROTOCOL) from error


def _join_error(version, code, member_id=""):
    return JoinGroupResponse(error_code=code, generation_id=-1, member_id=member_id, leader="",
                             protocol_name=None if version >= 7 else "")


class ClassicMembers:
    """The classic-member handlers of ``ConsumerGroupCoordinator`` (a mixin; see the module)."""

    # -- what the classic side asks ---------------------------------------------------------------------------

    def classic_protocols_supported(self, group, protocol_type, names):
        """``ConsumerGroup.supportsClassicProtocols``: type "consumer" and one name every classic member lists
        (vacuously true when there is none)."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
            return False
        wanted = set(names)
        for member in group.members.values():
            if member.classic is not None:
                wanted &= {name for name, _m in member.classic.protocols}
                if not wanted:
                    return False
        return True

    def _owned_ids(self, subscription):
        """The Subscription's owned partitions (by topic name) as heartbeat TopicPartitions by topic id; topics
        the metadata does not know are dropped (``GroupMetadataManager.toTopicPartitions``)."""
        topics = self._topics
        out = []
        for tp in subscription.owned_partitions:
            meta = topics.get(tp.topic)
            if meta is not None:
                out.append(ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=meta[0], partitions=list(tp.partitions)))
        return out

    def _assignment_bytes(self, assigned, version):
        names = {tid: name for name, (tid, _n) in self._topics.items()}
        return Assignment(assigned_partitions=[
            AssignmentTopicPartition(topic=names[tid], partitions=sorted(ps))
            for tid, ps in sorted(assigned.items()) if tid in names]).encode(version)

    # -- JoinGroup (classicGroupJoinToConsumerGroup) ----------------------------------------------------------

    def classic_join(self, req, version, now, client_id="", client_host="/127.0.0.1"):
        """A classic JoinGroup for a consumer group with members: the JoinGroupResponse (never parked)."""
        if self._timers.may_be_due(now):
            self._fire_due(now)
        group = self._groups.get(req.group_id)
        try:
            return self._classic_join(group, req, version, now, client_id, client_host)
        except _Bad as bad:
            return _join_error(version, bad.code, req.member_id)
        except self._refused_type as refused:
            return _join_error(version, refused.code, req.member_id)

    def _classic_join(self, group, req, version, now, client_id, client_host):
        config = self.config
        instance_id = req.group_instance_id if version >= 5 else None
        member_id = req.member_id or self._new_member_id()
        members = group.members
        if len(members) >= config.max_size and (not req.member_id or member_id not in members):
            return _join_error(version, ErrorCode.GROUP_MAX_SIZE_REACHED, req.member_id)
        protocols = tuple((p.name, p.metadata) for p in req.protocols)
        if not self.classic_protocols_supported(group, req.protocol_type, [name for name, _m in protocols]):
            return _join_error(version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        if instance_id is None and version >= 4 and not req.member_id:
            # Nothing is remembered: the id comes back with the member's next JoinGroup.
            return _join_error(version, ErrorCode.MEMBER_ID_REQUIRED, member_id)
        replaced = None
        if instance_id is None:
            member = members.get(member_id) or ConsumerGroupMember(member_id)
        else:
            holder_id = group.static_members.get(instance_id)
            holder = members.get(holder_id) if holder_id is not None else None
            if not req.member_id:
                # A static member rejoining with a new id takes its predecessor's place, active or not.
                member, replaced = (holder.copy_as(member_id), holder) if holder is not None \
                    else (ConsumerGroupMember(member_id), None)
            else:
                self._check_static_holder(holder, member_id, instance_id)
                member = holder
        subscription = subscription_of(protocols[0][1])
        owned = self._owned_ids(subscription)
        fake = ConsumerGroupHeartbeatRequest(
            group_id=group.group_id, member_id=member_id, member_epoch=member.member_epoch, instance_id=instance_id,
            rack_id=subscription.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms if version >= 1
            else req.session_timeout_ms, subscribed_topic_names=list(subscription.topics), server_assignor=None,
            topic_partitions=owned)
        is_new = member_id not in members or replaced is not None
        self._update(group, False, member, member_id, replaced, is_new, member.member_epoch, fake, now, client_id,
                     client_host)
        member.classic = ClassicMetadata(req.session_timeout_ms, protocols)
        gid, timers = group.group_id, self._timers
        timers.schedule((self._session_kind, gid, member_id), now + req.session_timeout_ms)
        timers.cancel((CLASSIC_JOIN, gid, member_id))
        timers.schedule((CLASSIC_SYNC, gid, member_id), now + max(member.rebalance_timeout_ms, 0))
        return JoinGroupResponse(error_code=ErrorCode.NONE, generation_id=member.member_epoch,
                                 protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0][0], leader="",
                                 skip_assignment=False, member_id=member_id, members=[])

    # -- the member checks SyncGroup and Heartbeat share ------------------------------------------------------

    def _classic_member(self, group, member_id, instance_id, generation_id):
        if instance_id is not None:
            holder_id = group.static_members.get(instance_id)
            if holder_id is None:
                raise _Bad(ErrorCode.UNKNOWN_MEMBER_ID)
            if holder_id != member_id:
                raise _Bad(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None or member.classic is None:
            raise _Bad(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != member.member_epoch:
            raise _Bad(ErrorCode.ILLEGAL_GENERATION)
        return member

    def _rebalance_in_progress(self, group, member, now):
        """``throwIfRebalanceInProgress``'s answer, with the join timer it arms when none is running."""
        key = (CLASSIC_JOIN, group.group_id, member.member_id)
        if not self._timers.scheduled(key):
            self._timers.schedule(key, now + max(member.rebalance_timeout_ms, 0))
        return ErrorCode.REBALANCE_IN_PROGRESS

    # -- SyncGroup (classicGroupSyncToConsumerGroup) ----------------------------------------------------------

    def classic_sync(self, req, version, now):
        if self._timers.may_be_due(now):
            self._fire_due(now)
        group = self._groups.get(req.group_id)
        try:
            if group is None:
                raise _Bad(ErrorCode.UNKNOWN_MEMBER_ID)
            member = self._classic_member(group, req.member_id, req.group_instance_id if version >= 3 else None,
                                          req.generation_id)
            first = member.classic.first_protocol()
            if version >= 5 and ((req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE)
                                 or (req.protocol_name is not None and req.protocol_name != first)):
                raise _Bad(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if group.group_epoch > member.member_epoch \
                    and member.state is not ConsumerMemberState.UNREVOKED_PARTITIONS:
                raise _Bad(self._rebalance_in_progress(group, member, now))
        except _Bad as bad:
            return SyncGroupResponse(error_code=bad.code)
        gid = group.group_id
        self._timers.cancel((CLASSIC_SYNC, gid, member.member_id))
        self._timers.schedule((self._session_kind, gid, member.member_id), now + member.classic.session_timeout_ms)
        # The client's assignments are ignored: the group's assignor decided; the member gets what it holds now.
        return SyncGroupResponse(error_code=ErrorCode.NONE, protocol_type=CONSUMER_PROTOCOL_TYPE,
                                 protocol_name=first,
                                 assignment=self._assignment_bytes(member.assigned, member.classic.embedded_version()))

    # -- Heartbeat (classicGroupHeartbeatToConsumerGroup) -----------------------------------------------------

    def classic_heartbeat(self, req, version, now):
        """The error code of a classic Heartbeat to a consumer group."""
        if self._timers.may_be_due(now):
            self._fire_due(now)
        group = self._groups.get(req.group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        try:
            member = self._classic_member(group, req.member_id, req.group_instance_id if version >= 3 else None,
                                          req.generation_id)
        except _Bad as bad:
            return bad.code
        self._timers.schedule((self._session_kind, group.group_id, member.member_id),
                              now + member.classic.session_timeout_ms)
        state = member.state
        if (member.member_epoch < group.group_epoch or state is ConsumerMemberState.UNREVOKED_PARTITIONS
                or (state is ConsumerMemberState.UNRELEASED_PARTITIONS and not self._waits_on_others(group, member))):
            return self._rebalance_in_progress(group, member, now)
        return ErrorCode.NONE

    @staticmethod
    def _waits_on_others(group, member):
        """``ConsumerGroup.waitingOnUnreleasedPartition``: a partition of its target not yet its own is still
        held by another member."""
        epochs = group.partition_epochs
        for topic_id, partitions in group.target_of(member.member_id).items():
            mine = member.assigned.get(topic_id, ())
            held = epochs.get(topic_id, {})
            for p in partitions:
                if p not in mine and p in held:
                    return True
        return False

    # -- LeaveGroup (classicGroupLeaveToConsumerGroup) --------------------------------------------------------

    def classic_leave(self, req, version, now):
        if self._timers.may_be_due(now):
            self._fire_due(now)
        group = self._groups.get(req.group_id)
        if version >= 3:
            identities = [(m.member_id, m.group_instance_id) for m in req.members]
        else:
            identities = [(req.member_id, None)]
        errors, leaving = [], []
        for member_id, instance_id in identities:
            code, found = self._leaver(group, member_id, instance_id)
            errors.append(code)
            if found is not None and found not in leaving:
                leaving.append(found)
        for member_id in leaving:
            self._drop(group, member_id, "leave")
        if leaving:
            # One epoch bump for the whole request, and no downgrade (Kafka tries none here).
            group.subscription_metadata = group.compute_subscription_metadata(self._topics)
            group.group_epoch += 1
            if not group.members:
                self._emptied(group)
        if version >= 3:
            return LeaveGroupResponse(error_code=ErrorCode.NONE, members=[
                MemberResponse(member_id=m, group_instance_id=i, error_code=e)
                for (m, i), e in zip(identities, errors)])
        return LeaveGroupResponse(error_code=errors[0])

    @staticmethod
    def _leaver(group, member_id, instance_id):
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, None
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            holder_id = group.static_members.get(instance_id)
            if holder_id is None:
                return ErrorCode.UNKNOWN_MEMBER_ID, None
            if member_id and holder_id != member_id:
                return ErrorCode.FENCED_INSTANCE_ID, None
            member = group.members.get(holder_id)
        if member is None or member.classic is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, None
        return ErrorCode.NONE, member.member_id

    # -- the upgrade: a classic group becomes a consumer group (convertToConsumerGroup) -----------------------

    def adopt_classic_group(self, group_id, generation_id, members, now):
        """Build and install the consumer group of a classic group's ``members`` (:class:`ClassicMemberInfo`,
        each holding its assignment at ``generation_id``): group and target epoch = the generation, every member
        STABLE at it with its assignment as current and target.  Returns False, installing nothing, when an
        embedded Subscription or Assignment is malformed or two members hold one partition."""
        group = ConsumerGroup(group_id)
        group.group_epoch = group.target_epoch = generation_id
        topics = self._topics
        try:
            for info in members:
                metadata = info.subscription_metadata()
                subscription = subscription_of(metadata) if metadata is not None else None
                assignment = Assignment.decode(info.assignment) if info.assignment else None
                member = ConsumerGroupMember(info.member_id)
                member.instance_id = info.instance_id
                member.client_id, member.client_host = info.client_id, info.client_host
                member.rebalance_timeout_ms = info.rebalance_timeout_ms
                member.member_epoch = member.previous_member_epoch = generation_id
                member.rack_id = subscription.rack_id if subscription is not None else None
                assigned = {}
                for tp in (assignment.assigned_partitions if assignment is not None else ()):
                    meta = topics.get(tp.topic)
                    if meta is not None and tp.partitions:
                        assigned[meta[0]] = frozenset(tp.partitions)
                member.assigned = assigned
                member.classic = ClassicMetadata(info.session_timeout_ms, tuple(info.protocols))
                group.add_member(member)
                group.update_subscription(member, frozenset(subscription.topics) if subscription else frozenset())
                group.target[info.member_id] = assigned
        except (_Bad, KwireError, ValueError, GroupInvariantError):
            return False
        group.subscription_metadata = group.compute_subscription_metadata(topics)
        group.metadata_expired = False
        self._groups[group_id] = group
        for info in members:
            self._timers.schedule((self._session_kind, group_id, info.member_id), now + info.session_timeout_ms)
        return True

    # -- the downgrade: a consumer group of classic members becomes a classic group (convertToClassicGroup) ---

    def downgrade_allowed(self, group, leaver_id, classic_max_size):
        """``validateOnlineDowngradeWithFencedMember``: the leaver is the last consumer-protocol member of a
        group of more than one, the policy allows downgrades and the rest fit a classic group."""
        if self.config.migration_policy not in ("downgrade", "bidirectional"):
            return False
        members = group.members
        if len(members) <= 1 or len(members) - 1 > classic_max_size:
            return False
        return all(m.classic is not None for mid, m in members.items() if mid != leaver_id)

    def classic_members_of(self, group, leaver_id):
        """The members but the leaver as :class:`ClassicMemberInfo`, each holding its *target* assignment written
        at its own embedded protocol version."""
        out = []
        for mid, m in group.members.items():
            if mid == leaver_id:
                continue
            out.append(ClassicMemberInfo(mid, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                         m.classic.session_timeout_ms, m.classic.protocols,
                                         self._assignment_bytes(group.target_of(mid), m.classic.embedded_version())))
        return out
