"""Property tests for range and roundrobin.

Random groups (static and dynamic members, duplicate instance ids, unequal
subscriptions, unknown and empty topics, non-BMP names, consumer and replica
racks) must satisfy the assignors' invariants, the compiled and pure kernels
must agree exactly, and the non-rack results must equal a direct
collection-by-collection emulation of the Java code written here from the
reference notes (independent of kwire's array kernels).
"""

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire import _impl
from kwire.assignors._javaorder import java_sorted, member_info_order, string_hashmap_order, topic_partition_sort_key
from kwire.assignors import ArrayGroup, assign_arrays
from kwire.assignors._arrays import load_kernels
from kwire.assignors._model import GroupInput, MemberInput
from kwire.assignors._range import reference_range
from kwire.assignors._roundrobin import reference_roundrobin


def _compiled_available():
    if not _impl.NO_EXTENSIONS:
        return True
    try:
        load_kernels("rangerr", "cython")
    except ImportError:
        return False
    return True


needs_compiled = pytest.mark.skipif(not _compiled_available(), reason="compiled kernels not built (KWIRE_NO_EXTENSIONS=1)")

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Names mixing ASCII, BMP and non-BMP characters, so UTF-16 order and Java
# hashing are exercised where they differ from Python's defaults.
_name_chars = st.sampled_from(list("abcxyzAZ09._-") + ["é", "\uffee", "\U0001f600", "\U00010400"])
names = st.text(_name_chars, min_size=1, max_size=6)
RACKS = ["r0", "r1", "r2", "r3"]


@st.composite
def groups(draw, with_racks=None):
    topics = draw(st.lists(names, min_size=1, max_size=7, unique=True))
    known = {t: draw(st.integers(0, 13)) for t in topics}
    # Some subscribed topics are unknown to the metadata.
    unknown = draw(st.lists(names.filter(lambda n: n not in known), max_size=2, unique=True))
    pool = list(known) + unknown
    member_ids = draw(st.lists(names, min_size=1, max_size=9, unique=True))
    instance_pool = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    racks_on = draw(st.booleans()) if with_racks is None else with_racks
    members = []
    for mid in member_ids:
        subs = draw(st.lists(st.sampled_from(pool), max_size=len(pool) + 1))
        if draw(st.booleans()):
            subs = java_sorted(set(subs))  # what the wire normally carries
        gid = draw(st.one_of(st.none(), st.sampled_from(instance_pool)))
        rack = draw(st.sampled_from([None, ""] + RACKS)) if racks_on else None
        members.append(MemberInput(member_id=mid, group_instance_id=gid, topics=tuple(subs), rack=rack))
    partition_racks = None
    if racks_on:
        partition_racks = {}
        for t, n in known.items():
            if draw(st.booleans()):
                partition_racks[t] = [
                    draw(st.lists(st.sampled_from(RACKS + [None]), min_size=0, max_size=3)) for _ in range(n)
                ]
    return GroupInput(members=members, partitions_per_topic=known, partition_racks=partition_racks)


def _subscribed_partitions(group):
    out = set()
    for m in group.members:
        for t in m.topics:
            for p in range(group.partitions_per_topic.get(t, 0)):
                out.add((t, p))
    return out


def _check_valid(group, result):
    assert set(result) == {m.member_id for m in group.members}
    everything = [tp for tps in result.values() for tp in tps]
    assert len(everything) == len(set(everything)), "a partition was assigned twice"
    assert set(everything) == _subscribed_partitions(group), "not every subscribed partition is assigned"
    subs = {m.member_id: set(m.topics) for m in group.members}
    for mid, tps in result.items():
        assert all(t in subs[mid] for t, _ in tps), f"{mid} got a topic it does not subscribe to"


def _per_topic_balanced(group, result):
    for t, n in group.partitions_per_topic.items():
        subscribers = {m.member_id for m in group.members if t in m.topics}
        if not subscribers or n == 0:
            continue
        counts = Counter(mid for mid, tps in result.items() for tt, _ in tps if tt == t)
        sizes = [counts.get(mid, 0) for mid in subscribers]
        assert max(sizes) - min(sizes) <= 1, f"topic {t!r} split unevenly: {sizes}"


# -- an independent, object-level emulation of the Java code (non-rack) ------------------------


