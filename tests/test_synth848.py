"""``kwire synth --protocol consumer|mixed``: captures of KIP-848 consumer-protocol groups (and groups mid-upgrade)
generated through kwire's own coordinator and members.

The frames are checked with kwire's codec: every request is answered on its connection, heartbeats carry the
versions the clients send, Metadata names the topic ids the heartbeats use, and what the frames say (member
epochs, assignments, errors) is what the simulation's ground truth recorded from the coordinator's state.
"""

import collections
import os
import struct
import subprocess
import sys

import pytest

pytest.importorskip("pyarrow")

import pyarrow as pa  # noqa: E402

from kwire import codec  # noqa: E402
from kwire.codec import ErrorCode  # noqa: E402
from kwire.errors import ArgumentValueError  # noqa: E402
from kwire.pipeline._capture import read_capture  # noqa: E402
from kwire.pipeline._synth_consumer import ConsumerGroupSim, topic_id  # noqa: E402
from kwire.pipeline._synth_fleet import simulate_consumer_group, synth  # noqa: E402
from kwire.pipeline._synth_stream import MS, SECOND, Frames  # noqa: E402
from kwire.pipeline._synth import topic_pool  # noqa: E402

CG = codec.ConsumerGroupHeartbeatRequest


def exchanges(table):
    """Every request with its answer: ``[(ts_req, ts_resp, conn, header, request, response)]`` (``response`` None
    when the capture ends first), decoded by kwire's codec."""
    cols = table.to_pydict() if isinstance(table, pa.Table) else table
    pending, out = {}, []
    for ts, conn, direction, frame in zip(cols["ts"], cols["conn"], cols["direction"], cols["frame"]):
        ts = ts if isinstance(ts, int) else int(ts.timestamp() * SECOND)
        if direction == 0:
            header, request = codec.decode_request(frame)
            entry = [ts, None, conn, header, request, None]
            pending[(conn, header.correlation_id)] = entry
            out.append(entry)
        else:
            corr = struct.unpack(">i", frame[4:8])[0]
            entry = pending.pop((conn, corr))
            entry[1] = ts
            entry[5] = codec.decode_response(frame, entry[4].api_key, entry[3].request_api_version)[1]
    return out


def frames_of(out: Frames):
    return {"ts": out.ts, "conn": out.conn, "direction": out.direction, "frame": out.frame}


def group_id_of(request):
    if hasattr(request, "group_id"):
        return request.group_id
    if isinstance(request, codec.ConsumerGroupDescribeRequest):
        return request.group_ids[0]
    if isinstance(request, codec.FindCoordinatorRequest):
        return request.coordinator_keys[0] if request.coordinator_keys else request.key
    return None


# -- determinism and streaming ----------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", ["consumer", "mixed"])
def test_same_seed_same_bytes_whatever_the_chunking(tmp_path, protocol):
    kw = dict(protocol=protocol, groups=6, seed=5, duration_s=120, corrupt_rate=0.01, describe_every_ms=20_000)
    whole = tmp_path / "whole.parquet"
    n = synth(whole, chunk_groups=6, **kw)
    for chunk_groups, batch_rows in [(1, 64), (4, 8192)]:
        streamed = tmp_path / f"streamed-{chunk_groups}.parquet"
        assert synth(streamed, chunk_groups=chunk_groups, batch_rows=batch_rows, **kw) == n
        assert streamed.read_bytes() == whole.read_bytes()
    capture = read_capture(whole)
    assert capture.num_rows == n
    assert capture.column("truncated").to_numpy().any()   # --corrupt-rate applies as for classic captures
    other = tmp_path / "other-seed.parquet"
    synth(other, **{**kw, "seed": 6})
    assert other.read_bytes() != whole.read_bytes()


