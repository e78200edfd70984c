"""The what-if's input: each generation a what-if replays, packed into
arrays from its bucket's Arrow event columns, all of a bucket's together.

A generation is packed into its ArrayGroups (a plain one for the strategies
that claim nothing, a sticky one that claims the previous ownership) and
the ownership observed before and at it; :mod:`kwire.pipeline._whatif_batch`
replays every strategy on them and reads moves, loads and reproduction off
the ArrayAssignments with NumPy.  Observed partitions are int64 keys
``topic id << 32 | partition`` over the generation's own topic ids; owners
are codes over every member name seen, -1 for no owner.

:func:`pack_replayed` makes a fixed number of Arrow and NumPy calls for a
bucket, whatever its size, in named steps: the rows each generation reads,
its members and assignment entries, owner codes, topic ids, the ownership
(each partition once), each member's lists, the two variants' topic
layouts, their ArrayGroups, and the head and columns the batch reads.
"""

from __future__ import annotations

from itertools import chain
from typing import Dict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kwire import assignors
from kwire.assignors import segment_starts
from kwire.errors import AssignmentError, KwireError
from kwire.pipeline._timeline import Timeline, completed_generations, source_types, typed

I32, I64 = np.int32, np.int64


class Variant:
    """One ArrayGroup of a generation (the strategies that claim nothing share
    one, the sticky ones claim the previous ownership), or the KwireError
    its input earned; with where each previously owned partition sits in it."""

    __slots__ = ("group", "error", "topic_ids", "prev_slots")

    def __init__(self, group=None, error=None):
        self.group, self.error = group, error
        self.topic_ids = self.prev_slots = None


#: What the batch reads of a generation first: its head, one row of this
#: dtype, with what the generation is (``generation_id``, ``members``, the
#: ``partitions`` its members subscribe to) and how long each of its
#: columns is.  A block reads every generation's head as one array (a field
#: is a column of it), and its columns (:data:`LAID_OUT`, then the variants')
#: from one concatenation: a pass over the generations per column cost more
#: in per-call overhead and cache misses than the reading itself.
HEAD = np.dtype([
    ("members", I64),
    ("owner_codes", I64),  # members first, then every other owner named
    ("topic_ids", I64),  # every topic the generation names, subscribed or owned
    ("has_prev", I64),  # whether an earlier generation's ownership was observed
    ("none_code", I64),  # the code of an owner named None, or -2
    ("observed", I64),  # partitions observed owned, each once
    ("list_entries", I64),  # entries of the members' lists as received
    ("prev_owned", I64),  # partitions owned at the previous generation, each once
    ("plain_ok", I64),  # whether the plain variant's ArrayGroup was built
    ("sticky_ok", I64),
    ("same_layout", I64),  # whether the sticky variant's columns are the plain one's
    ("generation_id", I64),
    ("partitions", I64),  # of the subscribed topics
    ("coded_members", I64),  # members laid out in ``member_codes``: 0 where each member's code is its position
    # per variant (plain, sticky): how many topic offsets, topic ids and previous slots it has
    ("variant_lengths", I64, (2, 3)),
])
#: The generation's columns, and the head field that holds each one's length.
LAID_OUT = (("member_codes", "coded_members"), ("obs_counts", "members"), ("obs_lists", "list_entries"),
            ("obs_codes", "observed"), ("obs_keys", "observed"), ("prev_codes", "prev_owned"),
            ("prev_keys", "prev_owned"))


def gather(ragged, which):
    """The arrays ``which`` of a ragged column ``(values, where each array
    starts in them, its length)`` laid end to end, and their lengths."""
    values, starts, lengths = ragged
    n = lengths[which]
    base, total = segment_starts(n)
    return values[np.repeat(starts[which] - base, n) + np.arange(total)], n


