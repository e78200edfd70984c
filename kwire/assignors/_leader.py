"""The leader's whole path on columns: JoinGroupResponse members (or
member-level objects) -> :class:`ArrayGroup` -> assignment -> each member's
``ConsumerProtocolAssignment`` bytes.

Where the columns come from: members that send the same metadata bytes (in
the common case all of them) share one distinct subscription.  For the
built-in strategies the distinct byte strings are read by the leader
kernels' ``subscription_columns`` straight into columns: topic names become
ids once for the whole group (a subscription whose topics array is the
previous one's reuses its topic list without reading it), owned partitions
become ``(topic id, partition)`` int32 columns, and generation ids, racks
and userData one value each.  The strategy's reading (``_api._facts``) then
takes a member's generation from those values; eager sticky's claims come
from the userData, whose well-formed V1 messages the kernels'
``sticky_userdata_columns`` reads into the same kind of columns, in the
same topic ids (``_userdata.sticky_claim_columns`` reads any other userData
as Java does, alone).  What is never built on the built-in strategies' paths:
a Python object per partition, per owned entry or per subscribed topic, or a
per-member Subscription/Assignment message object; per member only a few
(the rack and userData of its distinct subscription, its payload) -- but
for the claims of sticky userData that is not one well-formed V1 message.
A strategy registered with its own ``member_input`` is handed decoded
Subscriptions, one per distinct byte string.
"""

from __future__ import annotations

import itertools
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .. import codec
from ..errors import AssignmentError
from ._arrays import (
    ArrayAssignment,
    ArrayGroup,
    all_optional_str,
    all_str,
    interned_topics,
    load_kernels,
    replica_rack_columns,
    required_list,
)
from ._leader_common import ASSIGNMENT_VERSIONS, ClaimColumns, SubscriptionColumns, topic_name_table
from ._model import DEFAULT_GENERATION, MemberInput

_I32 = np.int32
_I64 = np.int64
#: One past the largest partition index: a claim on a topic the metadata does not know is kept.
_NO_LIMIT = 1 << 31

#: ``facts(member) -> MemberInput``: the strategy's reading of one member,
#: cleaned up (``_api`` binds the strategy and the partition counts).
FactsFn = Callable[[object], MemberInput]


class ColumnReading(NamedTuple):
    """How a strategy reads a member from its subscription's columns
    (``_api._facts`` attaches one as ``facts.columns``)."""

    #: ``check_ids(member_id, group_instance_id)``: raises the strategy's
    #: AssignmentError; it refuses only a member id that is not a str or an
    #: instance id that is neither str nor None.
    check_ids: Callable[[object, object], None]
    #: Whether the Subscription's owned partitions are the member's claims.
    owned_entries: bool
    #: ``rows(columns, kernels) -> (generation, subscription_generation,
    #: claims)``, one entry per distinct subscription each (``kernels``: the
    #: leader kernels that read ``columns``; claims: :class:`ClaimColumns`
    #: read elsewhere, whose names start with ``columns.names``, not yet
    #: cleaned up, or None for none at all); None: every member has the defaults.
    rows: Optional[Callable[[SubscriptionColumns, object],
                            Tuple[Sequence[int], Sequence[int], Optional[ClaimColumns]]]]


