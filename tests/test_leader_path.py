"""The leader's column path (kwire/assignors/_leader*.py): its hand-written
Assignment writer is held to the codec's schema and to the codec's bytes,
in both twins, and ``leader_assignments`` gives the SyncGroup payloads the
member-level path gives -- for random groups and for every Java golden case."""

import random
import struct
from types import SimpleNamespace

import numpy as np
import pytest

from kwire import codec
from kwire.assignors import (GroupMember, assign, assign_arrays, leader_assignments, leader_group, leader_sync_request,
                             sticky_user_data)
from kwire.assignors._api import encode_member_assignment
from kwire.assignors._arrays import ArrayAssignment, ArrayGroup, load_kernels
from kwire.assignors._leader_common import ASSIGNMENT_VERSIONS, topic_name_table
from kwire.assignors._userdata import decode_sticky_userdata
from kwire.codec._schema import CONSUMER_PROTOCOL_ASSIGNMENT
from kwire.errors import AssignmentError, KwireError
from tests._data import golden_cases
from tests._twins import assignor_implementations

IMPLEMENTATIONS = assignor_implementations()
STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def test_schema_is_the_layout_the_kernels_write():
    msg = CONSUMER_PROTOCOL_ASSIGNMENT
    assert (msg.valid.lo, msg.valid.hi) == (ASSIGNMENT_VERSIONS.start, ASSIGNMENT_VERSIONS.stop - 1)
    assert msg.version_prefixed
    for v in ASSIGNMENT_VERSIONS:
        assert v not in msg.flexible
        fields = [f for f in msg.fields if v in f.versions]
        assert [(f.name, f.type) for f in fields] == [("AssignedPartitions", "[]TopicPartition"), ("UserData", "bytes")]
        assigned, user_data = fields
        assert v not in assigned.nullable and v in user_data.nullable and not user_data.tag
        inner = [(f.name, f.type, v in f.nullable) for f in assigned.fields if v in f.versions]
        assert inner == [("Topic", "string", False), ("Partitions", "[]int32", False)]


NAMES = ["t", "orders", "\u00e9t\u00e9", "\U0001f600", "a" * 300, "", "zz", "\uffee"]


def random_assignment(rng):
    topics = sorted(rng.sample(NAMES, rng.randint(1, len(NAMES))))
    members = rng.randint(0, 6)
    indptr, topic, partition = [0], [], []
    for _ in range(members):
        for _ in range(rng.choice([0, 1, 3, 12])):
            topic.append(rng.randrange(len(topics)))
            partition.append(rng.choice([0, 1, 7, 255, 256, 2**31 - 1, rng.randrange(2**31)]))
        indptr.append(len(topic))
    return ArrayAssignment(
        np.array(indptr), np.array(topic, dtype=np.int32), np.array(partition, dtype=np.int32),
        member_ids=[f"m{i}" for i in range(members)], topics=topics,
    )


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_kernels_write_the_codecs_bytes(implementation):
    kernels = load_kernels("leader", implementation)
    rng = random.Random(15)
    for _ in range(300):
        a = random_assignment(rng)
        offsets, blob = topic_name_table(a.topics)
        groups = a.topic_groups() if len(a) else {}
        for version in ASSIGNMENT_VERSIONS:
            got = kernels.assignment_bytes(a.indptr, a.topic, a.partition, offsets, blob, version)
            want = [encode_member_assignment(groups[mid], version) for mid in a.member_ids]
            assert got == want
            for g, mid in zip(got, a.member_ids):
                assert codec.Assignment.decode(g).assigned_partitions == [
                    codec.AssignmentTopicPartition(topic=t, partitions=ps) for t, ps in groups[mid]
                ]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_kernels_frame_writer_takes_members_listed_topic_by_topic_or_not(implementation):
    """``sync_frame`` writes a member whose topics each come in one run (range's and roundrobin's lists) in
    list order, and groups any other; both must give the codec's frame, in classic and flexible versions."""
    kernels = load_kernels("leader", implementation)
    rng = random.Random(16)
    kinds = set()
    for _ in range(200):
        a = random_assignment(rng)
        offsets, blob = topic_name_table(a.topics)
        for m in range(len(a.member_ids)):
            topics = a.topic[a.indptr[m]:a.indptr[m + 1]].tolist()
            runs = [t for i, t in enumerate(topics) if i == 0 or topics[i - 1] != t]
            kinds.add(len(runs) == len(set(runs)))
        payloads = kernels.assignment_bytes(a.indptr, a.topic, a.partition, offsets, blob, 3)
        for version in (3, 5):  # int16/int32 lengths, then varints and tag sections
            request = codec.SyncGroupRequest(group_id="g", generation_id=1, member_id="m0", protocol_type="consumer",
                                             protocol_name="range", assignments=[])
            head = codec.encode_request(request, version, correlation_id=1)
            flexible = version >= codec.SyncGroupRequest.flexible_from
            cut = 2 if flexible else 4
            got = kernels.sync_frame(a.indptr, a.topic, a.partition, offsets, blob, 3, a.member_ids, flexible,
                                     head[:-cut], b"\x00" if flexible else b"")
            request.assignments = [codec.SyncGroupRequestAssignment(member_id=mid, assignment=p)
                                   for mid, p in zip(a.member_ids, payloads)]
            assert got == codec.encode_request(request, version, correlation_id=1)
    assert kinds == {True, False}  # both writers were exercised


