"""Range and roundrobin: classic examples, Java's ordering quirks, the array
API and the member-level API, each over both implementations."""

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kwire
from kwire import Subscription
from tests._registry import assert_unregistered
from tests._twins import assignor_implementations
from kwire.assignors import (
    STRATEGIES,
    ArrayAssignment,
    ArrayGroup,
    GroupMember,
    assign,
    assign_arrays,
    member_input,
    register_strategy,
    unregister_strategy,
)
from kwire.assignors._arrays import load_kernels
from kwire.assignors._javaorder import string_hashes as java_string_hashes
from kwire.assignors._model import GroupInput, MemberInput
from kwire.assignors._javaorder import string_hash
from kwire.errors import AssignmentError, KwireError


IMPLS = assignor_implementations()


def sub(*topics, rack=None):
    if not all(isinstance(t, str) for t in topics):
        return SimpleNamespace(topics=list(topics), user_data=None, owned_partitions=[], generation_id=-1, rack_id=rack)
    return Subscription(topics=list(topics), rack_id=rack)


def member(mid, *topics, instance=None, rack=None):
    return GroupMember(mid, instance, sub(*topics, rack=rack))


@pytest.fixture(params=IMPLS)
def impl(request):
    return request.param


def test_range_four_partitions_three_consumers(impl):
    got = assign("range", [member(c, "t") for c in ("c0", "c1", "c2")], {"t": 4}, implementation=impl)
    assert got == {"c0": [("t", 0), ("t", 1)], "c1": [("t", 2)], "c2": [("t", 3)]}


def test_range_javadoc_two_topics(impl):
    got = assign("range", [member("C0", "t0", "t1"), member("C1", "t0", "t1")], {"t0": 3, "t1": 3}, implementation=impl)
    assert sorted(got["C0"]) == [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)]
    assert sorted(got["C1"]) == [("t0", 2), ("t1", 2)]


def test_range_list_follows_java_hashmap_topic_order(impl):
    # Verified against JDK 17: "zz" lands in bucket 0 and "a" in bucket 1, so
    # range lists zz first while roundrobin keeps sorted order.
    members = [member("m1", "a", "zz"), member("m2", "a", "zz")]
    assert assign("range", members, {"a": 2, "zz": 2}, implementation=impl) == {
        "m1": [("zz", 0), ("a", 0)],
        "m2": [("zz", 1), ("a", 1)],
    }
    assert assign("roundrobin", members, {"a": 2, "zz": 2}, implementation=impl) == {
        "m1": [("a", 0), ("zz", 0)],
        "m2": [("a", 1), ("zz", 1)],
    }


def test_roundrobin_unequal_subscriptions(impl):
    # kafka-python 3.0.12's RoundRobinPartitionAssignor raises KeyError on this input.
    members = [member("C0", "t0"), member("C1", "t0", "t1"), member("C2", "t0", "t1", "t2")]
    got = assign("roundrobin", members, {"t0": 1, "t1": 2, "t2": 3}, implementation=impl)
    assert got == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0)],
        "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)],
    }


def test_static_members_sort_first(impl):
    members = [member("a-dyn", "t"), member("z-static", "t", instance="i1"), member("b-dyn", "t")]
    got = assign("range", members, {"t": 3}, implementation=impl)
    assert got == {"z-static": [("t", 0)], "a-dyn": [("t", 1)], "b-dyn": [("t", 2)]}


def test_utf16_order_not_code_point_order(impl):
    # U+FFEE sorts after U+1F600 in UTF-16 (0xD83D...) but before it by code point.
    hi_bmp, astral = "\uffee", "\U0001f600"
    members = [member(hi_bmp, "t"), member(astral, "t")]
    got = assign("range", members, {"t": 2}, implementation=impl)
    assert got == {astral: [("t", 0)], hi_bmp: [("t", 1)]}


def test_unknown_empty_and_unsubscribed_topics(impl):
    members = [member("a", "known", "unknown", "empty"), member("b")]
    got = assign("range", members, {"known": 2, "empty": 0, "other": 5}, implementation=impl)
    assert got == {"a": [("known", 0), ("known", 1)], "b": []}
    got = assign("roundrobin", members, {"known": 2, "empty": 0, "other": 5}, implementation=impl)
    assert got == {"a": [("known", 0), ("known", 1)], "b": []}


