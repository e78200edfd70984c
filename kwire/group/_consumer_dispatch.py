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
* a classic JoinGroup to an *empty* consumer group deletes it and proceeds as a classic join
  (``maybeDeleteEmptyConsumerGroup``); to a consumer group with members it answers INCONSISTENT_GROUP_PROTOCOL,
  as Kafka answers a JoinGroup to a group of a type it cannot join (kwire does not yet run classic members
  inside a consumer group: Kafka's ``classicGroupJoinToConsumerGroup``).  SyncGroup, Heartbeat and LeaveGroup
  for a consumer group find no classic member and answer UNKNOWN_MEMBER_ID, as Kafka's
  ``classicGroupSyncToConsumerGroup`` and siblings do for a member the group does not have;
* the lifetime rule of ``_registry.py`` applies to consumer groups after each heartbeat, commit and timer: an
  empty consumer group without committed offsets goes away.
"""

from kwire.codec import ErrorCode

from ._classic_group import EMPTY
from ._consumer_coordinator import GroupEmptied, MemberFenced
from ._request import Reply

_SETTLING_EVENTS = (MemberFenced, GroupEmptied)


class ConsumerDispatch:
    """The consumer-protocol handlers of :class:`~kwire.group.GroupCoordinator` (a mixin; see the module)."""

    # -- ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) ----------------------------------------

    def _consumer_heartbeat(self, req, ctx):
        now = ctx.now
        self._now_ms = now   # for the classic group removal the consumer coordinator may call back
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

    def _join_group_routed(self, req, ctx):
        """JoinGroup: a consumer group of that id is deleted when empty, refused when not; else the classic join."""
        group = self._consumer_groups.get(req.group_id) if req.group_id else None
        if group is not None:
            if group.has_members:
                version = ctx.version
                return self._reply_join((ctx.handle, version), self._join_error(
                    version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
            self._consumer_groups.delete(req.group_id, ctx.now)
        return self._join_group(req, ctx)

