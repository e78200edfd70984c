"""The server-side assignors of KIP-848 on arrays, in plain Python: the pure
twin of ``_server_c.pyx`` (same names, same results).

Kafka's group coordinator assigns with ``UniformAssignor`` (which builds with
``UniformHomogeneousAssignmentBuilder`` when every member subscribes to the
same topic names and with ``UniformHeterogeneousAssignmentBuilder`` otherwise)
or its server-side ``RangeAssignor``.  The kernels take the group in columns
(``_server_common.ServerGroupArrays``, checked) plus the Java orders the
caller derived (the member map's order, the homogeneous builder's topic set)
and return ``(present, indptr, topics, part_indptr, parts)``.  Their
``scratch`` flag lets the compiled twin put that result in work arrays the
next call reuses; here every result is new.
"""

from __future__ import annotations

import numpy as np

from kwire.errors import ArgumentTypeError, ArgumentValueError

from ._javaorder import string_hashmap_iteration
from ._server_common import INT32_MAX, INT32_MIN, content_row, range_unknown_topic_error, same_target
from ._server_lists import heterogeneous_lists, homogeneous_lists


def member_map_order(member_ids) -> np.ndarray:
    """Member indices in the iteration order of the coordinator's
    ``new HashMap<String, ...>()`` filled with them in index order."""
    return np.asarray(string_hashmap_iteration(list(member_ids)), dtype=np.int32)


def _build(m_count, present, pairs_m, pairs_t, pairs_p, empty_m, empty_t):
    """CSR (sorted by member, topic, partition) from (member, topic, partition)
    triples plus entries that exist with no partition."""
    mm = np.concatenate([np.asarray(pairs_m, dtype=np.int64), np.asarray(empty_m, dtype=np.int64)])
    tt = np.concatenate([np.asarray(pairs_t, dtype=np.int64), np.asarray(empty_t, dtype=np.int64)])
    pp = np.concatenate([np.asarray(pairs_p, dtype=np.int64), np.zeros(len(empty_m), dtype=np.int64)])
    real = np.concatenate([np.ones(len(pairs_m), dtype=bool), np.zeros(len(empty_m), dtype=bool)])
    order = np.lexsort((pp, ~real, tt, mm))
    mm, tt, pp, real = mm[order], tt[order], pp[order], real[order]
    if len(mm):
        # a partition given twice to one member (overlapping input) is in its Java set once
        again = np.zeros(len(mm), dtype=bool)
        again[1:] = (mm[1:] == mm[:-1]) & (tt[1:] == tt[:-1]) & (pp[1:] == pp[:-1]) & (real[1:] == real[:-1])
        mm, tt, pp, real = mm[~again], tt[~again], pp[~again], real[~again]
        new_entry = np.ones(len(mm), dtype=bool)
        new_entry[1:] = (mm[1:] != mm[:-1]) | (tt[1:] != tt[:-1])
        # an empty marker is dropped where its entry also holds partitions
        keep = real | new_entry & np.append((mm[1:] != mm[:-1]) | (tt[1:] != tt[:-1]), True)
        mm, tt, pp, real, new_entry = mm[keep], tt[keep], pp[keep], real[keep], new_entry[keep]
    else:
        new_entry = np.zeros(0, dtype=bool)
    starts = np.flatnonzero(new_entry)
    topics = tt[starts].astype(np.int32)
    entry_member = mm[starts]
    indptr = np.zeros(m_count + 1, dtype=np.int64)
    np.cumsum(np.bincount(entry_member, minlength=m_count), out=indptr[1:])
    part_count = np.add.reduceat(real.astype(np.int64), starts) if len(starts) else np.zeros(0, np.int64)
    part_indptr = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(part_count, out=part_indptr[1:])
    parts = pp[real].astype(np.int32)
    return np.asarray(present, dtype=bool), indptr, topics, part_indptr, parts


def _nobody(m_count):
    return (np.zeros(m_count, dtype=bool), np.zeros(m_count + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
            np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32))


