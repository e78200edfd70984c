"""The leader's small cooperative-sticky path (kwire/assignors/_sticky_small.py): a small group without racks
is assigned on lists, and must give what the column path gives, byte for byte, in both twins -- on Java's golden
cases and on random groups."""

import random

from kwire import codec
from kwire.assignors import leader_assignments
from kwire.assignors._api import encode_member_assignment
from tests.test_leader_path import (CASES, _golden_subscription_bytes, assert_default_path_is_the_array_paths,
                                    join_response)


def small_cooperative_group(rng):
    """A group the small cooperative-sticky path may take: no racks; mostly one subscription (sometimes
    listed in another order, or with a repeat), sometimes members subscribing to other topics (Java's
    general path); claims that conflict, are stale or past a topic's end; generations old and new (in the
    Subscription field or only in the userData)."""
    topics = rng.sample(["a", "b", "orders", "\u00e9t\u00e9", "\U0001f600", "z"], rng.randint(1, 4))
    counts = {t: rng.randint(0, 9) for t in topics}
    if rng.random() < 0.2:
        counts["unsubscribed"] = 4
    shared = sorted(rng.sample(topics, rng.randint(1, len(topics))))
    subs = []
    differ = rng.random() < 0.4
    for i in range(rng.randint(1, 9)):
        mine = list(shared)
        if differ and rng.random() < 0.5:
            mine = sorted(rng.sample(topics, rng.randint(1, len(topics))))
        if rng.random() < 0.2:
            rng.shuffle(mine)
        if rng.random() < 0.1:
            mine.append(mine[0])
        owned = {}
        for t in mine:
            for p in range(counts[t] + 2):
                if rng.random() < 0.3:
                    owned.setdefault(rng.choice([t, t, "gone"]), []).append(p)
        generation = rng.choice([-1, 1, 2, 3])
        user_data = None
        if rng.random() < 0.5:
            user_data = codec.CooperativeStickyUserData(generation=rng.randint(0, 3)).encode(0)
        sub = codec.Subscription(topics=mine, user_data=user_data, generation_id=generation,
                                 rack_id=rng.choice([None, ""]),
                                 owned_partitions=[codec.SubscriptionTopicPartition(topic=t, partitions=ps)
                                                   for t, ps in owned.items()])
        subs.append((f"member-{rng.randrange(10**6)}-{i}", rng.choice([None, None, f"inst-{i}"]),
                     sub.encode(rng.choice([1, 2, 3]))))
    return subs, counts


def test_small_cooperative_groups_take_the_small_path_with_the_array_paths_answers(monkeypatch):
    """A small ``cooperative-sticky`` group without racks, with no implementation named, is assigned by the
    small path (``_sticky_small``): the array path's bytes (or its error) for Java's golden
    cases and for random groups, in both twins; Java's own bytes wherever Java's answer is a valid one."""
    import kwire.assignors._api as api

    calls = []
    real = api.small_cooperative_sticky

    def counted(*args):
        answer = real(*args)
        if answer is not None:
            calls.append(1)
        return answer

    monkeypatch.setattr(api, "small_cooperative_sticky", counted)
    groups = []
    for case in CASES:
        if case["assignor"] == "cooperative-sticky" and not case.get("partition_racks"):
            subs = [(m["member_id"], m["group_instance_id"], _golden_subscription_bytes(case, m))
                    for m in case["members"]]
            groups.append((subs, case["partitions_per_topic"], case))
    golden = len(groups)
    rng = random.Random("small cooperative")
    groups += [(*small_cooperative_group(rng), None) for _ in range(300)]
    matched_java = 0
    for k, (subs, counts, case) in enumerate(groups):
        got = assert_default_path_is_the_array_paths("cooperative-sticky", subs, counts)
        if case is not None:
            exact = leader_assignments("cooperative-sticky", join_response(subs), counts, java_exact=True)
            expected = []
            for x in exact:
                groups_of = {}
                for t, p in case["expected"][x.member_id]:
                    groups_of.setdefault(t, []).append(p)
                expected.append(encode_member_assignment(list(groups_of.items())))
            assert [x.assignment for x in exact] == expected, case["id"]
            matched_java += got == expected
        if k == golden - 1:
            assert calls, "no golden case took the small path"
    assert matched_java >= golden - 4   # four of Java's answers are invalid, which the default repairs
    assert len(calls) > 200   # answered by the small path (each group once per twin, the Java-exact run aside)
