"""The what-if's references, which the pipeline's columnar what-if is tested
against (and benches/bench_pipeline.py times beside it).

- One generation at a time: :func:`replay_input` packs a generation from its
  ``Generation`` fields (dicts and tuples) into the arrays the batch reads,
  :func:`packed_inputs` lays many out as one :class:`Packed` (what
  ``pack_replayed`` makes from the event columns), and :func:`replay` reads
  a generation's rows with NumPy, a few calls per strategy, where
  ``replay_batch`` reads a block's at once.
- Member level: :func:`whatif_rows` is the replay as it was before it moved
  to arrays (a GroupInput per strategy, ``assign_group``, dicts of tuples).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Dict, List, Optional, Tuple

import numpy as np

from kwire import assignors
from kwire.errors import KwireError
from kwire.pipeline._events import STRATEGIES
from kwire.pipeline._timeline import Generation, Timeline, completed_generations
from kwire.pipeline._whatif_batch import run_strategies
from kwire.pipeline._whatif_pack import HEAD, I32, I64, LAID_OUT, Packed, Variant, not_a_topic_name, replayed

# -- one generation at a time ------------------------------------------------------------------------------------


class _ReplayInput:
    __slots__ = ("group_id", "generation_id", "protocol_name", "member_ids", "total", "member_codes",
                 "none_code", "n_codes", "n_topic_ids", "has_prev", "prev_keys", "prev_codes",
                 "obs_keys", "obs_codes", "obs_counts", "obs_lists", "plain", "sticky", "head", "columns")


def _last_owner(keys, codes):
    """``(sorted unique keys, owner codes)``: a partition listed twice keeps
    its last owner, as the timeline's ownership dicts do."""
    unique, first = np.unique(keys[::-1], return_index=True)
    return unique, codes[::-1][first]


def _variant(gg: Generation, owned_lists, counts, tid, prev_generation, plain: Optional[Variant] = None) -> Variant:
    """The ArrayGroup ``ArrayGroup.from_group_input`` built from the
    member-level input the what-if used to describe: only subscribed topics
    have sizes, topics only owned are known with none, subscription lists are
    kept as sent.  ``owned_lists`` is None for the strategies that claim
    nothing.  ``plain``: the generation's variant that claims nothing, whose
    topic layout a claiming one over the same topics shares (the usual
    case: members own what they subscribe to)."""
    v = Variant()
    topics_of_members = [m[2] for m in gg.members]
    subscribed = {t for ts in topics_of_members for t in ts}
    names = set(subscribed)
    for tps in owned_lists or ():
        names.update(t for t, _p in tps)
    columns = {}
    if plain is not None and plain.group is not None and names == subscribed:
        # Claims change none of these, and their ids were taken when the plain variant was built.
        group = plain.group
        topics, sizes, sub_indptr, sub_topics = group.topics, group.partition_counts, group.sub_indptr, group.sub_topics
        index = dict(zip(topics, range(len(topics))))
        topic_ids = plain.topic_ids
    else:
        bad = [t for t in names if not isinstance(t, str)]
        if bad:
            v.error = not_a_topic_name(bad[0])
            return v
        topics = assignors.java_sorted(names)
        index = {t: i for i, t in enumerate(topics)}
        sub_indptr = np.zeros(len(topics_of_members) + 1, dtype=I64)
        np.cumsum([len(ts) for ts in topics_of_members], out=sub_indptr[1:])
        sizes = np.array([counts.get(t, 0) if t in subscribed else 0 for t in topics], dtype=I32)
        sub_topics = np.array([index[t] for ts in topics_of_members for t in ts], dtype=I32)
        topic_ids = None
    if owned_lists is not None:
        owned_indptr = np.zeros(len(owned_lists) + 1, dtype=I64)
        np.cumsum([len(tps) for tps in owned_lists], out=owned_indptr[1:])
        generation = np.where(np.diff(owned_indptr) > 0, prev_generation, -1).astype(I32)
        columns = {"owned_indptr": owned_indptr,
                   "owned_topic": np.array([index[t] for tps in owned_lists for t, _p in tps], dtype=I32),
                   "owned_partition": np.array([p for tps in owned_lists for _t, p in tps], dtype=I64),
                   "generation": generation, "subscription_generation": generation}
    try:
        v.group = assignors.ArrayGroup(topics, sizes, [m[0] for m in gg.members], sub_indptr, sub_topics,
                                       group_instance_ids=[m[1] for m in gg.members], **columns)
    except KwireError as exc:
        v.error = exc
        return v
    v.topic_ids = topic_ids if topic_ids is not None else np.array([tid(t) for t in topics], dtype=I64)
    return v


