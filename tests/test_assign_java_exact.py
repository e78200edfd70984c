"""``java_exact`` through the member-level API: Java's answer on request, a valid one by default.

The departure cases (tests/data/golden/kwire-departures.jsonl) are inputs where
Java's sticky assignors answer with an invalid assignment; on those, the
default and ``java_exact=True`` must differ exactly as the file says, through
``kwire.assign`` and ``kwire.leader_assignments`` alike."""

import json

import numpy as np
import pytest

import kwire
from kwire.assignors import assign_arrays
from kwire.assignors._arrays import ArrayGroup
from kwire.errors import AssignmentError
from tests._data import DATA
from tests._twins import assignor_implementations

# Cases a member-level caller can send as they are: no owned claims (those go through the
# strategies' userData rules and are covered at array level by tests/test_assign_sticky.py), and no topic
# listed twice (the member level keeps a subscription's topics once before any strategy runs, java_exact or
# not, as Java's own ConsumerProtocol writes them from a set).
CASES = [c for c in map(json.loads, (DATA / "golden" / "kwire-departures.jsonl").read_text().splitlines())
         if not any(m["owned"] for m in c["members"]) and "error" not in c["java"]
         and c["kind"] != "topic-listed-twice"]


def _members(case):
    return [kwire.GroupMember(m["member_id"], None, kwire.Subscription(topics=m["topics"])) for m in case["members"]]


def _plain(result):
    return {mid: [list(tp) for tp in parts] for mid, parts in result.items()}


@pytest.mark.parametrize("implementation", assignor_implementations())
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_assign_default_is_valid_and_java_exact_is_java(case, implementation):
    members, counts = _members(case), case["partitions_per_topic"]
    strategy = case["assignor"]
    assert _plain(kwire.assign(strategy, members, counts, implementation=implementation)) == case["kwire"]
    assert _plain(kwire.assign(strategy, members, counts, implementation=implementation,
                               java_exact=True)) == case["java"]


@pytest.mark.parametrize("case", CASES[:1], ids=[c["id"] for c in CASES[:1]])
def test_leader_assignments_passes_java_exact(case):
    members = [kwire.JoinGroupResponseMember(member_id=m["member_id"],
                                             metadata=kwire.Subscription(topics=m["topics"]).encode(3))
               for m in case["members"]]
    response = kwire.JoinGroupResponse(protocol_name=case["assignor"], leader=members[0].member_id, members=members)

    def decoded(java_exact):
        out = kwire.leader_assignments(case["assignor"], response, case["partitions_per_topic"], java_exact=java_exact)
        return {a.member_id: [[tp.topic, p] for tp in kwire.Assignment.decode(a.assignment).assigned_partitions
                              for p in tp.partitions] for a in out}

    def as_sets(d):
        return {k: sorted(map(tuple, v)) for k, v in d.items()}

    assert as_sets(decoded(False)) == as_sets(case["kwire"])
    assert as_sets(decoded(True)) == as_sets(case["java"])


def test_java_exact_is_Java_for_strategies_without_a_departure():
    """range and roundrobin are Java's by construction: the option changes nothing."""
    members = [kwire.GroupMember(f"m{i}", None, kwire.Subscription(topics=["t"])) for i in range(3)]
    for strategy in ("range", "roundrobin"):
        assert kwire.assign(strategy, members, {"t": 7}, java_exact=True) == kwire.assign(strategy, members, {"t": 7})


def test_java_exact_must_be_a_bool():
    group = ArrayGroup(["t"], [1], ["m"], [0, 1], [0])
    with pytest.raises(AssignmentError):
        assign_arrays("sticky", group, java_exact="yes")


