"""Property tests for sticky / cooperative-sticky (hypothesis).

The default strategies on random groups, odd ones included: a valid
assignment (every partition once, only to subscribers), never an error,
Java's answer whenever that is valid, identical in both twins.  Java's rules
on the Java-exact kernels: balance per ``isBalanced``, stickiness, the
cooperative two-phase rule, and compiled == pure."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kwire.assignors import ArrayGroup, _sticky, _sticky_py, _sticky_repair
from kwire.assignors._model import GroupInput, MemberInput
from kwire.assignors._sticky_rules import JavaAssignorFailure

from ._sticky_golden import compiled_sticky, needs_compiled

_sticky_c = compiled_sticky()

# Each property runs at two depths: a fifth of its examples in the default run, all of them in the slow set (which
# .ci/run runs as well), as test_codec_roundtrip's quick and deep round trips do.
DEPTHS = pytest.mark.parametrize("depth", [pytest.param(5, id="quick"),
                                           pytest.param(1, id="deep", marks=pytest.mark.slow)])


def at_depth(depth, examples, derandomize=False):
    """The settings of a property with ``examples`` examples in all, run at ``depth`` (see DEPTHS).  A property
    whose examples are a fixed sequence (``derandomize``) fails reproducibly: its promise holds on every input.
    The properties of whole, balanced ownership keep few of the groups drawn (``assume``), which Hypothesis's
    health check would otherwise count against them whenever its first draws happen to be rejected."""
    return settings(max_examples=max(examples // depth, 20), deadline=None, derandomize=derandomize,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


_ID_CHARS = "abzAZ09-_Äé😀𝄞"
member_ids = st.text(alphabet=_ID_CHARS, min_size=1, max_size=4)
topic_names = st.sampled_from(["a", "b", "zz", "t-1", "Ü", "😀x", "x𝄞"])


@st.composite
def groups(draw, *, consistent=False, allow_odd=True, max_members=8):
    """A random group.  ``consistent``: previous ownership is one valid
    assignment (no overlaps, one generation, subscribed topics only)."""
    topics = draw(st.lists(topic_names, min_size=1, max_size=5, unique=True))
    counts = {t: draw(st.integers(0 if allow_odd else 1, 7)) for t in topics}
    if allow_odd and draw(st.booleans()):
        counts["unsubscribed"] = draw(st.integers(0, 3))
    ids = draw(st.lists(member_ids, min_size=1, max_size=max_members, unique=True))
    shared = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
    members = []
    claimed = set()
    gen = draw(st.integers(-1, 3))
    for mid in ids:
        if shared and draw(st.integers(0, 9)) > 0:
            subs = list(common)
        else:
            subs = draw(st.lists(st.sampled_from(topics + ["ghost"]), unique=True,
                                 min_size=0 if allow_odd else 1))
        if allow_odd and draw(st.integers(0, 30)) == 0 and subs:
            subs.append(subs[0])  # a topic listed twice
        owned = []
        if consistent:
            for t in subs:
                for p in range(counts.get(t, 0)):
                    if (t, p) not in claimed and draw(st.integers(0, 2)) == 0:
                        claimed.add((t, p))
                        owned.append((t, p))
            g = sg = gen
        else:
            pool = [(t, p) for t in counts for p in range(counts[t] + (1 if allow_odd else 0))]
            if pool:
                owned = draw(st.lists(st.sampled_from(pool), max_size=6, unique=not allow_odd))
            g = draw(st.integers(-1, 4))
            sg = draw(st.sampled_from([g, -1, draw(st.integers(-1, 4))]))
        members.append(MemberInput(member_id=mid, topics=tuple(subs), owned=tuple(owned),
                                   generation=g, subscription_generation=sg))
    return GroupInput(members=members, partitions_per_topic=counts)


def _valid_counts(group):
    wanted = {t for m in group.members for t in m.topics}
    return {t: n for t, n in group.partitions_per_topic.items() if t in wanted and n > 0}


def _constrained_path(group):
    """Java's allSubscriptionsEqual verdict (members in HashMap order)."""
    order = _sticky_py.member_order(group)
    by_id = {m.member_id: m for m in group.members}
    return _sticky_py.resolve_owners([by_id[m] for m in order], _valid_counts(group))[0]


