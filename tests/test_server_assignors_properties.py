"""Kafka's invariants of the server-side assignors on random groups and random
chains, and the two twins agreeing on every group (valid or not).

Groups mix shared and per-member subscription lists, static members, member
ids whose ``String.hashCode`` collide (``"Aa"``/``"BB"``), topic ids whose
``Uuid.hashCode`` collide, empty topics, stale topics and, for the twin
check, overlapping and out-of-range current assignments.  Chains feed each
output back as the next current assignment while members join and leave,
subscriptions change and topics grow.
"""

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire import AssignmentError
from kwire.assignors import ServerMember, TopicMetadata, assign_server
from tests._twins import assignor_implementations

IMPLEMENTATIONS = assignor_implementations()
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW_SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Member ids of equal String.hashCode: "Aa" and "BB" hash alike, and so does any concatenation of them.
_COLLIDING = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=4)]


def _topic_ids(rng, count):
    ids = []
    collide = rng.random() < 0.3
    x = rng.getrandbits(64)
    for _ in range(count):
        msb = rng.getrandbits(64)
        lsb = msb ^ x if collide else rng.getrandbits(64)     # equal Uuid.hashCode when msb ^ lsb is fixed
        ids.append(msb.to_bytes(8, "big") + lsb.to_bytes(8, "big"))
    return ids


def random_group(seed, max_members=12, max_topics=7, max_partitions=24):
    """``(members, topics, homogeneous)``: a valid group (each partition held by
    at most one member, only of a topic it may hold)."""
    rng = random.Random(seed)
    t_count = rng.randint(1, max_topics)
    ids = _topic_ids(rng, t_count + 1)
    topics = {ids[t]: TopicMetadata(name=f"t{t}", partitions=rng.randint(0, max_partitions)) for t in range(t_count)}
    stale = ids[t_count]                                   # a deleted topic some members still hold
    m_count = rng.randint(1, max_members)
    pool = _COLLIDING if rng.random() < 0.3 else [f"m-{rng.getrandbits(20):x}" for _ in range(4 * m_count)]
    member_ids = rng.sample(pool, min(m_count, len(pool)))
    homogeneous = rng.random() < 0.5
    shared = [t for t in ids[:t_count] if rng.random() < 0.7] or [ids[0]]
    members = {}
    for mid in member_ids:
        subs = shared if homogeneous else [t for t in ids[:t_count] if rng.random() < 0.5]
        instance = f"i-{rng.randint(0, 5)}" if rng.random() < 0.2 else None
        members[mid] = ServerMember(subscribed_topic_ids=subs, assignment={}, instance_id=instance)
    owners = list(members)
    for tid, meta in topics.items():
        for p in range(meta.partitions):
            if rng.random() < 0.5:
                owner = members[rng.choice(owners)]
                owner.assignment.setdefault(tid, []).append(p)
    if rng.random() < 0.3:
        members[rng.choice(owners)].assignment[stale] = [0, 1]
    return members, topics, homogeneous


def _outcome(assignor, members, topics, implementation):
    try:
        return assign_server(assignor, members, topics, implementation=implementation)
    except AssignmentError as exc:
        return str(exc)


