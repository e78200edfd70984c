"""The groups a coordinator owns, by id, and how long a group that nobody uses lives.

Kafka has no cap on groups; it deletes a group that is empty and has no committed offsets on its periodic
cleanup (``GroupMetadataManager.cleanupGroupMetadata``, run every ``offsets.retention.check.interval.ms``),
and members that never finish joining expire on their own timers.  The registry keeps that rule for every
group type, on the caller's clock:

* a group is *idle* when it has no members and no committed offsets (``group.has_members`` is False and
  the :class:`~kwire.group._offsets.OffsetStore` has nothing for it).  Members still being handed an id
  (``group.has_pending_members``) keep an idle group alive, but only until their own timers end them;
* an idle group with no pending members is deleted ``empty_group_retention_ms`` after it became so (0: at
  once), through the ``("expire", group_id)`` timer the coordinator fires with its others;
* with a cap (``max_groups``), a group that would be one too many first takes the place of the oldest idle
  group, pending members and all (they are answered UNKNOWN_MEMBER_ID when they come back, and join
  again); only when no group is idle is the new one refused.  So no flood of fresh groups or half-joined
  members can keep a real group out for longer than its members' session timeouts.

A group type takes part by having ``group_id``, ``has_members`` and ``has_pending_members``, and by its
coordinator calling :meth:`GroupRegistry.settle` after each request or timer that touched the group.
"""

from collections import OrderedDict

EXPIRE = "expire"


class GroupRegistry(dict):
    """Groups by id (a dict of id -> group, so that looking one up costs no Python call).  ``tear_down(group,
    now)`` is the coordinator's: it ends a group being deleted (its state, its timers); the registry then
    forgets it.  ``timers`` is the coordinator's :class:`Timers`.

    ``registry[group_id] = group`` adds a group made elsewhere outside the cap: a consumer group created by
    its first member's heartbeat, which exists only while a member's session lasts or offsets keep it.
    ``del registry[group_id]`` is :meth:`pop`."""

    __slots__ = ("_idle", "_timers", "_tear_down", "offsets", "max_groups", "retention_ms")

    def __init__(self, timers, offsets, tear_down, *, max_groups=None, empty_group_retention_ms=600_000):
        super().__init__()
        self._idle = OrderedDict()   # ids of idle groups, oldest first
        self._timers = timers
        self._tear_down = tear_down
        self.offsets = offsets
        self.max_groups = max_groups
        self.retention_ms = empty_group_retention_ms

    def __delitem__(self, group_id):
        self.pop(group_id)

    def ids(self):
        return list(self)

    def create(self, group_id, make, now):
        """A new group ``make(group_id, now)``, or None if the cap is reached and no group is idle."""
        if self.max_groups is not None and len(self) >= self.max_groups:
            if not self._idle:
                return None
            oldest, _ = self._idle.popitem(last=False)
            self.delete(oldest, now)
        group = make(group_id, now)
        dict.__setitem__(self, group_id, group)
        return group

    def pop(self, group_id):
        """Forget a group without the lifetime rule (the coordinator stopped owning it)."""
        self._idle.pop(group_id, None)
        self._timers.cancel((EXPIRE, group_id))
        return dict.pop(self, group_id, None)

    def delete(self, group_id, now):
        group = self.pop(group_id)
        if group is not None:
            self._tear_down(group, now)

    def settle(self, group_id, now):
        """Apply the lifetime rule to ``group_id`` after something may have changed it."""
        group = self.get(group_id)
        if group is None:
            return
        if group.has_members or group_id in self.offsets:
            if group_id in self._idle:
                del self._idle[group_id]
                self._timers.cancel((EXPIRE, group_id))
            return
        key = (EXPIRE, group_id)
        if group_id not in self._idle:
            self._idle[group_id] = None
        if group.has_pending_members:
            self._timers.cancel(key)  # the pending members' own timers end the wait
        elif self.retention_ms <= 0:
            self.delete(group_id, now)
        elif not self._timers.scheduled(key):
            self._timers.schedule(key, now + self.retention_ms)

    def expire(self, group_id, now):
        """The ``("expire", group_id)`` timer fired: delete the group if it is still idle."""
        group = self.get(group_id)
        if group is not None and group_id in self._idle and not group.has_members \
                and not group.has_pending_members and group_id not in self.offsets:
            self.delete(group_id, now)
