"""The broker's side of KIP-848's consumer protocol, sans-IO: many consumer groups, one heartbeat at a time.

:class:`ConsumerGroupCoordinator` does what Kafka's ``GroupMetadataManager.consumerGroupHeartbeat`` does:
the caller passes a decoded ``ConsumerGroupHeartbeatRequest`` with ``now`` (ms) and the request header's
client id and peer host, and gets the ``ConsumerGroupHeartbeatResponse`` to send.  Time only moves through
those arguments and :meth:`tick`; :meth:`next_deadline` says when the next timer (session timeout,
revocation timeout, deferred target assignment) is due.  The topics come from the caller too
(:meth:`set_topics`), as Kafka's coordinator reads them from its metadata image.

A heartbeat runs Kafka's steps in Kafka's order, and changes nothing until every check has passed (Kafka
builds records and replays them only on success; the target assignment can still fail at the last step):

1. validation (``throwIfConsumerGroupHeartbeatRequestIsInvalid``), then leave (-1, -2) or join/heartbeat;
2. group lookup or creation at epoch 0 (``getOrMaybeCreateConsumerGroup``), the size gate
   (``throwIfConsumerGroupIsFull``), the member lookup, dynamic or static, and the member-epoch check
   (``throwIfConsumerGroupMemberEpochIsInvalid``);
3. the member's new fields, the subscription metadata and the group-epoch bump;
4. the target assignment, when the group epoch is ahead of it (see "assignment batching" below);
5. reconciliation (``_reconcile.reconcile``, Kafka's ``CurrentAssignmentBuilder``), the revocation timer,
   the session timer, and the response.

**Assignment batching.**  Kafka 4.0 computes the whole group's target in the first heartbeat that sees the
group epoch ahead of the target's.  When N members join at once that is N computations of an N-member
assignment: quadratic.  kwire applies Kafka 4.3's rule instead (``group.consumer.assignment.interval.ms``,
KAFKA-20251): a group computes its target at most once per interval.  A heartbeat that finds the target
behind and the interval not yet over does not compute; it reconciles the member toward the target the group
has (a joiner gets nothing yet, at that target's epoch) and a timer computes the new target when the
interval ends, so N joiners within one interval cost one computation.  The guarantees do not depend on when
the target is computed: a member's epoch only ever moves to the epoch of an installed target, and a
partition is given only when no member holds it at any epoch.  An interval of 0 restores Kafka 4.0's
behaviour exactly (the scenario tests use it).
"""

import base64
import os
from typing import NamedTuple

from kwire.codec import (
    ConsumerGroupDescribedGroup,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseTopicPartitions,
    ErrorCode,
)
from kwire.errors import AssignmentError, UnsupportedVersionError

from ._consumer_classic import CLASSIC_JOIN, CLASSIC_SYNC, ClassicMembers
from ._consumer_config import ConsumerGroupConfig
from ._consumer_views import GROUP_TYPE, described_group, listed_group, offset_commit_error, offset_fetch_error
from ._consumer_group import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroup, ConsumerGroupMember
from ._errors import GroupProtocolError
from ._reconcile import FENCED_UNKNOWN_STATE, ConsumerMemberState, owned_map, reconcile
from ._timers import Timers

from ._consumer_target import MemberChange, compute_target, prospective_metadata

__all__ = ["ConsumerGroupCoordinator", "MemberFenced", "GroupEmptied", "TargetAssignmentComputed",
           "TargetAssignmentFailed"]

_UNREVOKED = ConsumerMemberState.UNREVOKED_PARTITIONS
_MEMBER_STABLE = ConsumerMemberState.STABLE

# Timer keys: (kind, group id, member id or None).
_SESSION = "consumer-session"
_REVOKE = "consumer-rebalance"
_ASSIGN = "consumer-assign"

# Response assignment entries reuse one class; built once per changed assignment.
_TP = ConsumerGroupHeartbeatResponseTopicPartitions
_Response = ConsumerGroupHeartbeatResponse

# A NamedTuple's own constructor is namedtuple's generated __new__, a Python function: the events and the member
# change made on the way of a heartbeat are made as tuples of their class instead (the same objects, fields in
# declaration order).
_make = tuple.__new__


class MemberFenced(NamedTuple):
    """A member left the group: ``reason`` is "leave" (epoch -1), "session-timeout" or "rebalance-timeout"
    (it did not revoke in time)."""
    group_id: str
    member_id: str
    reason: str


