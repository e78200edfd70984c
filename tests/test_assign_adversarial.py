"""Assignors under random and adversarial groups: a valid assignment or a typed
kwire error, and the same answer from the compiled kernels and the pure twins.

The groups are what a leader can really be handed by a broker and by other
members' Subscriptions: duplicate member ids, empty subscriptions,
zero-partition topics, topics nobody knows, partitions claimed by several
members at equal and different generations, claims on partitions that do
not exist, generations at the int32 limits, and very long member ids.
"""

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import kwire
from kwire.assignors import ArrayGroup
from kwire.assignors._api import group_input
from kwire.assignors._sticky import assign_cooperative_sticky, assign_sticky
from kwire.assignors._sticky_rules import JavaAssignorFailure
from kwire.assignors._userdata import encode_cooperative_userdata, encode_sticky_userdata
from kwire.errors import KwireError

from tests._twins import IMPLS

STRATEGY_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")
INT32 = (-2**31, 2**31 - 1)
GENERATIONS = st.one_of(st.sampled_from([INT32[0], INT32[1], INT32[1] - 1, -1, 0, 1]), st.integers(*INT32))
LONG_ID = "m" * 70_000 + "\u00e9"  # longer than a Kafka string can carry on the wire
TOPIC_NAMES = ["a", "b", "t\u00e9", "\U0001f600", "", "zz"]
UNKNOWN_TOPICS = ["nope", "ghost"]

needs_both = pytest.mark.skipif(len(IMPLS) < 2, reason="needs the compiled kernels")


@st.composite
def groups(draw):
    topics = draw(st.lists(st.sampled_from(TOPIC_NAMES), unique=True, max_size=4))
    ppt = {t: draw(st.one_of(st.just(0), st.integers(1, 6), st.just(40))) for t in topics}
    known = topics + UNKNOWN_TOPICS

    def owned():
        return draw(st.lists(st.tuples(st.sampled_from(known), st.one_of(st.integers(0, 7),
                                                                          st.sampled_from([INT32[1], 45]))),
                             max_size=8))

    n = draw(st.integers(0, 6))
    pool = [f"m{i}" for i in range(n)] + [LONG_ID, ""]
    members = []
    for i in range(n):
        # Duplicates come from drawing ids out of a small pool.
        mid = draw(st.sampled_from(pool)) if draw(st.integers(0, 9)) == 0 else pool[i]
        instance = draw(st.one_of(st.none(), st.sampled_from(["i1", "i2", LONG_ID])))
        subs = draw(st.lists(st.sampled_from(known), max_size=4))
        mine = owned()
        gen = draw(GENERATIONS)
        kind = draw(st.sampled_from(["sticky-v1", "sticky-v0", "coop", "none", "garbage"]))
        if kind == "sticky-v1":
            user_data = encode_sticky_userdata(mine, gen)
        elif kind == "sticky-v0":
            user_data = encode_sticky_userdata(mine)
        elif kind == "coop":
            user_data = encode_cooperative_userdata(gen)
        elif kind == "garbage":
            user_data = draw(st.binary(max_size=12))
        else:
            user_data = None
        owned_partitions = {}
        for t, p in mine:
            owned_partitions.setdefault(t, []).append(p)
        sub = kwire.Subscription(
            topics=subs, user_data=user_data,
            owned_partitions=[kwire.SubscriptionTopicPartition(topic=t, partitions=ps)
                              for t, ps in owned_partitions.items()],
            generation_id=draw(st.one_of(st.just(-1), GENERATIONS)),
            rack_id=draw(st.one_of(st.none(), st.sampled_from(["r1", "r2", ""]))))
        members.append(kwire.GroupMember(mid, instance, sub))
    return members, ppt


def _run(strategy, members, ppt, impl):
    try:
        return ("ok", kwire.assign(strategy, members, ppt, implementation=impl))
    except KwireError as e:
        return ("err", type(e).__name__, str(e))