def join_members_group(members, counts: Dict[str, int], facts: FactsFn, partition_racks=None,
                       implementation: Optional[str] = None) -> ArrayGroup:
    """The group of a JoinGroupResponse's members (``member_id``,
    ``group_instance_id``, ``metadata`` bytes), in response order.

    Each distinct metadata byte string is read once: a member whose bytes
    equal the previous member's costs one ``memcmp``, any other one dict
    lookup of its sketch.  ``implementation`` picks the leader kernels that
    read them."""
    members = required_list(members, "join_group_response.members")
    kernels = load_kernels("leader", implementation)
    member_ids, instance_ids, which, keys, firsts = kernels.member_rows(members)
    reading: Optional[ColumnReading] = getattr(facts, "columns", None)
    if reading is None:
        distinct = [facts(_Member(member_ids[i], instance_ids[i], codec.Subscription.decode(key)))
                    for key, i in zip(keys, firsts)]
        return columns_group(member_ids, instance_ids, which, distinct, counts, partition_racks)
    ids_are_str = all_str(member_ids) and all_optional_str(instance_ids)
    if not ids_are_str:
        # Some id will be refused: which error comes first is decided member by member.
        for k, i in enumerate(firsts):
            try:
                reading.check_ids(member_ids[i], instance_ids[i])
            except AssignmentError:
                # Bytes that are bad up to and including this member's are refused
                # first, as when each member was decoded and then read in turn.
                kernels.subscription_columns(keys[:k + 1])
                raise
    cols = kernels.subscription_columns(keys)
    return _subscriptions_group(member_ids, instance_ids, which, [member_ids[i] for i in firsts], cols, reading,
                                counts, partition_racks, kernels, ids_are_str)


def _subscriptions_group(member_ids, instance_ids, which, first_ids, cols: SubscriptionColumns,
                         reading: ColumnReading, counts: Dict[str, int], partition_racks, kernels,
                         ids_are_str: bool) -> ArrayGroup:
    """The :class:`ArrayGroup` of members whose subscription is row
    ``which[i]`` of ``cols`` (``first_ids[k]``: the first member with row ``k``;
    ``ids_are_str``: every member id is a str and every instance id a str or None)."""
    D = len(first_ids)
    claims: Optional[ClaimColumns] = None
    if reading.rows is None:
        generation = subscription_generation = np.full(D, DEFAULT_GENERATION, dtype=_I32)
    else:
        # int32 as the group keeps them: every value here was read from an
        # int32 on the wire, and an int64 column would be narrowed and
        # range-checked again by ArrayGroup on every call.
        generation, subscription_generation, claims = reading.rows(cols, kernels)
        generation = np.array(generation, dtype=_I32)
        subscription_generation = np.array(subscription_generation, dtype=_I32)
    all_names = cols.names if claims is None else claims.names
    mentioned = np.zeros(len(all_names), dtype=bool)
    mentioned[cols.list_topic] = True
    # Claims are usually on subscribed topics, which already mention every
    # name: the scatter of a claim column (900k at 1M partitions) is skipped.
    if not mentioned.all():
        if reading.owned_entries:
            mentioned[cols.entry_topic] = True
        elif claims is not None:
            mentioned[claims.topic] = True
    names = set(counts)
    names.update(itertools.compress(all_names, mentioned))
    topics, index, partition_counts = interned_topics(names, counts)
    topic_of_name = np.fromiter(map(index.get, all_names, itertools.repeat(-1, len(all_names))), dtype=_I32,
                                count=len(all_names))
    interned = _renumbering(all_names, topics, topic_of_name)
    list_flat, list_ptr = _first_of_each(interned(cols.list_topic), cols.list_ptr, len(topics))
    if reading.owned_entries:
        owned = _current_claims(interned(cols.owned_topic), cols.owned_partition, cols.owned_ptr, first_ids,
                                topics, index, counts, partition_counts)
    elif claims is None:
        owned = np.zeros(0, dtype=_I32), np.zeros(0, dtype=_I32), np.zeros(D + 1, dtype=_I64)
    else:
        owned = _current_claims(interned(claims.topic), claims.partition, claims.ptr, first_ids, topics, index,
                                counts, partition_counts)
    return _array_group(topics, partition_counts, index, member_ids, instance_ids, which, list_flat, list_ptr,
                        cols.topic_list, owned, generation, subscription_generation, cols.rack, partition_racks,
                        ids_are_str)