def join_response(subs):
    return SimpleNamespace(
        members=[SimpleNamespace(member_id=mid, group_instance_id=inst, metadata=raw) for mid, inst, raw in subs]
    )


def old_leader_path(strategy, subs, counts, racks, implementation):
    """What leader_assignments gave before the column path: decode every
    member, assign at member level, encode every member with the codec."""
    members = [GroupMember(mid, inst, codec.Subscription.decode(raw)) for mid, inst, raw in subs]
    result = assign(strategy, members, counts, partition_racks=racks, implementation=implementation)
    out = []
    for mid, _, _ in subs:
        groups = {}
        for t, p in result[mid]:
            groups.setdefault(t, []).append(p)
        out.append((mid, encode_member_assignment(list(groups.items()))))
    return out


def random_group(rng, strategy):
    topics = rng.sample(["a", "b", "c", "d", "\u00e9"], rng.randint(1, 5))
    counts = {t: rng.randint(0, 7) for t in topics}
    shared = sorted(rng.sample(topics, rng.randint(1, len(topics))))
    subs = []
    for i in range(rng.randint(1, 9)):
        mine = shared if rng.random() < 0.6 else sorted(rng.sample(topics, rng.randint(1, len(topics))))
        owned = []
        if strategy == "cooperative-sticky" and rng.random() < 0.5:
            owned = [codec.SubscriptionTopicPartition(topic=t, partitions=rng.sample(range(counts[t]), min(2, counts[t])))
                     for t in mine[:1]]
            # stale or malformed claims: past the topic's end, a topic gone, a negative index
            extra = rng.choice([None, None, (mine[0], [counts[mine[0]] + 1, 0]), ("gone", [3]), (mine[0], [-1])])
            if extra:
                owned.append(codec.SubscriptionTopicPartition(topic=extra[0], partitions=extra[1]))
        user_data = None
        if strategy == "sticky" and rng.random() < 0.5:
            t = mine[0]
            user_data = codec.StickyAssignorUserData(
                previous_assignment=[codec.StickyTopicAssignment(topic=t, partitions=list(range(counts[t]))[i::5])],
                generation=rng.randint(1, 3),
            ).encode(1)
        sub = codec.Subscription(topics=mine, owned_partitions=owned, user_data=user_data,
                                 generation_id=rng.choice([-1, 1, 2]), rack_id=rng.choice([None, "r0", "r1"]))
        subs.append((f"member-{rng.randrange(10**6)}-{i}", rng.choice([None, f"inst-{i}"]), sub.encode(rng.choice([0, 1, 2, 3]))))
    racks = None
    if rng.random() < 0.3:
        racks = {t: [[rng.choice(["r0", "r1"])] for _ in range(n)] for t, n in counts.items()}
    return subs, counts, racks


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_leader_path_gives_the_member_level_bytes(strategy, implementation):
    rng = random.Random(strategy)
    for _ in range(60):
        subs, counts, racks = random_group(rng, strategy)
        try:
            want = old_leader_path(strategy, subs, counts, racks, implementation)
        except KwireError as exc:
            with pytest.raises(type(exc)):
                leader_assignments(strategy, join_response(subs), counts, partition_racks=racks, implementation=implementation)
            continue
        got = leader_assignments(strategy, join_response(subs), counts, partition_racks=racks, implementation=implementation)
        assert [(x.member_id, x.assignment) for x in got] == want


def passes_every_check(group):
    """The leader path builds its group without the constructor's checks
    (trusting its own columns): the same columns pass them all."""
    ArrayGroup(
        group.topics, group.partition_counts, group.member_ids, group.sub_indptr, group.sub_topics,
        group_instance_ids=group.group_instance_ids, racks=group.racks, owned_indptr=group.owned_indptr,
        owned_topic=group.owned_topic, owned_partition=group.owned_partition, generation=group.generation,
        subscription_generation=group.subscription_generation, rack_names=group.rack_names,
        replica_rack_indptr=group.replica_rack_indptr, replica_racks=group.replica_racks,
    )