def _check_valid(group, result, cooperative):
    """Every partition at most once (exactly once for eager), each only to a
    member subscribed to its topic, and only partitions that exist."""
    counts = _valid_counts(group)
    assert set(result) == {m.member_id for m in group.members}
    subscribed = {m.member_id: set(m.topics) for m in group.members}
    seen = {}
    for mid, tps in result.items():
        for tp in tps:
            assert tp not in seen, f"{tp} assigned to {seen[tp]} and {mid}"
            seen[tp] = mid
            assert tp[0] in counts and 0 <= tp[1] < counts[tp[0]], (mid, tp)
            assert tp[0] in subscribed[mid], (mid, tp)
    if not cooperative:
        assert set(seen) == {(t, p) for t, n in counts.items() for p in range(n)}


def _java_balanced(group, result):
    counts = _valid_counts(group)
    sizes = {mid: len(v) for mid, v in result.items()}
    if max(sizes.values()) - min(sizes.values()) <= 1:
        return True
    holder = {tp: mid for mid, v in result.items() for tp in v}
    for m in group.members:
        topics = [t for t in dict.fromkeys(m.topics) if t in counts]
        n = sizes[m.member_id]
        if n == sum(counts[t] for t in topics):
            continue
        mine = set(result[m.member_id])
        for t in topics:
            for p in range(counts[t]):
                if (t, p) not in mine and n + 1 < sizes[holder[(t, p)]]:
                    return False
    return True


def _default(group, cooperative):
    """The default strategy's answer from both twins (they must agree)."""
    array_group = ArrayGroup.from_group_input(group)
    answers = [_sticky.sticky_arrays(array_group, cooperative, impl) for impl in _IMPLS]
    for other in answers[1:]:
        assert all(a.tolist() == b.tolist() for a, b in zip(answers[0], other))
    return _sticky.reference_cooperative_sticky(group) if cooperative else _sticky.reference_sticky(group)


_IMPLS = ("python",) if _sticky_c is None else ("python", "cython")

@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative"])
@DEPTHS
def test_default_is_valid_without_exceptions(cooperative, depth):
    """Stale and conflicting claims, topics listed twice, empty
    subscriptions, mixed generations: a valid assignment every time."""
    @at_depth(depth, examples=200, derandomize=True)
    @given(group=st.one_of(groups(), groups(allow_odd=False)))
    def check(group):
        _check_valid(group, _default(group, cooperative), cooperative)

    check()


@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative"])
@DEPTHS
def test_default_is_java_wherever_java_is_valid(cooperative, depth):
    """The default departs from Java only where Java's answer is invalid or
    Java throws; it is balanced wherever Java's answer is."""
    @at_depth(depth, examples=200, derandomize=True)
    @given(group=st.one_of(groups(), groups(allow_odd=False)))
    def check(group):
        try:
            java = _sticky_py.sticky_assign(group, cooperative)
        except JavaAssignorFailure:
            assume(False)
        array_group = ArrayGroup.from_group_input(group)
        flat = _sticky_py.sticky_arrays(array_group, cooperative)
        assume(_sticky_repair.is_valid(array_group, *flat))
        assert _default(group, cooperative) == java

    check()


@needs_compiled
@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative"])
@DEPTHS
def test_compiled_equals_pure(cooperative, depth):
    @at_depth(depth, examples=300)
    @given(group=groups())
    def check(group):
        _same_outcome(group, cooperative)

    check()


@st.composite
def repeated_groups(draw):
    """Groups whose subscriptions list topics twice and whose members repeat
    claims, with generations that make Java's pairwise settlement compare a
    member with itself."""
    base = draw(groups(allow_odd=False))
    members = []
    for m in base.members:
        topics, owned = list(m.topics), list(m.owned)
        if topics and draw(st.booleans()):
            topics.insert(draw(st.integers(0, len(topics))), draw(st.sampled_from(topics)))
        if owned and draw(st.booleans()):
            for _ in range(draw(st.integers(1, 3))):
                owned.insert(draw(st.integers(0, len(owned))), draw(st.sampled_from(owned)))
        members.append(MemberInput(member_id=m.member_id, topics=tuple(topics), owned=tuple(owned),
                                   generation=m.generation,
                                   subscription_generation=draw(st.sampled_from([m.generation, m.generation - 1,
                                                                                 m.subscription_generation]))))
    return GroupInput(members=members, partitions_per_topic=base.partitions_per_topic)