def _place_prev(v: Variant, prev_keys, n_topic_ids):
    """Each previously owned partition's slot in the group's partition
    layout; the slot past the end for one the group does not have."""
    if v.group is None or prev_keys is None:
        return
    g = v.group
    local = np.full(n_topic_ids, -1, dtype=I64)
    local[v.topic_ids] = np.arange(len(v.topic_ids))
    t, p = local[prev_keys >> 32], prev_keys & 0xFFFFFFFF
    inside = (t >= 0) & (p < g.partition_counts[np.maximum(t, 0)])
    v.prev_slots = np.where(inside, g.topic_offset[np.maximum(t, 0)] + p, g.num_partitions)


def replay_input(tl: Timeline, gg: Generation, prev: Optional[Generation]) -> _ReplayInput:
    """What a leader at ``gg`` would have seen, as arrays: ``gg``'s members and
    subscriptions, and the ownership observed at ``prev`` (the last
    generation that had one), which the sticky strategies claim."""
    topic_ids: Dict[str, int] = {}
    names: Dict[Optional[str], int] = {}

    def tid(t):
        return topic_ids.setdefault(t, len(topic_ids))

    def code(m):
        return names.setdefault(m, len(names))

    def keys(tps):
        if not tps:
            return np.zeros(0, I64)
        topics, partitions = zip(*tps)
        # ids in order of first appearance, as one call per partition gave them
        for t in dict.fromkeys(topics):
            tid(t)
        return ((np.fromiter(map(topic_ids.__getitem__, topics), I64, len(topics)) << 32)
                | np.array(partitions, I64))

    def owned_keys(lists):
        owners = [code(m) for m, l in lists if l]
        return (keys([tp for _m, l in lists for tp in l]),
                np.repeat(np.array(owners, I64), [len(l) for _m, l in lists if l]))

    inp = _ReplayInput()
    inp.group_id, inp.generation_id, inp.protocol_name = tl.group_id, gg.generation_id, gg.protocol_name
    inp.member_ids = [m[0] for m in gg.members]
    inp.total = sum(gg.partition_counts.get(t, 0) for t in {t for m in gg.members for t in m[2]})
    inp.member_codes = np.array([code(m) for m in inp.member_ids], dtype=I64)
    observed = gg.assignment or gg.leader_assignment
    inp.obs_keys, inp.obs_codes = _last_owner(*owned_keys(list(observed.items())))
    mine = [observed.get(m, ()) for m in inp.member_ids]
    inp.obs_counts = np.array([len(l) for l in mine], dtype=I64)
    inp.obs_lists = keys([tp for l in mine for tp in l])
    inp.has_prev = prev is not None
    inp.prev_keys = inp.prev_codes = owned = None
    if prev is not None:
        prev_lists = prev.assignment or prev.leader_assignment
        inp.prev_keys, inp.prev_codes = _last_owner(*owned_keys(list(prev_lists.items())))
        # Each member claims its list in the order it received it, which
        # Java's sticky iteration order depends on.
        owned = [prev_lists.get(m, ()) for m in inp.member_ids]
    prev_generation = prev.generation_id if prev is not None else -1
    inp.plain = _variant(gg, None, gg.partition_counts, tid, prev_generation)
    inp.sticky = (_variant(gg, owned, gg.partition_counts, tid, prev_generation, inp.plain) if owned and any(owned)
                  else inp.plain)
    _place_prev(inp.plain, inp.prev_keys, len(topic_ids))
    if inp.sticky.topic_ids is inp.plain.topic_ids:
        inp.sticky.prev_slots = inp.plain.prev_slots  # the same topics laid out alike
    else:
        _place_prev(inp.sticky, inp.prev_keys, len(topic_ids))
    # None is a name the dicts allow; only "no owner" and a None owner compare equal there.
    inp.none_code = names.get(None, -2)
    # How many owner codes and topic ids the generation uses, for the batch
    # to give every generation a range of its own.
    inp.n_codes, inp.n_topic_ids = len(names), len(topic_ids)
    _lay_out(inp)
    return inp


