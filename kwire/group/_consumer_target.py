"""A consumer group's target assignment: the inputs Kafka's ``TargetAssignmentBuilder.build`` gives the server
assignor, the assignor the members prefer, and the subscription metadata a heartbeat's change leads to.

The assignor itself is ``kwire.assignors.assign_server_arrays`` (Kafka's ``UniformAssignor`` and ``RangeAssignor``).
"""

from typing import NamedTuple, Optional

import numpy as np

from ._consumer_group import preferred_assignor

from kwire.assignors import INT32_MAX, MemberLevelColumns, assign_server_arrays, get_server_assignor
from kwire.errors import ArgumentValueError

__all__ = ["MemberChange", "compute_target", "prospective_metadata"]


class MemberChange(NamedTuple):
    """The heartbeating member as it will be once the heartbeat succeeds (``TargetAssignmentBuilder
    .addOrUpdateMember``), and the static member it replaces, if any (``removeMember``): its entry and target
    pass to the new id."""
    member_id: str
    names: frozenset
    assignor: Optional[str]
    instance_id: Optional[str]
    rack: Optional[str]
    replaced: object = None
    replaced_target: Optional[dict] = None


class _Columns:
    """A group's members in the columns of ``kwire.assignors.ServerGroupArrays``, built as the member level
    (``kwire.assignors.assign_server``) would build them, without an object per member or partition: topics
    numbered in the metadata's order (an id only a current target names comes after, with no partition count,
    as ``SubscribedTopicDescriber.numPartitions`` answers), each distinct subscription one row."""

    def __init__(self, metadata, read_assignment):
        self.read_assignment = read_assignment
        self.keys = []
        self.counts = []
        self.names = []
        self.ids = {}
        self.index = {}
        for name, (tid, count) in metadata.items():
            self.ids[name] = tid
            self.index[tid] = len(self.keys)
            self.keys.append(tid)
            self.counts.append(count)
            self.names.append(name)
        # What the member level refuses in the metadata, refused alike.
        if len(self.index) != len(self.keys):
            seen = set()
            dup = next(tid for tid in self.keys if tid in seen or seen.add(tid))
            raise ArgumentValueError(f"topic id {dup!r} is in the metadata twice")
        for tid, count in zip(self.keys, self.counts):
            if not 0 <= count <= INT32_MAX:
                raise ArgumentValueError(f"topic {tid!r} has an impossible partition count {count}")
        self.member_ids = []
        self.member_sub = []
        self.rows = {}           # (subscribed ids, unresolved names) -> row
        self.by_names = {}       # subscribed names -> row: members subscribed alike share it
        self.instance_ids = []
        self.racks = []
        self.cur_indptr = [0]
        self.cur_topics = []
        self.cur_counts = []
        self.cur_parts = []

    def add(self, member_id, names, instance_id, rack, current_target):
        row = self.by_names.get(names)
        if row is None:
            ids = self.ids
            content = (tuple(sorted(ids[n] for n in names if n in ids)),
                       tuple(sorted(n for n in names if n not in ids)))
            row = self.by_names[names] = self.rows.setdefault(content, len(self.rows))
        self.member_ids.append(member_id)
        self.member_sub.append(row)
        self.instance_ids.append(instance_id)
        self.racks.append(rack)
        if current_target and self.read_assignment:
            for tid, ps in current_target.items():
                self.cur_topics.append(self._topic(tid))
                self.cur_counts.append(len(ps))
                self.cur_parts.extend(sorted(ps))
        self.cur_indptr.append(len(self.cur_topics))

    def _topic(self, tid):
        t = self.index.get(tid)
        if t is None:
            t = self.index[tid] = len(self.keys)
            self.keys.append(tid)
            self.counts.append(-1)
            self.names.append(("unknown", tid))   # it stands for itself in the homogeneity test
        return t

    def arrays(self):
        index = self.index
        sub_indptr = [0]
        sub_topics = []
        for subscribed, _unresolved in self.rows:
            sub_topics.extend(index[tid] for tid in subscribed)
            sub_indptr.append(len(sub_topics))
        cur_part_indptr = np.zeros(len(self.cur_counts) + 1, dtype=np.int64)
        np.cumsum(self.cur_counts, out=cur_part_indptr[1:])
        return MemberLevelColumns(
            member_ids=self.member_ids, member_sub=np.array(self.member_sub, dtype=np.int32),
            sub_indptr=np.array(sub_indptr, dtype=np.int64), sub_topics=np.array(sub_topics, dtype=np.int32),
            topic_ids=np.frombuffer(b"".join(self.keys), dtype=np.uint8).reshape(-1, 16),
            partitions=np.array(self.counts, dtype=np.int32),
            cur_indptr=np.array(self.cur_indptr, dtype=np.int64), cur_topics=np.array(self.cur_topics, dtype=np.int32),
            cur_part_indptr=cur_part_indptr, cur_parts=np.array(self.cur_parts, dtype=np.int32),
            instance_ids=self.instance_ids, racks=self.racks, topic_names=self.names,
            sub_unresolved=[unresolved for _subscribed, unresolved in self.rows],
            # ModernGroup.subscriptionType, known here: each row is one set of subscribed names (a name is
            # resolved for every member or for none, and no two names share an id).
            subscription_type="homogeneous" if len(self.rows) <= 1 else "heterogeneous")

    def targets(self, result):
        """``{member id: {topic id: frozenset}}`` from the assignor's columns; a member it leaves out, and a
        topic entry without partitions, are empty."""
        keys = self.keys
        present = result.present.tolist()
        indptr = result.indptr.tolist()
        topics = result.topics.tolist()
        part_indptr = result.part_indptr.tolist()
        parts = result.parts.tolist()
        target = {}
        for m, mid in enumerate(self.member_ids):
            got = target[mid] = {}
            if present[m]:
                for e in range(indptr[m], indptr[m + 1]):
                    a, b = part_indptr[e], part_indptr[e + 1]
                    if b > a:
                        got[keys[topics[e]]] = frozenset(parts[a:b])
        return target