def test_duplicate_topic_in_subscription_counts_once(impl):
    got = assign("range", [member("a", "t", "t"), member("b", "t")], {"t": 4}, implementation=impl)
    assert got == {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}


def test_rack_aware_range_prefers_local_partitions(impl):
    # Each partition lives on one rack only, so rack matching applies.
    racks = {"t": [["r0"], ["r1"], ["r0"], ["r1"]]}
    members = [member("a", "t", rack="r1"), member("b", "t", rack="r0")]
    got = assign("range", members, {"t": 4}, partition_racks=racks, implementation=impl)
    assert got == {"a": [("t", 1), ("t", 3)], "b": [("t", 0), ("t", 2)]}
    # Replicas everywhere: no rack logic, plain ranges.
    everywhere = {"t": [["r0", "r1"]] * 4}
    got = assign("range", members, {"t": 4}, partition_racks=everywhere, implementation=impl)
    assert got == {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}


def test_roundrobin_no_members_is_an_error(impl):
    with pytest.raises(AssignmentError):
        assign("roundrobin", [], {"t": 1}, implementation=impl)
    assert assign("range", [], {"t": 1}, implementation=impl) == {}


# -- array level -------------------------------------------------------------------------------


def test_array_group_layout_and_owner_array(impl):
    group = GroupInput(
        members=[MemberInput("m1", topics=("b", "a")), MemberInput("m0", topics=("b",))],
        partitions_per_topic={"a": 2, "b": 3},
    )
    g = ArrayGroup.from_group_input(group)
    assert g.topics == ["a", "b"]
    assert g.partition_counts.dtype == np.int32 and g.partition_counts.tolist() == [2, 3]
    assert g.sub_indptr.tolist() == [0, 2, 3] and g.sub_topics.tolist() == [1, 0, 1]
    assert g.topic_offset.tolist() == [0, 2, 5]
    res = assign_arrays("range", g, implementation=impl)
    assert isinstance(res, ArrayAssignment)
    assert res.indptr.dtype == np.int64 and res.topic.dtype == np.int32 and res.partition.dtype == np.int32
    owner = res.owner_of_each_partition()
    assert owner.dtype == np.int32 and len(owner) == g.num_partitions
    d = res.to_dict()
    for m, tps in d.items():
        for t, p in tps:
            assert owner[g.topic_offset[g.topics.index(t)] + p] == g.member_ids.index(m)
    assert sorted(tp for tps in d.values() for tp in tps) == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]


def test_array_group_direct_construction_matches_conversion(impl):
    g = ArrayGroup(
        ["x", "y"],
        np.array([3, 2], dtype=np.int32),
        ["c", "a"],
        np.array([0, 2, 3], dtype=np.int64),
        np.array([0, 1, 0], dtype=np.int32),
    )
    via = ArrayGroup.from_group_input(
        GroupInput([MemberInput("c", topics=("x", "y")), MemberInput("a", topics=("x",))], {"x": 3, "y": 2})
    )
    assert assign_arrays("roundrobin", g, implementation=impl) == assign_arrays("roundrobin", via, implementation=impl)


def test_owner_marks_unassigned_partitions():
    g = ArrayGroup.from_group_input(GroupInput([MemberInput("m", topics=("a",))], {"a": 1, "b": 2}))
    assert assign_arrays("range", g).owner_of_each_partition().tolist() == [0, -1, -1]


def test_java_string_hashes_match_scalar_rule(impl):
    names = ["", "a", "zz", "topic-with-a-longer-name-0123456789", "é", "\U0001f600", "\uffee", "x" * 300]
    expected = [string_hash(n) for n in names]
    assert java_string_hashes(names).tolist() == expected
    assert load_kernels("rangerr", impl).string_hashes(names).tolist() == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(topics=["b", "a"], partition_counts=[1, 1], member_ids=["m"], sub_indptr=[0, 1], sub_topics=[0]),
        dict(topics=["a"], partition_counts=[-1], member_ids=["m"], sub_indptr=[0, 1], sub_topics=[0]),
        dict(topics=["a"], partition_counts=[1], member_ids=["m", "m"], sub_indptr=[0, 1, 1], sub_topics=[0]),
        dict(topics=["a"], partition_counts=[1], member_ids=["m"], sub_indptr=[0, 1], sub_topics=[5]),
        dict(topics=["a"], partition_counts=[1], member_ids=["m"], sub_indptr=[0, 2], sub_topics=[0]),
        dict(topics=["a"], partition_counts=[1, 2], member_ids=["m"], sub_indptr=[0, 1], sub_topics=[0]),
    ],
)
def test_array_group_rejects_bad_input(kwargs):
    with pytest.raises(AssignmentError):
        ArrayGroup(**kwargs)


