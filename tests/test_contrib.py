"""The kafka-python and aiokafka adapters, driven with each library's own
cluster metadata and member objects, must hand out what kwire's assignors
(and so Java) would."""

import pytest

from kwire.assignors import GroupMember, assign

pytestmark = pytest.mark.interop


# -- kafka-python ---------------------------------------------------------------------------------

kafka = pytest.importorskip("kafka")
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription  # noqa: E402

from kwire.contrib.kafka_python import KwireRangeAssignor, KwireRoundRobinAssignor  # noqa: E402

from tests.client_clusters import aio_cluster, kp_cluster, kp_members  # noqa: E402


def _flat(protocol_assignment):
    return [(t, p) for t, ps in protocol_assignment.assigned_partitions for p in ps]


def _kwire_view(subs):
    return [GroupMember(mid, inst, sub) for mid, (inst, sub) in subs.items()]


@pytest.mark.parametrize("cls", [KwireRangeAssignor, KwireRoundRobinAssignor])
def test_kafka_python_adapter_matches_kwire(cls):
    cluster = kp_cluster({"a": [[0]] * 5, "zz": [[0]] * 3, "other": [[0]] * 2})
    subs = {
        "c-2": (None, cls().metadata({"a", "zz"})),
        "c-1": ("static-1", cls().metadata({"a"})),
        "c-0": (None, cls().metadata({"zz", "a", "missing"})),
    }
    members = kp_members(subs)
    out = cls().assign(cluster, members)
    assert set(out) == set(subs)
    for mid, pa in out.items():
        assert isinstance(pa, ConsumerProtocolAssignment)
        # Survives kafka-python's own wire round trip.
        assert _flat(ConsumerProtocolAssignment.decode(pa.encode())) == _flat(pa)
    expected = assign(cls.strategy, _kwire_view(subs), {"a": 5, "zz": 3, "other": 2})
    assert {mid: _flat(pa) for mid, pa in out.items()} == expected


def test_kafka_python_adapter_usable_as_strategy_class():
    # kafka-python's coordinator instantiates each configured class with no
    # arguments and indexes it by ``name``.
    from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor

    for cls, name in ((KwireRangeAssignor, "range"), (KwireRoundRobinAssignor, "roundrobin")):
        inst = cls()
        assert isinstance(inst, AbstractPartitionAssignor)
        assert inst.name == name
        md = inst.metadata({"b", "a", "\U0001f600", "\uffee"})
        # Java order (UTF-16), not Python's code-point order.
        assert ConsumerProtocolSubscription.decode(md.encode()).topics == ["a", "b", "\U0001f600", "\uffee"]


def test_kafka_python_roundrobin_unequal_subscriptions():
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    cluster = kp_cluster({"t0": [[0]], "t1": [[0]] * 2, "t2": [[0]] * 3})
    subs = {
        "C0": (None, ConsumerProtocolSubscription(0, ["t0"], b"")),
        "C1": (None, ConsumerProtocolSubscription(0, ["t0", "t1"], b"")),
        "C2": (None, ConsumerProtocolSubscription(0, ["t0", "t1", "t2"], b"")),
    }
    # kafka-python's own assignor trips over this input (3.0.12 raises KeyError) ...
    try:
        RoundRobinPartitionAssignor.assign(cluster, kp_members(subs))
        builtin_failed = False
    except KeyError:
        builtin_failed = True
    # ... kwire's does not, and gives the result Java documents for it.
    out = KwireRoundRobinAssignor().assign(cluster, kp_members(subs))
    assert {m: _flat(a) for m, a in out.items()} == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0)],
        "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)],
    }
    if kafka.__version__ == "3.0.12":
        assert builtin_failed


def test_kafka_python_rack_aware_range_reads_replica_racks():
    # Partition p has its only replica on broker p % 2, brokers on racks r0/r1.
    cluster = kp_cluster({"t": [[0], [1], [0], [1]]}, broker_racks=("r0", "r1"))
    a = KwireRangeAssignor(rack="r1")
    b = KwireRangeAssignor(rack="r0")
    subs = {"a": (None, a.metadata({"t"})), "b": (None, b.metadata({"t"}))}
    assert ConsumerProtocolSubscription.decode(subs["a"][1].encode()).rack_id == "r1"
    out = a.assign(cluster, kp_members(subs))
    assert {m: _flat(x) for m, x in out.items()} == {"a": [("t", 1), ("t", 3)], "b": [("t", 0), ("t", 2)]}


# -- aiokafka -------------------------------------------------------------------------------------


def _aiokafka():
    return pytest.importorskip("aiokafka")


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_aiokafka_adapter_matches_kwire(strategy):
    _aiokafka()
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

    from kwire.contrib.aiokafka import KwireRangeAssignor, KwireRoundRobinAssignor

    cls = KwireRangeAssignor if strategy == "range" else KwireRoundRobinAssignor
    cluster = aio_cluster({"a": 5, "zz": 3, "x": 1})
    subs = {"m2": ["a", "zz"], "m1": ["a"], "m0": ["zz", "a", "missing"]}
    members = {}
    for mid, topics in subs.items():
        raw = cls.metadata(set(topics)).encode()
        members[mid] = ConsumerProtocolMemberMetadata.decode(raw)
    out = cls.assign(cluster, members)
    expected = assign(
        strategy,
        [GroupMember(mid, None, type("S", (), {"topics": sorted(t), "rack_id": None})()) for mid, t in subs.items()],
        {"a": 5, "zz": 3, "x": 1},
    )
    got = {}
    for mid, pa in out.items():
        assert isinstance(pa, ConsumerProtocolMemberAssignment)
        decoded = ConsumerProtocolMemberAssignment.decode(pa.encode())
        got[mid] = [(t, p) for t, ps in decoded.assignment for p in ps]
    assert got == expected


def test_aiokafka_roundrobin_unequal_subscriptions():
    _aiokafka()
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    from kwire.contrib.aiokafka import KwireRoundRobinAssignor

    cluster = aio_cluster({"t0": 1, "t1": 2, "t2": 3})
    members = {
        "C0": ConsumerProtocolMemberMetadata(0, ["t0"], b""),
        "C1": ConsumerProtocolMemberMetadata(0, ["t0", "t1"], b""),
        "C2": ConsumerProtocolMemberMetadata(0, ["t0", "t1", "t2"], b""),
    }
    out = KwireRoundRobinAssignor.assign(cluster, members)
    assert {m: [(t, p) for t, ps in a.assignment for p in ps] for m, a in out.items()} == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0)],
        "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)],
    }