class Packed:
    """Generations as the batch reads them: ``head``, a :data:`HEAD` row per
    generation; ``columns``, for each column of :data:`LAID_OUT`, ``(values,
    where each generation's piece starts in them)`` (the head has its
    length); ``variant_values`` and ``variant_bases[i, v]``, where generation
    ``i``'s variant ``v`` (0 plain, 1 sticky) has its topic offsets, topic
    ids and previous slots in them; and per generation its group, protocol
    and two :class:`Variant` objects."""

    __slots__ = ("head", "columns", "variant_values", "variant_bases", "group_ids", "protocol_names", "plain",
                 "sticky")

    def __init__(self, head, columns, variant_values, variant_bases, group_ids, protocol_names, plain, sticky):
        self.head, self.columns, self.variant_values, self.variant_bases = head, columns, variant_values, variant_bases
        self.group_ids, self.protocol_names, self.plain, self.sticky = group_ids, protocol_names, plain, sticky

    @classmethod
    def empty(cls) -> "Packed":
        none = np.zeros(0, I64)
        return cls(np.zeros(0, HEAD), [(none, none)] * len(LAID_OUT), none, np.zeros((0, 2, 3), I64), [], [], [], [])

    def __len__(self):
        return len(self.head)

    def block(self, start, stop) -> "Packed":
        """Generations ``start`` to ``stop``, over the same values."""
        return Packed(self.head[start:stop], [(v, at[start:stop]) for v, at in self.columns], self.variant_values,
                      self.variant_bases[start:stop], self.group_ids[start:stop], self.protocol_names[start:stop],
                      self.plain[start:stop], self.sticky[start:stop])


def replayed(tl: Timeline):
    """``(generation, previous)`` for each generation a what-if replays:
    formed, with members known and an observed assignment, each with the
    last observed one before it (None for none)."""
    prev = None
    for gg in completed_generations(tl):
        observed = gg.assignment or gg.leader_assignment
        if gg.members and observed:
            yield gg, prev
        if observed:
            prev = gg


def replayed_rows(tl: Timeline) -> list:
    """What :func:`pack_replayed` needs of each generation of ``tl`` a what-if
    replays: its names and sizes, its timeline's event source and which of
    its rows it reads (its JoinGroup response, its observed assignment's
    frames, and the previous observed generation's, the sticky claims): a
    few ints per generation, kept while a bucket's timelines go by."""
    out = []
    for gg, prev in replayed(tl):
        out.append((tl.group_id, gg.generation_id, gg.protocol_name, tl.source, gg.members_row,
                    gg.sync_rows or [gg.leader_row], None if prev is None else prev.sync_rows or [prev.leader_row],
                    -1 if prev is None else prev.generation_id, gg.partition_counts))
    return out


def whatif_generations(timelines) -> Packed:
    """Every generation of ``timelines`` a what-if replays, packed from their
    event columns (:func:`pack_replayed`) for the batch replay."""
    return pack_replayed([r for tl in timelines for r in replayed_rows(tl)])


def not_a_topic_name(name) -> AssignmentError:
    # what ArrayGroup says of the same name, said before anything is laid out by it
    return AssignmentError(f"topic names must be str, got {name!r}")


def _fields(structs, names):
    """Fields ``names`` of a StructArray, a null struct's fields null."""
    flat = structs.flatten()
    return [flat[structs.type.get_field_index(name)] for name in names]


def _ints(array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False).astype(I64)


def _lengths(lists) -> np.ndarray:
    """Each list's length, 0 for a null one."""
    return _ints(pc.fill_null(pc.list_value_length(lists), 0))


def _indptrs(lengths, groups):
    """The CSR indptr of ``lengths`` for each run of ``groups[g]``
    consecutive items, end to end: group ``g``'s starts at
    ``starts(groups)[g] + g`` and has ``groups[g] + 1`` entries."""
    cs = np.zeros(len(lengths) + 1, I64)
    np.cumsum(lengths, out=cs[1:])
    first = segment_starts(groups)[0]
    wide = groups + 1
    return gather((cs, first, wide), slice(None))[0] - np.repeat(cs[first], wide)


def _first_of_runs(sorted_keys):
    """Where each run of equal values of ``sorted_keys`` starts."""
    start = np.ones(len(sorted_keys), bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return start


def _rank_in(group, n):
    """Each item's rank among the items of its ``group`` (groups
    non-decreasing), and how many items each of the ``n`` groups has."""
    count = np.bincount(group, minlength=n)
    return np.arange(len(group)) - segment_starts(count)[0][group], count


def _lists_of(pair_of_entry, n_pairs, pair_of_member):
    """The entries of each member (those of its pair), in entry order,
    member after member, and how many each member has."""
    order = np.argsort(pair_of_entry, kind="stable")
    per_pair = np.bincount(pair_of_entry, minlength=n_pairs)
    return gather((order, segment_starts(per_pair)[0], per_pair), pair_of_member)


def _chunks(parts):
    """Arrays or chunked arrays end to end, as one chunked array (no copy)."""
    return pa.chunked_array([c for p in parts for c in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])],
                            parts[0].type)