def test_bad_member_level_input_gets_typed_errors():
    with pytest.raises(AssignmentError):
        assign("range", [member("a", "t"), member("a", "t")], {"t": 1})
    with pytest.raises(AssignmentError):
        assign("range", [GroupMember("a", None, sub(1, 2))], {"t": 1})
    with pytest.raises(AssignmentError):
        assign("range", [GroupMember(7, None, sub("t"))], {"t": 1})
    with pytest.raises(AssignmentError):
        assign("range", [member("a", "t")], {"t": -3})
    with pytest.raises(AssignmentError):
        assign("range", [member("a", "t")], {"t": 2}, partition_racks={"t": [["r"]]})
    with pytest.raises(AssignmentError):
        assign("no-such-strategy", [member("a", "t")], {"t": 1})
    with pytest.raises(KwireError):
        assign("range", [member("a", "t")], ["t"])


def test_registry_accepts_array_and_reference_forms():
    try:
        register_strategy("test-everything-to-first", reference=lambda g: {g.members[0].member_id: [("t", 0)]})
        got = assign("test-everything-to-first", [member("a", "t"), member("b", "t")], {"t": 1})
        assert got == {"a": [("t", 0)], "b": []}
        g = ArrayGroup.from_group_input(GroupInput([MemberInput("a", topics=("t",))], {"t": 1}))
        assert assign_arrays("test-everything-to-first", g).to_dict() == {"a": [("t", 0)]}
    finally:
        removed = unregister_strategy("test-everything-to-first")
    assert removed.name == "test-everything-to-first"
    assert_unregistered(STRATEGIES, "test-everything-to-first", unregister_strategy)
    with pytest.raises(AssignmentError):
        register_strategy("nothing")


def test_member_input_for_range_ignores_owned_and_userdata():
    s = SimpleNamespace(
        topics=["t"], user_data=b"\x00\x01", owned_partitions=[SimpleNamespace(topic="t", partitions=[0])],
        generation_id=4, rack_id="r1",
    )
    mi = member_input("range", GroupMember("a", "inst", s))
    assert mi == MemberInput(member_id="a", group_instance_id="inst", topics=("t",), rack="r1")


# -- leader helper with the real codec -----------------------------------------------------------


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_leader_assignments_round_trip(strategy, impl):
    from kwire.assignors import leader_assignments

    subs = {
        "m-b": kwire.Subscription(topics=["a", "zz"]),
        "m-a": kwire.Subscription(topics=["a", "zz"], rack_id="r0"),
    }
    jgr = SimpleNamespace(
        members=[
            SimpleNamespace(member_id=mid, group_instance_id=None, metadata=s.encode(3)) for mid, s in subs.items()
        ]
    )
    out = leader_assignments(strategy, jgr, {"a": 3, "zz": 2}, implementation=impl)
    assert [x.member_id for x in out] == ["m-b", "m-a"]
    expected = assign(strategy, [GroupMember(mid, None, s) for mid, s in subs.items()], {"a": 3, "zz": 2}, implementation=impl)
    for x in out:
        decoded = kwire.Assignment.decode(x.assignment)
        flat = [(tp.topic, p) for tp in decoded.assigned_partitions for p in tp.partitions]
        assert flat == expected[x.member_id]
        assert x.assignment[:2] == b"\x00\x03"  # Java writes the assignment at version 3


def test_topic_groups_follow_first_appearance():
    g = ArrayGroup.from_group_input(
        GroupInput([MemberInput("m0", topics=("a", "b")), MemberInput("m1", topics=("a",))], {"a": 3, "b": 2})
    )
    # An interleaved list (as a sticky assignor may produce) still groups by first appearance.
    res = ArrayAssignment.for_group(g, [0, 4, 5], [1, 0, 1, 0, 0], [1, 2, 0, 0, 1])
    assert res.topic_groups() == {"m0": [("b", [1, 0]), ("a", [2, 0])], "m1": [("a", [1])]}
    assert res.to_dict() == {"m0": [("b", 1), ("a", 2), ("b", 0), ("a", 0)], "m1": [("a", 1)]}


