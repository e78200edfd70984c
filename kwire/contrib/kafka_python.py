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

from ..assignors._javaorder import utf16_key
from ..assignors._api import GroupMember, assign_members_arrays
from . import _optional, partition_counts


def _replica_racks(cluster, topic: str, n: int) -> Optional[List[List[Optional[str]]]]:
    # kafka-python keeps replica lists only in its private partition table;
    # without them rack-aware range simply does not apply.
    table = getattr(cluster, "_partitions", {}).get(topic)
    if not table:
        return None
    out = []
    for p in range(n):
        meta = table.get(p)
        replicas = getattr(meta, "replica_nodes", None) or getattr(meta, "replicas", None) or []
        racks = []
        for node in replicas:
            broker = cluster.broker_metadata(node)
            racks.append(_optional(getattr(broker, "rack", None)) if broker is not None else None)
        out.append(racks)
    return out


class _KwireAssignor(AbstractPartitionAssignor):
    name = None
    strategy = None

    def __init__(self, rack: Optional[str] = None, implementation: Optional[str] = None):
        self.rack = rack or None
        self.implementation = implementation

    def assign(self, cluster, members) -> Dict[str, ConsumerProtocolAssignment]:
        group = [GroupMember(m.member_id, _optional(getattr(m, "group_instance_id", None)), m.metadata) for m in members]
        topics = {t for m in group for t in (m.subscription.topics or ())}
        counts = partition_counts(cluster, topics)
        racks = None
        if any(getattr(m.subscription, "rack_id", None) for m in group):
            racks = {t: r for t, n in counts.items() if (r := _replica_racks(cluster, t, n)) is not None} or None
        result = assign_members_arrays(
            self.strategy, group, counts, partition_racks=racks, implementation=self.implementation
        ).topic_groups()
        return {mid: ConsumerProtocolAssignment(0, groups, b"") for mid, groups in result.items()}

    def metadata(self, topics) -> ConsumerProtocolSubscription:
        # Java sends the topics sorted; v3 only when there is a rack to carry.
        ordered = sorted(topics, key=utf16_key)
        if self.rack:
            return ConsumerProtocolSubscription(3, ordered, b"", rack_id=self.rack)
        return ConsumerProtocolSubscription(0, ordered, b"")

    def on_assignment(self, assignment, generation):
        pass


class KwireRangeAssignor(_KwireAssignor):
    """Java's ``RangeAssignor`` (static members first, KIP-881 racks)."""

    name = "range"
    strategy = "range"


class KwireRoundRobinAssignor(_KwireAssignor):
    """Java's ``RoundRobinAssignor`` (works with unequal subscriptions)."""

    name = "roundrobin"
    strategy = "roundrobin"


__all__ = ["KwireRangeAssignor", "KwireRoundRobinAssignor"]