def _take(column, rows, to_type) -> pa.Array:
    """``rows`` of a chunked array, as one array of ``to_type`` (see
    :func:`kwire.pipeline._timeline.typed`): only they are copied and cast, not the bucket."""
    taken = column.take(pa.array(rows))
    taken = taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken
    return taken if taken.type == to_type else taken.cast(to_type)


def _unique(keys):
    """``np.unique(keys, return_inverse=True)`` by a stable sort, which on
    keys in runs (generation after generation) costs less than its quicksort."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = _first_of_runs(ordered)
    inverse = np.empty(len(keys), I64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def pack_replayed(records) -> Packed:
    """The generations of ``records`` (:func:`replayed_rows`) packed for the
    batch straight from their events' Arrow columns, with no Python object
    per member or partition but the member ids (and topic names) an
    ArrayGroup takes as lists of str.  The rules are the timeline's: members
    are the JoinGroup response's; a member's list is every SyncGroup
    response's entries for it in capture order (or the leader's last
    request's); a partition listed twice keeps the owner that comes last in
    the ownership dict's order (owners by first appearance, an empty list
    counting, each one's partitions as received); and the previous
    generation's lists are what the sticky strategies claim."""
    n = len(records)
    if not n:
        return Packed.empty()
    (group_ids, generation_ids, protocol_names, sources, members_rows, observed_rows, prev_rows, prev_generation,
     counts_of) = zip(*records)
    has_prev = np.fromiter(map(bool, prev_rows), bool, n)
    entries = _Entries(*_rows_read(sources, members_rows, observed_rows, prev_rows), n)
    owners = _OwnerCodes(entries, n)
    topics = _TopicIds(entries, n)
    observed, previous = _owned_once(entries, topics, owners)
    entry_code = np.repeat(owners.of_listing, entries.listing_len)
    # each entry's partition key over its generation's topic ids
    entry_key = np.repeat(topics.topic_id[topics.of_listing] << 32, entries.listing_len) | entries.partition
    entry_topic = np.repeat(topics.of_listing, entries.listing_len)
    received, received_counts, claimed, claimed_counts = _member_lists(entries, owners)
    n_observed = np.bincount(entries.entry_generation[observed], minlength=n)
    n_prev = np.bincount(entries.entry_generation[previous], minlength=n)
    has_claims = np.bincount(entries.member_generation, claimed_counts, minlength=n) > 0

    # -- the plain variant's topics (subscribed), and the sticky one's
    # (owned too) where they are more: elsewhere it is laid out as the plain one
    in_plain = np.zeros(len(topics.generation), bool)
    in_plain[topics.of_subscription] = True
    in_sticky = in_plain.copy()
    in_sticky[entry_topic[claimed]] = True
    more = np.bincount(topics.generation[in_sticky & ~in_plain], minlength=n) > 0
    in_sticky &= more[topics.generation]
    # an owned-only topic has no size
    size = np.where(in_plain, _sizes(counts_of, topics.generation, topics.name, topics.name_of), 0)
    total = np.bincount(topics.generation, size, minlength=n).astype(I64)
    plain_v, sticky_v = (_variant_topics(in_v, topics, size, entries.subscription_generation, n)
                         for in_v in (in_plain, in_sticky))
    prev_generation_of = entries.entry_generation[previous]
    plain_v["slots"] = _prev_slots(plain_v, in_plain, entry_topic[previous], entries.partition[previous],
                                   prev_generation_of)
    prev_more = more[prev_generation_of]
    sticky_v["slots"] = _prev_slots(sticky_v, in_sticky, entry_topic[previous][prev_more],
                                    entries.partition[previous][prev_more], prev_generation_of[prev_more])
    claim_generation = entries.entry_generation[claimed]
    claim_topics, claim_partitions, claim_generations = _claims(entries, claimed, claimed_counts, entry_topic[claimed],
                                                                plain_v, sticky_v, more, prev_generation)

    # ArrayGroup's own checks (named errors) only where they can fail: a
    # member id repeated or None, a negative size or owned partition
    check_plain = (owners.distinct < entries.sizes) | (
        np.bincount(entries.member_generation[owners.member_named_none], minlength=n) > 0) | (
        np.bincount(topics.generation[in_plain & (size < 0)], minlength=n) > 0)
    check_sticky = check_plain | (np.bincount(claim_generation[claim_partitions < 0], minlength=n) > 0)
    # most generations have no static member: their groups get no instance ids, which is all None
    static = np.bincount(entries.member_generation, entries.instance_ids.is_valid().to_numpy(zero_copy_only=False),
                         minlength=n) > 0
    plain, sticky = _variant_groups(
        entries.sizes, entries.member_ids.to_pylist(), entries.instance_ids.to_pylist(), static,
        entries.subscription_len, plain_v, sticky_v, more, has_claims, check_plain, check_sticky,
        topics.name_of[topics.name],
        (_indptrs(claimed_counts, entries.sizes), claim_topics, claim_partitions, claim_generations, claimed_counts))

    plain_ok = np.fromiter((v.error is None for v in plain), bool, n)
    sticky_ok = np.fromiter((v.error is None for v in sticky), bool, n)
    same = ~has_claims | (plain_ok & sticky_ok & ~more)
    list_entries = np.bincount(entries.member_generation, received_counts, minlength=n).astype(I64)
    coded_members = np.where(owners.distinct < entries.sizes, entries.sizes, 0)
    head = np.zeros(n, HEAD)
    for name, column in (("members", entries.sizes), ("owner_codes", owners.n_codes),
                         ("topic_ids", topics.n_topic_ids), ("has_prev", has_prev), ("none_code", owners.none_code),
                         ("observed", n_observed), ("list_entries", list_entries), ("prev_owned", n_prev),
                         ("plain_ok", plain_ok), ("sticky_ok", sticky_ok), ("same_layout", same),
                         ("generation_id", generation_ids), ("partitions", total), ("coded_members", coded_members)):
        head[name] = column
    _variant_lengths(head["variant_lengths"], plain_v, sticky_v, n_prev, plain_ok, sticky_ok & more, same)

    observed_base, prev_base = segment_starts(n_observed)[0], segment_starts(n_prev)[0]
    columns = [(owners.of_member, entries.member_base), (received_counts, entries.member_base),
               (entry_key[received], segment_starts(list_entries)[0]), (entry_code[observed], observed_base),
               (entry_key[observed], observed_base), (entry_code[previous], prev_base),
               (entry_key[previous], prev_base)]
    variant_values, variant_bases = _variant_columns(plain_v, sticky_v, prev_base, np.where(more, n_prev, 0), same)
    return Packed(head, columns, variant_values, variant_bases, group_ids, protocol_names, plain, sticky)