@pytest.mark.parametrize("protocol", ["consumer", "mixed"])
def test_same_bytes_whatever_the_hash_seed_and_the_twin(tmp_path, protocol):
    # The coordinator's topic metadata and targets must not take their order from a set of names, whose
    # iteration changes with PYTHONHASHSEED: targets are sticky to the previous ones' order, so one run's
    # order would change later assignments, not only the bytes.  The pure twins must give the same bytes.
    outs = []
    for seed, pure in [("1", False), ("2", False), ("3", True)]:
        out = tmp_path / f"{seed}.parquet"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        env.pop("KWIRE_NO_EXTENSIONS", None)
        if pure:
            env["KWIRE_NO_EXTENSIONS"] = "1"
        subprocess.run([sys.executable, "-m", "kwire", "synth", str(out), "--protocol", protocol, "--groups", "8",
                        "--seed", "3", "--duration", "120"], env=env, check=True, capture_output=True, timeout=120)
        outs.append(read_capture(out))
    assert outs[0].equals(outs[1]) and outs[0].equals(outs[2])


def test_classic_is_the_classic_generator(tmp_path):
    from kwire.pipeline._synth import synth as synth_classic

    synth(tmp_path / "a.parquet", groups=3, seed=2, duration_s=60)
    synth_classic(tmp_path / "b.parquet", groups=3, seed=2, duration_s=60)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


@pytest.mark.parametrize("kw", [dict(protocol="kip848"), dict(protocol="classic", describe_every_ms=1000),
                                dict(protocol="consumer", describe_every_ms=-1), dict(protocol="consumer", groups=-1)])
def test_bad_arguments_are_refused(tmp_path, kw):
    with pytest.raises(ArgumentValueError):
        synth(tmp_path / "x.parquet", **{"groups": 2, **kw})
    assert list(tmp_path.iterdir()) == []


# -- what the frames hold --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def consumer_capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("synth848") / "consumer.parquet"
    synth(path, protocol="consumer", groups=40, seed=3, duration_s=300, describe_every_ms=30_000)
    return exchanges(read_capture(path))


def test_every_request_is_answered_in_order_on_its_connection(consumer_capture):
    for ts_req, ts_resp, *_ in consumer_capture:
        assert ts_resp is not None and ts_resp >= ts_req
    apis = collections.Counter(type(x[4]).__name__ for x in consumer_capture)
    assert set(apis) == {"ConsumerGroupHeartbeatRequest", "FindCoordinatorRequest", "MetadataRequest",
                         "ConsumerGroupDescribeRequest"}
    assert apis["ConsumerGroupHeartbeatRequest"] > 10 * apis["MetadataRequest"]


def test_heartbeats_carry_the_clients_versions_and_the_coordinators_interval(consumer_capture):
    versions = collections.Counter()
    first_joins = collections.Counter()
    for _, _, _, header, req, resp in consumer_capture:
        if isinstance(req, CG):
            versions[header.request_api_version] += 1
            if req.member_epoch == 0:
                # Java builds v0 and lets the coordinator name it (a rejoin keeps the id it was given);
                # librdkafka names itself and sends v1.
                first_joins[(header.request_api_version, req.member_id == "")] += 1
                assert req.topic_partitions == [] and req.subscribed_topic_names and req.rebalance_timeout_ms > 0
            if resp.error_code == 0 and req.member_epoch >= 0:
                assert resp.heartbeat_interval_ms == 3000 and resp.member_id
        elif isinstance(req, codec.MetadataRequest):
            assert header.request_api_version == 12
    assert set(versions) == {0, 1}
    assert first_joins[(0, True)] and first_joins[(1, False)] and not first_joins[(1, True)]


def test_metadata_names_the_topic_ids_of_every_assignment(consumer_capture):
    ids = {}
    for _, _, _, _, req, resp in consumer_capture:
        if isinstance(resp, codec.MetadataResponse):
            for t in resp.topics:
                assert ids.setdefault(t.topic_id, t.name) == t.name
    pool = topic_pool(3)
    assert all(ids[topic_id(name, 3)] == name for name in ids.values())
    assigned = {tp.topic_id for *_, req, resp in consumer_capture if isinstance(resp, codec.ConsumerGroupHeartbeatResponse)
                and resp.assignment is not None for tp in resp.assignment.topic_partitions}
    assert assigned and assigned <= set(ids)
    sizes = {}
    for *_, req, resp in consumer_capture:
        if isinstance(resp, codec.ConsumerGroupHeartbeatResponse) and resp.assignment is not None:
            for tp in resp.assignment.topic_partitions:
                assert max(tp.partitions, default=-1) < pool[ids[tp.topic_id]]
                sizes[ids[tp.topic_id]] = pool[ids[tp.topic_id]]
    assert sizes


