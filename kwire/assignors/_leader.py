"""The leader's whole path on columns: JoinGroupResponse members (or
member-level objects) -> :class:`ArrayGroup` -> assignment -> each member's
``ConsumerProtocolAssignment`` bytes.

Where the columns come from: members that send the same metadata bytes (in
the common case all of them) share one decoded Subscription and one
:class:`MemberInput`; each distinct subscription's topics become one int32
array of topic ids, and a member's row is a reference to its subscription's
arrays, so the CSR columns are one ``np.concatenate``.  Topic names are
interned once, for the whole group.  What is never built: a Python object
per partition or per subscription entry on the range/roundrobin path, or a
per-member Subscription/Assignment message object.  The one per-partition
object left is the owned partitions of cooperative-sticky members (and the
userData claims of eager sticky members), which the codec decodes into lists
for each distinct subscription: a second-generation cooperative group pays
it once per member.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

import numpy as np

from .. import codec
from ..errors import AssignmentError
from ._arrays import (
    ArrayAssignment,
    ArrayGroup,
    checked_counts,
    interned_topics,
    load_kernels,
    replica_rack_columns,
    required_list,
)
from ._leader_common import ASSIGNMENT_VERSIONS, topic_name_table
from ._model import MemberInput

_I32 = np.int32
_I64 = np.int64


#: ``facts(member) -> MemberInput``: the strategy's reading of one member,
#: cleaned up (``_api`` binds the strategy and the partition counts).
FactsFn = Callable[[object], MemberInput]


def join_members_group(members, counts: Dict[str, int], facts: FactsFn, partition_racks=None) -> ArrayGroup:
    """The group of a JoinGroupResponse's members (``member_id``,
    ``group_instance_id``, ``metadata`` bytes), in response order.

    Each distinct metadata byte string is decoded once: a member whose bytes
    equal the previous member's costs one ``memcmp``, any other one dict
    lookup."""
    members = required_list(members, "join_group_response.members")
    member_ids: List = []
    instance_ids: List = []
    which = np.empty(len(members), dtype=np.intp)
    seen: Dict[bytes, int] = {}
    distinct: List[MemberInput] = []
    last_metadata = None
    last_k = -1
    for i, m in enumerate(members):
        metadata = getattr(m, "metadata", None)
        if not isinstance(metadata, (bytes, bytearray, memoryview)):
            raise AssignmentError(f"members[{i}].metadata must be Subscription bytes, got {type(metadata).__name__}")
        member_id = getattr(m, "member_id", None)
        instance = getattr(m, "group_instance_id", None)
        member_ids.append(member_id)
        instance_ids.append(instance)
        if metadata is last_metadata or metadata == last_metadata:
            which[i] = last_k
            continue
        key = metadata if isinstance(metadata, bytes) else bytes(metadata)
        k = seen.get(key)
        if k is None:
            sub = codec.Subscription.decode(key)
            k = seen[key] = len(distinct)
            distinct.append(facts(_Member(member_id, instance, sub)))
        which[i] = last_k = k
        last_metadata = metadata
    return columns_group(member_ids, instance_ids, which, distinct, counts, partition_racks)


def member_objects_group(members, counts: Dict[str, int], facts: FactsFn, partition_racks=None) -> ArrayGroup:
    """The group of member-level objects (:class:`GroupMember` or alike), in
    the given order: one :class:`MemberInput` per member, and members with the
    same facts share their topic-id arrays."""
    member_ids: List = []
    instance_ids: List = []
    members = required_list(members, "members")
    which = np.empty(len(members), dtype=np.intp)
    seen: Dict[tuple, int] = {}
    distinct: List[MemberInput] = []
    for i, m in enumerate(members):
        mi = facts(m)
        member_ids.append(mi.member_id)
        instance_ids.append(mi.group_instance_id)
        key = (mi.topics, mi.owned, mi.generation, mi.subscription_generation, mi.rack)
        try:
            k = seen.get(key)
        except TypeError:  # unhashable junk in a field: its own entry, refused when the columns are built
            k, key = None, None
        if k is None:
            k = len(distinct)
            if key is not None:
                seen[key] = k
            distinct.append(mi)
        which[i] = k
    return columns_group(member_ids, instance_ids, which, distinct, counts, partition_racks)


class _Member:
    """The member-level view of one JoinGroup member, for the strategy's facts function."""

    __slots__ = ("member_id", "group_instance_id", "subscription")

    def __init__(self, member_id, group_instance_id, subscription):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.subscription = subscription