def _renumbering(names: List[str], topics: List[str], topic_of_name: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Read topic ids (of ``names``) -> interned ones (of ``topics``).  Names
    read in sorted order, with none left out and none added (a Java client
    sends its topics sorted), keep their ids: the claim columns are then used
    as read, not gathered anew."""
    if names == topics:
        return lambda ids: ids
    return topic_of_name.__getitem__


def _first_of_each(flat: np.ndarray, ptr: np.ndarray, width: int) -> Tuple[np.ndarray, np.ndarray]:
    """Each CSR row without its repeats, first occurrences in order (a row's
    ``dict.fromkeys``, as ``_api._sanitized`` cleans a topic list)."""
    if len(ptr) == 2 and (not len(flat) or np.bincount(flat, minlength=width).max() == 1):
        # One topic list for the whole group (the usual case) without
        # repeats: a count is several times cheaper than the sort in unique.
        return flat, ptr
    row = np.repeat(np.arange(len(ptr) - 1, dtype=_I64), np.diff(ptr))
    _, first = np.unique(row * max(width, 1) + flat, return_index=True)
    keep = np.zeros(len(flat), dtype=bool)
    keep[first] = True
    return flat[keep], np.concatenate(([0], np.cumsum(keep, dtype=_I64)))[ptr]


def _current_claims(flat_t, flat_p, ptr, first_ids: List, topics: List[str], index: Dict[str, int],
                    counts: Dict[str, int], partition_counts: np.ndarray):
    """Claimed partitions as CSR ``(topic, partition, ptr)``, cleaned up as
    ``_api._sanitized`` cleans a member's claims: a negative index is
    refused (naming the first member that claims it), one past its topic's
    known partition count is dropped, and a topic the metadata does not know
    keeps its claims (``partition_counts``: each topic's, as interned)."""
    if len(flat_p) and flat_p.min() < 0:
        bad = int(np.argmax(flat_p < 0))
        member_id = first_ids[int(np.searchsorted(ptr, bad, side="right")) - 1]
        raise AssignmentError(
            f"member {member_id!r}: bad owned partition {topics[flat_t[bad]]!r}-{int(flat_p[bad])!r}"
        )
    if len(counts) == len(topics):
        if not len(flat_p) or flat_p.max() < partition_counts.min():
            # No claim past the smallest topic's end (topics of one size,
            # the usual group): nothing is dropped, with no gather of counts.
            return flat_t.astype(_I32, copy=False), flat_p.astype(_I32, copy=False), ptr
        # Every topic has a known count: the int32 counts are the limits,
        # with no int64 column the size of the claims.
        keep = flat_p < partition_counts[flat_t]
    else:
        limit_of_topic = np.full(len(topics), _NO_LIMIT, dtype=_I64)
        for t, n in counts.items():
            limit_of_topic[index[t]] = n
        keep = flat_p < limit_of_topic[flat_t]
    if keep.all():
        return flat_t.astype(_I32, copy=False), flat_p.astype(_I32, copy=False), ptr
    kept_ptr = np.concatenate(([0], np.cumsum(keep, dtype=_I64)))[ptr]
    return flat_t[keep].astype(_I32, copy=False), flat_p[keep].astype(_I32, copy=False), kept_ptr


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


def _flat_rows(rows: List[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """One array per row -> ``(flat, ptr)`` CSR."""
    ptr = np.zeros(len(rows) + 1, dtype=_I64)
    if rows:
        np.cumsum(np.fromiter(map(len, rows), dtype=_I64, count=len(rows)), out=ptr[1:])
    flat = np.concatenate(rows) if rows else np.zeros(0, dtype=_I32)
    return flat.astype(_I32, copy=False), ptr


def _gather_rows(ptr: np.ndarray, which: np.ndarray, *flats: np.ndarray) -> Tuple[np.ndarray, ...]:
    """Member ``i``'s row is row ``which[i]`` of each CSR ``(flat, ptr)``:
    the members' ``(indptr, *values)``, gathered with one index array (no
    per-member step)."""
    if len(which) == len(ptr) - 1 and np.array_equal(which, np.arange(len(which))):
        return (ptr, *flats)  # every member its own row, in order (a second generation)
    if len(ptr) == 2:  # one row: every member's row is the same
        indptr = np.arange(len(which) + 1, dtype=_I64) * int(ptr[1] - ptr[0])
        return (indptr, *(np.repeat(flat[None, :], len(which), axis=0).ravel() for flat in flats))
    lengths = (ptr[1:] - ptr[:-1])[which]
    indptr = np.zeros(len(which) + 1, dtype=_I64)
    np.cumsum(lengths, out=indptr[1:])
    total = int(indptr[-1])
    index = np.repeat(ptr[:-1][which] - indptr[:-1], lengths) + np.arange(total, dtype=_I64)
    return (indptr, *(flat[index] for flat in flats))


def _claim_columns(member_ids: List, claims: List[Sequence], index: Dict[str, int]):
    """Each distinct member's ``(topic, partition)`` claims as CSR
    ``(topic, partition, ptr)``, one partition at a time: a bad index is
    refused with the member's id."""
    topic_rows, partition_rows = [], []
    for member_id, owned in zip(member_ids, claims):
        t, p = _owned_tuples_columns(member_id, owned, index)
        topic_rows.append(t)
        partition_rows.append(p)
    flat_t, ptr = _flat_rows(topic_rows)
    flat_p, _ = _flat_rows(partition_rows)
    return flat_t, flat_p, ptr


def _owned_tuples_columns(member_id, owned, index):
    owned_t = np.fromiter((index[t] for t, _ in owned), dtype=_I32, count=len(owned))
    owned_p = np.empty(len(owned), dtype=_I32)
    for k, (t, p) in enumerate(owned):
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not 0 <= p <= 0x7FFFFFFF:
            raise AssignmentError(f"member {member_id!r}: bad owned partition {t!r}-{p!r}")
        owned_p[k] = p
    return owned_t, owned_p


class _Member:
    """The member-level view of one JoinGroup member, for a strategy's own reader."""

    __slots__ = ("member_id", "group_instance_id", "subscription")

    def __init__(self, member_id, group_instance_id, subscription):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.subscription = subscription


def assignment_payloads(result: ArrayAssignment, version: int, implementation: Optional[str] = None) -> Optional[List[bytes]]:
    """Each member's ``ConsumerProtocolAssignment`` bytes at ``version``, written
    from the CSR arrays; None where the kernels do not write it (a version
    outside 0-3, a topic name the codec would refuse), for the codec to encode."""
    table = _writable_names(result, version)
    if table is None:
        return None
    kernels = load_kernels("leader", implementation)
    return kernels.assignment_bytes(*_contiguous(result), *table, version)


def _contiguous(result: ArrayAssignment) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``result``'s CSR arrays as the compiled writers take them (C-contiguous;
    an assignment built from slices is copied)."""
    return (np.ascontiguousarray(result.indptr), np.ascontiguousarray(result.topic),
            np.ascontiguousarray(result.partition))


def _writable_names(result: ArrayAssignment, version) -> Optional[Tuple[np.ndarray, bytes]]:
    """The kernels' topic name table for writing ``result``'s Assignments at
    ``version``, or None where the codec should write them."""
    if isinstance(version, bool) or not isinstance(version, int) or version not in ASSIGNMENT_VERSIONS:
        return None
    return topic_name_table(result.topics)


def sync_request_frame(result: ArrayAssignment, member_ids: List, assignment_version: int, head: bytes,
                       flexible: bool, implementation: Optional[str] = None) -> Optional[bytes]:
    """The SyncGroupRequest frame whose every byte before the assignments
    array is ``head`` (a frame of the request with no assignments, less its
    empty array and tag section): each member's id and Assignment written
    straight into one bytes object, as the codec writes them.  None where the
    kernels do not write it (as :func:`assignment_payloads`, or a member id the
    codec should judge), for the codec to encode."""
    table = _writable_names(result, assignment_version)
    if table is None:
        return None
    kernels = load_kernels("leader", implementation)
    return kernels.sync_frame(*_contiguous(result), *table, assignment_version,
                              member_ids, flexible, head, b"\x00" if flexible else b"")


def columns_group(
    member_ids: List,
    instance_ids: List,
    which: np.ndarray,
    distinct: List[MemberInput],
    counts: Dict[str, int],
    partition_racks=None,
) -> ArrayGroup:
    """The :class:`ArrayGroup` of members whose facts are ``distinct[which[i]]``."""
    _check_partition_racks(partition_racks)
    names = set(counts)
    topic_lists: Dict[tuple, int] = {}  # each distinct topic list, numbered
    list_of_distinct = []
    for d in distinct:
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
    topics, index, partition_counts = interned_topics(names, counts)
    list_flat, list_ptr = _flat_rows(
        [np.fromiter(map(index.__getitem__, ts), dtype=_I32, count=len(ts)) for ts in topic_lists]
    )
    owned = _claim_columns([d.member_id for d in distinct], [d.owned for d in distinct], index)
    return _array_group(
        topics, partition_counts, index, member_ids, instance_ids, which, list_flat, list_ptr,
        np.array(list_of_distinct, dtype=_I64), owned,
        np.array([d.generation for d in distinct], dtype=_I64),
        np.array([d.subscription_generation for d in distinct], dtype=_I64),
        [d.rack for d in distinct], partition_racks,
    )


def _array_group(topics, partition_counts, index, member_ids, instance_ids, which, list_flat, list_ptr,
                 list_of_distinct, owned, generation, subscription_generation, racks, partition_racks,
                 ids_are_str: bool = False) -> ArrayGroup:
    """The :class:`ArrayGroup` from distinct-level columns: member ``i`` has
    distinct row ``which[i]``, whose topic list is ``list_of_distinct[k]``
    and whose owned CSR, generations and rack are row ``k`` of theirs
    (``ids_are_str``: the caller has found the ids' types right)."""
    M = len(member_ids)
    owned_t, owned_p, owned_ptr = owned
    owned_indptr, owned_topic, owned_partition = _gather_rows(owned_ptr, which, owned_t, owned_p)
    rack_names, rr_indptr, rr = replica_rack_columns(partition_racks, index, partition_counts)
    # Every column but the members' own ids and racks was built above, valid
    # by construction (interned, sorted topics; checked counts and claims;
    # CSR from cumsums): re-checking them costs small groups a large share
    # of the whole path.
    columns = dict(
        group_instance_ids=instance_ids,
        # One distinct subscription (the usual group) is one list repeat.
        racks=list(racks) * M if len(racks) == 1 else list(map(racks.__getitem__, which.tolist())),
        owned_indptr=owned_indptr,
        owned_topic=owned_topic,
        owned_partition=owned_partition,
        generation=generation[which] if M else np.zeros(0, dtype=_I32),
        subscription_generation=subscription_generation[which] if M else np.zeros(0, dtype=_I32),
        rack_names=rack_names,
        replica_rack_indptr=rr_indptr,
        replica_racks=rr,
        validate=False,
    )
    if len(list_ptr) == 2 and M:
        # One topic list for every member (the usual group): it is kept once,
        # not copied per member (8 MB at 2000 members of 1000 topics).
        group = ArrayGroup(topics, partition_counts, member_ids, None, None,
                           shared_topics=list_flat[list_ptr[0]:list_ptr[1]], **columns)
    else:
        list_of_member = np.asarray(list_of_distinct, dtype=_I64)[which] if M else np.zeros(0, dtype=_I64)
        sub_indptr, sub_topics = _gather_rows(list_ptr, list_of_member, list_flat)
        group = ArrayGroup(topics, partition_counts, member_ids, sub_indptr, sub_topics, **columns)
    group.check_members(ids_are_str)
    return group


def _check_partition_racks(partition_racks) -> None:
    if partition_racks is not None and not hasattr(partition_racks, "items"):
        raise AssignmentError("partition_racks must be a mapping of topic -> per-partition replica racks")
