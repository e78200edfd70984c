"""kwire assignors for kafka-python 3.x.

Usage::

    from kwire.contrib.kafka_python import KwireRangeAssignor, KwireCooperativeStickyAssignor
    KafkaConsumer(..., partition_assignment_strategy=[KwireRangeAssignor])

``KwireRangeAssignor``, ``KwireRoundRobinAssignor``, ``KwireStickyAssignor``
and ``KwireCooperativeStickyAssignor`` carry Java's protocol names, so these
members can share a group with Java consumers and agree with a Java leader.
To use racks, pass an instance: ``KwireRangeAssignor(rack="use1-az1")``; the
rack travels in the Subscription (v3) like Java's ``client.rack``.

The sticky pair writes what Java's members write: a v3 Subscription whose
userData is Java's (eager: ``StickyAssignorUserData`` V1 with no version
prefix; cooperative: the generation), whose owned partitions are the current
assignment (cooperative) and whose generation is the one the last assignment
came with.  As leader they read Java's members, kafka-python's own
``CooperativeStickyAssignor`` members (v1: owned partitions, no generation),
and kafka-python's own ``StickyPartitionAssignor`` members, whose userData
has a 2-byte version in front that Java's reader cannot parse (Java treats
such a member as owning nothing; kwire reads its claim instead, see
:func:`_kafka_python_sticky_user_data`).  kafka-python's own leader cannot
read Java's eager userData (nor kwire's): it treats those members as new.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.structs import TopicPartition

from .. import codec
from ..errors import DecodeError
from ..assignors import GroupMember, cooperative_user_data, sticky_user_data
from ._base import CooperativeStickyStrategy, RangeStrategy, RoundRobinStrategy, StickyStrategy
from ._base import assign_topic_groups, optional_str, partition_counts, subscribed_topics, subscription_topics


def _replica_racks(cluster, topic: str, n: int) -> List[List[str]]:
    """Each partition's replica racks, from kafka-python's public metadata API.

    Java's rack-aware range reads a partition's replica racks as a set (all
    replicas, in or out of sync), so asking each broker with a rack whether it
    is one of the partition's replicas (``is_replica_node``) gives the same
    answer as walking the replica list; a broker without ``broker.rack`` or
    unknown to the metadata contributes nothing either way."""
    racked = [(b.node_id, rack) for b in cluster.brokers() if (rack := optional_str(getattr(b, "rack", None)))]
    return [
        [rack for node, rack in racked if cluster.is_replica_node(TopicPartition(topic, p), node) is not None]
        for p in range(n)
    ]


class _KwireAssignor(AbstractPartitionAssignor):
    """kafka-python instantiates each configured class with no arguments."""

    name = None
    strategy = None

    def __init__(self, rack: Optional[str] = None, implementation: Optional[str] = None):
        self.rack = rack or None
        self.implementation = implementation

    def assign(self, cluster, members) -> Dict[str, ConsumerProtocolAssignment]:
        view = self._subscription_view
        group = [GroupMember(m.member_id, optional_str(getattr(m, "group_instance_id", None)), view(m.metadata)) for m in members]
        counts = partition_counts(cluster, subscribed_topics(group))
        racks = None
        if any(getattr(m.subscription, "rack_id", None) for m in group):
            racks = {t: _replica_racks(cluster, t, n) for t, n in counts.items()} or None
        result = assign_topic_groups(self.strategy, group, counts, partition_racks=racks, implementation=self.implementation)
        return {mid: ConsumerProtocolAssignment(0, groups, b"") for mid, groups in result.items()}

    def metadata(self, topics) -> ConsumerProtocolSubscription:
        # Java sends the topics sorted; v3 only when there is a rack to carry.
        ordered = subscription_topics(topics)
        if self.rack:
            return ConsumerProtocolSubscription(3, ordered, b"", rack_id=self.rack)
        return ConsumerProtocolSubscription(0, ordered, b"")

    def on_assignment(self, assignment, generation):
        pass

    @staticmethod
    def _subscription_view(subscription):
        return subscription


# kafka-python's StickyPartitionAssignor encodes its userData as an ApiData
# message, which puts the int16 version (1) in front of Java's V1 layout.
_KAFKA_PYTHON_USER_DATA_PREFIX = b"\x00\x01"
# Java reads those bytes as a V1 entry count of at least 0x00010000 and fails
# (so reads nothing) unless the blob could hold 65536 six-byte entries.
_JAVA_CANNOT_READ_BELOW = 6 * 0x10000


def _kafka_python_sticky_user_data(user_data):
    """kafka-python's own sticky userData as the Java layout it wraps, or
    ``user_data`` unchanged.

    Only a blob Java's reader cannot parse is translated, and only if what
    follows the prefix is exactly one V1 StickyAssignorUserData: so wherever
    Java would read a claim, kwire reads the same one, and where Java reads
    nothing but the member is kafka-python's own, its claim is kept."""
    if (
        not isinstance(user_data, (bytes, bytearray))
        or not user_data.startswith(_KAFKA_PYTHON_USER_DATA_PREFIX)
        or len(user_data) >= _JAVA_CANNOT_READ_BELOW
    ):
        return user_data
    inner = bytes(user_data[2:])
    try:
        codec.StickyAssignorUserData.decode(inner, 1)
    except DecodeError:
        return user_data
    return inner