def test_is_valid_agrees_with_invalid_entries():
    """The sticky default's fast validity check and the repair's entry-by-entry one are the same rule,
    in each twin of the kernel the check runs (the compiled one whenever it is built)."""
    import numpy as np

    from kwire.assignors._arrays import load_kernels
    from kwire.assignors._sticky_repair import invalid_entries, is_valid

    twins = [load_kernels("rangerr", impl) for impl in assignor_implementations()]
    rng = np.random.default_rng(7)
    verdicts = set()
    for _ in range(2000):
        n_members, n_topics = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        counts = rng.integers(0, 4, n_topics).astype(np.int32)
        subs = [sorted(set(rng.integers(0, n_topics, rng.integers(0, n_topics + 1)).tolist())) for _ in range(n_members)]
        sub_indptr = np.cumsum([0] + [len(s) for s in subs]).astype(np.int64)
        sub_topics = np.array([t for s in subs for t in s], dtype=np.int32)
        group = ArrayGroup([f"t{i}" for i in range(n_topics)], counts, [f"m{i}" for i in range(n_members)],
                           sub_indptr, sub_topics)
        sizes = rng.integers(0, 4, n_members)
        indptr = np.cumsum(np.concatenate([[0], sizes])).astype(np.int64)
        topic = rng.integers(0, n_topics, int(indptr[-1])).astype(np.int32)
        number = rng.integers(-1, 4, int(indptr[-1])).astype(np.int32)
        verdict = is_valid(group, indptr, topic, number)
        assert verdict == (not invalid_entries(group, indptr, topic, number).any())
        for twin in twins:
            assert twin.assignment_is_valid(counts, group.topic_offset, sub_indptr, sub_topics, indptr, topic,
                                            number) == verdict, twin.__name__
        verdicts.add(verdict)
    assert verdicts == {True, False}


def _random_claims_group(rng):
    """A small group whose claims break every rule a consistent group keeps: partitions past a topic's
    end, listed twice, of topics the member left, from members of an older generation."""
    n_members, n_topics = int(rng.integers(1, 6)), int(rng.integers(1, 5))
    counts = rng.integers(0, 4, n_topics).astype(np.int32)
    subs = [sorted(set(rng.integers(0, n_topics, rng.integers(0, n_topics + 1)).tolist())) for _ in range(n_members)]
    sizes = rng.integers(0, 5, n_members)
    owned_topic = rng.integers(0, n_topics, int(sizes.sum())).astype(np.int32)
    owned_partition = rng.integers(0, 5, int(sizes.sum())).astype(np.int32)
    return ArrayGroup([f"t{i}" for i in range(n_topics)], counts, [f"m{i}" for i in range(n_members)],
                      np.cumsum([0] + [len(s) for s in subs]), np.array([t for s in subs for t in s], dtype=np.int32),
                      owned_indptr=np.cumsum(np.concatenate([[0], sizes])), owned_topic=owned_topic,
                      owned_partition=owned_partition, generation=rng.integers(1, 3, n_members),
                      subscription_generation=[2] * n_members), subs


def _member_entries(indptr, *columns):
    for member in range(len(indptr) - 1):
        for entry in range(int(indptr[member]), int(indptr[member + 1])):
            yield (entry, member) + tuple(int(column[entry]) for column in columns)


def test_repair_steps_are_the_rule_in_both_twins():
    """The sticky default's step 3 (claims a consistent group could send) and step 4 (withholding
    partitions still to be revoked), each twin of the kernel held to the rule stated entry by entry."""
    from kwire.assignors._arrays import load_kernels

    twins = [load_kernels("rangerr", impl) for impl in assignor_implementations()]
    rng = np.random.default_rng(11)
    seen = set()
    for _ in range(1500):
        group, subs = _random_claims_group(rng)
        claims = (group.owned_indptr, group.owned_topic, group.owned_partition)
        newest = int(group.generation.max())
        expected_keep, listed = [], set()
        for _entry, member, t, p in _member_entries(*claims):
            ok = (group.generation[member] == newest and t in subs[member] and p < group.partition_counts[t]
                  and (member, t, p) not in listed)
            listed.add((member, t, p))
            expected_keep.append(bool(ok))
        seen.update(expected_keep)
        # a valid answer: each existing partition of a subscribed topic to one of its subscribers, or to none
        answer = [[] for _ in subs]
        for t, count in enumerate(group.partition_counts.tolist()):
            takers = [m for m, s in enumerate(subs) if t in s]
            for p in range(count):
                if takers and rng.random() < 0.8:
                    answer[int(rng.choice(takers))].append((t, p))
        indptr = np.cumsum([0] + [len(a) for a in answer]).astype(np.int64)
        topic = np.array([t for a in answer for t, _ in a], dtype=np.int32)
        number = np.array([p for a in answer for _, p in a], dtype=np.int32)
        holder = {(t, p): m for _e, m, t, p in _member_entries(indptr, topic, number)}
        revoked, owner_kept = set(), set()
        for _e, member, t, p in _member_entries(*claims):
            if p < group.partition_counts[t]:
                (owner_kept if holder.get((t, p)) == member else revoked).add((t, p))
        expected = [[] for _ in subs]
        for _e, member, t, p in _member_entries(indptr, topic, number):
            if (t, p) in owner_kept or (t, p) not in revoked:
                expected[member].append((t, p))
        for twin in twins:
            keep = twin.consistent_claims(group.partition_counts, group.topic_offset, group.generation,
                                          group.sub_indptr, group.sub_topics, *claims)
            assert keep.dtype == bool and keep.tolist() == expected_keep, twin.__name__
            out_indptr, out_topic, out_number = twin.transfers_withheld(
                group.partition_counts, group.topic_offset, *claims, indptr, topic, number)
            got = [list(zip(out_topic[a:b].tolist(), out_number[a:b].tolist()))
                   for a, b in zip(out_indptr[:-1].tolist(), out_indptr[1:].tolist())]
            assert got == expected, twin.__name__
    assert seen == {True, False}