def _current_lists(m_count, cur_indptr, cur_topics, cur_part_indptr, cur_parts):
    """Each member's current entries as ``[(topic, [partitions])]``, in column order."""
    ip, tp = np.asarray(cur_indptr).tolist(), np.asarray(cur_topics).tolist()
    pip, parts = np.asarray(cur_part_indptr).tolist(), np.asarray(cur_parts).tolist()
    return [[(tp[e], parts[pip[e]:pip[e + 1]]) for e in range(ip[m], ip[m + 1])] for m in range(m_count)]


def _keys(topic_ids):
    return [bytes(row) for row in np.asarray(topic_ids, dtype=np.uint8).reshape(-1, 16)]


def _built(m_count, got):
    """The CSR result from the list builders' per-member dicts."""
    if got is None:
        return _nobody(m_count)
    pm, pt, pp, em, et = [], [], [], [], []
    for m, entries in enumerate(got):
        for t, ps in entries.items():
            if ps:
                pm.extend([m] * len(ps))
                pt.extend([t] * len(ps))
                pp.extend(ps)
            else:
                em.append(m)
                et.append(t)
    return _build(m_count, np.ones(m_count, dtype=bool), pm, pt, pp, em, et)


# -- UniformAssignor's two builders (their algorithm is _server_lists.py's) ------

def uniform_homogeneous(order, subscribed, topic_ids, partitions, cur_indptr, cur_topics, cur_part_indptr,
                        cur_parts, scratch=False):
    """``UniformHomogeneousAssignmentBuilder.build``.  ``order``: the member
    map's order; ``subscribed``: the first member's topics in the order of
    ``new HashSet<>(them)``, every one known (the caller checked)."""
    m_count = len(order)
    return _built(m_count, homogeneous_lists(
        np.asarray(order).tolist(), np.asarray(subscribed).tolist(), _keys(topic_ids),
        np.asarray(partitions).tolist(), _current_lists(m_count, cur_indptr, cur_topics, cur_part_indptr, cur_parts)))


def uniform_heterogeneous(order, member_sub, sub_indptr, sub_topics, topic_ids, partitions, cur_indptr, cur_topics,
                          cur_part_indptr, cur_parts, scratch=False):
    """``UniformHeterogeneousAssignmentBuilder.build`` (members numbered by
    their position in ``order``, the member map's order)."""
    m_count = len(order)
    indptr, topics = np.asarray(sub_indptr).tolist(), np.asarray(sub_topics).tolist()
    rows = [topics[indptr[r]:indptr[r + 1]] for r in range(len(indptr) - 1)]
    return _built(m_count, heterogeneous_lists(
        np.asarray(order).tolist(), np.asarray(member_sub).tolist(), rows, _keys(topic_ids),
        np.asarray(partitions).tolist(), _current_lists(m_count, cur_indptr, cur_topics, cur_part_indptr, cur_parts)))


# -- the server RangeAssignor ---------------------------------------------------

def range_assign(order, homogeneous, member_sub, sub_indptr, sub_topics, partitions, scratch=False):
    """The server ``RangeAssignor.assign``: ``order`` is the members sorted
    static-first (instance id, then member id, in ``String.compareTo`` order).
    Per topic the first ``n % k`` of its ``k`` subscribers get one extra
    partition; ranges are contiguous; the current assignment is not read."""
    m_count = len(order)
    if not m_count:
        return _nobody(0)
    subs = {}
    if homogeneous:
        r = int(member_sub[order[0]])
        for t in sub_topics[sub_indptr[r]:sub_indptr[r + 1]]:
            if partitions[t] == -1:
                raise range_unknown_topic_error()
            subs[int(t)] = order
    else:
        for m in order:
            r = int(member_sub[m])
            for t in sub_topics[sub_indptr[r]:sub_indptr[r + 1]]:
                if partitions[t] == -1:
                    raise range_unknown_topic_error()
                subs.setdefault(int(t), []).append(int(m))
    pm, pt, pp = [], [], []
    for t, members in subs.items():
        n = int(partitions[t])
        q, extra = divmod(n, len(members))
        for k in range(min(n, len(members))):
            start = k * q + min(k, extra)
            for p in range(start, start + q + (1 if k < extra else 0)):
                pm.append(int(members[k]))
                pt.append(t)
                pp.append(p)
    return _build(m_count, np.ones(m_count, dtype=bool), pm, pt, pp, [], [])