def test_the_fleet_joins_leaves_and_is_fenced(consumer_capture):
    epochs = collections.Counter()
    errors = collections.Counter()
    for *_, req, resp in consumer_capture:
        if isinstance(req, CG):
            epochs[max(req.member_epoch, 1) if req.member_epoch > 0 else req.member_epoch] += 1
            if resp.error_code:
                errors[ErrorCode(resp.error_code)] += 1
    assert epochs[0] and epochs[-1] and epochs[1]
    assert errors[ErrorCode.UNKNOWN_MEMBER_ID]   # members that came back after being fenced


def test_describe_answers_the_groups_state(consumer_capture):
    described = [resp.groups[0] for *_, req, resp in consumer_capture
                 if isinstance(resp, codec.ConsumerGroupDescribeResponse)]
    assert described
    live = [g for g in described if g.error_code == 0]
    assert live and all(g.group_epoch >= g.assignment_epoch and g.group_state in
                        ("Empty", "Assigning", "Reconciling", "Stable") for g in live)
    assert any(g.group_state == "Stable" and g.members for g in live)


# -- ground truth ----------------------------------------------------------------------------------------------

POOL = {"orders": 6, "payments": 3, "audit": 2}


def scripted(**kw):
    out = Frames()
    sim = ConsumerGroupSim(out, "g", POOL, session_timeout_ms=10_000, heartbeat_interval_ms=1000, **kw)
    return out, sim


def heartbeats(out, sim):
    return [x for x in exchanges(frames_of(out)) if isinstance(x[4], CG)]


def test_ground_truth_is_what_the_frames_say():
    out, sim = scripted()
    a = sim.start(0, ["orders", "payments"])
    b = sim.start(2 * SECOND, ["orders", "payments"])
    c = sim.start(4 * SECOND, ["orders"])
    sim.run_until(20 * SECOND)
    sim.leave(c, 20 * SECOND)
    sim.crash(b, 30 * SECOND)
    sim.run_until(60 * SECOND)
    hbs = heartbeats(out, sim)
    members = sim.truth["members"]
    # The coordinator's epoch and assignment of each member, as each answer carried them.
    for ts_req, ts_resp, _, _, req, resp in hbs:
        if resp is None or resp.error_code or req.member_epoch < 0:
            continue
        history = members[resp.member_id]
        at = [h for h in history if h[0] <= ts_resp]
        assert at and at[-1][1] == resp.member_epoch
        if resp.assignment is not None:
            names = {topic_id(n): n for n in POOL}
            got = sorted((names[tp.topic_id], p) for tp in resp.assignment.topic_partitions for p in tp.partitions)
            assert got == at[-1][2]
    # Joins at epoch 0, C's clean leave at -1, B fenced one session timeout after its last heartbeat.
    assert [r.member_epoch for *_, r, _ in hbs if r.member_id == "" or r.member_epoch == 0].count(0) == 3
    (leave,) = [x for x in hbs if x[4].member_epoch == -1]
    assert leave[5].member_epoch == -1 and members[leave[4].member_id][-1][1] is None
    b_id = b.member_id
    last_b = max(x[0] for x in hbs if x[4].member_id == b_id)
    gone_b = members[b_id][-1]
    assert gone_b[1] is None and 10 * SECOND <= gone_b[0] - last_b <= 10 * SECOND + 10 * MS
    # A holds everything at the end, at the group's target epoch; the epochs only went up.
    group = sim.truth["group"]
    assert [e for _, kind, e, _ in group] == sorted(e for _, kind, e, _ in group)
    assert members[a.member_id][-1][2] == sorted((t, p) for t in ("orders", "payments") for p in range(POOL[t]))
    assert members[a.member_id][-1][1] == group[-1][3]
    no_partition_twice(sim)