def compute_target(group, metadata, default_assignor, change=None):
    """``(target, assignor name)``: every member's new target as ``{member id: {topic id: frozenset}}`` (members
    the assignor leaves out get an empty one), computed from the members' current targets (the assignor is
    sticky to them) and ``metadata`` (``{name: (topic id, partitions)}``).  Raises ``AssignmentError``.

    The group goes to the assignor in columns (``assign_server_arrays``): a target is computed at every group
    epoch bump, and building a ``ServerMember`` per member and a list per partition cost more than the
    assignment itself."""
    member_id = change.member_id if change is not None else None
    replaced = change.replaced if change is not None else None
    counts = group.assignor_counts
    if change is not None:
        # ConsumerGroup.computePreferredServerAssignor with this heartbeat's change applied.
        old = group.members.get(member_id)
        old_name = old.server_assignor if old is not None else (replaced.server_assignor if replaced else None)
        if old_name != change.assignor:
            counts = dict(counts)
            if old_name is not None:
                counts[old_name] -= 1
                if counts[old_name] <= 0:
                    del counts[old_name]
            if change.assignor is not None:
                counts[change.assignor] = counts.get(change.assignor, 0) + 1
    name = preferred_assignor(counts, default_assignor)
    columns = _Columns(metadata, get_server_assignor(name).reads_assignment)
    targets = group.target
    changed_in_place = False
    for mid, m in group.members.items():
        if replaced is not None and mid == replaced.member_id:
            continue
        if mid == member_id:
            changed_in_place = True
            columns.add(mid, change.names, m.instance_id, m.rack_id, targets.get(mid))
        else:
            columns.add(mid, m.subscribed_topic_names, m.instance_id, m.rack_id, targets.get(mid))
    if change is not None and not changed_in_place:
        columns.add(member_id, change.names, change.instance_id, change.rack, change.replaced_target)
    return columns.targets(assign_server_arrays(name, columns.arrays())), name


def prospective_metadata(group, topics, old_names, new_names):
    """``ModernGroup.computeSubscriptionMetadata`` with one member's subscription replaced: the metadata of the
    names some member will subscribe to.  Computed from what changes (names nobody subscribed to before, names
    only this member subscribed to) unless the group's metadata expired."""
    union = group.subscribed_names
    added = new_names - union
    removed = (group.names_only_in(old_names) - new_names) if old_names and old_names != new_names else ()
    if group.metadata_expired:
        base = {n: topics[n] for n in sorted(union) if n in topics}  # sorted: see compute_subscription_metadata
    else:
        base = group.subscription_metadata
        if not removed and not any(n in topics for n in added):
            return base
        base = dict(base)
    for name in removed:
        base.pop(name, None)
    for name in sorted(added):
        meta = topics.get(name)
        if meta is not None:
            base[name] = meta
    return base