def _claims(entries, claimed, claimed_counts, claimed_topic, plain_v, sticky_v, more, prev_generation):
    """What the sticky variants' members claim, as ArrayGroup takes it:
    each claim's topic index in its variant (the plain one's topics where the
    sticky one has no more), its partition, and each member's generation of
    its claims (-1 for a member that claims nothing)."""
    generation = entries.entry_generation[claimed]
    topics = (plain_v["position"][claimed_topic] - plain_v["base"][generation]).astype(I32)
    beyond = np.flatnonzero(more[generation])
    topics[beyond] = sticky_v["position"][claimed_topic[beyond]] - sticky_v["base"][generation[beyond]]
    generations = np.where(claimed_counts > 0, np.array(prev_generation, I64)[entries.member_generation], -1)
    return topics, entries.partition[claimed].astype(I32), generations.astype(I32)


def _variant_lengths(lengths, plain_v, sticky_v, n_prev, plain_ok, sticky_own, same):
    """Each variant's (topic offsets, topic ids, previous slots) lengths into
    ``lengths`` (the head's), none for a variant refused; a sticky variant
    laid out as the plain one (``same``) has the plain one's, and one with
    columns of its own (``sticky_own``) its own."""
    lengths[:, 0] = np.stack([plain_v["count"] + 1, plain_v["count"], n_prev], axis=1) * plain_ok[:, None]
    lengths[:, 1] = np.where(same[:, None], lengths[:, 0],
                             np.stack([sticky_v["count"] + 1, sticky_v["count"], n_prev], axis=1)
                             * sticky_own[:, None])


