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

import itertools
import operator
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import codec
from ..errors import AssignmentError
from ._arrays import (
    ArrayAssignment,
    ArrayGroup,
    interned_topics,
    load_kernels,
    replica_rack_columns,
    required_list,
)
from ._leader_common import ASSIGNMENT_VERSIONS, topic_name_table
from ._model import MemberInput

_I32 = np.int32
_I64 = np.int64
_TOPIC = operator.attrgetter("topic")
_PARTITIONS = operator.attrgetter("partitions")


#: ``facts(member) -> (MemberInput, owned_groups)``: the strategy's reading of
#: one member, cleaned up (``_api`` binds the strategy and the partition
#: counts).  ``owned_groups`` is None, or the codec's owned-partition entries
#: (``.topic``, ``.partitions``) not yet in the MemberInput, checked when the
#: columns are built.
Facts = Tuple[MemberInput, Optional[list]]
FactsFn = Callable[[object], Facts]


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
    distinct: List[Facts] = []
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
    distinct: List[Facts] = []
    for i, m in enumerate(members):
        mi, groups = fact = facts(m)
        member_ids.append(mi.member_id)
        instance_ids.append(mi.group_instance_id)
        # Owned partitions read apart (``groups``) make the member its own entry.
        key = None if groups is not None else (mi.topics, mi.owned, mi.generation, mi.subscription_generation, mi.rack)
        try:
            k = seen.get(key) if key is not None else None
        except TypeError:  # unhashable junk in a field: its own entry, refused when the columns are built
            k, key = None, None
        if k is None:
            k = len(distinct)
            if key is not None:
                seen[key] = k
            distinct.append(fact)
        which[i] = k
    return columns_group(member_ids, instance_ids, which, distinct, counts, partition_racks)