@needs_compiled
@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative"])
@DEPTHS
def test_compiled_covers_repeated_topics_and_claims(cooperative, depth):
    """Never declined, and the pure twin's answer (or its Java failure)."""
    @at_depth(depth, examples=300, derandomize=True)
    @given(group=repeated_groups())
    def check(group):
        try:
            want = _sticky_py.sticky_assign(group, cooperative)
        except JavaAssignorFailure as failure:
            with pytest.raises(JavaAssignorFailure) as compiled_failure:
                _sticky_c.sticky_assign(group, cooperative)
            assert str(compiled_failure.value) == str(failure)
            return
        assert _sticky_c.sticky_assign(group, cooperative) == want

    check()


def _same_outcome(group, cooperative):
    try:
        want = _sticky_py.sticky_assign(group, cooperative)
    except JavaAssignorFailure as failure:  # the compiled twin must fail the same way
        with pytest.raises(JavaAssignorFailure) as compiled_failure:
            _sticky_c.sticky_assign(group, cooperative)
        assert str(compiled_failure.value) == str(failure)
        return
    assert _sticky_c.sticky_assign(group, cooperative) == want


@needs_compiled
@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative"])
@DEPTHS
def test_compiled_equals_pure_larger(cooperative, depth):
    @at_depth(depth, examples=150)
    @given(group=groups(allow_odd=False, max_members=14))
    def check(group):
        _same_outcome(group, cooperative)

    check()


@DEPTHS
def test_eager_result_is_balanced(depth):
    @at_depth(depth, examples=300)
    @given(group=groups(consistent=True, allow_odd=False))
    def check(group):
        result = _sticky_py.sticky_assign(group, False)
        _check_valid(group, result, False)
        assert _java_balanced(group, result)

    check()


@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative"])
@DEPTHS
def test_balanced_complete_ownership_is_kept(cooperative, depth):
    """Stickiness: nothing moves unless balance requires it."""
    @at_depth(depth, examples=300)
    @given(group=groups(consistent=True, allow_odd=False))
    def check(group):
        counts = _valid_counts(group)
        previous = {m.member_id: list(m.owned) for m in group.members}
        owned_all = {tp for v in previous.values() for tp in v}
        assume(owned_all == {(t, p) for t, n in counts.items() for p in range(n)})
        assume(_java_balanced(group, previous))
        assume(all(m.topics for m in group.members))
        result = _sticky_py.sticky_assign(group, cooperative)
        assert {k: set(v) for k, v in result.items()} == {k: set(v) for k, v in previous.items()}

    check()


@DEPTHS
def test_cooperative_never_hands_over_a_held_partition(depth):
    @at_depth(depth, examples=300)
    @given(group=groups(consistent=True, allow_odd=False))
    def check(group):
        result = _sticky_py.sticky_assign(group, True)
        owner = {tp: m.member_id for m in group.members for tp in m.owned}
        for mid, tps in result.items():
            for tp in tps:
                assert owner.get(tp, mid) == mid, f"{tp} given to {mid} while {owner[tp]} still owns it"

    check()


@DEPTHS
def test_cooperative_rounds_complete(depth):
    """Each round withholds partitions still held elsewhere; once their old
    owners revoke them, follow-up rebalances hand everything out.  (Java can
    need more than one follow-up: a withheld partition may move again.)"""
    @at_depth(depth, examples=300)
    @given(group=groups(consistent=True, allow_odd=False))
    def check(group):
        current = group
        for round_ in range(8):
            result = _sticky_py.sticky_assign(current, True)
            gen = max(m.generation for m in current.members) + 1
            members = [MemberInput(member_id=m.member_id, topics=m.topics, owned=tuple(result[m.member_id]),
                                   generation=gen, subscription_generation=gen) for m in current.members]
            current = GroupInput(members=members, partitions_per_topic=group.partitions_per_topic)
            held = sum(len(v) for v in result.values())
            if held == sum(_valid_counts(group).values()):
                _check_valid(current, result, False)
                return
        pytest.fail("cooperative rebalancing did not complete within 8 rounds")

    check()