def _rows_read(sources, members_rows, observed_rows, prev_rows):
    """The event columns the generations read, end to end (``member_id``,
    ``members``, ``assignments``), and which rows of them each reads: its
    JoinGroup response, and its two segments of SyncGroup frames (segment
    2j: generation j's observed assignment; 2j + 1: the previous
    generation's, which the sticky strategies claim)."""
    n = len(sources)
    base_of: Dict[int, int] = {}
    arrays = []
    for source in sources:
        if id(source) not in base_of:
            base_of[id(source)] = sum(len(a[0]) for a in arrays)
            arrays.append(source.arrays())
    if len(arrays) > 1:  # timelines built apart (from event dicts): small sources, typed whole
        arrays = [typed(a) for a in arrays]
    columns = [_chunks(c) for c in zip(*arrays)]
    lists = list(chain.from_iterable(zip(observed_rows, (rows or () for rows in prev_rows))))
    segment_len = np.fromiter(map(len, lists), I64, 2 * n)
    segment_rows = np.fromiter(chain.from_iterable(lists), I64, int(segment_len.sum()))
    members_row = np.array(members_rows, I64)
    if len(base_of) > 1:
        base = np.array([base_of[id(source)] for source in sources], I64)
        members_row += base
        segment_rows += np.repeat(np.repeat(base, 2), segment_len)
    return columns, members_row, segment_rows, np.repeat(np.arange(2 * n), segment_len)


class _Entries:
    """The generations' members (their JoinGroup responses' lists) and the
    assignments they read: a listing per (member, topic) struct of a SyncGroup
    frame, an entry per partition listed, each with its generation and
    whether it is the previous generation's (the low bit of its segment)."""

    def __init__(self, columns, members_row, segment_rows, segment_of_row, n):
        member_id, members, assignments = columns
        types = source_types()
        listed = _take(members, members_row, types[1])
        self.sizes = _lengths(listed)  # members per generation
        self.member_ids, self.instance_ids, topics = _fields(listed.flatten(),
                                                             ("member_id", "group_instance_id", "topics"))
        self.member_base, self.n_members = segment_starts(self.sizes)
        self.member_generation = np.repeat(np.arange(n), self.sizes)
        self.subscription_len = _lengths(topics)  # topics per member
        self.subscribed_names = topics.flatten()
        self.subscription_generation = np.repeat(self.member_generation, self.subscription_len)
        sent = _take(assignments, segment_rows, types[2])
        self.listings_per_row = _lengths(sent)
        self.listing_member, self.listing_topic, partitions = _fields(sent.flatten(),
                                                                      ("member_id", "topic", "partitions"))
        self.frame_member = _take(member_id, segment_rows, types[0])
        self.listing_segment = np.repeat(segment_of_row, self.listings_per_row)
        self.listing_generation = self.listing_segment >> 1
        self.listing_is_prev = self.listing_segment & 1
        self.listing_len = _lengths(partitions)  # partitions per listing
        self.partition = _ints(partitions.flatten())
        entry_segment = np.repeat(self.listing_segment, self.listing_len)
        self.entry_generation, self.entry_is_prev = entry_segment >> 1, entry_segment & 1


class _OwnerCodes:
    """Owner codes per generation: its members 0.. by first appearance (a
    repeated id keeps its first code), then every other owner its listings
    name; a missing id (None) is a name too.  ``of_member`` and
    ``of_listing`` are each member's and each listing's owner code,
    ``distinct`` each generation's distinct member ids, ``n_codes`` its codes,
    ``none_code`` the code of its owner named None (or -2)."""

    def __init__(self, entries: _Entries, n):
        names = pc.dictionary_encode(pa.concat_arrays([entries.member_ids, entries.listing_member,
                                                       entries.frame_member]))
        none_id = len(names.dictionary)
        name_id = _ints(pc.fill_null(names.indices, none_id))
        n_members, n_listings = entries.n_members, len(entries.listing_segment)
        member_name = name_id[:n_members]
        # a listing that names no member is its frame's member's
        named, frame_name = name_id[n_members:n_members + n_listings], name_id[n_members + n_listings:]
        listing_name = np.where(named == none_id, np.repeat(frame_name, entries.listings_per_row), named)
        width = none_id + 1
        member_key = entries.member_generation * width + member_name
        by_key = np.argsort(member_key, kind="stable")
        sorted_keys = member_key[by_key]
        run = _first_of_runs(sorted_keys)
        first_of = np.empty(n_members, I64)
        first_of[by_key] = by_key[run][np.cumsum(run) - 1]
        is_first = first_of == np.arange(n_members)
        seen = np.cumsum(is_first)
        self.of_member = seen[first_of] - (seen - is_first)[entries.member_base][entries.member_generation] - 1
        self.distinct = distinct = np.bincount(entries.member_generation[is_first], minlength=n)
        owner_key = entries.listing_generation * width + listing_name
        at = np.minimum(np.searchsorted(sorted_keys, owner_key), n_members - 1)
        is_member = sorted_keys[at] == owner_key
        self.of_listing = self.of_member[by_key[at]]
        others, other_at = _unique(owner_key[~is_member])
        other_generation = others // width
        other_rank, n_others = _rank_in(other_generation, n)
        other_code = distinct[other_generation] + other_rank
        self.of_listing[~is_member] = other_code[other_at]
        self.n_codes = distinct + n_others
        self.none_code = np.full(n, -2, I64)
        self.member_named_none = member_name == none_id
        self.none_code[entries.member_generation[self.member_named_none]] = self.of_member[self.member_named_none]
        other_none = others % width == none_id
        self.none_code[other_generation[other_none]] = other_code[other_none]