def _flat_rows(rows: List[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """One array per distinct subscription -> ``(flat, ptr)`` CSR."""
    ptr = np.zeros(len(rows) + 1, dtype=_I64)
    if rows:
        np.cumsum(np.fromiter(map(len, rows), dtype=_I64, count=len(rows)), out=ptr[1:])
    flat = np.concatenate(rows) if rows else np.zeros(0, dtype=_I32)
    return flat.astype(_I32, copy=False), ptr


def _gather_rows(flat: np.ndarray, ptr: np.ndarray, which: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Member ``i``'s row is distinct row ``which[i]``: the members' CSR
    ``(indptr, values)``, gathered with one index array (no per-member step)."""
    lengths = (ptr[1:] - ptr[:-1])[which]
    indptr = np.zeros(len(which) + 1, dtype=_I64)
    np.cumsum(lengths, out=indptr[1:])
    total = int(indptr[-1])
    if len(ptr) == 2:  # one distinct subscription: every member's row is the same
        return indptr, np.tile(flat, len(which))
    index = np.repeat(ptr[:-1][which] - indptr[:-1], lengths) + np.arange(total, dtype=_I64)
    return indptr, flat[index]


def _owned_columns(distinct: List["Facts"], group_topics: List[str], index: Dict[str, int], counts: Dict[str, int]):
    """Every distinct member's owned partitions as CSR ``(topic, partition, ptr)``.

    From ``owned_groups`` (the codec's entries, every index an int32) in
    a few array operations over all members at once, with the checks and
    cleanup of the per-partition path: a negative index is refused, one past
    its topic's known partition count is dropped (see ``_api._sanitized``).
    From MemberInput tuples otherwise, one partition at a time.
    ``group_topics`` is the topic of every entry, in order (already collected
    to intern the names)."""
    group_parts: List[list] = []
    groups_per_distinct = np.zeros(len(distinct), dtype=_I64)
    tuple_rows: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
    for k, (d, groups) in enumerate(distinct):
        if groups is None:
            tuple_rows[k] = _owned_tuples_columns(d.member_id, d.owned, index)
            continue
        groups_per_distinct[k] = len(groups)
        group_parts.extend(map(_PARTITIONS, groups))
    sizes = np.fromiter(map(len, group_parts), dtype=_I64, count=len(group_parts))
    flat_p = np.fromiter(itertools.chain.from_iterable(group_parts), dtype=_I32, count=int(sizes.sum()))
    group_t = np.fromiter(map(index.__getitem__, group_topics), dtype=_I32, count=len(group_topics))
    flat_t = np.repeat(group_t, sizes)
    if len(flat_p) and flat_p.min() < 0:
        bad = int(np.argmax(flat_p < 0))
        raise AssignmentError(f"owned partitions: bad partition {_topic_name(index, flat_t[bad])!r}-{int(flat_p[bad])!r}")
    # a claim past its topic's known end is dropped; a topic the metadata does not know keeps it
    limit_of_topic = np.full(len(index), 0x7FFFFFFF, dtype=_I64)
    for t, n in counts.items():
        limit_of_topic[index[t]] = n
    keep = flat_p < limit_of_topic[flat_t]
    # per distinct member: how many kept partitions its groups hold
    member_of_partition = np.repeat(np.repeat(np.arange(len(distinct), dtype=_I64), groups_per_distinct), sizes)
    kept_per_distinct = np.bincount(member_of_partition[keep], minlength=len(distinct)).astype(_I64)
    flat_t, flat_p = flat_t[keep], flat_p[keep]
    if tuple_rows:
        # the rare mix: splice the per-partition rows in, distinct by distinct
        starts = np.concatenate(([0], np.cumsum(kept_per_distinct)))
        ts, ps = [], []
        for k in range(len(distinct)):
            if k in tuple_rows:
                ts.append(tuple_rows[k][0])
                ps.append(tuple_rows[k][1])
                kept_per_distinct[k] = len(tuple_rows[k][0])
            else:
                ts.append(flat_t[starts[k]:starts[k + 1]])
                ps.append(flat_p[starts[k]:starts[k + 1]])
        flat_t = np.concatenate(ts) if ts else np.zeros(0, dtype=_I32)
        flat_p = np.concatenate(ps) if ps else np.zeros(0, dtype=_I32)
    ptr = np.zeros(len(distinct) + 1, dtype=_I64)
    np.cumsum(kept_per_distinct, out=ptr[1:])
    return flat_t.astype(_I32, copy=False), flat_p.astype(_I32, copy=False), ptr


def _topic_name(index: Dict[str, int], topic_id) -> str:
    # only on the error path: a scan of the index is fine there
    return next(t for t, i in index.items() if i == topic_id)


def _owned_tuples_columns(member_id, owned, index):
    owned_t = np.fromiter((index[t] for t, _ in owned), dtype=_I32, count=len(owned))
    owned_p = np.empty(len(owned), dtype=_I32)
    for k, (t, p) in enumerate(owned):
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not 0 <= p <= 0x7FFFFFFF:
            raise AssignmentError(f"member {member_id!r}: bad owned partition {t!r}-{p!r}")
        owned_p[k] = p
    return owned_t, owned_p


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
    distinct: List[Facts],
    counts: Dict[str, int],
    partition_racks=None,
) -> ArrayGroup:
    """The :class:`ArrayGroup` of members whose facts are ``distinct[which[i]]``."""
    if partition_racks is not None and not hasattr(partition_racks, "items"):
        raise AssignmentError("partition_racks must be a mapping of topic -> per-partition replica racks")
    names = set(counts)
    owned_group_topics: List[str] = []  # the topic of every owned-partition entry read apart
    topic_lists: Dict[tuple, int] = {}  # each distinct topic list, numbered
    list_of_distinct = []
    for d, groups in distinct:
        try:
            k = topic_lists.get(d.topics)
        except TypeError as exc:
            raise AssignmentError(f"member {d.member_id!r}: topics must be str, got {d.topics!r}") from exc
        if k is None:
            k = topic_lists[d.topics] = len(topic_lists)
            try:
                names.update(d.topics)
            except TypeError as exc:
                raise AssignmentError(f"member {d.member_id!r}: topics must be str, got {d.topics!r}") from exc
        list_of_distinct.append(k)
        for tp in d.owned:
            if not (isinstance(tp, tuple) and len(tp) == 2 and isinstance(tp[0], str)):
                raise AssignmentError(f"member {d.member_id!r}: owned partitions must be (topic, partition)")
            names.add(tp[0])
        if groups:
            owned_group_topics.extend(map(_TOPIC, groups))
    names.update(owned_group_topics)
    topics, index, partition_counts = interned_topics(names, counts)

    ids_of_list = [np.fromiter(map(index.__getitem__, ts), dtype=_I32, count=len(ts)) for ts in topic_lists]
    sub_rows = [ids_of_list[k] for k in list_of_distinct]
    sub_flat, sub_ptr = _flat_rows(sub_rows)
    owned_t, owned_p, owned_ptr = _owned_columns(distinct, owned_group_topics, index, counts)

    M = len(member_ids)
    sub_indptr, sub_topics = _gather_rows(sub_flat, sub_ptr, which)
    owned_indptr, owned_topic = _gather_rows(owned_t, owned_ptr, which)
    _, owned_partition = _gather_rows(owned_p, owned_ptr, which)
    rows = which.tolist()

    rack_names, rr_indptr, rr = replica_rack_columns(partition_racks, index, partition_counts)
    generation = np.array([d.generation for d, _ in distinct], dtype=_I64)
    subscription_generation = np.array([d.subscription_generation for d, _ in distinct], dtype=_I64)
    racks = [d.rack for d, _ in distinct]
    return ArrayGroup(
        topics,
        partition_counts,
        member_ids,
        sub_indptr,
        sub_topics,
        group_instance_ids=instance_ids,
        racks=[racks[k] for k in rows],
        owned_indptr=owned_indptr,
        owned_topic=owned_topic,
        owned_partition=owned_partition,
        generation=generation[which] if M else np.zeros(0, dtype=_I64),
        subscription_generation=subscription_generation[which] if M else np.zeros(0, dtype=_I64),
        rack_names=rack_names,
        replica_rack_indptr=rr_indptr,
        replica_racks=rr,
    )