def no_partition_twice(sim):
    """At every recorded instant, no partition in two members' assignments."""
    changes = sorted((h[0], m, h[2]) for m, hs in sim.truth["members"].items() for h in hs)
    held = {}
    for _, member, parts in changes:
        held[member] = set(parts or ())
        owners = collections.Counter(tp for ps in held.values() for tp in ps)
        assert max(owners.values(), default=0) <= 1


def test_static_member_leaves_with_minus_two_and_rejoins_with_its_partitions():
    out, sim = scripted(static=True)
    a = sim.start(0, ["orders"])
    b = sim.start(SECOND, ["orders"])
    sim.run_until(10 * SECOND)
    sim.leave(b, 10 * SECOND)
    b2 = sim.start(13 * SECOND, ["orders"], instance_id=b.instance_id)
    sim.run_until(25 * SECOND)
    hbs = heartbeats(out, sim)
    (leave,) = [x for x in hbs if x[4].member_epoch < 0]
    assert leave[4].member_epoch == -2 and leave[4].instance_id == b.instance_id and leave[5].member_epoch == -2
    before = sim.truth["members"][b.member_id]
    assert before[-1][1] is None   # replaced by the new member id
    after = sim.truth["members"][b2.member_id]
    assert after[-1][2] == [p for p in before[-2][2]]
    # No rebalance: the group epoch did not move for the restart.
    assert sim.truth["group"][-1][0] < 10 * SECOND
    assert a.machine.assignment and b2.machine.assignment


def test_slow_revoker_acks_late_and_a_short_rebalance_timeout_fences_it():
    out, sim = scripted()
    slow = sim.start(0, ["orders"], revoke_delay_ms=4000)
    sim.start(5 * SECOND, ["orders"])
    sim.run_until(20 * SECOND)
    hbs = heartbeats(out, sim)
    revoking = [x for x in hbs if x[4].member_id == slow.member_id and x[5].assignment is not None
                and len(x[5].assignment.topic_partitions[0].partitions) < POOL["orders"] and x[0] > 5 * SECOND]
    ack = [x for x in hbs if x[4].member_id == slow.member_id and x[4].topic_partitions is not None
           and x[0] > revoking[0][1]]
    assert ack[0][0] - revoking[0][1] >= 4 * SECOND
    no_partition_twice(sim)

    out, sim = scripted()
    slow = sim.start(0, ["orders"], revoke_delay_ms=8000, rebalance_timeout_ms=3000)
    sim.start(5 * SECOND, ["orders"])
    sim.run_until(30 * SECOND)
    errors = [e for _, name, _, e in sim.truth["errors"] if name == slow.name]
    assert errors == [ErrorCode.UNKNOWN_MEMBER_ID]   # fenced by the revocation timeout, then rejoined
    history = sim.truth["members"][slow.member_id]
    fenced = [h[0] for h in history if h[1] is None]
    revoke_from = [x[1] for x in heartbeats(out, sim) if x[4].member_id == slow.member_id
                   and x[5].assignment is not None and x[0] > 5 * SECOND][0]
    # The revocation timer runs from the heartbeat that asked for the revocation, for the member's 3 s.
    assert len(fenced) == 1 and 3 * SECOND - 5 * MS <= fenced[0] - revoke_from <= 3 * SECOND + 10 * MS
    assert history[-1][1] is not None   # back with the same id at a new epoch
    no_partition_twice(sim)


