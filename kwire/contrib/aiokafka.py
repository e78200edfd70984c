"""kwire assignors for aiokafka 0.14.

Usage::

    from kwire.contrib.aiokafka import KwireRangeAssignor, KwireStickyAssignor
    AIOKafkaConsumer(..., partition_assignment_strategy=(KwireStickyAssignor,))

``KwireRangeAssignor``, ``KwireRoundRobinAssignor`` and ``KwireStickyAssignor``
carry Java's protocol names, so a group may mix these with Java consumers.
aiokafka passes the assignor classes themselves and decodes member metadata
as Subscription v0 (topics and userData only), so there are no instance
ids or racks to use: members are dynamic and range is not rack-aware.

``KwireStickyAssignor`` writes and reads Java's eager ``StickyAssignor``
userData (V1, the same layout aiokafka's own sticky assignor uses, so the
two interoperate).  aiokafka never tells an assignor its generation, so the
generation written is -1, as aiokafka's own writes.  Like aiokafka's own, it
keeps the last assignment on the class: give each consumer in one process
its own subclass.

There is no cooperative-sticky adapter for aiokafka: aiokafka 0.14 only
rebalances eagerly (a member revokes everything before it joins), and its
leader decodes Subscriptions as v0, which drops the owned partitions a Java
cooperative member reports, so an aiokafka leader could hand out a partition
a Java member still consumes.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

from ..assignors import GroupMember, sticky_user_data
from ._base import RangeStrategy, RoundRobinStrategy, StickyStrategy, assign_topic_groups, partition_counts
from ._base import subscribed_topics, subscription_topics


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


class KwireStickyAssignor(StickyStrategy, _KwireAssignor):
    """Java's eager ``StickyAssignor``: the previous assignment travels in userData."""

    #: The partitions of the last assignment; None before the first.
    member_assignment: Optional[List[Tuple[str, int]]] = None
    #: aiokafka does not pass the generation to assignors (see the module docstring).
    generation = -1

    @classmethod
    def metadata(cls, topics) -> ConsumerProtocolMemberMetadata:
        # None (a null userData, as Java sends) before the first assignment.
        user_data = sticky_user_data(cls.member_assignment, cls.generation)
        return ConsumerProtocolMemberMetadata(cls.version, subscription_topics(topics), user_data)

    @classmethod
    def on_assignment(cls, assignment):
        cls.member_assignment = [(t, p) for t, ps in assignment.assignment for p in ps]


class KwireRangeAssignor(RangeStrategy, _KwireAssignor):
    """Java's ``RangeAssignor``."""


class KwireRoundRobinAssignor(RoundRobinStrategy, _KwireAssignor):
    """Java's ``RoundRobinAssignor`` (works with unequal subscriptions)."""


__all__ = ["KwireRangeAssignor", "KwireRoundRobinAssignor", "KwireStickyAssignor"]