class _SubscriptionView:
    """A kafka-python ConsumerProtocolSubscription as kwire reads it, with
    kafka-python's own sticky userData unwrapped."""

    __slots__ = ("topics", "user_data", "owned_partitions", "generation_id", "rack_id")

    def __init__(self, sub):
        self.topics = sub.topics
        self.user_data = _kafka_python_sticky_user_data(sub.user_data)
        self.owned_partitions = getattr(sub, "owned_partitions", None) or ()
        self.generation_id = getattr(sub, "generation_id", -1)
        self.rack_id = getattr(sub, "rack_id", None)


class _KwireStickyBase(_KwireAssignor):
    """What both sticky adapters keep between rebalances: the partitions the
    last assignment gave this member and its generation."""

    def __init__(self, rack: Optional[str] = None, implementation: Optional[str] = None):
        super().__init__(rack, implementation)
        self.member_assignment: Optional[List[Tuple[str, int]]] = None
        self.generation = -1

    _subscription_view = _SubscriptionView

    def on_assignment(self, assignment, generation):
        self.member_assignment = [(t, p) for t, ps in assignment.assigned_partitions for p in ps]
        self.generation = generation

    def _subscription(self, topics, user_data, owned) -> ConsumerProtocolSubscription:
        # Java writes the newest Subscription version: topics, userData, owned
        # partitions (by topic, in order of first appearance), generation, rack.
        grouped: Dict[str, List[int]] = {}
        for t, p in owned:
            grouped.setdefault(t, []).append(p)
        SubTP = ConsumerProtocolSubscription.TopicPartition
        return ConsumerProtocolSubscription(
            version=3,
            topics=subscription_topics(topics),
            user_data=user_data,
            owned_partitions=[SubTP(topic=t, partitions=ps) for t, ps in grouped.items()],
            generation_id=self.generation,
            rack_id=self.rack,
        )


class KwireStickyAssignor(StickyStrategy, _KwireStickyBase):
    """Java's eager ``StickyAssignor``: kafka-python revokes everything before
    joining, so the previous assignment travels in userData only."""

    def metadata(self, topics) -> ConsumerProtocolSubscription:
        return self._subscription(topics, sticky_user_data(self.member_assignment, self.generation), ())


class KwireCooperativeStickyAssignor(CooperativeStickyStrategy, _KwireStickyBase):
    """Java's ``CooperativeStickyAssignor`` on kafka-python's KIP-429 support:
    the consumer keeps its partitions across the join, revokes only what the
    leader took away, and rejoins for the partitions withheld this round."""

    def supported_protocols(self):
        # Like kafka-python's own: the owned partitions reported in metadata()
        # are only true if the consumer did not revoke them before joining.
        return [RebalanceProtocol.COOPERATIVE]

    def metadata(self, topics) -> ConsumerProtocolSubscription:
        return self._subscription(topics, cooperative_user_data(self.generation), self.member_assignment or ())


class KwireRangeAssignor(RangeStrategy, _KwireAssignor):
    """Java's ``RangeAssignor`` (static members first, KIP-881 racks)."""


class KwireRoundRobinAssignor(RoundRobinStrategy, _KwireAssignor):
    """Java's ``RoundRobinAssignor`` (works with unequal subscriptions)."""


__all__ = ["KwireCooperativeStickyAssignor", "KwireRangeAssignor", "KwireRoundRobinAssignor", "KwireStickyAssignor"]
