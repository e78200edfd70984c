"""kwire assignors for kafka-python 3.x.

Usage::

    from kwire.contrib.kafka_python import KwireRangeAssignor, KwireRoundRobinAssignor
    KafkaConsumer(..., partition_assignment_strategy=[KwireRangeAssignor])

The protocol names are Java's (``range``, ``roundrobin``), so these members
can share a group with Java consumers and agree with a Java leader.  To use
rack-aware range, pass an instance: ``KwireRangeAssignor(rack="use1-az1")``;
the rack travels in the Subscription (v3) like Java's ``client.rack``.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.structs import TopicPartition

from ..assignors import GroupMember
from ._base import RangeStrategy, RoundRobinStrategy, assign_topic_groups, optional_str, partition_counts
from ._base import subscribed_topics, subscription_topics


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
        group = [GroupMember(m.member_id, optional_str(getattr(m, "group_instance_id", None)), m.metadata) for m in members]
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


class KwireRangeAssignor(RangeStrategy, _KwireAssignor):
    """Java's ``RangeAssignor`` (static members first, KIP-881 racks)."""


class KwireRoundRobinAssignor(RoundRobinStrategy, _KwireAssignor):
    """Java's ``RoundRobinAssignor`` (works with unequal subscriptions)."""


__all__ = ["KwireRangeAssignor", "KwireRoundRobinAssignor"]