def check_invariants(assignor, members, topics, result, previous=None):
    subscribed = {mid: set(m.subscribed_topic_ids) for mid, m in members.items()}
    wanted = {(t, p) for subs in subscribed.values() for t in subs for p in range(topics[t].partitions)}
    held = [(mid, t, p) for mid, a in result.items() for t, ps in a.items() for p in ps]
    if not wanted:
        assert not held
        return
    # every subscribed partition assigned exactly once, and only to a subscriber
    assert sorted((t, p) for _, t, p in held) == sorted(wanted)
    assert all(t in subscribed[mid] for mid, t, _ in held)
    assert set(result) == set(members)
    load = {mid: sum(len(ps) for ps in a.values()) for mid, a in result.items()}
    homogeneous = len({frozenset(s) for s in subscribed.values()}) == 1
    if assignor == "range":
        for t in {t for s in subscribed.values() for t in s}:
            counts = [len(result[mid].get(t, ())) for mid in members if t in subscribed[mid]]
            assert max(counts) - min(counts) <= 1
            for mid in members:
                ps = result[mid].get(t, [])
                assert ps == list(range(ps[0], ps[0] + len(ps))) if ps else True
        return
    if homogeneous:
        assert max(load.values()) - min(load.values()) <= 1
    else:
        # balanced as the heterogeneous builder defines it: no partition of a
        # topic sits with a subscriber 2 or more above another subscriber of it
        for t in {t for s in subscribed.values() for t in s}:
            subs = [mid for mid in members if t in subscribed[mid]]
            low = min(load[mid] for mid in subs)
            for mid in subs:
                if result[mid].get(t):
                    assert load[mid] <= low + 1, (t, mid, load)
    if previous is not None:
        # a partition moves only when balance requires it: given its own
        # answer back, the assignor moves nothing; and in a homogeneous group
        # every member keeps its previous partitions up to the smallest quota
        total = len(wanted)
        for mid, m in members.items():
            before = {(t, p) for t, ps in m.assignment.items() if t in subscribed[mid] and t in topics
                      for p in ps if p < topics[t].partitions}
            after = {(t, p) for t, ps in result[mid].items() for p in ps}
            if homogeneous:
                assert len(before & after) >= min(len(before), total // len(members))


@pytest.mark.parametrize("assignor", ["uniform", "range"])
@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_random_groups_hold_the_invariants_and_the_twins_agree(assignor, seed):
    members, topics, _ = random_group(seed)
    outcomes = [_outcome(assignor, members, topics, impl) for impl in IMPLEMENTATIONS]
    assert all(o == outcomes[0] for o in outcomes)
    assert not isinstance(outcomes[0], str), outcomes[0]
    check_invariants(assignor, members, topics, outcomes[0], previous=True)
    if assignor == "uniform":
        again = {mid: ServerMember(m.subscribed_topic_ids, outcomes[0].get(mid, {}), m.instance_id)
                 for mid, m in members.items()}
        assert assign_server(assignor, again, topics) == outcomes[0]


def _mutate(rng, members, topics, result):
    """The next step of a chain: the output becomes the current assignment, then a change."""
    nxt = {mid: ServerMember(m.subscribed_topic_ids, {t: list(ps) for t, ps in result.get(mid, {}).items()},
                             m.instance_id) for mid, m in members.items()}
    ids = list(topics)
    change = rng.choice(["join", "leave", "subscribe", "grow", "none"])
    if change == "join":
        donor = rng.choice(list(nxt.values()))
        nxt[f"j-{rng.getrandbits(24):x}"] = ServerMember(donor.subscribed_topic_ids, {})
    elif change == "leave" and len(nxt) > 1:
        del nxt[rng.choice(list(nxt))]
    elif change == "subscribe":
        mid = rng.choice(list(nxt))
        nxt[mid].subscribed_topic_ids = [t for t in ids if rng.random() < 0.6] or [ids[0]]
    elif change == "grow":
        t = rng.choice(ids)
        topics = dict(topics)
        topics[t] = TopicMetadata(topics[t].name, topics[t].partitions + rng.randint(1, 5))
    return nxt, topics


@pytest.mark.parametrize("assignor", ["uniform", "range"])
@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_random_chains(assignor, seed):
    rng = random.Random(seed)
    members, topics, _ = random_group(seed)
    for _ in range(4):
        outcomes = [_outcome(assignor, members, topics, impl) for impl in IMPLEMENTATIONS]
        assert all(o == outcomes[0] for o in outcomes)
        check_invariants(assignor, members, topics, outcomes[0])
        # both twins hand back the same members' own dicts (those already equal to their target)
        assert len({frozenset(_returned_as_given(members, o)) for o in outcomes}) == 1
        members, topics = _mutate(rng, members, topics, outcomes[0])


def _returned_as_given(members, result):
    given = {mid for mid, a in result.items() if a is members[mid].assignment}
    for mid in given:
        assert all(type(ps) is list and ps == sorted(ps) for ps in result[mid].values())
    return given


def _hostile(seed):
    """A group a broker should never build: overlapping owners, partitions out
    of range or negative, duplicate entries in a list, unknown subscribed ids."""
    rng = random.Random(seed)
    members, topics, _ = random_group(seed, max_partitions=40)
    ids = list(topics)
    for m in members.values():
        for _ in range(rng.randint(0, 3)):
            t = rng.choice(ids)
            m.assignment.setdefault(t, []).append(rng.choice([-1, 0, 1, 2, 40, 2 ** 31 - 1, 64, 16]))
    if rng.random() < 0.2:
        next(iter(members.values())).subscribed_topic_ids = [bytes(range(16))]
    return members, topics


@pytest.mark.parametrize("assignor", ["uniform", "range"])
@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_twins_agree_on_hostile_groups(assignor, seed):
    members, topics = _hostile(seed)
    outcomes = [_outcome(assignor, members, topics, impl) for impl in IMPLEMENTATIONS]
    assert all(o == outcomes[0] for o in outcomes)


@pytest.mark.slow
@pytest.mark.parametrize("assignor", ["uniform", "range"])
@SLOW_SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_larger_random_groups(assignor, seed):
    members, topics, _ = random_group(seed, max_members=80, max_topics=20, max_partitions=300)
    outcomes = [_outcome(assignor, members, topics, impl) for impl in IMPLEMENTATIONS]
    assert all(o == outcomes[0] for o in outcomes)
    check_invariants(assignor, members, topics, outcomes[0], previous=True)
    hostile = _hostile(seed)
    outcomes = [_outcome(assignor, *hostile, impl) for impl in IMPLEMENTATIONS]
    assert all(o == outcomes[0] for o in outcomes)