def test_the_leader_group_still_checks_its_members():
    sub = codec.Subscription(topics=["a"]).encode(3)
    with pytest.raises(AssignmentError, match="member id 'm' appears more than once"):
        leader_group("range", join_response([("m", None, sub), ("m", None, sub)]), {"a": 1})
    with pytest.raises(AssignmentError, match="must be str, got None"):
        leader_group("range", join_response([(None, None, sub)]), {"a": 1})


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_leader_group_is_the_group_the_leader_assigns(strategy):
    rng = random.Random("group-" + strategy)
    for _ in range(40):
        subs, counts, racks = random_group(rng, strategy)
        try:
            want = leader_assignments(strategy, join_response(subs), counts, partition_racks=racks)
        except KwireError as exc:
            with pytest.raises(type(exc)):
                assign_arrays(strategy, leader_group(strategy, join_response(subs), counts, partition_racks=racks))
            continue
        group = leader_group(strategy, join_response(subs), counts, partition_racks=racks)
        assert list(group.member_ids) == [mid for mid, _, _ in subs]
        passes_every_check(group)
        groups = assign_arrays(strategy, group).topic_groups()
        assert [(x.member_id, x.assignment) for x in want] == [
            (mid, encode_member_assignment(groups[mid])) for mid in group.member_ids]


CASES = golden_cases()


def _golden_subscription_bytes(case, m):
    strategy = case["assignor"]
    user_data = bytes.fromhex(m["user_data_hex"]) if m.get("user_data_hex") else None
    owned, generation_id = {}, -1
    if strategy == "cooperative-sticky":
        for t, p in m.get("owned_partitions") or []:
            owned.setdefault(t, []).append(p)
        if m.get("generation") is not None:
            generation_id = m["generation"]
    elif strategy == "sticky" and m.get("subscription_generation_id") is not None:
        generation_id = m["subscription_generation_id"]
    return codec.Subscription(
        topics=list(m["topics"]), user_data=user_data, generation_id=generation_id, rack_id=m.get("rack"),
        owned_partitions=[codec.SubscriptionTopicPartition(topic=t, partitions=ps) for t, ps in owned.items()],
    ).encode(3)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_leader_path_writes_javas_golden_answers(implementation):
    assert CASES
    for case in CASES:
        subs = [(m["member_id"], m["group_instance_id"], _golden_subscription_bytes(case, m)) for m in case["members"]]
        # java_exact: four of Java's golden answers are invalid assignments that kwire's default repairs
        # (docs/ASSIGNORS.md); the Java-exact form must still write Java's bytes for every case.
        got = leader_assignments(case["assignor"], join_response(subs), case["partitions_per_topic"],
                                 partition_racks=case.get("partition_racks"), implementation=implementation,
                                 java_exact=True)
        assert [x.member_id for x in got] == [m["member_id"] for m in case["members"]]
        for x in got:
            groups = {}
            for t, p in case["expected"][x.member_id]:
                groups.setdefault(t, []).append(p)
            assert x.assignment == encode_member_assignment(list(groups.items())), case["id"]


def test_small_range_groups_take_the_small_path_with_javas_answers(monkeypatch):
    """A small group under ``range`` with no partition racks and no implementation named is assigned by the
    small path (``_range.small_range``): Java's golden answers, and the array path's bytes (or its error) for
    random groups, in both twins."""
    import kwire.assignors._api as api

    calls = []
    real = api.small_range
    monkeypatch.setattr(api, "small_range", lambda *args: calls.append(1) or real(*args))
    for case in CASES:
        if case["assignor"] != "range" or case.get("partition_racks"):
            continue
        subs = [(m["member_id"], m["group_instance_id"], _golden_subscription_bytes(case, m)) for m in case["members"]]
        got = leader_assignments("range", join_response(subs), case["partitions_per_topic"])
        for x in got:
            groups = {}
            for t, p in case["expected"][x.member_id]:
                groups.setdefault(t, []).append(p)
            assert x.assignment == encode_member_assignment(list(groups.items())), case["id"]
    golden = len(calls)
    assert golden
    rng = random.Random("small range")
    for _ in range(150):
        subs, counts, _ = random_group(rng, "range")
        assert_default_path_is_the_array_paths("range", subs, counts)
    assert len(calls) > golden


def assert_default_path_is_the_array_paths(strategy, subs, counts):
    """``leader_assignments`` with no implementation named (where a small path may answer) gives what each
    twin's array path gives, or the same error; returns the default answer's payloads (None on an error)."""
    got = None
    for implementation in IMPLEMENTATIONS:
        try:
            want = leader_assignments(strategy, join_response(subs), counts, implementation=implementation)
        except KwireError as exc:
            with pytest.raises(type(exc)):
                leader_assignments(strategy, join_response(subs), counts)
            continue
        got = leader_assignments(strategy, join_response(subs), counts)
        assert [(x.member_id, x.assignment) for x in got] == [(x.member_id, x.assignment) for x in want]
    return None if got is None else [x.assignment for x in got]