def test_a_paused_member_comes_back_fenced_and_rejoins_with_its_id():
    out, sim = scripted()
    a = sim.start(0, ["orders"])
    sim.start(SECOND, ["orders"])
    sim.run_until(5 * SECOND)
    member_id = a.member_id
    sim.pause(a, 5 * SECOND, 15 * SECOND)
    sim.run_until(30 * SECOND)
    hbs = [x for x in heartbeats(out, sim) if x[4].member_id == member_id and x[0] > 19 * SECOND]
    assert hbs[0][5].error_code == ErrorCode.UNKNOWN_MEMBER_ID
    rejoin = hbs[1]
    assert rejoin[4].member_epoch == 0 and rejoin[5].error_code == 0 and rejoin[5].member_epoch > 0


def test_subscription_change_fetches_metadata_then_bumps_the_group_epoch():
    out, sim = scripted()
    a = sim.start(0, ["orders"])
    sim.run_until(5 * SECOND)
    sim.subscribe(a, 5 * SECOND, ["orders", "audit"])
    sim.run_until(10 * SECOND)
    xs = exchanges(frames_of(out))
    meta = [x for x in xs if isinstance(x[4], codec.MetadataRequest) and x[0] >= 5 * SECOND]
    sub = [x for x in xs if isinstance(x[4], CG) and x[4].subscribed_topic_names == ["audit", "orders"]]
    assert meta and sub and meta[0][1] < sub[0][0]
    assert sub[0][5].member_epoch == 2
    assert sim.truth["members"][a.member_id][-1][2] == sorted(
        [("audit", p) for p in range(2)] + [("orders", p) for p in range(6)])


# -- mixed groups ----------------------------------------------------------------------------------------------

def test_mixed_group_upgrades_online_and_classic_members_stay_inside():
    out, sim = scripted(classic_assignors=("range",))
    old1 = sim.start(0, ["orders"], protocol="classic")
    sim.start(500 * MS, ["orders"], protocol="classic")
    sim.run_until(10 * SECOND)
    assert sim.truth["group"][-1][1] == "classic"
    new = sim.start(10 * SECOND, ["orders"], protocol="consumer")
    sim.run_until(30 * SECOND)
    sim.leave(old1, 30 * SECOND)
    sim.start(32 * SECOND, ["orders"], protocol="consumer")
    sim.run_until(60 * SECOND)
    kinds = [k for _, k, *_ in sim.truth["group"]]
    assert kinds[0] == "classic" and "consumer" in kinds
    xs = exchanges(frames_of(out))
    apis = {type(x[4]).__name__ for x in xs if group_id_of(x[4]) == "g"}
    assert {"JoinGroupRequest", "SyncGroupRequest", "HeartbeatRequest", "LeaveGroupRequest", CG.__name__} <= apis
    # The classic member left inside the consumer group gets its member epoch as its generation.
    group = sim.coordinator.consumer.group("g")
    classic = [m for m in group.members.values() if m.classic is not None]
    assert len(classic) == 1 and len(group.members) == 3
    last_sync = [x for x in xs if isinstance(x[4], codec.SyncGroupRequest)][-1]
    assert last_sync[4].generation_id == classic[0].member_epoch or last_sync[5].error_code
    assert new.machine.assignment
    no_partition_twice(sim)


def test_mixed_fleet_has_both_protocols_in_one_group():
    out = Frames()
    pool = topic_pool(0)
    found = False
    for index in range(12):
        out.clear()
        sim = simulate_consumer_group(out, index, 0, 0, 300, pool, mixed=True)
        by_group = collections.defaultdict(set)
        for x in exchanges(frames_of(out)):
            by_group[group_id_of(x[4])].add(type(x[4]).__name__)
        apis = by_group[sim.group_id]
        found |= {"JoinGroupRequest", CG.__name__} <= apis and "consumer" in {k for _, k, *_ in sim.truth["group"]}
    assert found


# -- the batch decoder's columns -------------------------------------------------------------------------------

