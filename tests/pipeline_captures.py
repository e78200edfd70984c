"""Captures the pipeline tests build, with their known history: a scripted
range group and a cooperative-sticky one (:func:`scripted_capture`), groups
whose members fetched Metadata, and Metadata frames, right and wrong."""

import random

import kwire
from kwire.codec import ErrorCode
from kwire.pipeline._synth import BROKER_TO_CLIENT, CLIENT_TO_BROKER, MS, SECOND, Frames, GroupSim

T0 = 1_767_225_600 * SECOND
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.REBALANCE_IN_PROGRESS

def scripted_capture(path, extra=None):
    """One range group whose history is known generation by generation:

    1. A, B, C join (initial)         4. C crashes (session timeout)
    2. D joins                        5. A adds topic "u" (subscription change)
    3. B leaves (LeaveGroup)

    Plus a cooperative-sticky group with a revocation follow-up; ``extra``
    may add frames to the same :class:`Frames`.  Returns the simulators
    (their ``history`` is the ground truth)."""
    out = Frames()
    sim = GroupSim(out, "orders-app", "range", {"t": 6, "u": 2}, profile="java3", rng=random.Random(7),
                   session_timeout_ms=10000, heartbeat_interval_ms=3000)
    joiners = [sim.connect(T0 + i * SECOND, ["t"]) for i in range(3)]
    a, b, c = (m for m, _ in joiners)
    t = sim.rebalance(max(r for _, r in joiners), joiners=joiners)
    sim.heartbeats(t, t + 20 * SECOND)
    t += 20 * SECOND
    d, ready = sim.connect(t, ["t"])
    t = sim.rebalance(ready, joiners=[(d, ready)])
    sim.heartbeats(t, t + 20 * SECOND)
    t += 20 * SECOND
    sim.leave(b, t)
    t = sim.rebalance(t + 2 * MS)
    sim.heartbeats(t, t + 20 * SECOND)
    t += 20 * SECOND
    sim.crash(c)
    expel = t + sim.session_timeout_ms * MS
    sim.heartbeats(t, expel)
    sim.expel(c)
    t = sim.rebalance(expel)
    sim.heartbeats(t, t + 20 * SECOND)
    t += 20 * SECOND
    a.topics = ["t", "u"]
    t = sim.rebalance(t, early=[a])
    sim.heartbeats(t, t + 10 * SECOND)

    coop = GroupSim(out, "coop-app", "cooperative-sticky", {"x": 4}, profile="java3", rng=random.Random(8))
    joiners = [coop.connect(T0 + i * SECOND, ["x"]) for i in range(2)]
    t = coop.rebalance(max(r for _, r in joiners), joiners=joiners)
    coop.heartbeats(t, t + 10 * SECOND)
    t += 10 * SECOND
    e, ready = coop.connect(t, ["x"])
    t = coop.rebalance(ready, joiners=[(e, ready)])
    assert coop.needs_followup()
    t = coop.rebalance(t + 2 * MS, early=list(coop.members.values()))
    assert not coop.needs_followup()
    coop.heartbeats(t, t + 10 * SECOND)
    if extra is not None:
        extra(out)
    out.write(path)
    return sim, coop, (a, b, c, d)


EXPECTED_RANGE = [
    # generation, trigger, joined, left, moved, partitions, error codes answered in the window
    (1, "initial", [], [], None, 6, [MEMBER_ID_REQUIRED]),
    (2, "member_joined", ["D"], [], 1, 6, [REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED]),
    (3, "member_left", [], ["B"], 3, 6, [REBALANCE_IN_PROGRESS]),
    (4, "session_timeout", [], ["C"], 2, 6, [REBALANCE_IN_PROGRESS]),
    (5, "subscription_change", [], [], 0, 8, [REBALANCE_IN_PROGRESS]),
]


def metadata_request(corr, version, topics=("t",)):
    """A Metadata request frame for ``topics``."""
    return kwire.codec.encode_request(kwire.codec.MetadataRequest(
        topics=[kwire.codec.MetadataRequestTopic(name=t) for t in topics]), version, correlation_id=corr,
        client_id="c")


def metadata_response(corr, version, topics):
    """A Metadata response frame; ``topics``: (name, error code, partition indexes) each."""
    c = kwire.codec
    return c.encode_response(c.MetadataResponse(
        brokers=[c.MetadataResponseBroker(node_id=1, host="b1", port=9092)],
        topics=[c.MetadataResponseTopic(error_code=err, name=name, partitions=[
            c.MetadataResponsePartition(error_code=ErrorCode.NONE, partition_index=p, leader_id=1, replica_nodes=[1],
                                        isr_nodes=[1]) for p in parts]) for name, err, parts in topics]),
        version, correlation_id=corr)


def metadata_group(out, name, sizes, members=2, t0=T0, seed=1):
    """A range group whose members fetched Metadata while the cluster had ``sizes``."""
    sim = GroupSim(out, name, "range", sizes, rng=random.Random(seed))
    joiners = [sim.connect(t0 + i * SECOND, ["t"]) for i in range(members)]
    return sim, joiners


def stale_leader_group(out, t0=T0, name="stale-app"):
    """A group whose members' Metadata says topic "t" has 12 partitions while
    its leader assigned from a view of 8: sizes from Metadata and sizes
    inferred from the assignments differ (12 and 8)."""
    sim, joiners = metadata_group(out, name, {"t": 12}, t0=t0)
    sim.partitions = {"t": 8}
    t = sim.rebalance(max(r for _, r in joiners), joiners=joiners)
    sim.heartbeats(t, t + 10 * SECOND)
    return sim


def add_bad_metadata(out, ts=T0 + 30 * SECOND):
    """Metadata responses no broker sends, on a connection of their own:
    partitions of "t" that are not 0..n-1, a topic "big" of 7 partitions, and
    one that lists "u" with 1 partition and "t" twice with different sizes.
    Returns the seqs they will have (the capture's last frames before ``ts``
    are unknown here, so: the responses' timestamps)."""
    conn = out.new_conn()
    answers = [[("t", 0, [0, 2])], [("big", 0, range(7))], [("u", 0, [0]), ("t", 0, range(6)), ("t", 0, range(3))]]
    for corr, topics in enumerate(answers):
        out.add(ts + 2 * corr, conn, CLIENT_TO_BROKER, metadata_request(corr, 12, [t for t, _e, _p in topics]),
                "10.0.0.9:5000", "broker-1:9092")
        out.add(ts + 2 * corr + 1, conn, BROKER_TO_CLIENT, metadata_response(corr, 12, topics), "10.0.0.9:5000",
                "broker-1:9092")
    return [ts + 2 * corr + 1 for corr in range(len(answers))]


def generated_and_damaged(out):
    """Beside the scripted groups: three generated groups, a group whose Metadata and leader disagree on a topic's
    size, and Metadata responses that cannot be true."""
    from kwire.pipeline._synth import simulate_group, topic_pool

    pool = topic_pool(1, n_topics=6)
    for i in range(3):
        simulate_group(out, 100 + i, 1, T0, 120.0, pool)
    stale_leader_group(out)
    add_bad_metadata(out)