def recorded_reads(monkeypatch, implementation):
    """The list of what each call of the leader kernels' Subscription reader is handed."""
    import kwire.assignors._leader as leader

    real = load_kernels("leader", implementation)
    reads = []

    def subscription_columns(metadata):
        reads.append(list(metadata))
        return real.subscription_columns(metadata)

    spy = SimpleNamespace(subscription_columns=subscription_columns, assignment_bytes=real.assignment_bytes,
                          member_rows=real.member_rows)
    monkeypatch.setattr(leader, "load_kernels", lambda name, impl=None: spy if name == "leader" else load_kernels(name, impl))
    return reads


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_distinct_metadata_is_read_once(monkeypatch, implementation):
    reads = recorded_reads(monkeypatch, implementation)
    same = codec.Subscription(topics=["a", "b"]).encode(3)
    other = codec.Subscription(topics=["b"]).encode(3)
    subs = [(f"m{i}", None, bytes(same)) for i in range(50)] + [("x", None, other), ("y", None, bytearray(same))]
    leader_assignments("range", join_response(subs), {"a": 10, "b": 10}, implementation=implementation)
    assert reads == [[same, other]]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_metadata_alike_at_both_ends_are_told_apart(monkeypatch, implementation):
    """Members are grouped by a sketch of their bytes (length, head, tail):
    different bytes with the same sketch are still different subscriptions,
    and each distinct byte string, repeated or not, is read once."""
    reads = recorded_reads(monkeypatch, implementation)
    names = [f"topic-{i:03d}" for i in range(40)]
    counts = {t: 3 for t in names + ["topic-x00", "topic-y00"]}
    # the same length, the same first and last 100 bytes: only a topic in the middle differs
    raws = [codec.Subscription(topics=names[:20] + [middle] + names[21:]).encode(3)
            for middle in (names[20], "topic-x00", "topic-y00")]
    assert len({(len(r), r[:32], r[-96:]) for r in raws}) == 1 and len(set(raws)) == 3
    order = [0, 1, 0, 2, 1, 2, 2, 0]
    subs = [(f"m{i}", None, bytes(raws[k])) for i, k in enumerate(order)]
    got = leader_assignments("range", join_response(subs), counts, implementation=implementation)
    assert reads == [raws]
    assert [(x.member_id, x.assignment) for x in got] == old_leader_path("range", subs, counts, None, implementation)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_negative_owned_partition_names_its_member(implementation):
    owned = [codec.SubscriptionTopicPartition(topic="a", partitions=[0])]
    bad = owned + [codec.SubscriptionTopicPartition(topic="b", partitions=[1, -3])]
    subs = [("m0", None, codec.Subscription(topics=["a", "b"], owned_partitions=owned).encode(3)),
            ("m1", None, codec.Subscription(topics=["a", "b"], owned_partitions=[]).encode(3)),
            ("m2", None, codec.Subscription(topics=["a", "b"], owned_partitions=bad).encode(1)),
            ("m3", None, codec.Subscription(topics=["a", "b"], owned_partitions=bad).encode(1))]
    with pytest.raises(AssignmentError, match=r"member 'm2': bad owned partition 'b'--3"):
        leader_assignments("cooperative-sticky", join_response(subs), {"a": 2, "b": 2}, implementation=implementation)


def second_generation_group():
    """Cooperative members that each own what a first rebalance gave them (so every member's bytes differ)."""
    counts = {t: 6 for t in ("a", "b", "\u00e9")}
    first = [GroupMember(f"m{i}", None, codec.Subscription(topics=sorted(counts))) for i in range(5)]
    result = assign("cooperative-sticky", first, counts)
    subs = []
    for i, m in enumerate(first):
        owned = {}
        for t, p in result[m.member_id]:
            owned.setdefault(t, []).append(p)
        sub = codec.Subscription(topics=sorted(counts), generation_id=1, rack_id=None,
                                 owned_partitions=[codec.SubscriptionTopicPartition(topic=t, partitions=ps)
                                                   for t, ps in owned.items()])
        subs.append((m.member_id, None, sub.encode(3 - i % 4)))
    return subs, counts


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compiled_leader_path_never_decodes_subscription_objects(monkeypatch, strategy):
    """Every built-in strategy reads the members' bytes with the compiled
    reader: neither the codec's Subscription objects nor the pure twin."""
    if "cython" not in IMPLEMENTATIONS:
        pytest.skip("compiled kernels not built")
    import kwire.assignors._leader as leader
    import kwire.assignors._leader_py as leader_py

    def refuse(*_a, **_k):
        raise AssertionError("the compiled leader path decoded Subscription objects")

    subs, counts = second_generation_group()
    want = old_leader_path(strategy, subs, counts, None, "cython")
    monkeypatch.setattr(leader, "codec", SimpleNamespace(Subscription=SimpleNamespace(decode=refuse)))
    monkeypatch.setattr(leader_py, "subscription_columns", refuse)
    got = leader_assignments(strategy, join_response(subs), counts, implementation="cython")
    assert [(x.member_id, x.assignment) for x in got] == want


def test_bad_version_and_unwritable_names_still_get_the_codecs_answer():
    subs = [("m", None, codec.Subscription(topics=["a"]).encode(0))]
    with pytest.raises(KwireError):
        leader_assignments("range", join_response(subs), {"a": 1}, version=4)
    v0 = leader_assignments("range", join_response(subs), {"a": 1}, version=0)
    assert v0[0].assignment == encode_member_assignment([("a", [0])], 0)


