"""kwire assignors for aiokafka 0.14.

Usage::

    from kwire.contrib.aiokafka import KwireRangeAssignor, KwireRoundRobinAssignor
    AIOKafkaConsumer(..., partition_assignment_strategy=(KwireRoundRobinAssignor,))

aiokafka passes the assignor classes themselves and decodes member metadata
as Subscription v0 (topics and userData only), so there are no instance
ids or racks to use: members are dynamic and range is not rack-aware.  The
protocol names are Java's, so a group may mix these with Java consumers.
"""

from __future__ import annotations

from typing import Dict

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

from ..assignors._javaorder import utf16_key
from ..assignors._api import GroupMember, assign_members_arrays
from . import partition_counts


class _Subscription:
    """The Subscription view kwire reads, over aiokafka's v0 metadata."""

    __slots__ = ("topics", "user_data")
    owned_partitions = ()
    generation_id = -1
    rack_id = None

    def __init__(self, metadata):
        self.topics = list(metadata.subscription or ())
        self.user_data = metadata.user_data


class _KwireAssignor(AbstractPartitionAssignor):
    name = None
    strategy = None
    version = 0

    @classmethod
    def assign(cls, cluster, members) -> Dict[str, ConsumerProtocolMemberAssignment]:
        # aiokafka's dict keeps JoinGroup-response order, which Java's result depends on.
        group = [GroupMember(mid, None, _Subscription(meta)) for mid, meta in members.items()]
        counts = partition_counts(cluster, {t for m in group for t in m.subscription.topics})
        result = assign_members_arrays(cls.strategy, group, counts).topic_groups()
        return {mid: ConsumerProtocolMemberAssignment(cls.version, groups, b"") for mid, groups in result.items()}

    @classmethod
    def metadata(cls, topics) -> ConsumerProtocolMemberMetadata:
        return ConsumerProtocolMemberMetadata(cls.version, sorted(topics, key=utf16_key), b"")

    @classmethod
    def on_assignment(cls, assignment):
        pass


class KwireRangeAssignor(_KwireAssignor):
    """Java's ``RangeAssignor``."""

    name = "range"
    strategy = "range"


class KwireRoundRobinAssignor(_KwireAssignor):
    """Java's ``RoundRobinAssignor`` (works with unequal subscriptions)."""

    name = "roundrobin"
    strategy = "roundrobin"


__all__ = ["KwireRangeAssignor", "KwireRoundRobinAssignor"]
