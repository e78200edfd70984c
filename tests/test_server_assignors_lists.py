"""The uniform assignor's list form (``uniform_lists``, a coordinator's path for small groups) gives what
the array level gives on the same group, in both twins: targets, and the refusals' types and words.

The groups are the property tests' (valid, hostile, and chains of joins, leaves, subscription changes and
growing topics), each turned into both forms; the Java orders the list form derives itself (the member
map's, the partition sets', the entry maps') are checked against the general rules too, on crowded bins
and wrapped tables.
"""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire import AssignmentError
from kwire.assignors import ServerGroupArrays, assign_server, get_server_assignor
from kwire.assignors._server import uniform_arrays
from kwire.assignors._server_common import partition_set_order
from kwire.assignors._javaorder import uuid_hash_iteration
from kwire.assignors._server_lists import entry_order, set_order
from tests._twins import assignor_implementations
from tests.test_server_assignors_properties import _hostile, _mutate, random_group

IMPLEMENTATIONS = assignor_implementations()
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
UNIFORM_LISTS = get_server_assignor("uniform").lists


def _forms(members, topics):
    """The group as ``uniform_lists`` takes it and as ``ServerGroupArrays`` (the same numbering)."""
    keys = list(topics)
    counts = [topics[k].partitions for k in keys]
    index = {k: t for t, k in enumerate(keys)}

    def topic(tid):
        if tid not in index:
            index[tid] = len(keys)
            keys.append(tid)
            counts.append(-1)
        return index[tid]

    member_ids = list(members)
    rows, row_of, member_sub, current = [], {}, [], []
    for m in members.values():
        row = tuple(topic(t) for t in m.subscribed_topic_ids)
        if row not in row_of:
            row_of[row] = len(rows)
            rows.append(list(row))
        member_sub.append(row_of[row])
        current.append([(topic(t), list(ps)) for t, ps in m.assignment.items()])
    homogeneous = len({frozenset(r) for r in rows}) <= 1
    sub_indptr = np.cumsum([0] + [len(r) for r in rows])
    cur_indptr = np.cumsum([0] + [len(c) for c in current])
    cur_part_indptr = np.cumsum([0] + [len(ps) for c in current for _t, ps in c])
    arrays = ServerGroupArrays(
        member_ids=member_ids, member_sub=np.array(member_sub, dtype=np.int32),
        sub_indptr=sub_indptr.astype(np.int64), sub_topics=np.array([t for r in rows for t in r], dtype=np.int32),
        topic_ids=np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, 16),
        partitions=np.array(counts, dtype=np.int32), cur_indptr=cur_indptr.astype(np.int64),
        cur_topics=np.array([t for c in current for t, _ps in c], dtype=np.int32),
        cur_part_indptr=cur_part_indptr.astype(np.int64),
        cur_parts=np.array([p for c in current for _t, ps in c for p in ps], dtype=np.int64).astype(np.int32),
        subscription_type="homogeneous" if homogeneous else "heterogeneous")
    return (member_ids, member_sub, rows, keys, counts, current, homogeneous), arrays


def _by_lists(lists):
    try:
        got = UNIFORM_LISTS(*lists)
    except AssignmentError as exc:
        return type(exc), str(exc)
    # The coordinator's form: keyed by topic id, in the same order, without the topics kept empty.
    keys = lists[3]
    assert [list(m.items()) for m in UNIFORM_LISTS(*lists, by_id=True)] == [
        [(keys[t], ps) for t, ps in m.items() if ps] for m in got]
    return [{t: sorted(ps) for t, ps in m.items()} for m in got]


def _by_arrays(arrays, implementation):
    try:
        out = uniform_arrays(arrays, implementation=implementation)
    except AssignmentError as exc:
        return type(exc), str(exc)
    return [out.member(m) if out.present[m] else {} for m in range(len(arrays.member_ids))]


def _agree(members, topics):
    lists, arrays = _forms(members, topics)
    got = _by_lists(lists)
    for implementation in IMPLEMENTATIONS:
        assert got == _by_arrays(arrays, implementation), implementation
    return got


@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_random_groups_and_chains(seed):
    rng = random.Random(seed)
    members, topics, _ = random_group(seed)
    for _ in range(5):
        got = _agree(members, topics)
        assert isinstance(got, list), got
        result = {mid: {tid: got[m][t] for t, tid in enumerate(list(topics)) if t in got[m]}
                  for m, mid in enumerate(members)}
        members, topics = _mutate(rng, members, topics, result)


@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_hostile_groups(seed):
    _agree(*_hostile(seed))


def test_more_members_than_a_plain_map_order_takes():
    # Above 8 members the list form asks the kernels for the member map's order (a bin may crowd).
    for seed in range(60):
        members, topics, _ = random_group(seed, max_members=16)
        _agree(members, topics)


def test_the_member_level_agrees():
    # The same answer as assign_server, the public member level.
    for seed in range(30):
        members, topics, _ = random_group(seed)
        lists, _arrays = _forms(members, topics)
        got = UNIFORM_LISTS(*lists)
        keys = lists[3]
        want = assign_server("uniform", members, topics)
        mine = {mid: {keys[t]: sorted(ps) for t, ps in got[m].items()} for m, mid in enumerate(members)}
        assert {mid: a for mid, a in mine.items() if mid in want} == want
        assert not any(a for mid, a in mine.items() if mid not in want)


@pytest.mark.parametrize("seed", range(3))
def test_set_and_entry_orders_follow_the_general_rules(seed):
    rng = random.Random(seed)
    for _ in range(3000):
        n = rng.choice([0, 1, 2, 3, 8, 9, 11, 12, 13, 30, 100])
        shape = rng.choice(["random", "range", "wrapped", "crowded", "negative"])
        if shape == "random":
            parts = [rng.randint(0, rng.choice([15, 40, 70000, 2 ** 31 - 1])) for _ in range(n)]
        elif shape == "range":
            start = rng.randint(0, 200)
            parts = list(range(start, start + n))
        elif shape == "wrapped":
            parts = sorted({rng.randint(10, 25) for _ in range(n)})
        elif shape == "crowded":
            parts = [16 * rng.randint(0, 40) for _ in range(n)]
        else:
            parts = [rng.randint(-2 ** 31, 2 ** 31 - 1) for _ in range(n)]
        if rng.random() < 0.3:
            rng.shuffle(parts)
        assert set_order(parts) == partition_set_order(parts), parts
        k = rng.choice([0, 1, 2, 5, 9, 12, 13, 20])
        if rng.random() < 0.3:
            # equal Uuid.hashCode for all: one bin
            x = rng.getrandbits(64)
            keys = list({(m := rng.getrandbits(64)).to_bytes(8, "big") + (m ^ x).to_bytes(8, "big") for _ in range(k)})
        else:
            keys = [rng.randbytes(16) for _ in range(k)]
        entries = [(t, []) for t in range(len(keys))]
        assert entry_order(keys, entries) == uuid_hash_iteration(keys, 16)
