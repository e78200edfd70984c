"""A consumer-protocol group (KIP-848) as data: its three epochs, members, target assignment and who owns
each partition at which epoch.

This is the state Kafka keeps in ``ConsumerGroup`` / ``ModernGroup`` and ``ConsumerGroupMember``; the
decisions (the heartbeat's checks, when to compute a target, timers) are the coordinator's, in
``_consumer_coordinator.py``.  Kafka changes this state by replaying records; kwire applies the same
changes directly, through the few methods below that keep the derived maps (subscribed-name counts,
assignor counts, instance ids, partition epochs) in step with the members.

The partition -> epoch map is the protocol's safety net: ``ConsumerGroup.addPartitionEpochs`` throws when a
partition is added while it has an owner and ``removePartitionEpochs`` when it is removed at an epoch other
than its owner's.  :class:`GroupInvariantError` is that throw here, so a bug that would hand one partition to
two members stops the coordinator instead of answering.
"""

from enum import Enum

from kwire.errors import KwireError

from ._reconcile import EMPTY_ASSIGNMENT, ConsumerMemberState

__all__ = ["ConsumerGroupState", "ConsumerGroup", "ConsumerGroupMember", "GroupInvariantError", "preferred_assignor"]

# The epochs a heartbeat carries to leave (GroupMetadataManager's LEAVE_GROUP_MEMBER_EPOCH and
# LEAVE_GROUP_STATIC_MEMBER_EPOCH).
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

# A member state as a module constant: an Enum member read through its class costs a descriptor call.
_MEMBER_STABLE = ConsumerMemberState.STABLE


class GroupInvariantError(KwireError, RuntimeError):
    """The coordinator was about to break a protocol invariant (a partition owned by two members, or
    released at an epoch that is not its owner's): ``ConsumerGroup``'s IllegalStateException."""


