"""Committed offsets, by group id, for every group type.

Kafka keeps these in ``__consumer_offsets`` (``OffsetMetadataManager``), apart from the groups: they
outlast a group's unloading (a coordinator move) and a group's members.  The store knows nothing of any
group class; whether a commit is allowed (a classic generation, a consumer-protocol member epoch) is
decided by the group before anything is stored here.
"""

NO_OFFSET = (-1, -1, "")


class OffsetStore:
    """``group id -> {(topic, partition): (offset, leader_epoch, metadata)}``."""

    __slots__ = ("_by_group",)

    def __init__(self):
        self._by_group = {}

    def __contains__(self, group_id):
        """True if ``group_id`` has at least one committed offset (the group lifetime rule reads this)."""
        return group_id in self._by_group

    def partitions_of(self, group_id):
        """The group's table to write commits into, ``{(topic, partition): (offset, epoch, metadata)}``;
        created on first use (a caller that then stores nothing must call :meth:`drop_if_empty`)."""
        stored = self._by_group.get(group_id)
        if stored is None:
            stored = self._by_group[group_id] = {}
        return stored

    def drop_if_empty(self, group_id):
        if not self._by_group.get(group_id, True):
            del self._by_group[group_id]

    def committed(self, group_id, topic, partition):
        """``(offset, leader_epoch, metadata)`` committed for a partition, or ``(-1, -1, "")``."""
        return self._by_group.get(group_id, {}).get((topic, partition), NO_OFFSET)

    def fetch(self, group_id, topics):
        """``[(topic, [(partition, offset, epoch, metadata)])]`` for the requested topics (a list of
        ``(name, partition_indexes)``), or every committed offset when ``topics`` is None."""
        stored = self._by_group.get(group_id, {})
        if topics is None:
            by_topic = {}
            for (name, partition), (offset, epoch, metadata) in stored.items():
                by_topic.setdefault(name, []).append((partition, offset, epoch, metadata))
            return [(name, sorted(rows)) for name, rows in by_topic.items()]
        out = []
        for name, indexes in topics:
            out.append((name, [(i, *stored.get((name, i), NO_OFFSET)) for i in indexes]))
        return out