class _TopicIds:
    """The topics each generation names (subscribed or listed), one pair
    (generation, topic name) each, with the generation's own topic id.  Names
    are numbered over the bucket in Java order, None last, so that each
    generation's ids 0.. sort alike.  ``of_subscription`` and ``of_listing``:
    each subscription entry's and listing's pair."""

    def __init__(self, entries: _Entries, n):
        topic_names = pc.dictionary_encode(pa.concat_arrays([entries.subscribed_names, entries.listing_topic]))
        known = topic_names.dictionary.to_pylist()
        n_names = len(known)
        in_java_order = assignors.java_sorted(known)
        rank = dict(zip(in_java_order, range(n_names)))
        name = np.array([rank[t] for t in known] + [n_names], I64)[_ints(pc.fill_null(topic_names.indices, n_names))]
        #: each name number's topic name, None last
        self.name_of = np.array(in_java_order + [None], object)
        n_subscribed = len(entries.subscription_generation)
        generation = np.concatenate([entries.subscription_generation, entries.listing_generation])
        pairs, pair_of = _unique(generation * (n_names + 1) + name)
        self.generation, self.name = pairs // (n_names + 1), pairs % (n_names + 1)
        self.topic_id, self.n_topic_ids = _rank_in(self.generation, n)
        self.of_subscription, self.of_listing = pair_of[:n_subscribed], pair_of[n_subscribed:]
        self.is_null = self.name == n_names


def _owned_once(entries: _Entries, topics: _TopicIds, owners: _OwnerCodes):
    """``(observed, previous)``: the entries of the observed and the previous
    ownership, each partition once, sorted by generation, topic (as ids
    sort) and partition; where a partition is listed twice, the one last in
    the ownership dict's order."""
    place = np.repeat((topics.of_listing * 2 + entries.listing_is_prev) << 32, entries.listing_len) | entries.partition
    order = np.argsort(place, kind="stable")
    run = _first_of_runs(place[order])
    kept = order[run]
    if len(kept) < len(order):
        kept = _last_in_dict_order(order, run, entries.listing_segment, owners.of_listing, entries.listing_len)
    kept_is_prev = entries.entry_is_prev[kept]
    return kept[kept_is_prev == 0], kept[kept_is_prev == 1]


def _member_lists(entries: _Entries, owners: _OwnerCodes):
    """Each member's entries as received (the observed assignment) and as
    claimed (the previous one), in entry order, member after member:
    ``(received, received counts, claimed, claimed counts)``."""
    code_base, n_owners = segment_starts(owners.n_codes)
    entry_owner = np.repeat(code_base[entries.listing_generation] + owners.of_listing, entries.listing_len)
    member_owner = code_base[entries.member_generation] + owners.of_member
    received = np.flatnonzero(entries.entry_is_prev == 0)
    at, received_counts = _lists_of(entry_owner[received], n_owners, member_owner)
    claimed = np.flatnonzero(entries.entry_is_prev)
    at_claimed, claimed_counts = _lists_of(entry_owner[claimed], n_owners, member_owner)
    return received[at], received_counts, claimed[at_claimed], claimed_counts


def _variant_columns(plain_v, sticky_v, prev_base, sticky_prev, same):
    """The variants' columns in one array, as an answer reads either
    variant's, and ``bases[i, v]``: where generation ``i``'s variant ``v``
    has its topic offsets, topic ids and previous slots in it."""
    n = len(same)
    sticky_prev_base = segment_starts(sticky_prev)[0]
    parts = [(plain_v["offsets"], plain_v["base"] + np.arange(n)), (plain_v["ids"], plain_v["base"]),
             (plain_v["slots"], prev_base), (sticky_v["offsets"], sticky_v["base"] + np.arange(n)),
             (sticky_v["ids"], sticky_v["base"]), (sticky_v["slots"], sticky_prev_base)]
    part_base = segment_starts(np.array([len(v) for v, _s in parts], I64))[0]
    bases = np.stack([b + s for b, (_v, s) in zip(part_base, parts)], axis=1).reshape(n, 2, 3)
    bases[:, 1] = np.where(same[:, None], bases[:, 0], bases[:, 1])
    return np.concatenate([v for v, _s in parts]), bases


