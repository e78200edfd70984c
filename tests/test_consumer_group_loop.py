"""ConsumerProtocolMember clients against ConsumerGroupCoordinator in one sans-IO loop (tests/consumer_group_loop.py):
joins, leaves, crashes, static restarts and subscription changes, with the protocol's two guarantees checked
after every response (no partition held by two members; no member epoch ahead of the target epoch)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .consumer_group_loop import ConsumerLoop
from kwire.group import MemberFenced, PartitionsRevoked

FAST = {"group.consumer.assignment.interval.ms": 0, "group.consumer.min.session.timeout.ms": 1000,
        "group.consumer.session.timeout.ms": 3000, "group.consumer.min.heartbeat.interval.ms": 100,
        "group.consumer.heartbeat.interval.ms": 500}


def covered(loop, topics):
    return sorted(loop.held) == sorted((t, p) for t, n in topics.items() for p in range(n))


def stable_loop(topics, subscription, members=3):
    """A loop whose members c0, c1, ... all subscribe to ``subscription``, run until the group is stable."""
    loop = ConsumerLoop(topics, FAST)
    for i in range(members):
        loop.add(f"c{i}", list(subscription))
    loop.run(loop.stable)
    return loop


def test_three_members_reach_disjoint_assignments_covering_everything():
    topics = {"a": 7, "b": 5}
    loop = stable_loop(topics, ["a", "b"])
    assert covered(loop, topics)
    assert sorted(len(m.assignment) for m in loop.members.values()) == [4, 4, 4]


def test_a_member_that_leaves_hands_its_partitions_over():
    topics = {"a": 6}
    loop = stable_loop(topics, ["a"])
    loop.handle("c0", loop.members["c0"].leave(loop.now))
    del loop.members["c0"]
    loop.run(lambda: loop.settled() and covered(loop, topics))
    assert sorted(len(m.assignment) for m in loop.members.values()) == [3, 3]


def test_a_crashed_member_is_dropped_after_the_session_timeout():
    topics = {"a": 6}
    loop = stable_loop(topics, ["a"])
    crashed_id = loop.members["c1"].member_id
    loop.crash("c1")
    start = loop.now
    loop.run(lambda: loop.settled() and covered(loop, topics))
    assert crashed_id not in loop.group().members and loop.now - start >= 2500


def test_a_static_member_restarting_in_time_gets_its_partitions_back_and_nobody_revokes():
    topics = {"a": 6}
    loop = ConsumerLoop(topics, FAST)
    loop.add("s0", ["a"], instance_id="i-0")
    loop.add("s1", ["a"], instance_id="i-1")
    loop.run(loop.stable)
    before = loop.members["s0"].assignment
    epoch = loop.group().group_epoch
    loop.handle("s0", loop.members["s0"].leave(loop.now))    # -2: a temporary leave
    del loop.members["s0"]
    loop.step(200)
    mark = len(loop.events)
    loop.add("s0", ["a"], instance_id="i-0")                   # a new process: a new member id
    loop.run(loop.stable)
    assert loop.members["s0"].assignment == before and loop.group().group_epoch == epoch
    assert not [e for who, e in loop.events[mark:] if who == "s1" and isinstance(e, PartitionsRevoked)]


def test_a_subscription_change_moves_partitions_between_members():
    topics = {"a": 4, "b": 4}
    loop = stable_loop(topics, ["a"], members=2)
    loop.members["c1"].subscribe(["a", "b"])
    loop.run(lambda: loop.settled() and covered(loop, topics))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["join", "leave", "crash", "subscribe", "lose", "wait"]),
                          st.integers(0, 5), st.sampled_from([("a",), ("b",), ("a", "b")])),
                min_size=1, max_size=14),
       st.sampled_from([0, 300]))
def test_random_joins_leaves_crashes_and_subscription_changes_keep_the_guarantees(ops, interval):
    """Clients c0, c2, c4 are static (a leave is temporary, -2, and a later join is a restart with a new member
    id); "lose" drops the answer to the client's next heartbeat after the coordinator processed it."""
    topics = {"a": 5, "b": 3}
    loop = ConsumerLoop(topics, {**FAST, "group.consumer.assignment.interval.ms": interval})
    for op, who, subscription in ops:
        name = f"c{who}"
        present = name in loop.members
        static = {"instance_id": f"i-{who}"} if who % 2 == 0 else {}
        if op == "join" and not present:
            loop.add(name, list(subscription), **static)
        elif op == "leave" and present:
            loop.handle(name, loop.members[name].leave(loop.now))
            del loop.members[name]
        elif op == "crash" and present:
            loop.crash(name)
        elif op == "subscribe" and present:
            loop.members[name].subscribe(list(subscription))
        elif op == "lose" and present:
            loop.now += 1000
            loop.handle(name, loop.members[name].poll(loop.now), lose=True)
        for _ in range(3):
            loop.step(150)   # every step checks both guarantees after every response
    # With the churn over, everyone alive converges (crashed members expire with their session).
    if loop.members:
        loop.run(loop.settled, max_ms=60_000)
        wanted = {t for m in loop.members.values() for t in m.subscription}
        assert covered(loop, {t: n for t, n in topics.items() if t in wanted})
    fenced = [e for e in loop.coordinator.tick(loop.now) if isinstance(e, MemberFenced)]
    assert all(e.reason in ("leave", "session-timeout", "rebalance-timeout") for e in fenced)