def _member_info_sorted(members_in_map_order):
    ids = [m.member_id for m in members_in_map_order]
    order = member_info_order([m.group_instance_id for m in members_in_map_order], ids)
    return [members_in_map_order[i] for i in order]


def _members_in_map_order(group):
    by_id = {m.member_id: m for m in group.members}
    ids = [m.member_id for m in group.members]
    return [by_id[i] for i in string_hashmap_order(ids)]


def java_range_no_racks(group):
    members = _members_in_map_order(group)
    topic_set = []
    for m in members:
        for t in m.topics:
            if t not in topic_set:
                topic_set.append(t)
    topic_set = string_hashmap_order(topic_set)
    ppt = [t for t in topic_set if group.partitions_per_topic.get(t, 0) > 0]
    ppt = string_hashmap_order(ppt)
    result = {m.member_id: [] for m in group.members}
    for t in ppt:
        consumers = []
        for m in _member_info_sorted([m for m in members if t in m.topics]):
            if m.member_id not in consumers:
                consumers.append(m.member_id)
        n, P = len(consumers), group.partitions_per_topic[t]
        free = list(range(P))
        extra = P % n
        for c in consumers:
            take = P // n + (1 if extra > 0 else 0)
            mine, free = free[:take], free[take:]
            if len(mine) > P // n:
                extra -= 1
            result[c].extend((t, p) for p in mine)
    return result


def java_roundrobin(group):
    members = _member_info_sorted(_members_in_map_order(group))
    topics = java_sorted({t for m in group.members for t in m.topics})
    result = {m.member_id: [] for m in group.members}
    i = 0
    for t in topics:
        for p in range(group.partitions_per_topic.get(t, 0)):
            while t not in members[i % len(members)].topics:
                i += 1
            result[members[i % len(members)].member_id].append((t, p))
            i += 1
    return result


# -- properties -------------------------------------------------------------------------------


@SETTINGS
@given(groups())
def test_range_valid_and_balanced_per_topic(group):
    result = assign_arrays("range", ArrayGroup.from_group_input(group), implementation="python").to_dict()
    _check_valid(group, result)
    _per_topic_balanced(group, result)


@SETTINGS
@given(groups(with_racks=False))
def test_range_equals_java_emulation(group):
    result = assign_arrays("range", ArrayGroup.from_group_input(group), implementation="python").to_dict()
    assert result == java_range_no_racks(group)


@SETTINGS
@given(groups())
def test_roundrobin_equals_java_emulation(group):
    result = assign_arrays("roundrobin", ArrayGroup.from_group_input(group), implementation="python").to_dict()
    _check_valid(group, result)
    assert result == java_roundrobin(group)
    for tps in result.values():
        assert tps == sorted(tps, key=topic_partition_sort_key)


@SETTINGS
@given(st.integers(1, 12), st.lists(st.integers(0, 30), min_size=1, max_size=6))
def test_roundrobin_balanced_when_subscriptions_equal(n_members, counts):
    topics = [f"t{i}" for i in range(len(counts))]
    group = GroupInput(
        members=[MemberInput(member_id=f"m{i}", topics=tuple(topics)) for i in range(n_members)],
        partitions_per_topic=dict(zip(topics, counts)),
    )
    sizes = [len(v) for v in assign_arrays("roundrobin", ArrayGroup.from_group_input(group)).to_dict().values()]
    assert max(sizes) - min(sizes) <= 1


@SETTINGS
@given(groups(with_racks=True))
def test_rack_aware_range_equals_reference(group):
    arrays = ArrayGroup.from_group_input(group)
    result = assign_arrays("range", arrays, implementation="python").to_dict()
    _check_valid(group, result)
    _per_topic_balanced(group, result)
    assert result == reference_range(group)


@SETTINGS
@given(groups(with_racks=False))
def test_references_equal_java_emulation(group):
    assert reference_range(group) == java_range_no_racks(group)
    assert reference_roundrobin(group) == java_roundrobin(group)


@needs_compiled
@SETTINGS
@given(groups(), st.sampled_from(["range", "roundrobin"]))
def test_compiled_equals_pure(group, strategy):
    arrays = ArrayGroup.from_group_input(group)
    pure = assign_arrays(strategy, arrays, implementation="python")
    compiled = assign_arrays(strategy, ArrayGroup.from_group_input(group), implementation="cython")
    assert compiled == pure
    assert np.array_equal(compiled.owner_of_each_partition(), pure.owner_of_each_partition())