def _variant_columns(v: Variant, prev_len):
    if v.group is None:
        return (), (0, 0, 0)
    if v.prev_slots is None:
        return (v.group.topic_offset, v.topic_ids), (len(v.topic_ids) + 1, len(v.topic_ids), 0)
    return (v.group.topic_offset, v.topic_ids, v.prev_slots), (len(v.topic_ids) + 1, len(v.topic_ids), prev_len)


def _lay_out(inp: _ReplayInput) -> None:
    """What the batch reads of the generation: ``head``, a row of
    :data:`HEAD` (its fields in order), and ``columns``, the arrays of
    :data:`LAID_OUT` and then the plain variant's and the sticky one's, the
    sticky one's left out where they are the plain one's and any array
    known empty left out."""
    # Two variants over the same topics have the same topic offsets, ids and
    # previous slots (claims change none of them): the usual sticky variant.
    same = inp.sticky is inp.plain or (inp.sticky.group is not None and inp.plain.group is not None
                                       and inp.sticky.group.topics == inp.plain.group.topics)
    prev_len = len(inp.prev_keys) if inp.has_prev else 0
    plain, plain_lengths = _variant_columns(inp.plain, prev_len)
    sticky, sticky_lengths = (plain, plain_lengths) if same else _variant_columns(inp.sticky, prev_len)
    m = len(inp.member_ids)
    # Members are coded first, so their codes are their positions unless an
    # id repeats (then the last is below m - 1): only then are they laid out.
    coded = m if inp.member_codes[-1] != m - 1 else 0
    inp.head = (m, inp.n_codes, inp.n_topic_ids, inp.has_prev, inp.none_code, len(inp.obs_keys),
                len(inp.obs_lists), prev_len, inp.plain.error is None, inp.sticky.error is None, same,
                inp.generation_id, inp.total, coded, (plain_lengths, sticky_lengths))
    inp.columns = (((inp.member_codes,) if coded else ()) + (inp.obs_counts, inp.obs_lists, inp.obs_codes,
                                                             inp.obs_keys)
                   + ((inp.prev_codes, inp.prev_keys) if inp.has_prev else ()) + plain + (() if same else sticky))


def _moved(now, inp):
    """How many previously owned partitions have another owner (``now``:
    the owner code of each, -1 for none)."""
    if not inp.has_prev:
        return None
    if inp.none_code < 0:
        # No owner is named None (the usual case), so "no owner" matches no previous owner.
        return int(np.count_nonzero(now != inp.prev_codes))
    same = (now == inp.prev_codes) | ((now == -1) & (inp.prev_codes == inp.none_code))
    return int(len(same) - np.count_nonzero(same))


def _row(rows, inp, name, is_observed, assigned, loads, moved, reproduces):
    # a few members: Python's max and min on the list cost less than two NumPy calls
    loads = loads.tolist()
    hi, lo = max(loads), min(loads)
    rows.append((inp.group_id, inp.generation_id, name, is_observed, len(inp.member_ids), inp.total, assigned,
                 moved, hi, lo, hi - lo, reproduces, None))


def _observed_row(rows, inp):
    codes = inp.obs_codes
    loads = np.bincount(codes, minlength=int(inp.member_codes.max()) + 1)[inp.member_codes]
    moved = None
    if inp.has_prev:
        keys = inp.obs_keys
        at = np.minimum(np.searchsorted(keys, inp.prev_keys), len(keys) - 1)
        moved = _moved(np.where(keys[at] == inp.prev_keys, codes[at], -1), inp)
    _row(rows, inp, inp.protocol_name, True, len(inp.obs_keys), loads, moved, None)