def _last_in_dict_order(order, run, listing_segment, listing_code, listing_len):
    """The entry kept of each run of ``order`` (entries sorted by partition,
    stably) where a run holds a partition listed more than once: the last in
    the order its ownership dict gives, owners by their first list in the
    segment, each owner's entries in the order received."""
    # each listing's owner's first listing in the segment
    by_owner = np.lexsort((listing_code, listing_segment))
    first = _first_of_runs(listing_segment[by_owner] * (int(listing_code.max()) + 1) + listing_code[by_owner])
    owner_first = np.empty(len(listing_segment), I64)
    owner_first[by_owner] = by_owner[first][np.cumsum(first) - 1]
    place = np.repeat(owner_first, listing_len)[order] * len(order) + order  # (owner's first list, entry) order
    run_id = np.cumsum(run) - 1
    last = np.lexsort((place, run_id))
    end = np.ones(len(last), bool)
    end[:-1] = run_id[last][1:] != run_id[last][:-1]
    return order[last[end]]


def _sizes(counts_of, pair_generation, pair_name, name_of):
    """Each (generation, topic)'s size in its generation's partition counts
    (``counts_of``), 0 where they have none.  Generations share one dict
    unless a size changes in the capture: each dict is read once."""
    n_names = len(name_of) - 1
    dict_ids = list(map(id, counts_of))
    dict_at = dict(zip(dict_ids, range(len(dict_ids))))  # each dict's last generation stands for it
    dicts = [counts_of[k] for k in dict_at.values()]
    number_of = dict(zip(name_of.tolist(), range(n_names + 1)))
    tids = np.fromiter((number_of.get(t, -1) for t in chain.from_iterable(dicts)), I64)
    sizes = np.fromiter(chain.from_iterable(d.values() for d in dicts), I64, len(tids))
    keys = np.repeat(np.fromiter(dict_at.values(), I64, len(dicts)) * (n_names + 1), [len(d) for d in dicts]) + tids
    known = tids >= 0
    keys, sizes = keys[known], sizes[known]
    if not len(keys):
        return np.zeros(len(pair_generation), I64)
    order = np.argsort(keys)
    keys, sizes = keys[order], sizes[order]
    dict_of = np.fromiter(map(dict_at.__getitem__, dict_ids), I64, len(dict_ids))
    wanted = dict_of[pair_generation] * (n_names + 1) + pair_name
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[at] == wanted, sizes[at], 0)


def _variant_topics(in_v, topics: _TopicIds, size, subscription_generation, n):
    """One variant's topics (``in_v`` of every generation's), each
    generation's in Java order: how many and where they start, their ids,
    sizes and offsets, each subscription entry's topic index, and whether
    one of them is None."""
    which = np.flatnonzero(in_v)
    count = np.bincount(topics.generation[which], minlength=n)
    base = segment_starts(count)[0]
    sizes = size[which].astype(I32)
    position = np.cumsum(in_v) - 1
    return {"which": which, "count": count, "base": base, "ids": topics.topic_id[which], "sizes": sizes,
            "position": position, "offsets": _indptrs(sizes, count),
            "null": np.bincount(topics.generation[which[topics.is_null[which]]], minlength=n) > 0,
            "sub_topics": (position[topics.of_subscription] - base[subscription_generation]).astype(I32)}


def _prev_slots(v, in_v, pair, partition, generation):
    """Each previously owned partition's slot in the variant's partition
    layout (its topic's offset plus the partition); the slot past the end for one
    it lacks (a topic it does not have, or beyond the topic's size)."""
    mine = in_v[pair]
    vi = np.where(mine, v["position"][pair], 0)  # a stand-in where not mine, read for nothing
    inside = mine & (partition < np.append(v["sizes"], 0)[vi])
    offsets = v["offsets"]
    end = offsets[v["base"][generation] + v["count"][generation] + generation]
    return np.where(inside, offsets[vi + generation] + partition, end)