# -- userData decoding never fails on hostile bytes ------------------------------

from kwire.assignors._userdata import (  # noqa: E402
    decode_cooperative_userdata,
    decode_sticky_userdata,
    encode_sticky_userdata,
)


@DEPTHS
def test_userdata_decoding_is_total(depth):
    @at_depth(depth, examples=500)
    @given(data=st.binary(max_size=64))
    def check(data):
        parts, gen = decode_sticky_userdata(data)
        assert gen is None or isinstance(gen, int)
        assert all(isinstance(t, str) and isinstance(p, int) for t, p in parts)
        g = decode_cooperative_userdata(data)
        assert g is None or isinstance(g, int)

    check()


@DEPTHS
def test_userdata_roundtrip(depth):
    @at_depth(depth, examples=300)
    @given(parts=st.lists(st.tuples(topic_names, st.integers(0, 2**31 - 1)), max_size=8),
           gen=st.one_of(st.none(), st.integers(-2**31, 2**31 - 1)))
    def check(parts, gen):
        grouped = {}
        for t, p in parts:
            grouped.setdefault(t, []).append(p)
        flat = [(t, p) for t, ps in grouped.items() for p in ps]
        assert decode_sticky_userdata(encode_sticky_userdata(parts, gen)) == (flat, gen)

    check()


@st.composite
def rack_groups(draw):
    """Groups with consumer racks and replica racks (rack-aware paths)."""
    base = draw(groups(allow_odd=False, max_members=10))
    racks = ["r1", "r2", "r3"]
    layout = {t: [draw(st.lists(st.sampled_from(racks + [None]), max_size=3)) for _ in range(n)]
              for t, n in base.partitions_per_topic.items()}
    members = [MemberInput(member_id=m.member_id, topics=m.topics, owned=m.owned, generation=m.generation,
                           subscription_generation=m.subscription_generation,
                           rack=draw(st.sampled_from(racks + [None, ""])))
               for m in base.members]
    return GroupInput(members=members, partitions_per_topic=base.partitions_per_topic, partition_racks=layout)


@needs_compiled
@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative"])
@DEPTHS
def test_compiled_equals_pure_with_racks(cooperative, depth):
    @at_depth(depth, examples=200)
    @given(group=rack_groups())
    def check(group):
        _same_outcome(group, cooperative)

    check()


@st.composite
def past_end_groups(draw):
    """Groups where some members claim partitions past their topic's end
    (Java keeps such a claim in the member's list, and the stalled merge walk
    hands out partitions still held), on top of clean, consistent, repeated
    and rack groups: both paths, with and without racks.  (A negative
    partition number is refused by validation, so it is not drawn.)"""
    base = draw(st.one_of(groups(allow_odd=False), groups(consistent=True, allow_odd=False),
                          repeated_groups(), rack_groups()))
    counts = base.partitions_per_topic
    topics = sorted(counts)
    members = list(base.members)
    for k in draw(st.lists(st.integers(0, len(members) - 1), min_size=1, max_size=4)):
        m = members[k]
        past = (draw(st.sampled_from(topics)), 0)
        past = (past[0], counts[past[0]] + draw(st.sampled_from([0, 0, 1, 5, 2**31 - 1 - counts[past[0]]])))
        owned = list(m.owned)
        owned.insert(draw(st.integers(0, len(owned))), past)
        members[k] = MemberInput(member_id=m.member_id, topics=m.topics, owned=tuple(owned),
                                 generation=m.generation, subscription_generation=m.subscription_generation,
                                 rack=m.rack)
    return GroupInput(members=members, partitions_per_topic=counts, partition_racks=base.partition_racks)


@needs_compiled
@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative"])
@DEPTHS
def test_compiled_equals_pure_with_claims_past_the_end(cooperative, depth):
    """Claims past a topic's end stay compiled and match the pure twin:
    Java's answer (or its failure, word for word) and the default's."""
    @at_depth(depth, examples=400, derandomize=True)
    @given(group=past_end_groups())
    def check(group):
        _same_outcome(group, cooperative)
        array_group = ArrayGroup.from_group_input(group)
        answers = [_sticky.sticky_arrays(array_group, cooperative, impl) for impl in ("cython", "python")]
        for got, want in zip(*answers):
            assert np.array_equal(got, want) and got.dtype == want.dtype
        assert _sticky_repair.is_valid(array_group, *answers[0])

    check()


