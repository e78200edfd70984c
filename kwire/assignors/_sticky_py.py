"""Pure-Python sticky and cooperative-sticky assignors (the reference twin).

This module is the behavioural reference: it reproduces the assignments of
Apache Kafka's Java ``StickyAssignor`` / ``CooperativeStickyAssignor``
(trunk 1eb7644349cb) exactly, list order included, for a fresh assignor
object.  The compiled twin ``_sticky_c`` must give identical output.

The algorithm is order sensitive in ways that are not obvious from its
goals, so the steps below keep Java's observable order of operations:

* members are visited in Java ``HashMap`` iteration order of their ids;
* owner conflicts are settled pairwise, comparing the newcomer's memberData
  generation with the *earlier* claimant's Subscription generation field;
* when one partition swaps places with another one moving the opposite way,
  the substitute is the first element of a Java ``HashSet<TopicPartition>``,
  so that set's bucket layout is modelled too (:class:`_javaorder.JavaHashTable`).

The run itself, once the inputs are read (:func:`assign_in_order`), lives in
:mod:`kwire.assignors._sticky_order`, which this twin re-exports.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

from ._javaorder import hashmap_capacity, hashmap_order, string_hash
from ._model import GroupInput, MemberAssignments, MemberInput
from ._sticky_order import TP, assign_in_order, constrained_assign, resolve_owners  # noqa: F401  (the twin's names)
from ._sticky_rules import pair_many, validate

IMPLEMENTATION = "python"


# --------------------------------------------------------------------------
# input normalisation and owner resolution
# --------------------------------------------------------------------------

class _Racks:
    """Consumer and replica racks, when Java decides to use them.

    ``active`` mirrors Java's rack-aware switch; ``crowd`` (number of
    consumers on a partition's racks) is known whenever any consumer has a
    rack, even when rack-aware assignment is off, because Java sorts the
    constrained path's unassigned partitions by it in that case too."""

    def __init__(self, members: List[MemberInput], order: List[str], counts: Dict[str, int],
                 partition_racks):
        self.member_rack: Dict[str, str] = {}
        self.partition_racks: Dict[TP, Set[str]] = {}
        self.crowd: Optional[Dict[TP, int]] = None
        by_id = {m.member_id: m for m in members}
        per_rack: Dict[str, int] = {}
        racked: Dict[str, str] = {}
        for mid in order:
            r = by_id[mid].rack
            if r:
                racked[mid] = r
                per_rack[r] = per_rack.get(r, 0) + 1
        if not racked:
            return
        pracks: Dict[TP, Set[str]] = {}
        seen: Set[str] = set()
        for topic, n in counts.items():
            layout = (partition_racks or {}).get(topic)
            for p in range(n):
                reps = layout[p] if layout is not None and p < len(layout) else ()
                rs = {r for r in reps if r is not None}
                pracks[(topic, p)] = rs
                seen |= rs
        self.crowd = {tp: sum(per_rack.get(r, 0) for r in rs) for tp, rs in pracks.items()}
        consumer_racks = set(per_rack)
        if consumer_racks.isdisjoint(seen):
            return
        if all(rs == seen for rs in pracks.values()):
            return
        self.member_rack = racked
        self.partition_racks = pracks

    @property
    def active(self) -> bool:
        return bool(self.member_rack)

    def mismatch(self, member: str, tp: TP) -> bool:
        r = self.member_rack.get(member)
        if r is None:
            return False
        reps = self.partition_racks.get(tp)
        return reps is None or r not in reps

    def next_match(self, tp: TP, candidates: List[str], start: int) -> int:
        reps = self.partition_racks.get(tp)
        if not reps:
            return -1
        n = len(candidates)
        for i in range(n):
            k = (start + i) % n
            r = self.member_rack.get(candidates[k])
            if r is not None and r in reps:
                return k
        return -1



def member_order(group: GroupInput) -> List[str]:
    """Java's iteration order of the leader's ``HashMap<String, Subscription>``."""
    ids = [m.member_id for m in group.members]
    hashes = [string_hash(i) for i in ids]
    return hashmap_order(ids, hashes, hashmap_capacity(hashes))


def topic_counts(group: GroupInput) -> Dict[str, int]:
    """Subscribed topics that exist in metadata with at least one partition."""
    wanted = set()
    for m in group.members:
        wanted.update(m.topics)
    return {t: n for t, n in group.partitions_per_topic.items() if t in wanted and n > 0}



# entry point
# --------------------------------------------------------------------------


def sticky_assign(group: GroupInput, cooperative: bool) -> MemberAssignments:
    """Assign partitions as Java's sticky (``cooperative=False``) or
    cooperative-sticky (``cooperative=True``) assignor does."""
    validate(group)
    if not group.members:
        return {}
    order = member_order(group)
    by_id = {m.member_id: m for m in group.members}
    counts = topic_counts(group)
    racks = _Racks(group.members, order, counts, group.partition_racks)
    result = assign_in_order(order, by_id, counts, racks, cooperative)
    return {m.member_id: result[m.member_id] for m in group.members}



def sticky_pair_arrays(group):
    """``(sticky_arrays(group, False), sticky_arrays(group, True))``, the
    compiled twin's shared run stated plainly."""
    return sticky_arrays(group, False), sticky_arrays(group, True)


def sticky_pair_many(groups):
    """``sticky_pair_arrays`` of each group, end to end (see ``_sticky_rules.pair_many``)."""
    return pair_many(groups, sticky_pair_arrays)


def sticky_arrays(group, cooperative: bool):
    """Array entry point shared with the compiled twin: assign an
    :class:`~kwire.assignors._arrays.ArrayGroup` and return
    ``(indptr, topic, partition)`` in member index order.

    The pure twin converts to Python objects and runs the reference."""
    import numpy as np

    M = group.num_members
    topics = group.topics
    counts = group.partition_counts.tolist()
    members = []
    sp, st = group.sub_indptr.tolist(), group.sub_topics.tolist()
    op, ot, opp = group.owned_indptr.tolist(), group.owned_topic.tolist(), group.owned_partition.tolist()
    gens, sgens = group.generation.tolist(), group.subscription_generation.tolist()
    for m in range(M):
        members.append(MemberInput(
            member_id=group.member_ids[m], group_instance_id=group.group_instance_ids[m],
            topics=tuple(topics[t] for t in st[sp[m]:sp[m + 1]]),
            owned=tuple((topics[t], p) for t, p in zip(ot[op[m]:op[m + 1]], opp[op[m]:op[m + 1]])),
            generation=gens[m], subscription_generation=sgens[m], rack=group.racks[m]))
    racks = None
    if len(group.replica_racks):
        rp, rr = group.replica_rack_indptr.tolist(), group.replica_racks.tolist()
        offs = group.topic_offset.tolist()
        racks = {}
        for t, name in enumerate(topics):
            if counts[t]:
                racks[name] = [[group.rack_names[k] for k in rr[rp[g]:rp[g + 1]]]
                               for g in range(offs[t], offs[t + 1])]
    gi = GroupInput(members=members, partitions_per_topic={t: n for t, n in zip(topics, counts) if n > 0},
                    partition_racks=racks)
    result = sticky_assign(gi, cooperative)
    index = {t: i for i, t in enumerate(topics)}
    indptr = np.zeros(M + 1, dtype=np.int64)
    ts, ps = [], []
    for m in range(M):
        for t, p in result.get(group.member_ids[m], ()):
            ts.append(index[t])
            ps.append(p)
        indptr[m + 1] = len(ts)
    return indptr, np.array(ts, dtype=np.int32), np.array(ps, dtype=np.int32)