def _check_valid(strategy, members, ppt, result):
    ids = [m.member_id for m in members]
    assert sorted(result) == sorted(set(ids))
    subscribed = {m.member_id: set(m.subscription.topics) for m in members}
    seen = {}
    for mid, parts in result.items():
        for t, p in parts:
            assert t in ppt and 0 <= p < ppt[t], (mid, t, p)
            # no exception for the sticky strategies: their default repairs
            # Java's answer where Java gives a partition to a non-subscriber
            assert t in subscribed[mid], (mid, t)
            assert (t, p) not in seen, f"{t}-{p} given to {seen[(t, p)]!r} and {mid!r}"
            seen[(t, p)] = mid
    if strategy != "cooperative-sticky":  # cooperative holds back partitions in transit
        wanted = {(t, p) for s in subscribed.values() for t in s if t in ppt for p in range(ppt[t])}
        assert set(seen) == wanted


@needs_both
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
# derandomize: the same 200 groups every run, so a failure reproduces
@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(group=groups())
def test_valid_or_typed_error_and_identical_in_both(strategy, group):
    members, ppt = group
    compiled = _run(strategy, members, ppt, "cython")
    pure = _run(strategy, members, ppt, "python")
    assert compiled == pure
    if compiled[0] == "ok":
        _check_valid(strategy, members, ppt, compiled[1])
    # The only groups a leader may refuse: duplicate member ids, and an empty
    # group for roundrobin (Java's CircularIterator refuses it too).  Every
    # other group has a valid assignment, and the default gives one even
    # where Java's sticky assignors throw.
    refusable = len({m.member_id for m in members}) != len(members) or (strategy == "roundrobin" and not members)
    assert (compiled[0] == "err") == refusable, compiled


@needs_both
@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(group=groups())
def test_java_exact_is_identical_in_both_and_fails_only_as_java(strategy, group):
    """``java_exact=True`` keeps Java's answer, invalid ones included, and
    the twins agree on it; its only errors name the Java failure."""
    members, ppt = group
    assume(len({m.member_id for m in members}) == len(members))
    arrays = ArrayGroup.from_group_input(group_input(strategy, members, ppt))
    run = assign_sticky if strategy == "sticky" else assign_cooperative_sticky
    outcomes = []
    for impl in ("cython", "python"):
        try:
            outcomes.append(("ok", run(arrays, impl, java_exact=True).to_dict()))
        except JavaAssignorFailure as e:
            assert "(Java: " in str(e)
            outcomes.append(("err", str(e)))
    assert outcomes[0] == outcomes[1]


@needs_both
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_partition_claimed_by_everyone_at_the_int32_generation_limits(strategy):
    # Every member claims every partition; generations sit at both int32 ends
    # and tie between members, so owner resolution sees every comparison.
    ppt = {"a": 5, "b": 0}
    claims = [("a", p) for p in range(6)] + [("b", 0), ("ghost", 1)]
    members = []
    for i, gen in enumerate([INT32[1], INT32[1], INT32[0], -1, 0, INT32[1] - 1]):
        owned = [kwire.SubscriptionTopicPartition(topic="a", partitions=list(range(6))),
                 kwire.SubscriptionTopicPartition(topic="b", partitions=[0]),
                 kwire.SubscriptionTopicPartition(topic="ghost", partitions=[1])]
        sub = kwire.Subscription(topics=["a", "b", "ghost"], owned_partitions=owned, generation_id=gen,
                                 user_data=encode_sticky_userdata(claims, gen))
        members.append(kwire.GroupMember(f"m{i}", None, sub))
    compiled = _run(strategy, members, ppt, "cython")
    assert compiled == _run(strategy, members, ppt, "python")
    assert compiled[0] == "ok", compiled
    _check_valid(strategy, members, ppt, compiled[1])


@needs_both
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_duplicate_member_ids_are_a_typed_error(strategy):
    sub = kwire.Subscription(topics=["a"])
    members = [kwire.GroupMember("m", None, sub), kwire.GroupMember("m", None, sub)]
    for impl in IMPLS:
        with pytest.raises(kwire.KwireError):
            kwire.assign(strategy, members, {"a": 3}, implementation=impl)


@needs_both
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_long_ids_empty_subscriptions_and_empty_topics(strategy):
    members = [kwire.GroupMember(LONG_ID, LONG_ID, kwire.Subscription(topics=["a", "empty"])),
               kwire.GroupMember("", None, kwire.Subscription(topics=[])),
               kwire.GroupMember("x", None, kwire.Subscription(topics=["empty", "unknown"]))]
    ppt = {"a": 3, "empty": 0}
    compiled = _run(strategy, members, ppt, "cython")
    assert compiled == _run(strategy, members, ppt, "python")
    assert compiled[0] == "ok", compiled
    _check_valid(strategy, members, ppt, compiled[1])
    assert compiled[1][""] == [] and compiled[1]["x"] == []