def member_dicts(member_ids, topic_keys, present, indptr, topics, part_indptr, parts, current=None, read=None):
    """The member level's result from the CSR columns: ``{member: {topic key:
    [partitions]}}`` for the present members, in index order.  ``current[m]``
    (optional) is member m's assignment as the caller gave it: when it is
    already a dict equal to the target in every detail the result shows (the
    same entries in the same order, keys of the metadata's type, lists of
    ints ascending), that dict is the member's result rather than a copy.
    ``read`` is what ``member_columns`` read of them (``canon`` and the
    current columns), which lets the compiled twin compare columns instead of
    objects; here the objects are compared, to the same effect."""
    if current is not None and len(current) != len(member_ids):
        raise ArgumentValueError(f"{len(current)} current assignments for {len(member_ids)} members")
    out = {}
    for m, mid in enumerate(member_ids):
        if not present[m]:
            continue
        entry = {}
        for e in range(int(indptr[m]), int(indptr[m + 1])):
            entry[topic_keys[topics[e]]] = parts[part_indptr[e]:part_indptr[e + 1]].tolist()
        out[mid] = current[m] if current is not None and same_target(current[m], entry) else entry
    return out


def first_repeat(indptr, values, domain):
    """The first row of a CSR (``indptr`` over ``values``, each in
    ``range(domain)``) that holds a value twice, or -1."""
    for r in range(len(indptr) - 1):
        row = values[indptr[r]:indptr[r + 1]]
        if len(np.unique(row)) != len(row):
            return r
    return -1


def member_columns(member_ids, members, member_class, topic_index, read_assignment=True, scratch=False):
    """The per-member columns of a group given member by member (see
    ``_server_members.server_group``): ``(member_sub, rows, unresolved,
    assignments, canon, cur_indptr, cur_topics, cur_part_indptr, cur_parts)``.

    ``rows`` are the distinct subscription sequences (a list object shared by
    members is read once; equal lists are merged too) and ``unresolved`` their
    unresolved names; ``assignments`` the members' assignment objects as given;
    ``canon`` is None here (the compiled twin marks the members whose
    assignment is in the result's form, see ``member_dicts``);
    ``topic_index(key)`` numbers a topic id of any form.  ``read_assignment``
    False leaves the current assignments out (for an assignor that never reads
    them).  ``scratch`` lets the compiled twin return views of work arrays; here
    the columns are always new."""
    m_count = len(member_ids)
    member_sub = np.empty(m_count, dtype=np.int32)
    by_identity, by_content = {}, {}
    rows, unresolved, assignments = [], [], []
    cur_topics, cur_counts, cur_flat = [], [], []
    cur_indptr = np.zeros(m_count + 1, dtype=np.int64)
    for mid in member_ids:
        if type(mid) is not str:
            raise ArgumentTypeError(f"member ids are str, not {type(mid).__name__}")
    for m in range(m_count):
        member = members[m]
        if not isinstance(member, member_class):
            raise ArgumentTypeError(f"member {member_ids[m]!r} is a {type(member).__name__}, not a ServerMember")
        subs, unres = member.subscribed_topic_ids, member.unresolved_topic_names
        key = (id(subs), id(unres))
        r = by_identity.get(key)
        if r is None:
            r = content_row(subs, unres, rows, unresolved, by_content)
            by_identity[key] = r
        member_sub[m] = r
        assignments.append(member.assignment)
        for tid, parts in (member.assignment.items() if read_assignment else ()):
            cur_topics.append(topic_index(tid))
            parts = list(parts)
            for p in parts:
                if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
                    raise ArgumentTypeError(f"a partition is an int, not {type(p).__name__}")
                if not INT32_MIN <= p <= INT32_MAX:
                    raise ArgumentValueError(f"partition {p} is outside Java's int range")
            cur_counts.append(len(parts))
            cur_flat.extend(parts)
        cur_indptr[m + 1] = len(cur_topics)
    cur_part_indptr = np.zeros(len(cur_counts) + 1, dtype=np.int64)
    np.cumsum(cur_counts, out=cur_part_indptr[1:])
    return (member_sub, rows, unresolved, assignments, None, cur_indptr, np.array(cur_topics, dtype=np.int32),
            cur_part_indptr, np.array(cur_flat, dtype=np.int64).astype(np.int32))
