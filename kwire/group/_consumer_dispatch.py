"""The consumer protocol (KIP-848) inside :class:`~kwire.group.GroupCoordinator`: one group id space, one offset
store, one set of timers.

A mixin, like ``_classic_rebalance.py``: the coordinator owns ``_consumer`` (the
:class:`~kwire.group._consumer_coordinator.ConsumerGroupCoordinator`, whose groups live in ``_consumer_groups``,
a :class:`~kwire.group._registry.GroupRegistry` sharing the coordinator's timers and offset store), and this
module answers ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) through the coordinator's ``handle``,
and keeps the two group types apart:

* a group id is a classic group or a consumer group, never both.  Kafka keeps both types in one map
  (``GroupMetadataManager.groups``); here they are two registries and these checks keep their keys disjoint;
* a consumer-protocol join (epoch 0) to an *empty* classic group deletes that group and takes its id
  (``GroupMetadataManager.maybeDeleteEmptyClassicGroup``); to a classic group with members it answers
  GROUP_ID_NOT_FOUND (``getOrMaybeCreateConsumerGroup``, as when ``validateOnlineUpgrade`` refuses);
* a consumer-protocol join to a classic group *with* members converts it when
  ``group.consumer.migration.policy`` allows an upgrade (``validateOnlineUpgrade``, ``convertToConsumerGroup``):
  the classic members stay, inside the consumer group, with the assignments they had; parked JoinGroup and
  SyncGroup requests are answered REBALANCE_IN_PROGRESS;
* a classic JoinGroup to an *empty* consumer group deletes it and proceeds as a classic join
  (``maybeDeleteEmptyConsumerGroup``); to a consumer group with members, and SyncGroup, Heartbeat and LeaveGroup
  for a consumer group, are handled inside that group (``_consumer_classic.py``: the mixed group);
* when the last consumer-protocol member of a group of classic members is fenced or leaves and the policy allows
  a downgrade, the group becomes a classic group again (``convertToClassicGroup``) and rebalances;
* the lifetime rule of ``_registry.py`` applies to consumer groups after each heartbeat, commit and timer: an
  empty consumer group without committed offsets goes away.
"""

from kwire.codec import ErrorCode, HeartbeatResponse

from ._classic_group import EMPTY, STABLE, ClassicGroup, ClassicMember
from ._consumer_classic import CONSUMER_PROTOCOL_TYPE, ClassicMemberInfo
from ._consumer_coordinator import GroupEmptied, MemberFenced
from ._request import Reply

_SETTLING_EVENTS = (MemberFenced, GroupEmptied)