def grouped_by_bytes(members):
    """What ``member_rows`` must return, by its definition: members whose
    metadata bytes are equal share a row, rows numbered by first sender;
    the first member whose metadata is not bytes-like is refused by index."""
    rows, keys, firsts, which = {}, [], [], []
    for i, m in enumerate(members):
        metadata = getattr(m, "metadata", None)
        if not isinstance(metadata, (bytes, bytearray, memoryview)):
            return f"members[{i}].metadata must be Subscription bytes, got {type(metadata).__name__}"
        key = bytes(metadata)
        if key not in rows:
            rows[key] = len(keys)
            keys.append(key)
            firsts.append(i)
        which.append(rows[key])
    ids = [getattr(m, "member_id", None) for m in members]
    instances = [getattr(m, "group_instance_id", None) for m in members]
    return ids, instances, which, keys, firsts


def random_metadata(rng, pool):
    raw = rng.choice(pool)
    kind = rng.random()
    if kind < 0.03:
        return rng.choice([None, "str", 7, [1, 2]])
    if kind < 0.12:
        return bytearray(raw)
    if kind < 0.2:
        return memoryview(raw)
    return raw if kind < 0.6 else bytes(bytearray(raw))  # equal bytes, another object


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_member_rows_groups_members_by_their_bytes(implementation):
    kernels = load_kernels("leader", implementation)
    rng = random.Random(12)
    for _ in range(400):
        # Strings sharing a length, head and tail, so sketches collide.
        base = bytes(rng.randrange(256) for _ in range(rng.choice([0, 5, 40, 200])))
        pool = [base]
        for _ in range(rng.randint(0, 4)):
            if len(base) > 130:
                mid = bytearray(base)
                mid[rng.randrange(32, len(base) - 96)] ^= 0xFF
                pool.append(bytes(mid))
            else:
                pool.append(bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 150]))))
        members = []
        for i in range(rng.randint(0, 30)):
            fields = {"metadata": random_metadata(rng, pool), "member_id": f"m{i}"}
            if rng.random() < 0.5:
                fields["group_instance_id"] = f"i{i}"
            if rng.random() < 0.05:
                del fields["member_id"]
            members.append(SimpleNamespace(**fields))
        want = grouped_by_bytes(members)
        if isinstance(want, str):
            with pytest.raises(AssignmentError) as exc:
                kernels.member_rows(members)
            assert str(exc.value) == want
            continue
        ids, instances, which, keys, firsts = kernels.member_rows(members)
        assert which.dtype == np.intp and which.tolist() == want[2]
        assert (ids, instances, keys, firsts) == (want[0], want[1], want[3], want[4])
        # A key is bytes, or (compiled) the read-only view a member sent, kept with no copy.
        for k, first in zip(keys, firsts):
            assert type(k) is bytes or (k is members[first].metadata and k.readonly), (implementation, k)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_response_decoded_with_views_gives_the_same_bytes(strategy, implementation):
    """``decode_response(..., views=True)``: the members' metadata are views of the frame, which the
    leader reads where they lie; every answer and every error is the copying decode's."""
    rng = random.Random("views-" + strategy)
    for k in range(40):
        subs, counts, racks = random_group(rng, strategy)
        members = [codec.JoinGroupResponseMember(member_id=mid, group_instance_id=inst, metadata=raw)
                   for mid, inst, raw in subs]
        frame = codec.encode_response(codec.JoinGroupResponse(
            generation_id=7, protocol_type="consumer", protocol_name=strategy, leader=subs[0][0],
            member_id=subs[0][0], members=members), 9, correlation_id=k)
        answers = []
        for views in (False, True):
            _header, response = codec.decode_response(frame, 11, 9, views=views)
            assert all(isinstance(m.metadata, memoryview) == views for m in response.members)
            try:
                answers.append((leader_sync_request(strategy, response, counts, partition_racks=racks,
                                                    implementation=implementation, group_id="g", correlation_id=k),
                                leader_assignments(strategy, response, counts, partition_racks=racks,
                                                   implementation=implementation)))
            except KwireError as exc:
                answers.append((type(exc), str(exc)))
        assert answers[1] == answers[0], k


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_topic_list_with_repeats_counts_each_topic_once(strategy, implementation):
    """One shared list, with or without repeats, and several lists: the
    paths that skip or keep the de-duplication give the member-level bytes."""
    counts = {"a": 5, "b": 3, "c": 2}
    lists = [["a", "b", "c"], ["b", "a", "b", "a"], ["c", "a", "c"]]
    for chosen in ([0], [1], [2], [0, 1], [1, 2], [2, 0, 1]):
        subs = [(f"m{i}", None, codec.Subscription(topics=lists[chosen[i % len(chosen)]]).encode(3)) for i in range(7)]
        got = leader_assignments(strategy, join_response(subs), counts, implementation=implementation)
        assert [(x.member_id, x.assignment) for x in got] == old_leader_path(strategy, subs, counts, None, implementation)
        group = leader_group(strategy, join_response(subs), counts, implementation=implementation)
        for i in range(len(subs)):
            row = group.sub_topics[group.sub_indptr[i]:group.sub_indptr[i + 1]]
            assert [group.topics[t] for t in row] == list(dict.fromkeys(lists[chosen[i % len(chosen)]]))


