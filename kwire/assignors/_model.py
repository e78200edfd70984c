"""The normalized input every assignor works on.

The member-level API (``kwire.assign``) and the golden-vector tests both
reduce their input to a :class:`GroupInput`: the strategy-specific question
of *where* owned partitions and generations come from (Subscription fields or
userData) is answered before an assignor sees the group, so the algorithms
themselves only deal with plain facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

TopicPartition = Tuple[str, int]

#: Java's ``AbstractStickyAssignor.DEFAULT_GENERATION``.
DEFAULT_GENERATION = -1


@dataclass(frozen=True)
class MemberInput:
    member_id: str
    group_instance_id: Optional[str] = None
    #: Subscribed topics, in the order the Subscription carried them.
    topics: Tuple[str, ...] = ()
    #: Partitions this member claims to own, already taken from the source the
    #: strategy reads (userData for eager sticky, Subscription fields for
    #: cooperative-sticky, nothing for range/roundrobin).
    owned: Tuple[TopicPartition, ...] = ()
    #: Generation of ``owned`` (memberData.generation); -1 when unknown.
    generation: int = DEFAULT_GENERATION
    #: The Subscription's own generationId field (v2+), -1 when absent.  Java's
    #: sticky owner resolution compares the *earlier* claimant's protocol
    #: field, not its memberData generation, so both are kept.
    subscription_generation: int = DEFAULT_GENERATION
    #: Subscription.rackId (client.rack); None or "" means no rack.
    rack: Optional[str] = None


@dataclass
class GroupInput:
    #: Members in JoinGroup-response order (the leader's HashMap insertion order).
    members: List[MemberInput]
    #: Partition count of every topic the cluster metadata knows.
    partitions_per_topic: Dict[str, int]
    #: Racks of each partition's replicas: topic -> one list per partition.
    #: None (or a missing topic) means no replica rack information.
    partition_racks: Optional[Dict[str, List[Sequence[Optional[str]]]]] = None


#: The member-level result: member id -> partitions in Java's list order.  Not
#: the ``kwire.Assignment`` message (what one member receives on the wire).
MemberAssignments = Dict[str, List[TopicPartition]]
