"""The sticky and cooperative-sticky adapters, driven like each client's
coordinator drives them (``metadata()`` -> JoinGroup -> the leader's
``assign()`` -> ``on_assignment()`` -> the next ``metadata()``), in groups
that mix them with Java-written members and with the clients' own sticky
members.  No broker: the member bytes go through each client's own codec."""

import pytest

import kwire
from kwire.assignors import GroupMember, assign, sticky_user_data
from kwire.assignors._userdata import decode_sticky_userdata

pytestmark = pytest.mark.interop

kafka = pytest.importorskip("kafka")
from tests.client_clusters import aio_cluster, kp_cluster, kp_members  # noqa: E402
from kafka.coordinator.assignors.abstract import RebalanceProtocol  # noqa: E402
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor  # noqa: E402
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor  # noqa: E402
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription  # noqa: E402

from kwire.contrib.kafka_python import KwireCooperativeStickyAssignor, KwireStickyAssignor  # noqa: E402

COUNTS = {"a": 6, "b": 5, "c": 4}
TOPICS = set(COUNTS)


def flat(groups):
    return [(t, p) for t, ps in groups for p in ps]


def wire_order(result):
    """``assign``'s lists as an Assignment carries them: grouped by topic in order of first appearance."""
    out = {}
    for mid, tps in result.items():
        groups = {}
        for t, p in tps:
            groups.setdefault(t, []).append(p)
        out[mid] = flat(groups.items())
    return out


def kp_view(encoded_subs, unwrap=()):
    """What kwire itself reads from the same bytes (kafka-python's own sticky
    members' userData with its version prefix removed)."""
    out = []
    for mid, raw in encoded_subs.items():
        sub = kwire.Subscription.decode(raw)
        if mid in unwrap:
            sub.user_data = sub.user_data[2:]
        out.append(GroupMember(mid, None, sub))
    return out


def deliver(out, assignors, generation):
    """SyncGroup: every member decodes its bytes with kafka-python and tells its assignor."""
    for mid, pa in out.items():
        if mid in assignors:
            assignors[mid].on_assignment(ConsumerProtocolAssignment.decode(pa.encode()), generation)


def test_kafka_python_sticky_metadata_is_what_a_java_member_sends():
    a = KwireStickyAssignor()
    first = kwire.Subscription.decode(a.metadata({"b", "a"}).encode())
    assert (first.topics, first.user_data, first.owned_partitions, first.generation_id) == (["a", "b"], None, [], -1)
    a.on_assignment(ConsumerProtocolAssignment(0, [("b", [1, 0]), ("a", [2])], b""), 7)
    sub = kwire.Subscription.decode(a.metadata({"b", "a"}).encode())
    assert sub.generation_id == 7 and sub.owned_partitions == []
    # Java groups the claim in a HashMap<String, ...>: "a" (hash 97) iterates before "b" (98).
    ud = kwire.codec.StickyAssignorUserData.decode(sub.user_data, 1)
    assert [(e.topic, e.partitions) for e in ud.previous_assignment] == [("a", [2]), ("b", [1, 0])]
    assert ud.generation == 7
    assert sub.user_data == sticky_user_data([("b", 1), ("b", 0), ("a", 2)], 7)