class ConsumerGroupState(str, Enum):
    """``ConsumerGroup.ConsumerGroupState``; the values are the names the wire and ListGroups use."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"   # in Kafka's enum, never computed for a live group

    def __str__(self):
        return self.value


_EMPTY, _ASSIGNING, _RECONCILING, _STABLE = (ConsumerGroupState.EMPTY, ConsumerGroupState.ASSIGNING,
                                             ConsumerGroupState.RECONCILING, ConsumerGroupState.STABLE)


class ConsumerGroupMember:
    """``ConsumerGroupMember``: who the member is, what it subscribes to, and where it stands."""

    __slots__ = ("member_id", "instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
                 "server_assignor", "rebalance_timeout_ms", "member_epoch", "previous_member_epoch", "state",
                 "assigned", "pending", "classic")

    def __init__(self, member_id):
        # ConsumerGroupMember.Builder's defaults: a fresh member is STABLE at epoch 0 with nothing.
        self.member_id = member_id
        self.instance_id = None
        self.rack_id = None
        self.client_id = ""
        self.client_host = ""
        self.subscribed_topic_names = frozenset()
        self.server_assignor = None
        self.rebalance_timeout_ms = -1
        self.member_epoch = 0
        self.previous_member_epoch = -1
        self.state = _MEMBER_STABLE
        self.assigned = EMPTY_ASSIGNMENT
        self.pending = EMPTY_ASSIGNMENT
        # A classic-protocol member of a mixed group: its ClassicMemberMetadata (JoinGroup session timeout and
        # protocols, ``_consumer_classic.ClassicMetadata``); None for a consumer-protocol member.
        self.classic = None

    def copy_as(self, member_id):
        """The static replacement of ``GroupMetadataManager.replaceMember``: everything but the id, at
        epoch 0 with previous epoch 0."""
        new = ConsumerGroupMember(member_id)
        for name in self.__slots__[1:]:
            setattr(new, name, getattr(self, name))
        new.member_epoch = 0
        new.previous_member_epoch = 0
        return new

    def is_reconciled_to(self, epoch):
        return self.member_epoch == epoch and self.state is _MEMBER_STABLE

    def __repr__(self):
        return (f"ConsumerGroupMember({self.member_id!r}, epoch={self.member_epoch}, state={self.state.value}, "
                f"assigned={ {t.hex()[:8]: sorted(p) for t, p in self.assigned.items()} })")


def preferred_assignor(counts, default):
    """``ConsumerGroup.computePreferredServerAssignor``: the name most members asked for; ties go to the
    first counted (Kafka keeps the first maximum of its HashMap's order; kwire's is insertion order);
    ``default`` when nobody named one."""
    best, best_n = default, 0
    for name, n in counts.items():
        if n > best_n:
            best, best_n = name, n
    return best


def _count(counts, key, delta):
    n = counts.get(key, 0) + delta
    if n > 0:
        counts[key] = n
    else:
        counts.pop(key, None)


class ConsumerGroup:
    """``ConsumerGroup``: the group's epochs, members, target assignment and partition epochs."""

    __slots__ = ("group_id", "group_epoch", "target_epoch", "members", "static_members", "target",
                 "partition_epochs", "subscriptions", "_subscription_keys", "subscribed_names",
                 "subscription_metadata", "assignor_counts",
                 "metadata_expired", "last_assignment_ms")

    def __init__(self, group_id):
        self.group_id = group_id
        self.group_epoch = 0
        self.target_epoch = 0
        self.members = {}            # member id -> ConsumerGroupMember (insertion order: join order)
        self.static_members = {}     # instance id -> member id
        self.target = {}             # member id -> {topic id: frozenset}
        self.partition_epochs = {}   # topic id -> {partition: epoch of the member holding it}
        # Kafka counts members per subscribed name (ModernGroup.subscribedTopicNames).  kwire counts members per
        # distinct subscription (the set of names) instead, and keeps the union of those sets: a member joining a
        # group of N members subscribed to K topics then costs a set lookup, not K count updates.  The sets are
        # shared between the members that have the same one.
        self.subscriptions = {}      # frozenset of names -> number of members subscribed to exactly that set
        self._subscription_keys = {}  # the same frozensets, each mapped to itself (to share one copy)
        self.subscribed_names = frozenset()  # every name some member subscribes to
        self.subscription_metadata = {}  # subscribed topic name that exists -> (topic id, partition count)
        self.assignor_counts = {}    # server assignor name -> number of members naming it
        # ModernGroup.hasMetadataExpired: the first heartbeat after creation (or after set_topics touched a
        # subscribed topic) recomputes the subscription metadata.
        self.metadata_expired = True
        self.last_assignment_ms = None  # when the target was last computed (assignment batching)

    # -- what the group registry asks of every group type (see _registry.py) -------------------------------

    @property
    def has_members(self):
        return bool(self.members)

    @property
    def has_pending_members(self):
        # A consumer-protocol member exists from its first successful heartbeat: nothing is ever pending.
        return False

    # -- derived state ------------------------------------------------------------------------------------

    def state(self):
        """``ConsumerGroup.maybeUpdateGroupState``."""
        if not self.members:
            return _EMPTY
        if self.group_epoch > self.target_epoch:
            return _ASSIGNING
        target_epoch = self.target_epoch
        for member in self.members.values():
            if member.member_epoch != target_epoch or member.state is not _MEMBER_STABLE:
                return _RECONCILING
        return _STABLE

    def preferred_assignor(self, default):
        return preferred_assignor(self.assignor_counts, default)

    def target_of(self, member_id):
        return self.target.get(member_id, EMPTY_ASSIGNMENT)

    # -- members in and out -----------------------------------------------------------------------------

    def interned(self, names):
        """The group's own copy of a subscription set equal to ``names``, if a member has one."""
        return self._subscription_keys.get(names, names)

    def names_only_in(self, names):
        """The names of ``names`` that no *other* subscription set holds (what one member's leaving or change
        of subscription removes from the group's subscribed names, if it is the only one with that set)."""
        if self.subscriptions.get(names, 0) > 1:
            return frozenset()
        others = frozenset().union(*[k for k in self.subscriptions if k != names])
        return names - others

    def update_subscription(self, member, names):
        """Replace ``member``'s subscribed names, keeping the counts; True if they changed."""
        old = member.subscribed_topic_names
        if names == old:
            return False
        subscriptions = self.subscriptions
        keys_changed = False
        if old:
            n = subscriptions[old] - 1
            if n:
                subscriptions[old] = n
            else:
                del subscriptions[old]
                del self._subscription_keys[old]
                keys_changed = True
        if names:
            n = subscriptions.get(names, 0)
            if n:
                names = self._subscription_keys[names]
            else:
                self._subscription_keys[names] = names
                keys_changed = True
            subscriptions[names] = n + 1
        member.subscribed_topic_names = names
        if keys_changed:
            self.subscribed_names = frozenset().union(*subscriptions)
        return True

    def update_assignor(self, member, name):
        if name == member.server_assignor:
            return
        if member.server_assignor is not None:
            _count(self.assignor_counts, member.server_assignor, -1)
        if name is not None:
            _count(self.assignor_counts, name, 1)
        member.server_assignor = name

    def add_member(self, member):
        """A member enters the map (its subscription and assignor are counted by the update_* calls)."""
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self.add_partitions(member.assigned, member.member_epoch)
        self.add_partitions(member.pending, member.member_epoch)

    def remove_member(self, member_id):
        """``GroupMetadataManager.removeMember``'s three tombstones at once: the member's partitions are freed,
        its target dropped, its subscription and assignor uncounted."""
        member = self.members.pop(member_id)
        self.remove_partitions(member.assigned, member.member_epoch)
        self.remove_partitions(member.pending, member.member_epoch)
        self.target.pop(member_id, None)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.update_subscription(member, frozenset())
        if member.server_assignor is not None:
            _count(self.assignor_counts, member.server_assignor, -1)
        return member

    # -- the partition -> epoch map (ConsumerGroup.addPartitionEpochs / removePartitionEpochs) -----------

    def add_partitions(self, assignment, epoch):
        epochs = self.partition_epochs
        for topic_id, partitions in assignment.items():
            held = epochs.get(topic_id)
            if held is None:
                epochs[topic_id] = dict.fromkeys(partitions, epoch)
                continue
            if not held.keys().isdisjoint(partitions):
                for p in partitions:
                    if p in held:
                        break
                raise GroupInvariantError(
                    f"group {self.group_id!r}: partition {topic_id.hex()}-{p} is given at epoch {epoch} while "
                    f"a member still holds it at epoch {held[p]}")
            held.update(dict.fromkeys(partitions, epoch))

    def remove_partitions(self, assignment, epoch):
        epochs = self.partition_epochs
        for topic_id, partitions in assignment.items():
            held = epochs.get(topic_id)
            # Every partition held at ``epoch``, checked without a Python step per partition.
            if held is None or list(map(held.get, partitions)).count(epoch) != len(partitions):
                for p in partitions:
                    if held is None or held.get(p) != epoch:
                        raise GroupInvariantError(
                            f"group {self.group_id!r}: partition {topic_id.hex()}-{p} is released at epoch {epoch} "
                            f"but is held at epoch {None if held is None else held.get(p)}")
            for p in partitions:
                del held[p]
            if not held:
                epochs.pop(topic_id, None)

    def shift_partitions(self, old, old_epoch, new, epoch):
        """``remove_partitions(old, old_epoch)`` then ``add_partitions(new, epoch)`` as one step that touches
        only what differs (a partition kept has its epoch rewritten in place): most reconciliations keep most
        partitions.  Returns False, having changed nothing, when either call would refuse (the caller then
        makes them, and they raise)."""
        epochs = self.partition_epochs
        topics = (old.keys() | new.keys()) if old is not new else old.keys()
        for topic_id in topics:
            held = epochs.get(topic_id)
            gone = old.get(topic_id)
            came = new.get(topic_id)
            if gone:
                if held is None or list(map(held.get, gone)).count(old_epoch) != len(gone):
                    return False
                if came and not held.keys().isdisjoint(came - gone):
                    return False
            elif came and held is not None and not held.keys().isdisjoint(came):
                return False
        for topic_id in topics:
            gone = old.get(topic_id)
            came = new.get(topic_id)
            held = epochs.get(topic_id)
            if gone is not None and held is not None:
                for p in (gone - came if came else gone):
                    del held[p]
                if not held and not came:
                    # removed as remove_partitions removes an emptied topic (add_partitions may add it back)
                    del epochs[topic_id]
                    held = None
            if came is not None:
                if held is None:
                    epochs[topic_id] = dict.fromkeys(came, epoch)
                else:
                    held.update(dict.fromkeys(came, epoch))
        return True

    def move_member(self, member, state, epoch, previous_epoch, assigned, pending):
        """Apply a reconciliation (or a static leave) to ``member`` and the partition epochs
        (``ConsumerGroup.maybeUpdatePartitionEpoch``: the old partitions leave at the old epoch, the new ones
        arrive at the new epoch).  Returns True if the assigned partitions changed."""
        old_epoch = member.member_epoch
        changed = assigned != member.assigned
        if changed or pending != member.pending or epoch != old_epoch:
            if member.pending or pending or not self.shift_partitions(member.assigned, old_epoch, assigned, epoch):
                self.remove_partitions(member.assigned, old_epoch)
                self.remove_partitions(member.pending, old_epoch)
                self.add_partitions(assigned, epoch)
                self.add_partitions(pending, epoch)
        member.state = state
        member.member_epoch = epoch
        member.previous_member_epoch = previous_epoch
        member.assigned = assigned
        member.pending = pending
        return changed

    # -- subscription metadata (ModernGroup.computeSubscriptionMetadata) ----------------------------------

    def compute_subscription_metadata(self, topics):
        """``{name: (topic id, partition count)}`` for every subscribed name that exists in ``topics``."""
        out = {}
        # Names in sorted order, not the set's: the metadata's order becomes the assignors' topic order, and with
        # it the order of each target's topics, which the next target's stickiness reads.  A set of str iterates
        # in an order that changes with the interpreter's hash seed, so the same traffic would not give the same
        # answers from one run to the next.
        for name in sorted(self.subscribed_names):
            meta = topics.get(name)
            if meta is not None:
                out[name] = meta
        return out