@needs_compiled
@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative"])
@DEPTHS
def test_compiled_strategy_never_runs_the_pure_twin(cooperative, depth):
    """The compiled strategy keeps every input on the compiled path: the
    pure twin's entry point raises if it is handed one.  Racks on both paths
    are covered (rack_groups: unequal subscriptions, replica racks, members
    with and without racks), and so are claims past a topic's end
    (past_end_groups), which were once handed over to the pure twin."""
    @at_depth(depth, examples=200, derandomize=True)
    @given(group=st.one_of(repeated_groups(), groups(allow_odd=False), rack_groups(), past_end_groups()))
    def check(group):
        def handed_over(*args, **kwargs):
            raise AssertionError("the compiled strategy handed a covered input to the pure twin")

        array_group = ArrayGroup.from_group_input(group)
        original = _sticky_py.sticky_arrays
        _sticky_py.sticky_arrays = handed_over
        try:
            try:
                _sticky.sticky_arrays(array_group, cooperative, "cython", java_exact=True)
            except JavaAssignorFailure:
                pass  # Java's own failure, reproduced: not a handover
            # The default never fails a group, racks on the constrained path included (where Java can throw even
            # with every claim dropped, and the default places every partition itself).
            out = _sticky.sticky_arrays(array_group, cooperative, "cython")
        finally:
            _sticky_py.sticky_arrays = original
        assert _sticky_repair.is_valid(array_group, *out)

    check()


# -- the pair the what-if runs ---------------------------------------------------------------


def _same_answer(a, b):
    return a.member_ids == b.member_ids and all(
        np.array_equal(getattr(a, f), getattr(b, f)) and getattr(a, f).dtype == getattr(b, f).dtype
        for f in ("indptr", "topic", "partition"))


@DEPTHS
def test_sticky_pair_is_each_strategy_on_its_own(depth):
    """assign_sticky_pair shares one run of Java's algorithm between the two
    strategies; its answers are assign_arrays' own, in each twin, on
    stale, conflicting and consistent claims alike."""
    @at_depth(depth, examples=400, derandomize=True)
    @given(group=st.one_of(groups(), groups(allow_odd=False), groups(consistent=True)))
    def check(group):
        from kwire.assignors import assign_arrays, assign_sticky_pair

        array_group = ArrayGroup.from_group_input(group)
        for impl in _IMPLS:
            pair = assign_sticky_pair(array_group, implementation=impl)
            for strategy, answer in zip(("sticky", "cooperative-sticky"), pair):
                assert _same_answer(answer, assign_arrays(strategy, array_group, implementation=impl)), (strategy, impl)

    check()


def test_sticky_pair_keeps_typed_errors_and_registered_strategies():
    from kwire.assignors import (assign_arrays, assign_sticky_pair, get_strategy, register_strategy,
                                 unregister_strategy)
    from kwire.errors import AssignmentError

    group = ArrayGroup(["t"], [3], ["m1", "m2"], [0, 1, 2], [0, 0])
    with pytest.raises(AssignmentError):
        assign_sticky_pair(GroupInput(members=[], partitions_per_topic={}))
    with pytest.raises(AssignmentError):
        assign_sticky_pair(group, implementation="fortran")
    empty = ArrayGroup([], [], [], [0], [])
    assert all(len(a) == 0 for a in assign_sticky_pair(empty))
    # a strategy registered over a built-in one is the answer the pair gives
    previous = unregister_strategy("sticky")
    try:
        register_strategy("sticky", lambda g: assign_arrays("roundrobin", g))
        eager, cooperative = assign_sticky_pair(group)
        assert _same_answer(eager, assign_arrays("roundrobin", group))
        assert _same_answer(cooperative, assign_arrays("cooperative-sticky", group))
    finally:
        register_strategy(previous.name, previous.arrays, reference=previous.reference,
                          member_input=previous.member_input)
    assert get_strategy("sticky").arrays is previous.arrays


# -- the pair on many groups at once -----------------------------------------------------------