@needs_compiled
@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 60),
    st.lists(st.integers(0, 200), min_size=1, max_size=20),
    st.integers(0, 2**31 - 1),
)
def test_compiled_equals_pure_larger(n_members, counts, seed):
    # Wider groups than the composite strategy makes, with random sparse subscriptions and racks.
    rng = np.random.default_rng(seed)
    topics = [f"topic-{i}" for i in range(len(counts))]
    members = []
    for i in range(n_members):
        subs = tuple(t for t in topics if rng.random() < 0.6)
        gid = f"g{rng.integers(0, 5)}" if rng.random() < 0.3 else None
        rack = RACKS[rng.integers(0, 4)] if rng.random() < 0.7 else None
        members.append(MemberInput(member_id=f"member-{i}", group_instance_id=gid, topics=subs, rack=rack))
    racks = {t: [list(rng.choice(RACKS, size=rng.integers(0, 3))) for _ in range(n)] for t, n in zip(topics, counts)}
    group = GroupInput(members=members, partitions_per_topic=dict(zip(topics, counts)), partition_racks=racks)
    for strategy in ("range", "roundrobin"):
        pure = assign_arrays(strategy, ArrayGroup.from_group_input(group), implementation="python")
        compiled = assign_arrays(strategy, ArrayGroup.from_group_input(group), implementation="cython")
        assert compiled == pure
        _check_valid(group, compiled.to_dict())


@st.composite
def co_partitioned_groups(draw):
    # Topics with one partition count and identical subscribers: the KIP-881
    # co-partitioned path, where partition p of every topic goes to one member.
    n_topics = draw(st.integers(2, 4))
    P = draw(st.integers(1, 12))
    topics = [f"cp{i}" for i in range(n_topics)]
    extra = draw(st.booleans())
    members = []
    for i in range(draw(st.integers(1, 7))):
        rack = draw(st.sampled_from([None] + RACKS))
        subs = tuple(topics) + (("solo",) if extra and draw(st.booleans()) else ())
        members.append(MemberInput(member_id=f"m{i}", topics=subs, rack=rack))
    counts = dict.fromkeys(topics, P)
    counts["solo"] = draw(st.integers(0, 9))
    racks = {
        t: [draw(st.lists(st.sampled_from(RACKS + [None]), max_size=2)) for _ in range(n)] for t, n in counts.items()
    }
    return GroupInput(members=members, partitions_per_topic=counts, partition_racks=racks)


@SETTINGS
@given(co_partitioned_groups())
def test_co_partitioned_rack_range(group):
    pure = assign_arrays("range", ArrayGroup.from_group_input(group), implementation="python")
    result = pure.to_dict()
    _check_valid(group, result)
    _per_topic_balanced(group, result)
    assert result == reference_range(group)
    # Co-partitioning holds whether or not racks were used.
    owner = {tp: mid for mid, tps in result.items() for tp in tps}
    cp = [t for t in group.partitions_per_topic if t.startswith("cp")]
    for p in range(group.partitions_per_topic[cp[0]]):
        assert len({owner[(t, p)] for t in cp}) == 1
    if _compiled_available():
        assert assign_arrays("range", ArrayGroup.from_group_input(group), implementation="cython") == pure


def test_a_groups_member_order_is_javas_memberinfo_order():
    """ArrayGroup.member_sort_order takes the member-id rank's inverse when no member is static: the same
    order as Java's MemberInfo sort, names outside the BMP (UTF-16 order) and repeated ids included."""
    import random

    import numpy as np

    from kwire.assignors._arrays import ArrayGroup

    rng = random.Random(3)
    for _ in range(2000):
        n = rng.randint(0, 30)
        ids = ["".join(rng.choice("aAbZ\u00e9\uff5e\U0001F600-0") for _ in range(rng.randint(0, 5))) for _ in range(n)]
        # static members with distinct instance ids (repeated ones are visited in HashMap order instead)
        instance_ids = [None] * n if rng.random() < 0.7 else [rng.choice([None, f"i{k}"]) for k in rng.sample(range(n), n)]
        group = ArrayGroup(["t"], [1], ids, np.zeros(n + 1, np.int64), np.zeros(0, np.int32),
                           group_instance_ids=instance_ids, validate=False)
        assert group.member_sort_order().tolist() == member_info_order(instance_ids, ids), (ids, instance_ids)
