"""A consumer group's target assignment: the inputs Kafka's ``TargetAssignmentBuilder.build`` gives the server
assignor, the assignor the members prefer, and the subscription metadata a heartbeat's change leads to.

The assignor itself is ``kwire.assignors.assign_server`` (Kafka's ``UniformAssignor`` and ``RangeAssignor``).
"""

from typing import NamedTuple, Optional

from ._consumer_group import preferred_assignor

from kwire.assignors import ServerMember, TopicMetadata, assign_server

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


def _spec(instance_id, rack, names, current_target, ids, resolved):
    known = resolved.get(names)
    if known is None:
        # Once per distinct subscription: members subscribed alike share one tuple of ids.
        known = resolved[names] = (tuple(sorted(ids[n] for n in names if n in ids)),
                                   tuple(sorted(n for n in names if n not in ids)))
    subscribed, unresolved = known
    assignment = {tid: sorted(ps) for tid, ps in current_target.items()} if current_target else {}
    return ServerMember(subscribed_topic_ids=subscribed, assignment=assignment, instance_id=instance_id,
                        rack=rack, unresolved_topic_names=unresolved)


def compute_target(group, metadata, default_assignor, change=None):
    """``(target, assignor name)``: every member's new target as ``{member id: {topic id: frozenset}}`` (members
    the assignor leaves out get an empty one), computed from the members' current targets (the assignor is
    sticky to them) and ``metadata`` (``{name: (topic id, partitions)}``).  Raises ``AssignmentError``."""
    ids = {name: tid for name, (tid, _n) in metadata.items()}
    resolved = {}
    specs = {}
    member_id = change.member_id if change is not None else None
    replaced = change.replaced if change is not None else None
    for mid, m in group.members.items():
        if replaced is not None and mid == replaced.member_id:
            continue
        subscribed = change.names if mid == member_id else m.subscribed_topic_names
        specs[mid] = _spec(m.instance_id, m.rack_id, subscribed, group.target.get(mid), ids, resolved)
    counts = group.assignor_counts
    if change is not None:
        if member_id not in specs:
            specs[member_id] = _spec(change.instance_id, change.rack, change.names, change.replaced_target, ids,
                                     resolved)
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
    topics = {tid: TopicMetadata(name=n, partitions=count, partition_racks=None)
              for n, (tid, count) in metadata.items()}
    result = assign_server(name, members=specs, topics=topics)
    target = {}
    for mid in specs:
        got = result.get(mid) or {}
        target[mid] = {tid: frozenset(ps) for tid, ps in got.items() if len(ps)}
    return target, name


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