def assignment_payloads(result: ArrayAssignment, version: int, implementation: Optional[str] = None) -> Optional[List[bytes]]:
    """Each member's ``ConsumerProtocolAssignment`` bytes at ``version``, written
    from the CSR arrays; None where the kernels do not write it (a version
    outside 0-3, a topic name the codec would refuse), for the codec to encode."""
    if isinstance(version, bool) or not isinstance(version, int) or version not in ASSIGNMENT_VERSIONS:
        return None
    table = topic_name_table(result.topics)
    if table is None:
        return None
    offsets, blob = table
    kernels = load_kernels("leader", implementation)
    return kernels.assignment_bytes(result.indptr, result.topic, result.partition, offsets, blob, version)


def columns_group(
    member_ids: List,
    instance_ids: List,
    which: np.ndarray,
    distinct: List[MemberInput],
    counts: Dict[str, int],
    partition_racks=None,
) -> ArrayGroup:
    """The :class:`ArrayGroup` of members whose facts are ``distinct[which[i]]``."""
    if partition_racks is not None and not hasattr(partition_racks, "items"):
        raise AssignmentError("partition_racks must be a mapping of topic -> per-partition replica racks")
    names = set(counts)
    for d in distinct:
        try:
            names.update(d.topics)
        except TypeError as exc:
            raise AssignmentError(f"member {d.member_id!r}: topics must be str, got {d.topics!r}") from exc
        for tp in d.owned:
            if not (isinstance(tp, tuple) and len(tp) == 2 and isinstance(tp[0], str)):
                raise AssignmentError(f"member {d.member_id!r}: owned partitions must be (topic, partition)")
            names.add(tp[0])
    topics, index, partition_counts = interned_topics(names, counts)

    sub_rows: List[np.ndarray] = []
    owned_topic_rows: List[np.ndarray] = []
    owned_partition_rows: List[np.ndarray] = []
    for d in distinct:
        sub_rows.append(np.fromiter(map(index.__getitem__, d.topics), dtype=_I32, count=len(d.topics)))
        owned_t = np.fromiter((index[t] for t, _ in d.owned), dtype=_I32, count=len(d.owned))
        owned_p = np.empty(len(d.owned), dtype=_I32)
        for k, (t, p) in enumerate(d.owned):
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not 0 <= p <= 0x7FFFFFFF:
                raise AssignmentError(f"member {d.member_id!r}: bad owned partition {t!r}-{p!r}")
            owned_p[k] = p
        owned_topic_rows.append(owned_t)
        owned_partition_rows.append(owned_p)

    M = len(member_ids)
    sub_indptr = np.zeros(M + 1, dtype=_I64)
    owned_indptr = np.zeros(M + 1, dtype=_I64)
    sub_len = np.array([len(r) for r in sub_rows], dtype=_I64)
    owned_len = np.array([len(r) for r in owned_topic_rows], dtype=_I64)
    if M:
        np.cumsum(sub_len[which], out=sub_indptr[1:])
        np.cumsum(owned_len[which], out=owned_indptr[1:])
    rows = which.tolist()

    def stacked(parts: List[np.ndarray]) -> np.ndarray:
        if len(parts) == 1:
            return np.tile(parts[0], M)  # every member alike: no list of M references
        return np.concatenate([parts[k] for k in rows]) if M else np.zeros(0, dtype=_I32)

    rack_names, rr_indptr, rr = replica_rack_columns(partition_racks, index, partition_counts)
    generation = np.array([d.generation for d in distinct], dtype=_I64)
    subscription_generation = np.array([d.subscription_generation for d in distinct], dtype=_I64)
    racks = [d.rack for d in distinct]
    return ArrayGroup(
        topics,
        partition_counts,
        member_ids,
        sub_indptr,
        stacked(sub_rows),
        group_instance_ids=instance_ids,
        racks=[racks[k] for k in rows],
        owned_indptr=owned_indptr,
        owned_topic=stacked(owned_topic_rows),
        owned_partition=stacked(owned_partition_rows),
        generation=generation[which] if M else np.zeros(0, dtype=_I64),
        subscription_generation=subscription_generation[which] if M else np.zeros(0, dtype=_I64),
        rack_names=rack_names,
        replica_rack_indptr=rr_indptr,
        replica_racks=rr,
    )