@needs_both
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("lonely", [True, False])
def test_owned_partition_beyond_the_partition_count_constrained(strategy, impl, lonely):
    """A claim on a partition the topic no longer has (recreated smaller) is
    ignored.  Java keeps it and throws or hands partitions out twice: the one
    deliberate departure from Java (kwire.assignors._api._sanitized)."""
    def member(mid, claims):
        owned = [kwire.SubscriptionTopicPartition(topic="t", partitions=[p for _t, p in claims])] if claims else []
        return kwire.GroupMember(mid, None, kwire.Subscription(
            topics=["t"] if claims or lonely else [], owned_partitions=owned, generation_id=3,
            user_data=encode_sticky_userdata(claims, 3)))

    members = [member("m0", [("t", 1)])] + ([] if lonely else [member("m1", [])])
    result = kwire.assign(strategy, members, {"t": 1}, implementation=impl)
    assert sorted(p for parts in result.values() for p in parts) == [("t", 0)]


@needs_both
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_owned_partition_beyond_the_partition_count_general(strategy, impl):
    """Same in the general path, where Java hands the member t-0 twice and the missing b-1."""
    claims = [("t", 0), ("b", 1)]
    owner = kwire.GroupMember("m3", None, kwire.Subscription(
        topics=["t", "b"], user_data=encode_sticky_userdata(claims, 5), generation_id=5,
        owned_partitions=[kwire.SubscriptionTopicPartition(topic=t, partitions=[p]) for t, p in claims]))
    other = kwire.GroupMember("m2", None, kwire.Subscription(topics=["a"]))
    result = kwire.assign(strategy, [other, owner], {"a": 0, "t": 1, "b": 1}, implementation=impl)
    assert sorted(result["m3"]) == [("b", 0), ("t", 0)]


@needs_both
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_topic_listed_twice_is_kept_once(strategy, impl):
    """Found by the adversarial search: with ['a', 'a'] Java's sticky path gave m2
    partitions of 'b', which it does not subscribe to; kwire keeps each topic once."""
    ud = encode_sticky_userdata([], -1)
    members = [kwire.GroupMember("m0", None, kwire.Subscription(topics=[], user_data=ud)),
               kwire.GroupMember("m1", None, kwire.Subscription(topics=["a", "b", "nope"], user_data=ud)),
               kwire.GroupMember("m2", None, kwire.Subscription(topics=["a", "a", "a"], user_data=ud))]
    result = kwire.assign(strategy, members, {"a": 0, "b": 40}, implementation=impl)
    assert result["m2"] == [] and len(result["m1"]) == 40


def _entry(topic: bytes, partitions) -> bytes:
    return (len(topic).to_bytes(2, "big") + topic + len(partitions).to_bytes(4, "big")
            + b"".join(p.to_bytes(4, "big", signed=True) for p in partitions))


@pytest.mark.parametrize("generation", [None, 7])
def test_sticky_userdata_read_like_javas_struct_reader(generation):
    """Java's Struct reader, unlike the codec, ignores bytes after the message and
    decodes a topic that is not UTF-8 with replacement characters; a peer's
    userData is read the same way, whatever sits around such a topic (entries
    longer than the reader's first window included)."""
    from kwire.assignors._userdata import decode_sticky_userdata

    entries = [(b"a", [0]), (b"\xff\xc3(", list(range(40))), (b"b" * 90 + b"\xed\xa0\x80", [2**31 - 1, -1]), (b"c", [])]
    body = len(entries).to_bytes(4, "big") + b"".join(_entry(t, ps) for t, ps in entries)
    if generation is not None:
        body += generation.to_bytes(4, "big")
    expected = [(t.decode("utf-8", "replace"), p) for t, ps in entries for p in ps]
    assert decode_sticky_userdata(body) == (expected, generation)
    # Two trailing bytes are not a generation: V1 fails and V0 reads the entries.
    assert decode_sticky_userdata(body + b"\x00\x01") == (expected, generation)
    assert decode_sticky_userdata(body[:-1]) == ((expected, None) if generation is not None else ([], -1))
    # A count one higher than the entries present makes the whole blob unreadable.
    assert decode_sticky_userdata((len(entries) + 1).to_bytes(4, "big") + body[4:]) == ([], -1)
