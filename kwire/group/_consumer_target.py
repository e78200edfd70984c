"""A consumer group's target assignment: the inputs Kafka's ``TargetAssignmentBuilder.build`` gives the server
assignor, the assignor the members prefer, and the subscription metadata a heartbeat's change leads to.

The assignor itself is ``kwire.assignors``' server assignor (Kafka's ``UniformAssignor`` and ``RangeAssignor``): in
columns (its array form), or, for a small group and an assignor that has one, in plain lists (its list form,
``uniform_lists``), whose answers are the same without the columns' fixed cost.
"""

from typing import NamedTuple, Optional

import numpy as np

from ._consumer_group import preferred_assignor

from kwire.assignors import INT32_MAX, MemberLevelColumns, get_server_assignor
from kwire.errors import ArgumentValueError

__all__ = ["MemberChange", "compute_target", "prospective_metadata"]

#: The largest group (members, and partitions of the topics it reads) whose target is computed by the
#: assignor's list form when it has one.
SMALL_GROUP_MEMBERS = 16
SMALL_GROUP_PARTITIONS = 128


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
        self.current = []        # per member: [(topic index, [partitions ascending])]

    def add(self, member_id, names, instance_id, rack, current_target):
        row = self.by_names.get(names)
        if row is None:
            ids = self.ids
            content = (tuple(sorted([ids[n] for n in names if n in ids])),
                       tuple(sorted([n for n in names if n not in ids])))
            row = self.by_names[names] = self.rows.setdefault(content, len(self.rows))
        self.member_ids.append(member_id)
        self.member_sub.append(row)
        self.instance_ids.append(instance_id)
        self.racks.append(rack)
        if current_target and self.read_assignment:
            index = self.index
            topic = self._topic
            self.current.append([(index[tid] if tid in index else topic(tid), sorted(ps))
                                 for tid, ps in current_target.items()])
        else:
            self.current.append([])

    def _topic(self, tid):
        t = self.index.get(tid)
        if t is None:
            t = self.index[tid] = len(self.keys)
            self.keys.append(tid)
            self.counts.append(-1)
            self.names.append(("unknown", tid))   # it stands for itself in the homogeneity test
        return t

    def sub_rows(self):
        """Each distinct subscription's topic indices, in the order of its sorted ids."""
        index = self.index
        return [[index[tid] for tid in subscribed] for subscribed, _unresolved in self.rows]

    def small(self):
        """Whether the group is small enough for the assignor's list form (``uniform_lists``): below these
        sizes it costs less than the columns' and the kernel's fixed cost."""
        return len(self.member_ids) <= SMALL_GROUP_MEMBERS and sum(self.counts) <= SMALL_GROUP_PARTITIONS

    def lists_targets(self, lists):
        """The target from the assignor's list form, as :meth:`targets` gives it from the columns."""
        return dict(zip(self.member_ids, lists(self.member_ids, self.member_sub, self.sub_rows(), self.keys,
                                               self.counts, self.current, len(self.rows) <= 1, by_id=True)))

    def arrays(self):
        sub_rows = self.sub_rows()
        sub_indptr = [0]
        sub_topics = []
        for row in sub_rows:
            sub_topics.extend(row)
            sub_indptr.append(len(sub_topics))
        cur_indptr = [0]
        cur_topics = []
        cur_counts = []
        cur_parts = []
        for entries in self.current:
            for t, ps in entries:
                cur_topics.append(t)
                cur_counts.append(len(ps))
                cur_parts.extend(ps)
            cur_indptr.append(len(cur_topics))
        cur_part_indptr = np.zeros(len(cur_counts) + 1, dtype=np.int64)
        np.cumsum(cur_counts, out=cur_part_indptr[1:])
        return MemberLevelColumns(
            member_ids=self.member_ids, member_sub=np.array(self.member_sub, dtype=np.int32),
            sub_indptr=np.array(sub_indptr, dtype=np.int64), sub_topics=np.array(sub_topics, dtype=np.int32),
            topic_ids=np.frombuffer(b"".join(self.keys), dtype=np.uint8).reshape(-1, 16),
            partitions=np.array(self.counts, dtype=np.int32),
            cur_indptr=np.array(cur_indptr, dtype=np.int64), cur_topics=np.array(cur_topics, dtype=np.int32),
            cur_part_indptr=cur_part_indptr, cur_parts=np.array(cur_parts, dtype=np.int32),
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

    The group goes to the assignor in columns (its array form): a target is computed at every group epoch
    bump, and building a ``ServerMember`` per member and a list per partition cost more than the assignment
    itself.  A small group goes in plain lists to the assignor's list form when it has one (``uniform``
    does): below ``SMALL_GROUP_MEMBERS`` and ``SMALL_GROUP_PARTITIONS`` the columns' and the kernel's fixed
    cost is most of the call."""
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
    assignor = get_server_assignor(name)
    columns = _Columns(metadata, assignor.reads_assignment)
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
    if assignor.lists is not None and columns.small():
        return columns.lists_targets(assignor.lists), name
    return columns.targets(assignor.arrays(columns.arrays())), name


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