def _group_rows(answer, members, g):
    """Group ``g``'s rows of an end to end answer, as its own ``(indptr, topic, partition)``."""
    first = int(sum(members[:g]))
    indptr = answer.indptr[first:first + members[g] + 1]
    return indptr - indptr[0], answer.topic[indptr[0]:indptr[-1]], answer.partition[indptr[0]:indptr[-1]]


def _is_pair_of_each(groups_, implementation):
    """assign_sticky_pair_many's rows of each group are assign_sticky_pair's
    answers, or its error; returns the batch's answers."""
    from kwire.assignors import assign_sticky_pair, assign_sticky_pair_many
    from kwire.errors import KwireError

    eager, cooperative, refused = assign_sticky_pair_many(groups_, implementation=implementation)
    members = [g.num_members for g in groups_]
    assert len(eager.indptr) == len(cooperative.indptr) == sum(members) + 1
    for g, group in enumerate(groups_):
        try:
            pair = assign_sticky_pair(group, implementation=implementation)
        except KwireError as exc:
            assert type(refused[g]) is type(exc) and str(refused[g]) == str(exc)
            for answer in (eager, cooperative):
                assert len(_group_rows(answer, members, g)[1]) == 0
            continue
        assert g not in refused
        for got, want in zip((eager, cooperative), pair):
            for a, b in zip(_group_rows(got, members, g), (want.indptr, want.topic, want.partition)):
                assert np.array_equal(a, b) and a.dtype == b.dtype, (g, implementation)
    return eager, cooperative, refused


@DEPTHS
def test_sticky_pair_many_is_the_pair_of_each_group(depth):
    """The what-if's batch entry: on a batch of stale, conflicting,
    consistent, racked, repeated groups and claims past a topic's end (where
    Java throws or answers invalidly the batch hands the group to the
    per-group path), each group's rows are assign_sticky_pair's answers, in
    each twin, and the twins agree."""
    @at_depth(depth, examples=60, derandomize=True)
    @given(batch=st.lists(st.one_of(groups(), groups(allow_odd=False), groups(consistent=True), rack_groups(),
                                    past_end_groups(), repeated_groups()), min_size=1, max_size=12))
    def check(batch):
        array_groups = [ArrayGroup.from_group_input(g) for g in batch]
        answers = [_is_pair_of_each(array_groups, impl) for impl in _IMPLS]
        for got, want in zip(answers[0][:2], answers[-1][:2]):
            assert all(np.array_equal(getattr(got, f), getattr(want, f)) for f in ("indptr", "topic", "partition"))

    check()


def test_sticky_pair_many_odd_batches():
    """Empty batches and groups, a group the kernels refuse (a negative claim,
    built without validation), an invalid entry type, and a strategy
    registered over a built-in one."""
    from kwire.assignors import assign_arrays, assign_sticky_pair_many, register_strategy, unregister_strategy
    from kwire.errors import AssignmentError

    good = ArrayGroup(["t", "u"], [3, 2], ["m1", "m2"], [0, 1, 3], [0, 0, 1], owned_indptr=[0, 1, 1],
                      owned_topic=[0], owned_partition=[2], generation=[1, -1], subscription_generation=[1, -1])
    empty = ArrayGroup([], [], [], [0], [])
    negative = ArrayGroup(["t"], [3], ["m1"], [0, 1], [0], owned_indptr=[0, 1], owned_topic=[0],
                          owned_partition=[-1], generation=[1], subscription_generation=[1], validate=False)
    for impl in _IMPLS:
        eager, cooperative, refused = assign_sticky_pair_many([], implementation=impl)
        assert len(eager) == len(cooperative) == 0 and refused == {}
        eager, cooperative, refused = _is_pair_of_each([good, empty, negative, good], impl)
        assert list(refused) == [2] and isinstance(refused[2], AssignmentError)
    with pytest.raises(AssignmentError):
        assign_sticky_pair_many([good, GroupInput(members=[], partitions_per_topic={})])
    previous = unregister_strategy("sticky")
    try:
        register_strategy("sticky", lambda g: assign_arrays("roundrobin", g))
        eager, _cooperative, _refused = _is_pair_of_each([good, good], None)
        theirs = assign_arrays("roundrobin", good).partition
        assert np.array_equal(eager.partition, np.concatenate([theirs, theirs]))
    finally:
        register_strategy(previous.name, previous.arrays, reference=previous.reference,
                          member_input=previous.member_input)