class GroupEmptied(NamedTuple):
    """The group's last member is gone: the group may be deleted once it also has no committed offsets
    (``ConsumerGroupCoordinator.delete_group``)."""
    group_id: str


class TargetAssignmentComputed(NamedTuple):
    group_id: str
    epoch: int
    assignor: str
    members: int


class TargetAssignmentFailed(NamedTuple):
    """The assignor refused the group's input (``PartitionAssignorException``); nothing was stored."""
    group_id: str
    epoch: int
    message: str


class _Refused(Exception):
    """An error answer: Kafka's ApiException with its code and message."""

    def __init__(self, code, message=None):
        super().__init__(message)
        self.code = code
        self.message = message


def _unknown_member(member_id, group):
    """``ConsumerGroup.getOrMaybeCreateMember``'s refusal."""
    return _Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")


def _blank(value):
    return value is not None and not value.strip()


def random_member_id():
    """``Uuid.randomUuid().toString()``: 16 random bytes as unpadded base64url, never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def _is_subset(owned_partitions, assigned):
    """``GroupMetadataManager.isSubset``: null is not a subset; a topic not assigned fails."""
    if owned_partitions is None:
        return False
    for tp in owned_partitions:
        mine = assigned.get(tp.topic_id)
        if mine is None:
            if tp.partitions:
                return False
            continue
        for p in tp.partitions:
            if p not in mine:
                return False
    return True


def _assignment_message(assigned):
    # Topics in id order: the assignors' dicts carry their twin's own iteration order, and an answer's bytes
    # must not depend on which twin computed the target (clients read it as a set).
    return ConsumerGroupHeartbeatAssignment(
        topic_partitions=[_TP(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(assigned.items())])


class _Coordinator:
    """:class:`ConsumerGroupCoordinator` but its classic members: a class of its own so that, compiled, it can
    be a C type (``_consumer_coordinator.pxd``), which a class with a plain-Python base cannot be."""

    def __init__(self, config=None, *, topics=None, member_id_factory=None, classic_group_lookup=None,
                 classic_group_remove=None, groups=None, classic_group_convert=None, classic_group_downgrade=None):
        """``classic_group_lookup(group_id)`` tells about a classic group of that id kept elsewhere (the classic
        ``GroupCoordinator``): None if there is none, True if it is empty, False if it has members.
        ``classic_group_remove(group_id)`` deletes an empty one when a consumer group takes its id
        (``GroupMetadataManager.getOrMaybeCreateConsumerGroup``).  Without them group ids are not shared.
        ``groups`` is the mapping the groups live in (the classic ``GroupCoordinator`` passes its consumer-group
        :class:`GroupRegistry`, whose lifetime rule then deletes an empty group without offsets); a dict if
        None.  ``classic_group_convert(group_id)`` is asked when a consumer-protocol member joins a classic group
        with members (the online upgrade): it returns True once the group was converted (``adopt_classic_group``),
        or the error code to answer.  ``classic_group_downgrade(group, leaver_id)`` is asked before a member is
        fenced: True if it turned the group into a classic group (the online downgrade), which then is no longer
        here."""
        self._classic_convert = classic_group_convert
        self._classic_downgrade = classic_group_downgrade
        self.config = config if isinstance(config, ConsumerGroupConfig) else ConsumerGroupConfig(config)
        self._classic_lookup = classic_group_lookup
        self._classic_remove = classic_group_remove
        self._groups = {} if groups is None else groups
        self._topics = {}
        self._timers = Timers()
        self._events = []
        self._new_member_id = member_id_factory or random_member_id
        self.assignments_computed = 0   # how many target assignments were computed, over all groups
        self._last_assignor = None
        self._name_sets = {}
        if topics:
            self.set_topics(topics)

    # -- the driving surface ----------------------------------------------------------------------------

    def heartbeat(self, req, version, now, client_id="", client_host="/127.0.0.1"):
        """One ConsumerGroupHeartbeat: returns its ConsumerGroupHeartbeatResponse."""
        if type(req) is not ConsumerGroupHeartbeatRequest:
            raise GroupProtocolError(f"heartbeat() takes a ConsumerGroupHeartbeatRequest, not {type(req).__name__}")
        if not 0 <= version <= 1:
            raise UnsupportedVersionError(f"ConsumerGroupHeartbeatRequest has versions 0-1, not {version}")
        if self._timers.may_be_due(now):
            self._fire_due(now)
        # The steady heartbeat, most of a stable group's traffic, decided here at once: a plain delta heartbeat
        # (epoch > 0, every optional field null) of a known member at the group's target epoch, reconciled,
        # nothing to refresh.  Every check _heartbeat would make then passes and its steady branch answers; a
        # blank group id cannot name a group, so only the member id's blankness is left to test.
        epoch = req.member_epoch
        group = self._groups.get(req.group_id)
        if (group is not None and epoch > 0 and req.instance_id is None and req.rack_id is None
                and req.server_assignor is None and req.subscribed_topic_names is None
                and req.rebalance_timeout_ms == -1 and not req.subscribed_topic_regex
                and not group.metadata_expired and group.group_epoch == epoch == group.target_epoch
                and self.config.consumer_protocol_enabled):
            member = group.members.get(req.member_id)
            if (member is not None and member.member_epoch == epoch and member.state is _MEMBER_STABLE
                    and member.client_id == client_id and member.client_host == client_host
                    and req.member_id.strip()):
                config = self.config
                self._timers.schedule((_SESSION, group.group_id, member.member_id), now + config.session_timeout_ms)
                return _Response(member_id=member.member_id, member_epoch=epoch,
                                 heartbeat_interval_ms=config.heartbeat_interval_ms)
        try:
            return self._heartbeat(req, now, client_id, client_host)
        except _Refused as refused:
            return _Response(error_code=refused.code, error_message=refused.message)

    def answer(self, request, version, now, client_id="", client_host="/127.0.0.1"):
        """The response to a ConsumerGroupHeartbeat (68) or ConsumerGroupDescribe (69) request: what a server's
        dispatch calls for those two api keys (``handles`` says whether a request is one of them)."""
        if type(request) is ConsumerGroupDescribeRequest:
            return self.describe(request, version, now)
        return self.heartbeat(request, version, now, client_id, client_host)

    @staticmethod
    def handles(request):
        return type(request) is ConsumerGroupHeartbeatRequest or type(request) is ConsumerGroupDescribeRequest

    def tick(self, now):
        """Fire every timer due at ``now``; return the events since the last call (members fenced, groups
        emptied, targets computed)."""
        self._fire_due(now)
        events, self._events = self._events, []
        return events

    def next_deadline(self):
        """When :meth:`tick` has work to do (ms), or None."""
        return self._timers.next_deadline()

    @property
    def deadlines_queued(self):
        """A count that grows whenever a timer is queued: while it stands still, :meth:`next_deadline` can
        only have moved later (a session timer re-armed, a timer cancelled or fired) or stayed, so a caller
        that already waits for an earlier time need not ask again."""
        return self._timers.pushes

    def may_be_due(self, now):
        """False only when no timer can be due at ``now`` (cheap: the caller's hot path asks it)."""
        return self._timers.may_be_due(now)

    @property
    def has_events(self):
        """Whether :meth:`take_events` has something to return."""
        return bool(self._events)

    def take_events(self):
        """The events since the last call (or :meth:`tick`), for a caller that fires timers through requests."""
        events, self._events = self._events, []
        return events

    def forget_group(self, group):
        """A group the caller's registry deleted (the lifetime rule): cancel the timers it may still have."""
        self._timers.cancel((_ASSIGN, group.group_id, None))
        for member_id in group.members:
            self._cancel_member_timers(group.group_id, member_id)

    def _cancel_member_timers(self, group_id, member_id):
        for kind in (_SESSION, _REVOKE, CLASSIC_SYNC, CLASSIC_JOIN):
            self._timers.cancel((kind, group_id, member_id))

    def set_topics(self, topics):
        """The topics that exist, ``{name: (topic_id_bytes, partitions)}``, replacing the previous set.

        A group subscribed (by name) to a topic that was created, deleted or changed refreshes its
        subscription metadata on its next heartbeat and, if it changed, bumps its epoch
        (``GroupMetadataManager.onNewMetadataImage`` resets the group's refresh deadline).  Returns the ids of
        those groups."""
        new = {}
        for name, (topic_id, partitions) in topics.items():
            if not isinstance(topic_id, bytes) or len(topic_id) != 16:
                raise GroupProtocolError(f"topic {name!r}: a topic id is 16 bytes, got {topic_id!r}")
            new[name] = (topic_id, int(partitions))
        old = self._topics
        changed = {n for n in old.keys() | new.keys() if old.get(n) != new.get(n)}
        self._topics = new
        touched = []
        if changed:
            for group in self._groups.values():
                if not changed.isdisjoint(group.subscribed_names):
                    group.metadata_expired = True
                    touched.append(group.group_id)
        return touched

    def topic_name(self, topic_id):
        for name, (tid, _n) in self._topics.items():
            if tid == topic_id:
                return name
        return None

    # -- the read surface: ConsumerGroupDescribe, ListGroups, DescribeGroups, offsets, lifetime -----------

    def describe(self, req, version, now=None):
        """ConsumerGroupDescribe (69): one described group per requested id, each answered once."""
        if type(req) is not ConsumerGroupDescribeRequest:
            raise GroupProtocolError(f"describe() takes a ConsumerGroupDescribeRequest, not {type(req).__name__}")
        if not 0 <= version <= 1:
            raise UnsupportedVersionError(f"ConsumerGroupDescribeRequest has versions 0-1, not {version}")
        if not self.config.consumer_protocol_enabled:
            return ConsumerGroupDescribeResponse(groups=[
                ConsumerGroupDescribedGroup(group_id=g, error_code=ErrorCode.UNSUPPORTED_VERSION)
                for g in req.group_ids])
        names = {tid: name for name, (tid, _n) in self._topics.items()}
        default = self.config.assignors[0]
        return ConsumerGroupDescribeResponse(groups=[
            described_group(g, self._groups.get(g), names, default) for g in dict.fromkeys(req.group_ids)])

    def has_group(self, group_id):
        """True if ``group_id`` is a consumer-protocol group here (the classic coordinator then answers
        DescribeGroups for it as for a missing group: state Dead, no members, as ``GroupMetadataManager
        .describeGroups`` does at the reference commit)."""
        return group_id in self._groups

    def group_ids(self):
        return list(self._groups)

    def group_state(self, group_id):
        group = self._groups.get(group_id)
        return None if group is None else group.state()

    def group(self, group_id):
        """The :class:`ConsumerGroup` itself, for inspection (tests, tools); None if absent."""
        return self._groups.get(group_id)

    def list_groups(self, states=None, types=None):
        """``[(group_id, protocol_type, state, group_type)]`` for ListGroups: ``states`` compares lower-cased
        names (v4+), ``types`` is parsed case-insensitively and an unknown type matches nothing (v5+)."""
        if types is not None and types and GROUP_TYPE not in {t.strip().lower() for t in types}:
            return []
        wanted = {s.strip().lower() for s in states} if states else None
        out = []
        for group in self._groups.values():
            row = listed_group(group)
            if wanted is None or row[2].lower() in wanted:
                out.append(row)
        return out

    def validate_offset_commit(self, group_id, member_id, member_epoch, api_version, *, transactional=False):
        """The group-level verdict of an OffsetCommit (or TxnOffsetCommit) to a consumer group, as an
        ErrorCode; None when ``group_id`` is not a consumer group here (the classic coordinator decides,
        including creating a simple group for an epoch < 0 commit)."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        return offset_commit_error(group, member_id, member_epoch, api_version, transactional)

    def validate_offset_fetch(self, group_id, member_id, member_epoch):
        """OffsetFetch v9's member check for a consumer group; None when it is not one here (classic groups
        ignore the member fields; a missing group reads offsets -1 with no error)."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        return offset_fetch_error(group, member_id, member_epoch)

    def is_empty(self, group_id):
        """True if the consumer group exists and has no member (left, fenced or expired)."""
        group = self._groups.get(group_id)
        return group is not None and not group.members

    def delete_group(self, group_id):
        """DeleteGroups (and the offsets cleanup once a group has no offsets left): an empty consumer group is
        removed with its timers; a non-empty one answers NON_EMPTY_GROUP (``ConsumerGroup.validateDeleteGroup``),
        a missing one GROUP_ID_NOT_FOUND."""
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self._groups[group_id]
        self._timers.cancel((_ASSIGN, group_id, None))
        return ErrorCode.NONE

    # -- the heartbeat (GroupMetadataManager.consumerGroupHeartbeat) ----------------------------------------

    def _validate(self, req, epoch):
        """``throwIfConsumerGroupHeartbeatRequestIsInvalid``, its checks in its order and its words."""
        bad = ErrorCode.INVALID_REQUEST
        if not req.group_id.strip():
            raise _Refused(bad, "GroupId can't be empty.")
        if _blank(req.instance_id):
            raise _Refused(bad, "InstanceId can't be empty.")
        if _blank(req.rack_id):
            raise _Refused(bad, "RackId can't be empty.")
        # librdkafka's full heartbeat (v1) carries "" here, the member's default in Kafka's records
        # (ConsumerGroupMemberMetadataValue.SubscribedTopicRegex): an empty regex is no regex, not a refusal.
        if req.subscribed_topic_regex:
            raise _Refused(bad, "SubscribedTopicRegex is not supported yet.")
        if epoch > 0 or epoch == LEAVE_EPOCH:
            if not req.member_id.strip():
                raise _Refused(bad, "MemberId can't be empty.")
        elif epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise _Refused(bad, "RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise _Refused(bad, "TopicPartitions must be empty when (re-)joining.")
            if not req.subscribed_topic_names:
                raise _Refused(bad, "SubscribedTopicNames must be set in first request.")
        elif epoch == STATIC_LEAVE_EPOCH:
            if not req.member_id.strip():
                raise _Refused(bad, "MemberId can't be empty.")
            if req.instance_id is None:
                raise _Refused(bad, "InstanceId can't be null.")
        else:
            raise _Refused(bad, "MemberEpoch is invalid.")
        assignor = req.server_assignor
        if assignor is not None and assignor not in self.config.assignors:
            raise _Refused(ErrorCode.UNSUPPORTED_ASSIGNOR,
                           f"ServerAssignor {assignor} is not supported. Supported assignors: "
                           f"{', '.join(self.config.assignors)}.")

    def _heartbeat(self, req, now, client_id, client_host):
        config = self.config
        if not config.consumer_protocol_enabled:
            raise _Refused(ErrorCode.UNSUPPORTED_VERSION)
        epoch = req.member_epoch
        # The full validation for anything but a plain delta heartbeat; a plain one (epoch > 0, optional
        # fields null) can only fail the two blank-id checks, which are tested first here.
        if (epoch <= 0 or req.instance_id is not None or req.rack_id is not None
                or req.subscribed_topic_regex or req.server_assignor is not None
                or not req.member_id.strip() or not req.group_id.strip()):
            self._validate(req, epoch)
        if epoch < 0:
            return self._leave(req, epoch)
        group_id = req.group_id
        group = self._groups.get(group_id)
        created = group is None
        replaces_classic = False
        if created:
            replaces_classic = self._check_no_classic_group(group_id, epoch == 0, now)
            group = self._groups.get(group_id)   # a classic group converted by the online upgrade
            created = group is None
        if created:
            if epoch != 0:
                raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            group = ConsumerGroup(group_id)
        member_id = req.member_id
        members = group.members
        if len(members) >= config.max_size and (not member_id or member_id not in members):
            raise _Refused(ErrorCode.GROUP_MAX_SIZE_REACHED,
                           f"The consumer group has reached its maximum capacity of {config.max_size} members.")
        if not member_id:
            member_id = self._new_member_id()
        member, replaced = self._find_member(group, member_id, epoch, req)
        is_new = member_id not in members or replaced is not None

        # Steady state: nothing to update, nothing to recompute, already reconciled.
        names = req.subscribed_topic_names
        if (not is_new and names is None and req.server_assignor is None and req.rack_id is None
                and (req.instance_id is None or req.instance_id == member.instance_id)
                and req.rebalance_timeout_ms == -1 and not group.metadata_expired
                and group.group_epoch == group.target_epoch and member.is_reconciled_to(group.target_epoch)
                and member.client_id == client_id and member.client_host == client_host):
            self._timers.schedule((_SESSION, group_id, member_id), now + config.session_timeout_ms)
            return _Response(member_id=member_id, member_epoch=member.member_epoch,
                             heartbeat_interval_ms=config.heartbeat_interval_ms)
        response = self._update(group, created, member, member_id, replaced, is_new, epoch, req, now, client_id,
                                client_host)
        if replaces_classic:
            self._classic_remove(group_id)
        return response

    def _check_no_classic_group(self, group_id, create, now=0):
        """``getOrMaybeCreateConsumerGroup`` for an id a classic group holds: a consumer-protocol join takes the
        id of an empty classic group (True: remove it once the join succeeds), converts a classic group with
        members when the caller's ``classic_group_convert`` allows it (the online upgrade,
        ``convertToConsumerGroup``; False, the group is then here); anything else is refused."""
        classic = self._classic_lookup(group_id) if self._classic_lookup is not None else None
        if classic is None:
            return False
        if not create:
            raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if not classic:
            verdict = self._classic_convert(group_id) if self._classic_convert is not None else None
            if verdict is True:
                return False
            # validateOnlineUpgrade refused (the policy, the protocol type, the size): as Kafka answers it.
            code = verdict if verdict else ErrorCode.GROUP_ID_NOT_FOUND
            raise _Refused(code, f"Group {group_id} is not a consumer group." if code == ErrorCode.GROUP_ID_NOT_FOUND
                           else f"The consumer group has reached its maximum capacity of {self.config.max_size} "
                                f"members.")
        return self._classic_remove is not None

    def _find_member(self, group, member_id, epoch, req):
        """The member lookup, dynamic (``getOrMaybeSubscribeDynamicConsumerGroupMember``) or static
        (``getOrMaybeSubscribeStaticConsumerGroupMember``).  Returns (member, the static member it replaces or
        None); a new member is not in the group yet."""
        instance_id = req.instance_id
        members = group.members
        if instance_id is None:
            member = members.get(member_id)
            if member is None:
                if epoch != 0:
                    raise _unknown_member(member_id, group)
                member = ConsumerGroupMember(member_id)
            self._check_epoch(member, epoch, req.topic_partitions)
            return member, None
        holder_id = group.static_members.get(instance_id)
        holder = members.get(holder_id) if holder_id is not None else None
        if epoch == 0:
            if holder is None:
                member = members.get(member_id)
                return (member if member is not None else ConsumerGroupMember(member_id)), None
            if holder.member_epoch != STATIC_LEAVE_EPOCH:
                raise _Refused(ErrorCode.UNRELEASED_INSTANCE_ID,
                               f"Static member {member_id} with instance id {instance_id} cannot join the group "
                               f"because the instance id is owned by {holder.member_id} member.")
            # GroupMetadataManager.replaceMember: the new id takes the old member's place, assignment and all.
            return holder.copy_as(member_id), holder
        self._check_static_holder(holder, member_id, instance_id)
        self._check_epoch(holder, epoch, req.topic_partitions)
        return holder, None

    @staticmethod
    def _check_static_holder(holder, member_id, instance_id):
        """``throwIfStaticMemberIsUnknown`` then ``throwIfInstanceIdIsFenced``."""
        if holder is None:
            raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if holder.member_id != member_id:
            raise _Refused(ErrorCode.FENCED_INSTANCE_ID,
                           f"Static member {member_id} with instance id {instance_id} was fenced by member "
                           f"{holder.member_id}.")

    @staticmethod
    def _check_epoch(member, epoch, owned_partitions):
        """``throwIfConsumerGroupMemberEpochIsInvalid``: ahead is fenced; behind is fenced unless it is the
        previous epoch and the reported partitions are a subset of the assignment (the response that moved
        the member on may have been lost)."""
        stored = member.member_epoch
        if epoch > stored:
            raise _Refused(ErrorCode.FENCED_MEMBER_EPOCH,
                           f"The consumer group member has a greater member epoch ({epoch}) than the one known by "
                           f"the group coordinator ({stored}). The member must abandon all its partitions and "
                           f"rejoin.")
        if epoch < stored and (epoch != member.previous_member_epoch
                               or not _is_subset(owned_partitions, member.assigned)):
            raise _Refused(ErrorCode.FENCED_MEMBER_EPOCH,
                           f"The consumer group member has a smaller member epoch ({epoch}) than the one known by "
                           f"the group coordinator ({stored}). The member must abandon all its partitions and "
                           f"rejoin.")

    def _update(self, group, created, member, member_id, replaced, is_new, epoch, req, now, client_id, client_host):
        """Steps 3 to 5 of the heartbeat.  Everything that can fail runs before the first change."""
        config = self.config
        names = req.subscribed_topic_names
        old_names = member.subscribed_topic_names if not (is_new and replaced is None) else frozenset()
        new_names = self._name_set(names) if names is not None else old_names
        subscription_changed = new_names != old_names
        group_epoch = group.group_epoch
        metadata = None
        if subscription_changed or group.metadata_expired:
            metadata = prospective_metadata(group, self._topics, old_names, new_names)
            if metadata != group.subscription_metadata:
                subscription_changed = True
            if subscription_changed:
                group_epoch += 1
        new_assignor = req.server_assignor if req.server_assignor is not None else member.server_assignor

        # Step 4: the target, now if the batching interval allows it.
        target_epoch = group.target_epoch
        new_target = None
        holder_target = group.target.get(replaced.member_id) if replaced is not None else None
        if group_epoch > target_epoch and self._assignment_due(group, now):
            instance_id = req.instance_id if req.instance_id is not None else member.instance_id
            rack = req.rack_id if req.rack_id is not None else member.rack_id
            new_target = self._compute_target(
                group, group_epoch, metadata if metadata is not None else group.subscription_metadata,
                _make(MemberChange, (member_id, new_names, new_assignor, instance_id, rack, replaced, holder_target)))
            target_epoch = group_epoch
            member_target = new_target.get(member_id, {})
        elif replaced is not None:
            member_target = holder_target or {}
        else:
            member_target = group.target.get(member_id, {})

        # Step 5 (computed before anything changes: CurrentAssignmentBuilder reads the partition epochs as they
        # stand before this heartbeat's records).
        result = None
        if member.member_epoch != target_epoch or member.state is not _MEMBER_STABLE:   # is_reconciled_to
            owned = owned_map(req.topic_partitions)
            result = reconcile(member.state, member.member_epoch, member.assigned, member.pending, target_epoch,
                               member_target, owned, group.partition_epochs)
            if result == FENCED_UNKNOWN_STATE:
                raise _Refused(ErrorCode.FENCED_MEMBER_EPOCH,
                               f"The consumer group member {member_id} must release all its partitions to rejoin.")

        # -- from here on, the heartbeat succeeds: apply it ----------------------------------------------
        timers = self._timers
        group_id = group.group_id
        if created:
            self._groups[group_id] = group
        old_assigned = (replaced.assigned if replaced is not None else member.assigned)
        if replaced is not None:
            group.remove_member(replaced.member_id)
            # The copy enters uncounted; the update_* calls below count its subscription and assignor again.
            member.subscribed_topic_names = frozenset()
            member.server_assignor = None
            if holder_target is not None:
                group.target[member_id] = holder_target
        if is_new:
            if req.instance_id is not None:
                member.instance_id = req.instance_id
            group.add_member(member)
        elif req.instance_id is not None and member.instance_id != req.instance_id:
            member.instance_id = req.instance_id
            group.static_members[req.instance_id] = member_id
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if new_assignor != member.server_assignor:
            group.update_assignor(member, new_assignor)
        if new_names != member.subscribed_topic_names:
            group.update_subscription(member, new_names)
        member.client_id = client_id
        member.client_host = client_host
        if metadata is not None:
            group.subscription_metadata = metadata
            group.metadata_expired = False
        group.group_epoch = group_epoch
        if new_target is not None:
            self._install_target(group, group_epoch, new_target, now)
        elif group_epoch > group.target_epoch:
            self._defer_assignment(group)
        if result is not None:
            group.move_member(member, result.state, result.epoch, result.previous_epoch, result.assigned,
                              result.pending)
            self._after_reconcile(group, member, now)
        timers.schedule((_SESSION, group_id, member_id), now + config.session_timeout_ms)

        full = epoch == 0 or (req.rebalance_timeout_ms != -1 and names is not None
                              and req.topic_partitions is not None)
        changed = member.assigned != old_assigned
        return _Response(member_id=member_id, member_epoch=member.member_epoch,
                         heartbeat_interval_ms=config.heartbeat_interval_ms,
                         assignment=_assignment_message(member.assigned) if full or changed else None)

    def _name_set(self, names):
        """The request's subscribed names as a frozenset, shared with earlier requests that named the same
        list: in a join storm every member sends the same names, and building one set per request is most
        of a join's cost."""
        key = tuple(names)
        cache = self._name_sets
        found = cache.get(key)
        if found is None:
            if len(cache) >= 1024:
                cache.clear()
            found = cache[key] = frozenset(key)
        return found

    def _after_reconcile(self, group, member, now):
        """``GroupMetadataManager.maybeReconcile``'s timer rule: a member that must revoke gets its rebalance
        timeout (fenced then only if its epoch has not moved); leaving UNREVOKED cancels it."""
        key = (_REVOKE, group.group_id, member.member_id)
        if member.state is _UNREVOKED:
            self._timers.schedule(key, now + max(member.rebalance_timeout_ms, 0), member.member_epoch)
        else:
            self._timers.cancel(key)

    # -- the target assignment (GroupMetadataManager.updateTargetAssignment, TargetAssignmentBuilder.build) --

    def _assignment_due(self, group, now):
        interval = self.config.assignment_interval_ms
        return interval == 0 or group.last_assignment_ms is None or now >= group.last_assignment_ms + interval

    def _defer_assignment(self, group):
        key = (_ASSIGN, group.group_id, None)
        if not self._timers.scheduled(key):
            self._timers.schedule(key, group.last_assignment_ms + self.config.assignment_interval_ms)

    def _compute_target(self, group, epoch, metadata, change=None):
        try:
            target, name = compute_target(group, metadata, self.config.assignors[0], change)
        except AssignmentError as error:
            self._events.append(TargetAssignmentFailed(group.group_id, epoch, str(error)))
            raise _Refused(ErrorCode.UNKNOWN_SERVER_ERROR) from None
        self._last_assignor = name
        return target

    def _install_target(self, group, epoch, target, now):
        group.target = target
        group.target_epoch = epoch
        group.last_assignment_ms = now
        self.assignments_computed += 1
        self._timers.cancel((_ASSIGN, group.group_id, None))
        self._events.append(_make(TargetAssignmentComputed, (group.group_id, epoch, self._last_assignor, len(target))))

    # -- leaving (GroupMetadataManager.consumerGroupLeave) --------------------------------------------------

    def _leave(self, req, epoch):
        group = self._groups.get(req.group_id)
        if group is None:
            self._check_no_classic_group(req.group_id, False)
            raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
        member_id = req.member_id
        instance_id = req.instance_id
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise _unknown_member(member_id, group)
        else:
            holder_id = group.static_members.get(instance_id)
            member = group.members.get(holder_id) if holder_id is not None else None
            self._check_static_holder(member, member_id, instance_id)
            if epoch == STATIC_LEAVE_EPOCH:
                # consumerGroupStaticMemberGroupLeave: epoch -2, nothing pending; the assignment stays held and
                # no timer changes, so the session timer decides whether it comes back in time.
                group.move_member(member, member.state, STATIC_LEAVE_EPOCH, member.previous_member_epoch,
                                  member.assigned, {})
                return _Response(member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH)
        self._fence(group, member.member_id, "leave")
        return _Response(member_id=member_id, member_epoch=LEAVE_EPOCH)

    def _fence(self, group, member_id, reason):
        """``GroupMetadataManager.consumerGroupFenceMember``: tombstones, metadata without the member, and
        always an epoch bump; no target is computed here.  When the leaver is the last consumer-protocol member
        of a group of classic members, the caller's ``classic_group_downgrade`` may turn the group into a
        classic group instead (``validateOnlineDowngradeWithFencedMember``, ``convertToClassicGroup``)."""
        if self._classic_downgrade is not None and self._classic_downgrade(group, member_id):
            self._cancel_member_timers(group.group_id, member_id)
            self.forget_group(group)
            self._events.append(_make(MemberFenced, (group.group_id, member_id, reason)))
            return
        self._drop(group, member_id, reason)
        metadata = group.compute_subscription_metadata(self._topics)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
        group.group_epoch += 1
        if not group.members:
            self._emptied(group)

    def _drop(self, group, member_id, reason):
        group.remove_member(member_id)
        self._cancel_member_timers(group.group_id, member_id)
        self._events.append(_make(MemberFenced, (group.group_id, member_id, reason)))

    def _emptied(self, group):
        self._events.append(_make(GroupEmptied, (group.group_id,)))

    # -- timers -----------------------------------------------------------------------------------------------

    def _fire_due(self, now):
        for (kind, group_id, member_id), payload in self._timers.fire_due(now):
            group = self._groups.get(group_id)
            if group is None:
                continue
            if kind == _ASSIGN:
                if group.group_epoch > group.target_epoch:
                    try:
                        target = self._compute_target(group, group.group_epoch, group.subscription_metadata)
                    except _Refused:
                        # Kept behind; the next heartbeat or interval tries again.
                        group.last_assignment_ms = now
                        self._defer_assignment(group)
                        continue
                    self._install_target(group, group.group_epoch, target, now)
                continue
            member = group.members.get(member_id)
            if member is None:
                continue
            if kind == _SESSION:
                self._fence(group, member_id, "session-timeout")
            elif kind == CLASSIC_JOIN or kind == CLASSIC_SYNC:
                # A classic member that did not rejoin, or sync, within its rebalance timeout.
                self._fence(group, member_id, "rebalance-timeout")
            elif kind == _REVOKE and member.member_epoch == payload:
                self._fence(group, member_id, "rebalance-timeout")


class ConsumerGroupCoordinator(_Coordinator, ClassicMembers):
    """Consumer-protocol groups on the caller's clock.  ``config`` takes Kafka's broker keys
    (:class:`ConsumerGroupConfig`); ``topics`` is ``{name: (topic_id, partitions)}``.  Classic-protocol members
    of these groups (mixed groups) are ``_consumer_classic.py``'s."""

    _refused_type = _Refused
    _session_kind = _SESSION