def sync_frame_by_the_codec(strategy, response, counts, racks, implementation, version, assignment_version=3,
                            **request):
    """What ``leader_sync_request`` must give, by its definition: the codec's frame of a SyncGroupRequest
    holding ``leader_assignments``."""
    assignments = leader_assignments(strategy, response, counts, partition_racks=racks,
                                     implementation=implementation, version=assignment_version)
    req = codec.SyncGroupRequest(group_id=request["group_id"], generation_id=response.generation_id,
                                 member_id=response.member_id, group_instance_id=request.get("group_instance_id"),
                                 protocol_type=response.protocol_type, protocol_name=response.protocol_name,
                                 assignments=assignments)
    return codec.encode_request(req, version, correlation_id=request["correlation_id"],
                                client_id=request.get("client_id"))


def sync_response(subs, strategy):
    response = join_response(subs)
    response.generation_id, response.member_id = 7, subs[0][0]
    response.protocol_type, response.protocol_name = "consumer", strategy
    return response


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_sync_request_frame_is_the_codecs_frame(strategy, implementation):
    """Every SyncGroupRequest version (classic int16/int32 lengths; flexible varints and tag sections),
    random groups (ids of any length, non-ASCII, racks), written straight from the arrays by either kernel."""
    rng = random.Random("sync-" + strategy)
    for k in range(30):
        subs, counts, racks = random_group(rng, strategy)
        if k % 3 == 0:  # ids whose lengths take a second varint byte, and non-ASCII ones
            subs = [("é" * rng.randrange(60, 200) + str(i), inst, raw) for i, (_, inst, raw) in enumerate(subs)]
        response = sync_response(subs, strategy)
        for version in range(codec.SyncGroupRequest.min_version, codec.SyncGroupRequest.max_version + 1):
            request = dict(group_id="grp", correlation_id=k, client_id=rng.choice([None, "cli"]),
                           group_instance_id="static-1" if version >= 3 else None)
            try:
                want = sync_frame_by_the_codec(strategy, response, counts, racks, implementation, version, **request)
            except KwireError as exc:
                with pytest.raises(type(exc)):
                    leader_sync_request(strategy, response, counts, partition_racks=racks,
                                        implementation=implementation, version=version, **request)
                continue
            got = leader_sync_request(strategy, response, counts, partition_racks=racks,
                                      implementation=implementation, version=version, **request)
            assert got == want, (k, version)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_sync_request_frame_leaves_what_it_does_not_write_to_the_codec(implementation):
    sub = codec.Subscription(topics=["a", "b"]).encode(3)
    counts = {"a": 3, "b": 2}
    request = dict(group_id="g", correlation_id=1)
    # An id past an int16 length: the codec's EncodeError; a str subclass or an unpaired surrogate: the
    # codec's answer, whatever it is; an Assignment version kwire does not know: the codec's error too.
    for ids in (["x" * 0x8000], ["m", "\ud800"], [type("Id", (str,), {})("m"), "n"]):
        response = sync_response([(mid, None, sub) for mid in ids], "range")
        try:
            want = ("ok", sync_frame_by_the_codec("range", response, counts, None, implementation, 5, **request))
        except KwireError as exc:
            want = ("err", type(exc))
        try:
            got = ("ok", leader_sync_request("range", response, counts, implementation=implementation, **request))
        except KwireError as exc:
            got = ("err", type(exc))
        assert got == want
    response = sync_response([("m", None, sub)], "range")
    with pytest.raises(KwireError):
        leader_sync_request("range", response, counts, implementation=implementation, assignment_version=4,
                            **request)
    with pytest.raises(AssignmentError):
        leader_sync_request("range", None, counts, implementation=implementation, **request)
    with pytest.raises(KwireError):  # no generation_id: the codec's typed error, not an AttributeError
        leader_sync_request("range", join_response([("m", None, sub)]), counts, implementation=implementation,
                            **request)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_frame_of_many_megabytes_is_the_codecs_frame(implementation):
    """Past 8 MiB the compiled kernel asks for huge pages for the frame it writes: the bytes stay the codec's."""
    sub = codec.Subscription(topics=["big", "small"]).encode(3)
    response = sync_response([("m-1", None, sub), ("m-2", None, sub)], "range")
    counts = {"big": 3_000_000, "small": 5}
    request = dict(group_id="g", correlation_id=3)
    got = leader_sync_request("range", response, counts, implementation=implementation, **request)
    assert len(got) > 8 << 20
    assert got == sync_frame_by_the_codec("range", response, counts, None, implementation, 5, **request)


def sticky_v1_bytes(entries, generation):
    """StickyAssignorUserData V1 written by hand, so a topic name can be any bytes."""
    out = struct.pack(">i", len(entries))
    for name, parts in entries:
        out += struct.pack(">h", len(name)) + name + struct.pack(f">i{len(parts)}i", len(parts), *parts)
    return out + struct.pack(">i", generation)


