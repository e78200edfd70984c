"""Java's hashing and HashMap rules: each has one Python form in kwire.assignors._javaorder,
and the C copies kept for speed must agree with it over many inputs.

The C copies are ``string_hashes`` in ``_rangerr_c.pyx`` (``String.hashCode``) and,
in ``_sticky_balance.pxi``, ``_spread`` (``HashMap.hash``), ``_topic_partition_spread``
(``TopicPartition.hashCode``) and ``_HashSetOrder`` (the ``HashSet<TopicPartition>``
bucket layout); the last three are reached through ``_sticky_c.hash_set_trace``.
"""

import random

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