def _reproduces(result, topic_ids, counts, inp):
    """Whether each member's list, as it reads back from the Assignment bytes
    (topics grouped in order of first appearance, as the Java leader writes
    them), is the list the member received."""
    if not (counts == inp.obs_counts).all():
        return False
    keys = (topic_ids[result.topic] << 32) | result.partition
    if (keys == inp.obs_lists).all():
        return True  # received lists are grouped by topic, so this one is too
    # Regrouping a list keeps its partitions: where a member's key sum (in
    # wrapping int64) differs from its received list's, nothing can match,
    # and that is decided without the sorts below.
    member_sums = np.concatenate(([0], np.cumsum(keys - inp.obs_lists)))[result.indptr]
    if (member_sums[1:] != member_sums[:-1]).any():
        return False
    member = np.repeat(np.arange(len(counts), dtype=I64), counts)
    _u, first, inverse = np.unique(member * len(topic_ids) + result.topic, return_index=True,
                                   return_inverse=True)
    order = np.lexsort((np.arange(len(keys)), first[inverse]))
    return bool(np.array_equal(keys[order], inp.obs_lists))



def replay(inp: _ReplayInput, rows: list, strategies=STRATEGIES, implementation=None) -> None:
    """Append the generation's what-if rows (tuples in :data:`WHATIF_SCHEMA`
    order) to ``rows``: the observed assignment, then each strategy's.  One
    generation at a time, the reference :func:`replay_batch` is tested
    against (its reading is written apart, per generation)."""
    _observed_row(rows, inp)
    m = len(inp.member_ids)
    member_index = np.arange(m)
    # indexed by member position, -1 for none (made here: the batch, which packing serves, does without)
    owner_codes = np.append(inp.member_codes, -1)
    answers = run_strategies(inp.plain, inp.sticky, strategies, implementation)
    for strategy, (v, result, error) in zip(strategies, answers):
        if result is None:
            rows.append((inp.group_id, inp.generation_id, strategy, False, m, inp.total,
                         None, None, None, None, None, None, error))
            continue
        counts = result.indptr[1:] - result.indptr[:-1]
        # Owner per partition slot, and -1 in the slot past the end; a
        # partition given twice keeps its last owner, as a dict would.
        owner = np.empty(v.group.num_partitions + 1, dtype=I64)
        owner.fill(-1)
        owner[v.group.topic_offset[result.topic] + result.partition] = np.repeat(member_index, counts)
        taken = owner[owner >= 0]
        moved = None
        if inp.has_prev:
            moved = _moved(owner_codes[owner[v.prev_slots]], inp)
        _row(rows, inp, strategy, False, len(taken), np.bincount(taken, minlength=m), moved,
             _reproduces(result, v.topic_ids, counts, inp))


def packed_inputs(inputs) -> Packed:
    """Per-generation inputs (:func:`replay_input`) as one :class:`Packed`,
    as the batch reads them: a :data:`HEAD` row each, all their columns in
    one array."""
    n = len(inputs)
    if not n:
        return Packed.empty()
    head = np.array([inp.head for inp in inputs], HEAD)
    values = np.concatenate([a for inp in inputs for a in inp.columns])
    variant_lengths = head["variant_lengths"]
    same = head["same_layout"][:, None] > 0
    # a sticky variant over the plain one's topics left its columns out
    lengths = np.concatenate([np.stack([head[field] for _name, field in LAID_OUT], axis=1), variant_lengths[:, 0],
                              variant_lengths[:, 1] * ~same], axis=1)
    bases = (np.cumsum(lengths) - lengths.ravel()).reshape(lengths.shape)
    k = len(LAID_OUT)
    plain = bases[:, k:k + 3]
    variant_bases = np.stack([plain, np.where(same, plain, bases[:, k + 3:])], axis=1)
    return Packed(head, [(values, bases[:, i]) for i in range(k)], values, variant_bases,
                  [inp.group_id for inp in inputs], [inp.protocol_name for inp in inputs],
                  [inp.plain for inp in inputs], [inp.sticky for inp in inputs])