_junk = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3), st.binary(max_size=3),
    st.lists(st.one_of(st.none(), st.integers(-2, 3), st.text(max_size=2)), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(-2, 3), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(
    strategy=st.sampled_from(["range", "roundrobin"]),
    topics=st.one_of(st.lists(st.one_of(st.text(max_size=2), _junk), max_size=3), _junk),
    counts=st.one_of(
        st.dictionaries(st.one_of(st.text(max_size=2), st.none(), st.integers(), st.binary(max_size=2)), _junk, max_size=3),
        _junk,
    ),
    racks=st.one_of(st.none(), st.dictionaries(st.text(max_size=2), st.one_of(_junk, st.lists(_junk, max_size=3)), max_size=2), _junk),
    rack=_junk,
    instance=_junk,
)
def test_junk_input_gives_typed_errors_only(strategy, topics, counts, racks, rack, instance):
    s = SimpleNamespace(topics=topics, user_data=None, owned_partitions=[], generation_id=-1, rack_id=rack)
    try:
        out = assign(strategy, [GroupMember("m", instance, s)], counts, partition_racks=racks)
    except KwireError:
        return
    assert set(out) == {"m"}


_small_ints = st.lists(st.integers(-2, 6), max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    n_topics=st.integers(0, 3),
    counts=_small_ints,
    n_members=st.integers(0, 3),
    sub_indptr=_small_ints,
    sub_topics=_small_ints,
    rr_indptr=st.one_of(st.none(), _small_ints),
    rr=_small_ints,
    racks=st.lists(st.sampled_from([None, "", "r0", "r1"]), max_size=4),
)
def test_array_group_junk_is_rejected_or_consistent(n_topics, counts, n_members, sub_indptr, sub_topics, rr_indptr, rr, racks):
    # Whatever the constructor accepts must be safe for the compiled kernels
    # (they do not bounds-check), and both twins must agree on it.
    try:
        g = ArrayGroup(
            [f"t{i}" for i in range(n_topics)], counts, [f"m{i}" for i in range(n_members)], sub_indptr, sub_topics,
            racks=racks, rack_names=["r0", "r1"], replica_rack_indptr=rr_indptr, replica_racks=rr,
        )
    except AssignmentError:
        return
    for strategy in ("range", "roundrobin"):
        try:
            results = [assign_arrays(strategy, g, implementation=i) for i in IMPLS]
        except AssignmentError:
            assert strategy == "roundrobin" and n_members == 0
            continue
        assert all(r == results[0] for r in results)


def test_bare_array_assignment():
    bare = ArrayAssignment(np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([0, 0, 1]))
    assert len(bare) == 2 and bare.topic.dtype == np.int32 and bare.indptr.dtype == np.int64
    with pytest.raises(AssignmentError):
        bare.to_dict()
    with pytest.raises(AssignmentError):
        bare.owner_of_each_partition()
    with pytest.raises(AssignmentError):
        ArrayAssignment([0, 5], [0], [0])
    with pytest.raises(AssignmentError):
        ArrayAssignment([], [], [])
    named = ArrayAssignment([0, 2, 3], [0, 1, 1], [0, 0, 1], ["a", "b"], ["x", "y"], [0, 1, 3])
    assert named.to_dict() == {"a": [("x", 0), ("y", 0)], "b": [("y", 1)]}
    assert named.owner_of_each_partition().tolist() == [0, 0, 1]


# -- many groups in one call ------------------------------------------------------------------


# "Aa" and "BB" share a String.hashCode, so their HashSet order is first insertion.
_topic_names = st.sampled_from(["a", "b", "zz", "Aa", "BB", "t0", "t1", "t10", "\u00e9", "\U0001d4b3"])


@st.composite
def _small_group(draw):
    topics = kwire.assignors.java_sorted(set(draw(st.lists(_topic_names, max_size=5))))
    counts = [draw(st.integers(0, 7)) for _ in topics]
    member_ids = draw(st.lists(st.sampled_from(["m0", "m1", "m2", "m10", "Aa", "BB", "z"]), max_size=5, unique=True))
    instances = [draw(st.sampled_from([None, None, "i0", "i1", "Aa"])) for _ in member_ids]
    subs = [draw(st.lists(st.integers(0, len(topics) - 1), max_size=4)) if topics else [] for _ in member_ids]
    indptr = np.cumsum([0] + [len(s) for s in subs])
    return ArrayGroup(topics, counts, member_ids, indptr, [t for s in subs for t in s], group_instance_ids=instances)


@settings(max_examples=300, deadline=None)
@given(groups=st.lists(_small_group(), max_size=6))
def test_many_groups_in_one_call_are_each_group_alone(groups):
    from kwire.assignors import assign_arrays_many, end_to_end

    for strategy in ("range", "roundrobin"):
        for impl in IMPLS:
            try:
                alone = end_to_end([assign_arrays(strategy, g, implementation=impl) for g in groups])
            except AssignmentError:
                assert strategy == "roundrobin" and any(g.num_members == 0 for g in groups)
                with pytest.raises(AssignmentError):
                    assign_arrays_many(strategy, groups, implementation=impl)
                continue
            assert assign_arrays_many(strategy, groups, implementation=impl) == alone, (strategy, impl)
            # range then roundrobin on the same groups share one stack inside sharing_stacks: same answers
            with kwire.assignors.sharing_stacks():
                if strategy == "roundrobin":
                    assign_arrays_many("range", groups, implementation=impl)
                assert assign_arrays_many(strategy, groups, implementation=impl) == alone, (strategy, impl)


def test_a_stack_is_shared_only_inside_sharing_stacks_and_only_for_the_same_groups():
    from kwire.assignors._range import stack_of

    a, b = (ArrayGroup(["t", "u"], [3, 2], ["x", "y"], [0, 2, 3], [0, 1, 0]) for _ in range(2))
    kernels = load_kernels("rangerr")
    assert stack_of([a, b], kernels) is not stack_of([a, b], kernels)  # outside: nothing is kept
    with kwire.assignors.sharing_stacks():
        first = stack_of([a, b], kernels)
        assert stack_of([a, b], kernels) is first
        assert stack_of([b, a], kernels) is not first  # other groups (or order): a stack of their own
        assert stack_of([a], kernels) is not stack_of([a], kernels)  # one group: its own arrays, never kept
        with kwire.assignors.sharing_stacks():
            assert stack_of([a, b], kernels) is not first  # an inner block starts empty
    assert stack_of([a, b], kernels) is not stack_of([a, b], kernels)


def test_many_groups_with_racks_and_registered_strategies():
    from kwire.assignors import assign_arrays_many, end_to_end

    racked = ArrayGroup.from_group_input(GroupInput(
        members=[MemberInput("a", topics=("t",), rack="r1"), MemberInput("b", topics=("t",), rack="r0")],
        partitions_per_topic={"t": 4}, partition_racks={"t": [["r0"], ["r1"], ["r0"], ["r1"]]}))
    plain = ArrayGroup(["t", "u"], [3, 2], ["x", "y"], [0, 2, 3], [0, 1, 0])
    groups = [plain, racked, plain]
    for strategy in ("range", "roundrobin"):
        for impl in IMPLS:
            alone = [assign_arrays(strategy, g, implementation=impl) for g in groups]
            assert assign_arrays_many(strategy, groups, implementation=impl) == end_to_end(alone)
    # rack matching gave the racked group its local partitions, not plain ranges
    assert assign_arrays("range", racked).to_dict() == {"a": [("t", 1), ("t", 3)], "b": [("t", 0), ("t", 2)]}
    assert len(assign_arrays_many("range", [])) == 0 and len(assign_arrays_many("roundrobin", [])) == 0
    with pytest.raises(AssignmentError):
        assign_arrays_many("range", [plain, "not a group"])
    with pytest.raises(AssignmentError):
        assign_arrays_many("roundrobin", [plain], implementation="fortran")
    # a strategy registered over a built-in one answers for every group
    previous = unregister_strategy("range")
    try:
        register_strategy("range", lambda g: assign_arrays("roundrobin", g))
        assert assign_arrays_many("range", groups) == end_to_end([assign_arrays("roundrobin", g) for g in groups])
    finally:
        register_strategy(previous.name, previous.arrays, reference=previous.reference,
                          member_input=previous.member_input)
    assert assign_arrays_many("sticky", groups) == end_to_end([assign_arrays("sticky", g) for g in groups])