class ConsumerDispatch:
    """The consumer-protocol handlers of :class:`~kwire.group.GroupCoordinator` (a mixin; see the module)."""

    # -- ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) ----------------------------------------

    def _consumer_heartbeat(self, req, ctx):
        now = ctx.now
        response = self._consumer.heartbeat(req, ctx.version, now, ctx.client_id, ctx.client_host)
        self._out.append(Reply(ctx.handle, ctx.version, response))
        self._settle_consumer_events(now)
        self._consumer_groups.settle(req.group_id, now)

    def _consumer_describe(self, req, ctx):
        self._out.append(Reply(ctx.handle, ctx.version, self._consumer.describe(req, ctx.version, ctx.now)))

    def _settle_consumer_events(self, now, events=None):
        """Apply the lifetime rule to every consumer group a fenced member or an emptied group touched."""
        groups = self._consumer_groups
        for event in self._consumer.take_events() if events is None else events:
            if isinstance(event, _SETTLING_EVENTS):
                groups.settle(event.group_id, now)

    def _fire_consumer_due(self, now):
        """The consumer coordinator's timers (sessions, revocations, deferred targets) due at ``now``."""
        if self._consumer.may_be_due(now):
            self._settle_consumer_events(now, self._consumer.tick(now))

    # -- the id space shared with classic groups -------------------------------------------------------------

    def _classic_group_lookup(self, group_id):
        """For ``ConsumerGroupCoordinator``: None if no classic group has the id, True if it is empty
        (``ClassicGroup.isEmpty``: state Empty), False if it has members."""
        group = self._groups.get(group_id)
        return None if group is None else group.state == EMPTY

    def _classic_group_remove(self, group_id):
        self._groups.delete(group_id, self._now_ms)

    def _tear_down_consumer(self, group, now):
        self._consumer.forget_group(group)

    # -- classic requests for a consumer group (GroupMetadataManager.classicGroupJoin and siblings) -----------

    def _join_group_routed(self, req, ctx):
        """JoinGroup: a consumer group of that id is deleted when empty, joined as a mixed group when not; else
        the classic join."""
        group = self._consumer_groups.get(req.group_id) if req.group_id else None
        if group is not None:
            if group.has_members:
                version, now = ctx.version, ctx.now
                if not self.min_session_timeout_ms <= req.session_timeout_ms <= self.max_session_timeout_ms:
                    response = self._join_error(version, ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id)
                else:
                    response = self._consumer.classic_join(req, version, now, ctx.client_id, ctx.client_host)
                self._reply_join((ctx.handle, version), response)
                self._after_consumer_request(req.group_id, now)
                return
            self._consumer_groups.delete(req.group_id, ctx.now)
        return self._join_group(req, ctx)

    def _sync_group_routed(self, req, ctx):
        version = ctx.version
        if req.group_id in self._consumer_groups and (
                version < 5 or (req.protocol_type is not None and req.protocol_name is not None)):
            self._out.append(Reply(ctx.handle, version, self._consumer.classic_sync(req, version, ctx.now)))
            self._after_consumer_request(req.group_id, ctx.now)
            return
        self._sync_group(req, ctx)

    def _heartbeat_routed(self, req, ctx):
        if req.group_id in self._consumer_groups:
            error = self._consumer.classic_heartbeat(req, ctx.version, ctx.now)
            self._out.append(Reply(ctx.handle, ctx.version, HeartbeatResponse(error_code=error)))
            self._after_consumer_request(req.group_id, ctx.now)
            return
        self._heartbeat(req, ctx)

    def _leave_group_routed(self, req, ctx):
        if req.group_id in self._consumer_groups:
            self._out.append(Reply(ctx.handle, ctx.version, self._consumer.classic_leave(req, ctx.version, ctx.now)))
            self._after_consumer_request(req.group_id, ctx.now)
            return
        self._leave_group(req, ctx)

    def _after_consumer_request(self, group_id, now):
        self._settle_consumer_events(now)
        self._consumer_groups.settle(group_id, now)

    # -- the online upgrade and downgrade ---------------------------------------------------------------------

    def _classic_group_convert(self, group_id):
        """``validateOnlineUpgrade`` then ``convertToConsumerGroup``, for a consumer-protocol join to a classic
        group with members: True once converted, else the error code to answer (None: GROUP_ID_NOT_FOUND)."""
        group = self._groups.get(group_id)
        config = self._consumer.config
        if group is None or config.migration_policy not in ("upgrade", "bidirectional"):
            return None
        if group.protocol_type != CONSUMER_PROTOCOL_TYPE or group.protocol_name is None:
            return None
        size = len(group.members)
        if size > config.max_size:
            return None
        if size == config.max_size:
            return ErrorCode.GROUP_MAX_SIZE_REACHED   # the joiner would not fit: Kafka rolls the conversion back
        infos = [ClassicMemberInfo(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                   m.session_timeout_ms, tuple(m.protocols), m.assignment, group.protocol_name)
                 for m in group.members.values()]
        now = self._now_ms
        if not self._consumer.adopt_classic_group(group_id, group.generation_id, infos, now):
            return None
        # The classic group ends: its parked requests are told to rejoin, its timers go.
        for member in group.members.values():
            if member.join is not None:
                self._reply_join(member.join, self._join_error(member.join[1], ErrorCode.REBALANCE_IN_PROGRESS,
                                                               member.member_id))
                group.park_join(member, None)
            if member.sync is not None:
                self._reply_sync(member.sync, ErrorCode.REBALANCE_IN_PROGRESS)
                member.sync = None
        group.parked_syncs.clear()
        self._groups.pop(group_id)
        self._tear_down(group, now)
        return True

    def _consumer_group_downgrade(self, group, leaver_id):
        """``validateOnlineDowngradeWithFencedMember`` then ``convertToClassicGroup``: the classic members left
        become a Stable classic group at the group epoch, holding their target assignments, which then
        rebalances.  True if done."""
        consumer = self._consumer
        if not consumer.downgrade_allowed(group, leaver_id, self.max_group_size):
            return False
        infos = consumer.classic_members_of(group, leaver_id)
        now, group_id = self._now_ms, group.group_id
        self._consumer_groups.pop(group_id)
        classic = ClassicGroup(group_id, now)
        classic.generation_id = group.group_epoch
        for info in infos:
            member = ClassicMember(info.member_id, info.instance_id, info.client_id, info.client_host,
                                   info.rebalance_timeout_ms, info.session_timeout_ms, CONSUMER_PROTOCOL_TYPE,
                                   list(info.protocols))
            member.assignment = info.assignment
            classic.add(member)
        classic.protocol_name = classic.select_protocol()
        # Written Stable, as convertToClassicGroup writes it: a construction, not a transition of the table.
        classic.previous_state, classic.state = classic.state, STABLE
        self._groups[group_id] = classic
        for info in infos:
            self._arm_session(classic, info.member_id, now + info.session_timeout_ms)
        self._prepare_rebalance(classic, now)
        self._groups.settle(group_id, now)
        return True

