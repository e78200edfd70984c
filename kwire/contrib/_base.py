"""What every client adapter shares: the client-neutral half of an assignor.

An adapter turns its client's member objects into :class:`GroupMember`
views and its result back into the client's assignment objects; everything
between -- partition counts from the client's cluster metadata, running the
strategy, the per-member ``(topic, [partitions])`` lists, the topic order of
a Subscription -- is here, so the adapters differ only in their client's API.
No client library is imported here.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..assignors import GroupMember, assign_members_arrays, java_sorted
from ..errors import AssignmentError

TopicGroups = List[Tuple[str, List[int]]]


def partition_counts(cluster, topics: Iterable[str]) -> Dict[str, int]:
    """Partition count per topic from a client's cluster metadata
    (``partitions_for_topic``, which both clients have).

    Unknown topics are left out (Java skips them too).  Partition ids must be
    0..n-1: a gap would make the count and the ids disagree, and assigning a
    partition the metadata does not list is worse than failing loudly."""
    counts: Dict[str, int] = {}
    for topic in topics:
        parts = cluster.partitions_for_topic(topic)
        if not parts:
            continue
        n = len(parts)
        if min(parts) != 0 or max(parts) != n - 1:
            raise AssignmentError(f"topic {topic!r}: partition ids {sorted(parts)} are not 0..{n - 1}")
        counts[topic] = n
    return counts


def optional_str(value) -> Optional[str]:
    """``value`` if it is a str, else None (clients use "" or other placeholders for "not set")."""
    return value if isinstance(value, str) else None


def subscription_topics(topics: Iterable[str]) -> List[str]:
    """The topic list of a Subscription as Java writes it: sorted in Java String order."""
    return java_sorted(topics)


def assign_topic_groups(
    strategy: str,
    members: Sequence[GroupMember],
    counts: Mapping[str, int],
    *,
    partition_racks=None,
    implementation: Optional[str] = None,
) -> Dict[str, TopicGroups]:
    """``{member_id: [(topic, [partition, ...]), ...]}`` for ``members`` in
    JoinGroup-response order, topics in the order the assignment is serialized."""
    return assign_members_arrays(
        strategy, members, counts, partition_racks=partition_racks, implementation=implementation
    ).topic_groups()


def subscribed_topics(members: Sequence[GroupMember]) -> set:
    return {t for m in members for t in (m.subscription.topics or ())}


class RangeStrategy:
    """Java's ``RangeAssignor``: the protocol name, so these members share a group with Java consumers."""

    name = "range"
    strategy = "range"


class RoundRobinStrategy:
    """Java's ``RoundRobinAssignor`` (works with unequal subscriptions)."""

    name = "roundrobin"
    strategy = "roundrobin"


class StickyStrategy:
    """Java's eager ``StickyAssignor``: the previous assignment travels in userData."""

    name = "sticky"
    strategy = "sticky"


class CooperativeStickyStrategy:
    """Java's ``CooperativeStickyAssignor`` (KIP-429): owned partitions and the
    generation travel in the Subscription; a partition changing hands is
    withheld until its owner has revoked it and rejoined."""

    name = "cooperative-sticky"
    strategy = "cooperative-sticky"

