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

from ..assignors import GroupMember
from ._base import RangeStrategy, RoundRobinStrategy, assign_topic_groups, partition_counts, subscribed_topics
from ._base import subscription_topics


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
    """aiokafka calls these as classmethods on the configured classes."""

    name = None
    strategy = None
    version = 0

    @classmethod
    def assign(cls, cluster, members) -> Dict[str, ConsumerProtocolMemberAssignment]:
        # aiokafka's dict keeps JoinGroup-response order, which Java's result depends on.
        group = [GroupMember(mid, None, _Subscription(meta)) for mid, meta in members.items()]
        result = assign_topic_groups(cls.strategy, group, partition_counts(cluster, subscribed_topics(group)))
        return {mid: ConsumerProtocolMemberAssignment(cls.version, groups, b"") for mid, groups in result.items()}

    @classmethod
    def metadata(cls, topics) -> ConsumerProtocolMemberMetadata:
        return ConsumerProtocolMemberMetadata(cls.version, subscription_topics(topics), b"")

    @classmethod
    def on_assignment(cls, assignment):
        pass


class KwireRangeAssignor(RangeStrategy, _KwireAssignor):
    """Java's ``RangeAssignor``."""


class KwireRoundRobinAssignor(RoundRobinStrategy, _KwireAssignor):
    """Java's ``RoundRobinAssignor`` (works with unequal subscriptions)."""


__all__ = ["KwireRangeAssignor", "KwireRoundRobinAssignor"]