def odd_sticky_user_data(rng, topics, counts):
    """Eager sticky userData of every kind a peer may send: V1 as Java writes
    it (claims past a topic's end, claimed twice, on topics the member does
    not subscribe to or the metadata does not know), V0, none, empty,
    truncated, with bytes after it, a byte flipped, garbage, a topic that is
    not UTF-8, now and then a negative index."""
    entries = []
    for t in rng.sample(topics + ["gone", "\u00e9t\u00e9"], rng.randint(0, 3)):
        end = counts.get(t, 4)
        parts = rng.sample(range(end + 2), rng.randint(0, min(end + 2, 4)))
        if parts and rng.random() < 0.2:
            parts.append(parts[0])
        if rng.random() < 0.03:
            parts.append(-1)
        entries.append((t.encode(), parts))
    v1 = sticky_v1_bytes(entries, rng.randint(-1, 4))
    kind = rng.randrange(10)
    if kind == 0:
        return None
    if kind == 1:
        return b""
    if kind == 2:  # V0: no generation
        return v1[:-4]
    if kind == 3:
        return v1[:rng.randrange(len(v1))]
    if kind == 4:
        return v1 + bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
    if kind == 5:
        flipped = bytearray(v1)
        flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        return bytes(flipped)
    if kind == 6:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 24)))
    if kind == 7 and entries:
        entries[rng.randrange(len(entries))] = (rng.choice([b"\xe9t\xe9", b"a\xff", b"\xed\xa0\x80"]), [0, 1])
        return sticky_v1_bytes(entries, rng.randint(-1, 4))
    return v1


def odd_sticky_group(rng):
    topics = rng.sample(["a", "b", "c", "\u00e9"], rng.randint(1, 4))
    counts = {t: rng.randint(0, 6) for t in topics}
    subs = []
    for i in range(rng.randint(1, 8)):
        if subs and rng.random() < 0.2:  # the same bytes as another member
            subs.append((f"m{i}", None, rng.choice(subs)[2]))
            continue
        sub = codec.Subscription(topics=sorted(rng.sample(topics, rng.randint(1, len(topics)))),
                                 user_data=odd_sticky_user_data(rng, topics, counts),
                                 generation_id=rng.choice([-1, 1, 2]))
        subs.append((f"m{i}", rng.choice([None, f"inst-{i}"]), sub.encode(rng.choice([0, 1, 2, 3]))))
    return subs, counts


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_leader_path_reads_any_sticky_user_data_as_the_member_level_path(implementation):
    """The kernels read the userData that is one V1 message, the lenient
    reader the rest: the payloads and the frame are the member-level path's,
    errors included."""
    rng = random.Random("odd-sticky")
    kernels = load_kernels("leader", implementation)
    read = set()
    for _ in range(300):
        subs, counts = odd_sticky_group(rng)
        user_data = [codec.Subscription.decode(raw).user_data for _, _, raw in subs]
        read.update(kernels.sticky_userdata_columns(user_data, []).read.tolist())
        response = sync_response(subs, "sticky")
        try:
            want = old_leader_path("sticky", subs, counts, None, implementation)
        except KwireError as exc:
            with pytest.raises(type(exc)) as got:
                leader_assignments("sticky", response, counts, implementation=implementation)
            assert str(got.value) == str(exc)
            continue
        got = leader_assignments("sticky", response, counts, implementation=implementation)
        assert [(x.member_id, x.assignment) for x in got] == want
        req = codec.SyncGroupRequest(
            group_id="g", generation_id=response.generation_id, member_id=response.member_id,
            protocol_type="consumer", protocol_name="sticky",
            assignments=[codec.SyncGroupRequestAssignment(member_id=mid, assignment=a) for mid, a in want])
        frame = leader_sync_request("sticky", response, counts, group_id="g", correlation_id=1,
                                    implementation=implementation)
        assert frame == codec.encode_request(req, 5, correlation_id=1)
    assert read == {True, False}  # both readers were exercised


def test_both_kernels_read_sticky_user_data_into_the_same_columns():
    """Identical columns from both twins, and every row they read is what
    Java's lenient reader reads from it."""
    if "cython" not in IMPLEMENTATIONS:
        pytest.skip("compiled kernels not built")
    compiled, pure = load_kernels("leader", "cython"), load_kernels("leader", "python")
    rng = random.Random("sticky-columns")
    for _ in range(500):
        topics = rng.sample(["a", "b", "c", "\u00e9"], rng.randint(1, 4))
        counts = {t: rng.randint(0, 6) for t in topics}
        user_data = [odd_sticky_user_data(rng, topics, counts) for _ in range(rng.randint(0, 6))]
        names = rng.sample(["a", "b", "zz", "\u00e9"], rng.randint(0, 4))
        got, want = compiled.sticky_userdata_columns(user_data, names), pure.sticky_userdata_columns(user_data, names)
        assert got.claims.names == want.claims.names
        assert got.claims.names[:len(names)] == names
        for a, b in ((got.read, want.read), (got.generation, want.generation), (got.claims.ptr, want.claims.ptr),
                     (got.claims.topic, want.claims.topic), (got.claims.partition, want.claims.partition)):
            assert a.dtype == b.dtype and a.tolist() == b.tolist()
        for k in np.flatnonzero(got.read).tolist():
            row = slice(got.claims.ptr[k], got.claims.ptr[k + 1])
            claims = [(got.claims.names[t], p) for t, p in zip(got.claims.topic[row].tolist(),
                                                                got.claims.partition[row].tolist())]
            assert (claims, int(got.generation[k])) == decode_sticky_userdata(user_data[k])


