"""Java's hashing and HashMap rules: each has one Python form in kwire.assignors._javaorder,
and the C copies kept for speed must agree with it over many inputs.

The C copies are ``string_hashes`` in ``_rangerr_c.pyx`` (``String.hashCode``) and,
in ``_sticky_balance.pxi``, ``_spread`` (``HashMap.hash``), ``_topic_partition_spread``
(``TopicPartition.hashCode``) and ``_HashSetOrder`` (the ``HashSet<TopicPartition>``
bucket layout); the last three are reached through ``_sticky_c.hash_set_trace``.
"""

import random

import numpy as np

import pytest

from kwire.assignors._arrays import load_kernels
from kwire.assignors._javaorder import (
    JavaHashTable,
    capacity_after,
    hashmap_capacity,
    spread,
    string_hash,
    string_hashes,
    topic_partition_hash,
)
from tests._twins import assignor_implementations

needs_compiled = pytest.mark.skipif("cython" not in assignor_implementations(),
                                    reason="KWIRE_NO_EXTENSIONS=1: the compiled kernels are not built")

# Characters from every UTF-16 range that matters: ASCII, Latin-1, the BMP
# above the surrogates, and supplementary characters (a surrogate pair in Java).
_ALPHABET = "az09-_.\u00e9\u00ff\u4e2d\uffee\U0001f600\U00010000\U0010ffff"


def _names(rng, n):
    return ["".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 40))) for _ in range(n)]


def _python_trace(topic_hash_of, ops):
    table = JavaHashTable()
    out = []
    for add, partition in ops:
        if add:
            table.add(partition, spread(topic_hash_of(partition)))
        else:
            table.discard(partition)
        out.append((table.capacity, table.first() if len(table) else -1))
    return out


def _ops(rng, n):
    # Partitions 16 apart share a bucket of a small table (31 * 16 = 0 mod 16),
    # so a pool of them fills one bin past 8 and exercises treeifyBin's doubling;
    # large partition numbers exercise the int32 wrap and the high-half fold.
    stride = rng.choice([16, 32, 64])
    pool = [stride * k for k in range(rng.randrange(4, 24))]
    pool += [rng.randrange(0, 2 ** 31 - 32) for _ in range(rng.randrange(0, 12))]
    pool += list(range(rng.randrange(0, 80)))
    return [(rng.random() < 0.75, rng.choice(pool)) for _ in range(n)]


def test_string_hashes_c_and_python_agree_over_many_names():
    rng = random.Random(11)
    names = _names(rng, 3000) + ["", "Aa", "BB", "\U0001f600" * 50]
    expected = [string_hash(n) for n in names]
    assert string_hashes(names).tolist() == expected
    for impl in assignor_implementations():
        assert load_kernels("rangerr", impl).string_hashes(names).tolist() == expected, impl


@needs_compiled
@pytest.mark.parametrize("seed", range(60))
def test_hash_set_order_c_and_python_agree(seed):
    rng = random.Random(seed)
    topic = _names(rng, 1)[0]
    ops = _ops(rng, rng.randrange(1, 400))
    c_trace = load_kernels("sticky", "cython").hash_set_trace(string_hash(topic), ops)
    assert c_trace == _python_trace(lambda p: topic_partition_hash(topic, p), ops)


@needs_compiled
def test_hash_set_trace_reaches_treeify_doubling():
    # Nine partitions in one bucket of a 16-slot table: Java doubles the
    # table (treeifyBin below 64 slots) though the size rule alone would not.
    ops = [(True, 16 * k) for k in range(9)]
    trace = load_kernels("sticky", "cython").hash_set_trace(string_hash("t"), ops)
    assert [cap for cap, _ in trace] == [16] * 8 + [32]
    assert trace == _python_trace(lambda p: topic_partition_hash("t", p), ops)


def test_hashmap_capacity_is_the_table_model():
    rng = random.Random(5)
    for _ in range(300):
        hashes = [rng.choice([string_hash("Aa"), rng.randrange(-2 ** 31, 2 ** 31)]) for _ in range(rng.randrange(0, 120))]
        table = JavaHashTable()
        for i, h in enumerate(hashes):
            table.add(i, spread(h))
        assert hashmap_capacity(hashes) == table.capacity
        assert hashmap_capacity(hashes) >= capacity_after(len(hashes))


# -- the rules the server-side (KIP-848) assignors add ---------------------------------------------------------

def test_uuid_hash_rule_and_column_agree():
    from kwire.assignors._javaorder import uuid_hash, uuid_hashes

    rng = random.Random(848)
    ids = [rng.getrandbits(128).to_bytes(16, "big") for _ in range(300)]
    ids += [bytes(16), (1).to_bytes(16, "big"), b"\xff" * 16, (1 << 64).to_bytes(16, "big")]
    assert uuid_hashes(np.frombuffer(b"".join(ids), dtype=np.uint8).reshape(-1, 16)).tolist() == [
        uuid_hash(t) for t in ids]
    assert uuid_hash((1).to_bytes(16, "big")) == 1                 # msb 0, lsb 1: x = 1
    assert uuid_hash((1 << 64).to_bytes(16, "big")) == 1           # msb 1, lsb 0
    assert uuid_hash((1 << 95).to_bytes(16, "big")) == -(2 ** 31)  # the high half of msb lands in the sign


def test_hashset_capacity_from_a_collection():
    from kwire.assignors._javaorder import hashset_capacity_from, table_size_for

    # tableSizeFor(max((int) (n / .75f) + 1, 16))
    assert [hashset_capacity_from(n) for n in (0, 1, 11, 12, 24, 25, 48, 49, 96, 97)] == [
        16, 16, 16, 32, 64, 64, 128, 128, 256, 256]
    assert [table_size_for(n) for n in (0, 1, 2, 3, 17, 64)] == [1, 1, 2, 4, 32, 64]


def test_the_plain_order_holds_until_a_bin_crowds():
    from kwire.assignors._javaorder import java_hash_iteration, may_crowd

    rng = random.Random(7)
    hashes = [rng.getrandbits(32) for _ in range(500)]
    spread_hashes = np.array([spread(h) for h in hashes], dtype=np.int64)
    assert not may_crowd(spread_hashes, 16)
    cap = capacity_after(500)
    assert java_hash_iteration(list(range(500)), spread_hashes, 16) == sorted(
        range(500), key=lambda i: (spread_hashes[i] & (cap - 1), i))
    # twelve keys of one hash: a tree bin once the table has 64 slots, whose root iterates first
    same = np.full(12, 5, dtype=np.int64)
    assert may_crowd(same, 16)
    order = java_hash_iteration(list(range(12)), same, 16)
    assert sorted(order) == list(range(12)) and order != list(range(12))


@needs_compiled
def test_member_map_order_twins_agree_on_colliding_ids():
    import itertools

    from kwire.assignors._server import server_kernels

    # "Aa" and "BB" share String.hashCode, so do all their concatenations: tree bins in big tables
    colliding = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=7)]
    rng = random.Random(11)
    for n_colliding, n_other in ((9, 60), (12, 200), (40, 10), (128, 3000), (0, 5000)):
        ids = rng.sample(colliding, n_colliding) + _names(rng, n_other)
        ids = list(dict.fromkeys(ids))
        rng.shuffle(ids)
        orders = [server_kernels(impl).member_map_order(ids).tolist() for impl in ("python", "cython")]
        assert orders[0] == orders[1]
        assert sorted(orders[0]) == list(range(len(ids)))
