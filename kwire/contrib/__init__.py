"""Adapters that plug kwire's Java-exact assignors into Python Kafka clients.

* :mod:`kwire.contrib.kafka_python` -- ``KafkaConsumer(partition_assignment_strategy=[...])`` (kafka-python 3.x)
* :mod:`kwire.contrib.aiokafka` -- ``AIOKafkaConsumer(partition_assignment_strategy=(...))`` (aiokafka 0.14)

Each module imports its client library, so import only the one you use.
"""

from __future__ import annotations

from typing import Dict, Iterable, Optional

from ..errors import AssignmentError


def partition_counts(cluster, topics: Iterable[str]) -> Dict[str, int]:
    """Partition count per topic from a client's cluster metadata.

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


def _optional(value) -> Optional[str]:
    return value if isinstance(value, str) else None