def test_compiled_leader_path_reads_java_sticky_user_data_without_an_object_per_partition(monkeypatch):
    """A second-generation eager group, each member's userData its last
    assignment as a Java member writes it: the compiled kernels read every
    one, and nothing decodes a claim into a ``(topic, partition)`` tuple."""
    if "cython" not in IMPLEMENTATIONS:
        pytest.skip("compiled kernels not built")
    import kwire.assignors._leader_py as leader_py
    import kwire.assignors._userdata as userdata

    counts = {t: 7 for t in ("a", "b", "\u00e9")}
    first = [GroupMember(f"m{i}", None, codec.Subscription(topics=sorted(counts))) for i in range(6)]
    result = assign("sticky", first, counts)
    subs = [(m.member_id, None, codec.Subscription(topics=sorted(counts), generation_id=1,
                                                   user_data=sticky_user_data(result[m.member_id], 1)).encode(3))
            for m in first[1:]]
    want = old_leader_path("sticky", subs, counts, None, "cython")

    def refuse(*_a, **_k):
        raise AssertionError("the compiled leader path decoded sticky userData into tuples")

    monkeypatch.setattr(userdata, "decode_sticky_userdata", refuse)
    monkeypatch.setattr(leader_py, "sticky_userdata_columns", refuse)
    got = leader_assignments("sticky", join_response(subs), counts, implementation="cython")
    assert [(x.member_id, x.assignment) for x in got] == want


def _same_subscription_response(rng, topics, members):
    """A JoinGroupResponse whose every member sends the same Subscription (some of them static)."""
    raw = codec.Subscription(topics=topics).encode(rng.choice([0, 1, 3]))
    return SimpleNamespace(members=[
        SimpleNamespace(member_id=f"c-{rng.randrange(10**6)}-{i}",
                        group_instance_id=f"i{rng.randrange(100)}-{i}" if rng.random() < 0.2 else None,
                        metadata=raw) for i in range(members)])


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_shared_topic_list_is_kept_once_and_assigns_as_the_expanded_group(impl):
    """A leader group whose members all send one topic list keeps that list once, and range and roundrobin
    (whose kernels then read it once, first_seen's crowded buckets included) give what the same group with
    the list copied per member gives."""
    rng = random.Random(2024)
    pool = [f"topic-{i}" for i in range(60)] + ["\u00e9t\u00e9", "\U0001f600x", "Aa", "BB"]  # "Aa", "BB": one hash
    for _ in range(150):
        listed = rng.sample(pool, rng.randint(1, 40))
        if rng.random() < 0.3:
            listed += rng.sample(listed, rng.randint(1, len(listed)))  # a topic listed twice counts once
        counts = {t: rng.choice([0, 1, 2, 3, 7, 16]) for t in pool if rng.random() < 0.9}
        resp = _same_subscription_response(rng, listed, rng.randint(1, 25))
        for strategy in ("range", "roundrobin"):
            group = leader_group(strategy, resp, counts, implementation=impl)
            assert group.shared_topics() is not None
            got = assign_arrays(strategy, group, implementation=impl)
            expanded = ArrayGroup(group.topics, group.partition_counts, group.member_ids, group.sub_indptr,
                                  group.sub_topics, group_instance_ids=group.group_instance_ids, racks=group.racks)
            assert expanded.shared_topics() is None
            want = assign_arrays(strategy, expanded, implementation=impl)
            for column in ("indptr", "topic", "partition"):
                np.testing.assert_array_equal(getattr(got, column), getattr(want, column))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_subscribers_of_a_shared_list_are_those_of_the_list_copied_per_member(impl):
    kernels = load_kernels("rangerr", impl)
    rng = np.random.default_rng(5)
    for _ in range(300):
        T, M = int(rng.integers(1, 30)), int(rng.integers(0, 20))
        topic_list = rng.integers(0, T, int(rng.integers(0, 2 * T))).astype(np.int32)  # repeats included
        member_order = rng.permutation(M).astype(np.int32)
        got = kernels.subscribers_of_shared_topics(T, topic_list, member_order)
        want = kernels.subscribers_by_topic(T, np.arange(M + 1, dtype=np.int64) * len(topic_list),
                                            np.tile(topic_list, M), member_order)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    for bad in (-1, 5):
        with pytest.raises(IndexError, match=f"topic index {bad} out of range for 5 topics"):
            kernels.subscribers_of_shared_topics(5, np.array([0, bad], dtype=np.int32), np.arange(3, dtype=np.int32))