def test_kafka_python_sticky_rebalance_keeps_claims_of_every_kind_of_member():
    cluster = kp_cluster({t: [[0]] * n for t, n in COUNTS.items()})
    ours = {m: KwireStickyAssignor() for m in ("k1", "k2", "k3")}
    own = StickyPartitionAssignor()  # kafka-python's own member (prefixed userData)
    java = {"userdata": None, "generation": -1}

    def java_metadata():
        return kwire.Subscription(
            topics=sorted(TOPICS), user_data=java["userdata"], generation_id=java["generation"]
        ).encode(3)

    def join(members):
        raw = {}
        for mid in members:
            if mid in ours:
                raw[mid] = ours[mid].metadata(TOPICS).encode()
            elif mid == "own":
                raw[mid] = own.metadata(TOPICS).encode()
            else:
                raw[mid] = java_metadata()
        return raw

    leader = ours["k1"]
    raw = join(["k1", "k2", "own", "java", "k3"])
    out1 = leader.assign(cluster, kp_members({m: (None, ConsumerProtocolSubscription.decode(r)) for m, r in raw.items()}))
    gen1 = {m: flat(pa.assigned_partitions) for m, pa in out1.items()}
    assert gen1 == wire_order(assign("sticky", kp_view(raw), COUNTS))
    deliver(out1, ours, 1)
    own.on_assignment(ConsumerProtocolAssignment.decode(out1["own"].encode()), 1)
    java["userdata"], java["generation"] = sticky_user_data(gen1["java"], 1), 1

    # k3 leaves; each survivor's claim -- ours, kafka-python's own (whose
    # userData Java cannot read), Java's -- must be kept.
    raw = join(["k1", "k2", "own", "java"])
    assert decode_sticky_userdata(kwire.Subscription.decode(raw["own"]).user_data) == ([], -1)  # what Java reads
    out2 = leader.assign(cluster, kp_members({m: (None, ConsumerProtocolSubscription.decode(r)) for m, r in raw.items()}))
    gen2 = {m: flat(pa.assigned_partitions) for m, pa in out2.items()}
    assert gen2 == wire_order(assign("sticky", kp_view(raw, unwrap={"own"}), COUNTS))
    for m in ("k1", "k2", "own", "java"):
        assert set(gen1[m]) <= set(gen2[m]), m
    assert sorted(p for ps in gen2.values() for p in ps) == sorted((t, p) for t, n in COUNTS.items() for p in range(n))


def test_kafka_python_own_sticky_leader_reads_our_members_as_new():
    cluster = kp_cluster({t: [[0]] * n for t, n in COUNTS.items()})
    ours = KwireStickyAssignor()
    ours.on_assignment(ConsumerProtocolAssignment(0, [("a", [0, 1])], b""), 3)
    members = kp_members({
        "k": (None, ConsumerProtocolSubscription.decode(ours.metadata(TOPICS).encode())),
        "own": (None, ConsumerProtocolSubscription.decode(StickyPartitionAssignor().metadata(TOPICS).encode())),
    })
    out = StickyPartitionAssignor().assign(cluster, members)
    assert sorted(tp for pa in out.values() for tp in flat(pa.assigned_partitions)) == sorted(
        (t, p) for t, n in COUNTS.items() for p in range(n)
    )


