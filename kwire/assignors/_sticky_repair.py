"""kwire's default sticky answer where Java's is not a valid assignment.

Java's sticky assignors trust what members claim.  On claims no consistent
group produces (a partition claimed twice or past its topic's end, a member
of an older generation holding partitions of a topic it left, a member with
an empty subscription visited first) Java hands a partition to a member not
subscribed to its topic, hands one out twice, or throws.  A Java consumer
that receives such an answer rejoins and gets the same answer again, so a
leader needs a valid one.

The rule, the same for both kernels because it is written once here and
applied to their (identical) Java-exact output by ``_sticky.sticky_arrays``:

1. Java's answer, when it is valid (every entry a partition that exists, of
   a topic its member subscribes to, no partition twice), is the answer.
   On every input a consistent group sends, that is always the case.
2. Otherwise the answer is Java's *eager* answer repaired: entries that
   break validity are dropped (a partition listed twice stays with its first
   holder in member order), and every subscribed partition left without a
   holder goes to its least loaded subscriber (ties to the smaller member id
   in Java's String order, as Java's own sortedCurrentSubscriptions breaks
   them), topics in name order, partitions ascending.  Everything else stays
   where Java put it: only the invalid pieces move.
3. Where Java throws instead of answering, its algorithm runs again on the
   claims a consistent group could have sent: each member's claims of its
   own subscribed, existing partitions, once each, and only from members of
   the newest generation (older generations' claims are what Java's
   prevAssignment trips over).  Should that throw too, it runs with no
   claims at all; step 2 then applies to the result.
4. cooperative-sticky then withholds, as Java's
   CooperativeStickyAssignor.adjustAssignment does on its general path, each
   partition given to a member that did not own it while another member
   that owned it loses it: it is handed over at the next rebalance.

docs/ASSIGNORS.md ("Where the default departs from Java") lists the kinds of
input where this changes Java's answer; tests/data/golden/kwire-departures.jsonl
holds a case of each.
"""

from __future__ import annotations

import heapq
from typing import Tuple

import numpy as np

from ._arrays import load_kernels


_I32, _I64 = np.int32, np.int64


def _assignable(group) -> np.ndarray:
    """Per topic: subscribed by someone and present with partitions."""
    n_topics = len(group.topics)
    subscribed = np.bincount(group.sub_topics, minlength=n_topics)[:n_topics] > 0
    return subscribed & (group.partition_counts > 0)


def _member_of(indptr, n_members) -> np.ndarray:
    return np.repeat(np.arange(n_members, dtype=_I64), np.diff(indptr))


def invalid_entries(group, indptr, topic, number) -> np.ndarray:
    """Per entry of an assignment in CSR form: True where it breaks validity
    (not an existing partition of an assignable topic, its member does not
    subscribe to the topic, or the partition already appeared earlier in
    member order)."""
    n_topics = len(group.topics)
    topic = np.asarray(topic, dtype=_I64)
    number = np.asarray(number, dtype=_I64)
    if len(topic) == 0:
        return np.zeros(0, dtype=bool)
    counts = group.partition_counts.astype(_I64)
    member = _member_of(indptr, group.num_members)
    ok = _assignable(group)[topic] & (number >= 0) & (number < counts[topic])
    subscription_keys = _member_of(group.sub_indptr, group.num_members) * n_topics + group.sub_topics
    ok &= np.isin(member * n_topics + topic, subscription_keys)
    where_ok = np.flatnonzero(ok)
    partition = group.topic_offset[topic[where_ok]] + number[where_ok]
    # np.unique's return_index is each value's first occurrence
    _, first = np.unique(partition, return_index=True)
    keep = np.zeros(len(topic), dtype=bool)
    keep[where_ok[first]] = True
    return ~keep


def is_valid(group, indptr, topic, number) -> bool:
    """``not invalid_entries(...).any()``, without sorting: every entry an
    existing partition of a topic its member subscribes to, each partition once."""
    # Validity is a fact about the arrays, not a choice of implementation:
    # the check runs on every default answer, so it takes the compiled loop
    # whenever there is one (as string hashes do).
    return load_kernels("rangerr").assignment_is_valid(
        group.partition_counts, group.topic_offset, group.sub_indptr, group.sub_topics,
        np.asarray(indptr, dtype=_I64), np.asarray(topic, dtype=_I32), np.asarray(number, dtype=_I32))


def repair(group, indptr, topic, number) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 2 of the module docstring on a complete (eager) answer."""
    n_members, n_topics = group.num_members, len(group.topics)
    topic = np.asarray(topic, dtype=_I32)
    number = np.asarray(number, dtype=_I32)
    if (len(topic) == int(group.partition_counts[_assignable(group)].sum())
            and is_valid(group, indptr, topic, number)):
        # every partition once and nothing missing: there is nothing to
        # repair (Java's answer on consistent claims, the usual case here)
        return np.asarray(indptr, dtype=_I64), topic, number
    keep = ~invalid_entries(group, indptr, topic, number)
    member = _member_of(indptr, n_members)[keep]
    topic, number = topic[keep], number[keep]
    load = np.bincount(member, minlength=n_members).astype(_I64)
    held = np.zeros(int(group.topic_offset[-1]) if n_topics else 0, dtype=bool)
    held[group.topic_offset[topic] + number] = True

    assignable = _assignable(group)
    rank = group.member_id_rank()
    subscriber = _member_of(group.sub_indptr, n_members)
    new_member, new_topic, new_number = [], [], []
    for t in np.flatnonzero(assignable).tolist():
        start, end = int(group.topic_offset[t]), int(group.topic_offset[t + 1])
        orphans = np.flatnonzero(~held[start:end])
        if not len(orphans):
            continue
        # each subscriber once, keyed (load, id rank): a heap gives the least loaded
        subscribers = np.unique(subscriber[group.sub_topics == t]).tolist()
        heap = [(int(load[m]), int(rank[m]), m) for m in subscribers]
        heapq.heapify(heap)
        for p in orphans.tolist():
            n, r, m = heapq.heappop(heap)
            new_member.append(m)
            new_topic.append(t)
            new_number.append(p)
            load[m] += 1
            heapq.heappush(heap, (n + 1, r, m))
    # each member's kept entries in Java's order, then its new ones in the order given
    all_member = np.concatenate((member, np.asarray(new_member, dtype=_I64)))
    order = np.argsort(all_member, kind="stable")
    out_topic = np.concatenate((topic, np.asarray(new_topic, dtype=_I32)))[order]
    out_number = np.concatenate((number, np.asarray(new_number, dtype=_I32)))[order]
    out_indptr = np.zeros(n_members + 1, dtype=_I64)
    np.cumsum(np.bincount(all_member, minlength=n_members), out=out_indptr[1:])
    return out_indptr, out_topic.astype(_I32), out_number.astype(_I32)


def withhold_transfers(group, indptr, topic, number) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 4: drop each partition given to a member that did not own it
    while a member that owned it loses it (Java's
    computeTransferringPartitions over a valid answer)."""
    if len(topic) == 0:
        return indptr, topic, number
    # As with is_valid, the compiled loop whenever there is one: a repaired
    # cooperative answer spent most of its time here in NumPy calls.
    return load_kernels("rangerr").transfers_withheld(
        group.partition_counts, group.topic_offset, group.owned_indptr, group.owned_topic, group.owned_partition,
        np.asarray(indptr, dtype=_I64), np.asarray(topic, dtype=_I32), np.asarray(number, dtype=_I32))