def _variant_groups(m, member_ids, instance_ids, static, sub_len, plain_v, sticky_v, more, has_owned, check_plain,
                    check_sticky, topic_names, owned):
    """Each generation's two :class:`Variant` objects, their ArrayGroups on
    slices of the packed columns, checked by ArrayGroup only where
    ``check_*`` (the packing rules the rest out).  A sticky variant over the
    plain one's topics is the plain group with claims."""
    owned_indptr, claims, owned_partition, generation, owned_counts = owned
    members_at = np.append(0, np.cumsum(m))
    sub_indptr = _indptrs(sub_len, m)
    subs_at = np.append(0, np.cumsum(sub_len))[members_at].tolist()
    owned_at = np.append(0, np.cumsum(owned_counts))[members_at].tolist()
    members_at = members_at.tolist()
    plain_layout, sticky_layout = ((topic_names[v["which"]].tolist(), v["base"].tolist(),
                                    (v["base"] + v["count"]).tolist(), v["sizes"], v["sub_topics"], v["null"].tolist())
                                   for v in (plain_v, sticky_v))
    topics, starts, ends, sizes, sub_topics, null = plain_layout
    # Python's part of an ArrayGroup is most of what a generation costs here:
    # the loop reads its bounds zipped, not a list at a time.
    usual = (~(check_plain | plain_v["null"])).tolist()
    plain_ok_sticky = (has_owned & ~more & ~check_sticky).tolist()
    # What the plain groups claim (nothing): read-only views of one array
    # each, where ArrayGroup would make five arrays per group; no assignor writes its input.
    widest = int(m.max()) + 1
    nothing, none_owned, no_generation = np.zeros(widest, I64), np.zeros(0, I32), np.full(widest, -1, I32)
    for a in (nothing, none_owned, no_generation):
        a.flags.writeable = False
    claim_nothing = [(nothing[:k + 1], no_generation[:k]) for k in range(widest)]
    array_group = assignors.ArrayGroup

    def variant(layout, j, ids, instances, indptr, s0, s1, check, claimed):
        topics, starts, ends, sizes, sub_topics, null = layout
        if null[j]:
            return Variant(error=not_a_topic_name(None))
        t0, t1 = starts[j], ends[j]
        try:
            return Variant(array_group(topics[t0:t1], sizes[t0:t1], ids, indptr, sub_topics[s0:s1],
                                        group_instance_ids=instances, validate=check, **claimed))
        except KwireError as exc:
            return Variant(error=exc)

    plains, stickies = [], []
    bounds = zip(range(len(m)), members_at, members_at[1:], subs_at, subs_at[1:], starts, ends, owned_at, owned_at[1:],
                 static.tolist(), usual, has_owned.tolist(), plain_ok_sticky)
    for j, m0, m1, s0, s1, t0, t1, o0, o1, has_static, is_usual, claims_any, with_claims in bounds:
        ids, instances = member_ids[m0:m1], instance_ids[m0:m1] if has_static else None
        indptr = sub_indptr[m0 + j:m1 + j + 1]
        if is_usual:
            # its group cannot be refused but for its size: no checks, no arrays of its own for no claims
            none_indptr, no_generations = claim_nothing[m1 - m0]
            try:
                plain = Variant(array_group(
                    topics[t0:t1], sizes[t0:t1], ids, indptr, sub_topics[s0:s1], group_instance_ids=instances,
                    owned_indptr=none_indptr, owned_topic=none_owned, owned_partition=none_owned,
                    generation=no_generations, subscription_generation=no_generations, validate=False))
            except KwireError as exc:
                plain = Variant(error=exc)
        else:
            plain = variant(plain_layout, j, ids, instances, indptr, s0, s1, True, {})
        plains.append(plain)
        if not claims_any:
            stickies.append(plain)
            continue
        claimed = (owned_indptr[m0 + j:m1 + j + 1], claims[o0:o1], owned_partition[o0:o1])
        if with_claims and plain.group is not None:
            # the plain group's topics and the facts derived from them, with the claims
            group = plain.group.with_claims(*claimed)
            group.generation = group.subscription_generation = generation[m0:m1]
            stickies.append(Variant(group))
        else:
            stickies.append(variant(sticky_layout if more[j] else plain_layout, j, ids, instances, indptr, s0, s1,
                                    check_sticky[j], dict(zip(("owned_indptr", "owned_topic", "owned_partition"),
                                                              claimed), generation=generation[m0:m1],
                                                          subscription_generation=generation[m0:m1])))
    return plains, stickies