def test_kafka_python_cooperative_sticky_two_phase_rebalance():
    cluster = kp_cluster({t: [[0]] * n for t, n in COUNTS.items()})
    assert KwireCooperativeStickyAssignor().supported_protocols() == [RebalanceProtocol.COOPERATIVE]
    ours = {m: KwireCooperativeStickyAssignor() for m in ("k1", "k2")}
    own = CooperativeStickyAssignor()  # kafka-python's own: Subscription v1, no generation
    owned = {}

    def join(members, generation):
        raw = {m: ours[m].metadata(TOPICS).encode() for m in members if m in ours}
        if "own" in members:
            raw["own"] = own.metadata(TOPICS).encode()
        if "java" in members:
            groups = {}
            for t, p in owned.get("java", ()):
                groups.setdefault(t, []).append(p)
            raw["java"] = kwire.Subscription(
                topics=sorted(TOPICS), user_data=kwire.assignors.cooperative_user_data(generation),
                owned_partitions=[kwire.codec.SubscriptionTopicPartition(topic=t, partitions=ps) for t, ps in groups.items()],
                generation_id=generation,
            ).encode(3)
        return {m: raw[m] for m in members}

    def rebalance(members, generation):
        previous = generation - 1 if generation > 1 else -1  # -1: never assigned
        raw = join(members, previous)
        for m in ("k1", "k2"):
            sub = kwire.Subscription.decode(raw[m])
            assert sub.user_data == kwire.assignors.cooperative_user_data(previous)
            assert sub.generation_id == previous
            assert flat((e.topic, e.partitions) for e in sub.owned_partitions) == owned.get(m, [])
        decoded = kp_members({m: (None, ConsumerProtocolSubscription.decode(r)) for m, r in raw.items()})
        out = ours["k1"].assign(cluster, decoded)
        got = {m: flat(pa.assigned_partitions) for m, pa in out.items()}
        assert got == wire_order(assign("cooperative-sticky", kp_view(raw), COUNTS))
        # kafka-python's own cooperative leader reads the same bytes without trouble.
        CooperativeStickyAssignor().assign(cluster, decoded)
        deliver(out, ours, generation)
        if "own" in out:
            own.on_assignment(ConsumerProtocolAssignment.decode(out["own"].encode()), generation)
        for m in members:
            owned[m] = got[m]
        return got

    everything = sorted((t, p) for t, n in COUNTS.items() for p in range(n))
    gen1 = rebalance(["k1", "k2"], 1)
    assert sorted(tp for ps in gen1.values() for tp in ps) == everything
    # Two members join: nothing moves to them while its owner still holds it ...
    gen2 = rebalance(["k1", "k2", "own", "java"], 2)
    for m in ("k1", "k2"):
        assert set(gen2[m]) <= set(gen1[m])
    assert gen2["own"] == [] and gen2["java"] == []
    revoked = set(gen1["k1"] + gen1["k2"]) - set(gen2["k1"] + gen2["k2"])
    assert revoked
    # ... and the revoked partitions land on them in the follow-up rebalance.
    gen3 = rebalance(["k1", "k2", "own", "java"], 3)
    assert set(gen3["own"] + gen3["java"]) == revoked
    assert sorted(tp for ps in gen3.values() for tp in ps) == everything
    sizes = sorted(len(ps) for ps in gen3.values())
    assert sizes[-1] - sizes[0] <= 1


# -- aiokafka -------------------------------------------------------------------------------------


def test_aiokafka_sticky_interoperates_with_its_own_sticky_members():
    pytest.importorskip("aiokafka")
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as AioSticky
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

    from kwire.contrib.aiokafka import KwireStickyAssignor as AioKwireSticky

    cluster = aio_cluster(COUNTS)
    # aiokafka keeps assignor state on the class: one subclass per consumer.
    ours = {m: type(f"Member_{m}", (AioKwireSticky,), {}) for m in ("k1", "k2", "k3")}
    own = type("OwnMember", (AioSticky,), {})

    def join(members):
        raw = {m: ours[m].metadata(TOPICS).encode() for m in members if m in ours}
        if "own" in members:
            raw["own"] = own.metadata(TOPICS).encode()
        return {m: raw[m] for m in members}

    def rebalance(members):
        raw = join(members)
        decoded = {m: ConsumerProtocolMemberMetadata.decode(r) for m, r in raw.items()}
        out = ours["k1"].assign(cluster, decoded)
        got = {m: [(t, p) for t, ps in ConsumerProtocolMemberAssignment.decode(a.encode()).assignment for p in ps]
               for m, a in out.items()}
        expected = assign("sticky", [GroupMember(m, None, kwire.Subscription.decode(r)) for m, r in raw.items()], COUNTS)
        assert got == wire_order(expected)
        # aiokafka's own leader reads our userData too (same V1 layout).
        own_view = AioSticky.assign(cluster, decoded)
        assert sorted(tp for a in own_view.values() for tp in a.partitions()) == sorted(
            (t, p) for t, n in COUNTS.items() for p in range(n))
        for m, a in out.items():
            (ours.get(m) or own).on_assignment(ConsumerProtocolMemberAssignment.decode(a.encode()))
        return got

    gen1 = rebalance(["k1", "k2", "own", "k3"])
    ud = kwire.Subscription.decode(ours["k2"].metadata(TOPICS).encode()).user_data
    claim, generation = decode_sticky_userdata(ud)
    assert sorted(claim) == sorted(gen1["k2"]) and generation == -1
    gen2 = rebalance(["k1", "k2", "own"])
    for m in ("k1", "k2", "own"):
        assert set(gen1[m]) <= set(gen2[m]), m