@pytest.mark.parametrize("bad", [(0, -1), (-1, 0), (3, 0), (0, 2)], ids=["negative partition", "negative topic",
                                                                           "no such topic", "past the end"])
def test_repair_steps_refuse_entries_out_of_range_alike(bad):
    """Both twins raise the same IndexError where an entry names no partition (the twin's NumPy indexing
    would wrap, the compiled loop read past its arrays); a claim past its topic's end is a claim, not an error."""
    from kwire.assignors._arrays import load_kernels

    counts, offset = np.array([2, 1], np.int32), np.array([0, 2, 3], np.int64)
    one = np.array([0, 1], np.int64)
    t, p = np.array([bad[0]], np.int32), np.array([bad[1]], np.int32)
    messages = set()
    for twin in (load_kernels("rangerr", impl) for impl in assignor_implementations()):
        with pytest.raises(IndexError) as answer_error:
            twin.transfers_withheld(counts, offset, one, np.array([0], np.int32), np.array([0], np.int32), one, t, p)
        messages.add(str(answer_error.value))
        if bad == (0, 2):
            assert twin.consistent_claims(counts, offset, np.array([1], np.int32), one, np.array([0], np.int32),
                                          one, t, p).tolist() == [False]
            continue
        with pytest.raises(IndexError) as claim_error:
            twin.consistent_claims(counts, offset, np.array([1], np.int32), one, np.array([0], np.int32), one, t, p)
        messages.add(str(claim_error.value))
    assert len(messages) == 1  # the twins word it alike, and a claim alike to an answer's entry


@pytest.mark.parametrize("implementation", assignor_implementations())
@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_default_answers_where_java_fails_with_no_claim_at_all(strategy, implementation):
    """A fresh group (no claims) with consumer racks on the constrained path, where Java's rack-aware
    constrained path cannot reach its quota and throws: the default still assigns every partition, each once,
    only to subscribers."""
    from kwire.assignors._sticky_rules import JavaAssignorFailure

    racks = ["r2", "r0", None, "r1", "r1"]
    members = [kwire.GroupMember(f"m{i}", None, kwire.Subscription(topics=["t0", "t1", "t2"], rack_id=rack))
               for i, rack in enumerate(racks)]
    counts = {"t0": 3, "t1": 5, "t2": 3}
    replica_racks = {"t0": [["r0", "r1"], ["r2"], ["r2"]],
                     "t1": [["r1"], ["r0", "r1"], ["r1", "r2"], ["r0"], ["r2"]],
                     "t2": [["r0"], ["r0", "r2"], ["r0"]]}
    with pytest.raises(JavaAssignorFailure):
        kwire.assign("sticky", members, counts, partition_racks=replica_racks, implementation=implementation,
                     java_exact=True)
    got = kwire.assign(strategy, members, counts, partition_racks=replica_racks, implementation=implementation)
    every = sorted(tp for parts in got.values() for tp in parts)
    assert every == sorted((t, p) for t, n in counts.items() for p in range(n))
    assert max(map(len, got.values())) - min(map(len, got.values())) <= 1