def test_batch_decoder_columns_are_the_ground_truth(tmp_path):
    # kwire.codec.batch_decoder() on a scripted capture: each heartbeat answer's member, epoch and assignment
    # (topic ids named through the Metadata responses' topic_ids) and each Describe are the coordinator's state.
    from kwire.pipeline import decode_capture

    out, sim = scripted(describe_every_ms=2000)
    a = sim.start(0, ["orders", "payments"])
    b = sim.start(3 * SECOND, ["orders"])
    sim.start(6 * SECOND, ["orders", "audit"])
    sim.run_until(12 * SECOND)
    sim.leave(b, 12 * SECOND)
    sim.subscribe(a, 15 * SECOND, ["payments"])
    sim.run_until(25 * SECOND)
    path = tmp_path / "scripted.parquet"
    out.write(path)
    frames = decode_capture(path)
    rows = frames.set_column(1, "ts", frames.column("ts").cast(pa.int64())).to_pylist()
    assert not [r for r in rows if r["decode_error"]]
    names = {}
    for r in rows:
        if r["api_key"] == codec.ApiKey.METADATA and r["direction"] == 1:
            assert r["topic_ids"] is not None and len(r["topic_ids"]) == len(r["topics"])
            names.update(zip(r["topic_ids"], r["topics"]))
    assert set(names.values()) == set(POOL)

    def truth_at(member_id, ts):
        return [h for h in sim.truth["members"][member_id] if h[0] <= ts][-1]

    checked = 0
    for r in rows:
        if r["api_key"] != codec.ApiKey.CONSUMER_GROUP_HEARTBEAT or r["direction"] != 1 or r["error_code"]:
            continue
        if r["generation_id"] < 0:
            continue   # a leave's answer
        assert r["heartbeat_interval_ms"] == 1000 and r["group_id"] == "g"
        _, epoch, assigned = truth_at(r["member_id"], r["ts"])
        assert r["generation_id"] == epoch
        if r["topic_partitions"] is not None:
            got = sorted((names[tp["topic_id"]], p) for tp in r["topic_partitions"] for p in tp["partitions"])
            assert got == assigned
            checked += 1
    assert checked >= 6
    describes = [r for r in rows if r["api_key"] == codec.ApiKey.CONSUMER_GROUP_DESCRIBE and r["direction"] == 1]
    assert len(describes) >= 10
    for r in describes:
        (g,) = r["described"]
        at = r["request_ts"].timestamp() * SECOND   # answered when the request arrived
        state = [s for s in sim.truth["group"] if s[0] <= at]
        assert (g["group_epoch"], g["assignment_epoch"]) == (state[-1][2:] if state else (0, 0))
        live = {m: truth_at(m, at)[1] for m, h in sim.truth["members"].items() if h[0][0] <= at}
        assert {m["member_id"]: m["member_epoch"] for m in g["members"]} == {
            m: e for m, e in live.items() if e is not None}


@pytest.mark.parametrize("protocol", ["consumer", "mixed"])
def test_ground_truth_of_a_whole_capture(tmp_path, protocol):
    # ground_truth() re-simulates what synth() wrote: per group, the epochs the answers carry are the truth's.
    from kwire.pipeline import decode_capture
    from kwire.pipeline._synth_fleet import ground_truth

    kw = dict(groups=8, seed=9, duration_s=240)
    synth(tmp_path / "c.parquet", protocol=protocol, **kw)
    truths = ground_truth(protocol, **kw)
    assert sorted(truths) == [f"group-{i:05d}" for i in range(8)]
    rows = decode_capture(tmp_path / "c.parquet").select(
        ["api_key", "direction", "group_id", "member_id", "generation_id", "error_code"]).to_pylist()
    answered = collections.defaultdict(set)
    for r in rows:
        if r["api_key"] == codec.ApiKey.CONSUMER_GROUP_HEARTBEAT and r["direction"] == 1 and not r["error_code"] \
                and r["generation_id"] > 0:
            answered[(r["group_id"], r["member_id"])].add(r["generation_id"])
    assert answered
    for (group_id, member_id), epochs in answered.items():
        truth = {e for _, e, _ in truths[group_id]["members"][member_id] if e is not None}
        assert epochs <= truth
    with pytest.raises(ArgumentValueError):
        ground_truth("classic", groups=1)