def replay_inputs(tl: Timeline):
    """The generations a what-if replays (:func:`replayed`), packed one by
    one from their member-level fields: the reference the columnar packing
    (:func:`whatif_generations`) is tested against."""
    for gg, prev in replayed(tl):
        yield replay_input(tl, gg, prev)


# -- member level ------------------------------------------------------------------------------------------------


def whatif_group_input(strategy, gg: Generation, prev: Optional[Generation], partition_counts):
    """The GroupInput a leader running ``strategy`` would have seen at ``gg``,
    given the ownership observed at ``prev``."""
    from kwire.assignors import GroupInput, MemberInput

    owned: Dict[str, List[Tuple[str, int]]] = defaultdict(list)
    prev_gen = -1
    if prev is not None and strategy in ("sticky", "cooperative-sticky"):
        prev_gen = prev.generation_id
        # Each member claims its list in the order it received it, which
        # Java's sticky iteration order depends on.
        for m, tps in (prev.assignment or prev.leader_assignment).items():
            owned[m].extend(tps)
    members = []
    for mid, instance, topics in gg.members:
        mine = tuple(owned.get(mid, ()))
        gen = prev_gen if mine else -1
        members.append(MemberInput(member_id=mid, group_instance_id=instance, topics=tuple(topics), owned=mine,
                                   generation=gen, subscription_generation=gen))
    subscribed = {t for _, _, ts in gg.members for t in ts}
    return GroupInput(members=members, partitions_per_topic={t: partition_counts.get(t, 0) for t in subscribed})


def whatif_rows(tl: Timeline, strategies=STRATEGIES, implementation=None) -> List[dict]:
    from kwire.assignors import assign_group
    from kwire.errors import KwireError

    rows = []
    prev = None
    for gg in completed_generations(tl):
        observed = gg.ownership()
        if not gg.members or not observed:
            prev = gg if observed else prev
            continue
        prev_own = prev.ownership() if prev is not None else {}
        member_ids = [m[0] for m in gg.members]
        total = sum(gg.partition_counts.get(t, 0) for t in {t for _, _, ts in gg.members for t in ts})

        def summary(name, is_observed, own, reproduces):
            loads = Counter(own.values())
            per_member = [loads.get(m, 0) for m in member_ids]
            moved = sum(1 for tp, owner in prev_own.items() if own.get(tp) != owner) if prev is not None else None
            return {"group_id": tl.group_id, "generation_id": gg.generation_id, "strategy": name,
                    "observed": is_observed, "member_count": len(member_ids), "partitions": total,
                    "assigned": len(own), "moved": moved, "max_load": max(per_member),
                    "min_load": min(per_member), "imbalance": max(per_member) - min(per_member),
                    "reproduces_observed": reproduces, "error": None}

        rows.append(summary(gg.protocol_name, True, observed, None))
        observed_lists = gg.assignment or gg.leader_assignment
        for strategy in strategies:
            try:
                result = assign_group(strategy, whatif_group_input(strategy, gg, prev, gg.partition_counts),
                                      implementation=implementation)
            except KwireError as exc:
                # The inputs the capture gives this generation are not a
                # valid group (the bad frames were already left out): report
                # it on this row and go on with the other groups.
                rows.append({"group_id": tl.group_id, "generation_id": gg.generation_id, "strategy": strategy,
                             "observed": False, "member_count": len(member_ids), "partitions": total,
                             "error": f"{type(exc).__name__}: {exc}"})
                continue
            own = {tp: m for m, tps in result.items() for tp in tps}
            reproduces = all(serialized_order(result.get(m, ())) == list(observed_lists.get(m, ()))
                             for m in member_ids)
            rows.append(summary(strategy, False, own, reproduces))
        prev = gg
    return rows


def serialized_order(tps):
    """A member's list as it reads back from the Assignment bytes: topics
    grouped in order of first appearance, as the Java leader writes them."""
    groups: Dict[str, List[int]] = {}
    for t, p in tps:
        groups.setdefault(t, []).append(p)
    return [(t, p) for t, ps in groups.items() for p in ps]
