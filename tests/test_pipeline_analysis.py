"""Rebalance, ownership and what-if analysis on captures with known history (no Spark)."""

import random
from collections import Counter

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

import kwire  # noqa: E402
from kwire.pipeline._events import COUNT_SCHEMA, DEFAULT_MAX_PARTITIONS, METADATA, STRATEGIES  # noqa: E402
from kwire.pipeline._metadata import MetadataCounts, metadata_partition_counts  # noqa: E402
from kwire.pipeline._timeline import (build_timeline, completed_generations, timelines_of,  # noqa: E402
                                      timelines_of_arrow)
from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._synth import MS, SECOND, Frames, GroupSim, synth, topic_pool  # noqa: E402

from tests.pipeline_captures import EXPECTED_RANGE, T0, scripted_capture  # noqa: E402
from tests.analysis_frames import (assignments_of, bad_frames_of, events_from_frames, rebalances_of,  # noqa: E402
                                   whatif_of)

@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    path = tmp_path_factory.mktemp("scripted") / "capture.parquet"
    sims = scripted_capture(path)
    events = events_from_frames(decode_capture(path))
    return path, sims, events


def _by_group(df, group):
    return df[df.group_id == group].sort_values(["generation_id"]).to_dict("records")


def test_rebalances_match_the_scripted_history(scripted):
    _path, (sim, _coop, members), events = scripted
    names = {m.member_id: n for m, n in zip(members, "ABCD")}
    rows = _by_group(rebalances_of(events), "orders-app")
    assert [r["generation_id"] for r in rows] == [1, 2, 3, 4, 5]
    for row, (gen, trigger, joined, left, moved, parts, errors), truth in zip(rows, EXPECTED_RANGE, sim.history):
        assert row["trigger"] == trigger, gen
        assert [names[m] for m in row["joined"]] == joined
        assert [names[m] for m in row["left"]] == left
        assert (None if row["moved_partitions"] != row["moved_partitions"] else row["moved_partitions"]) == moved
        assert row["partitions"] == parts
        assert list(row["error_codes"]) == errors, gen
        assert row["start_ts"] == truth["start"] and row["end_ts"] == truth["end"]
        assert row["stall_ms"] == (truth["end"] - truth["start"]) / 1000
        assert list(row["members"]) == truth["members"] and row["leader"] == truth["leader"]
        assert row["protocol_name"] == "range"


def test_cooperative_follow_up_is_recognised(scripted):
    _path, (_sim, coop, _m), events = scripted
    rows = _by_group(rebalances_of(events), "coop-app")
    assert [r["trigger"] for r in rows] == ["initial", "member_joined", "revocation_followup"]
    # Round one revokes without reassigning; round two hands the partition over.
    assert rows[1]["partitions"] < 4 and rows[2]["partitions"] == 4
    assert [r["end_ts"] for r in rows] == [h["end"] for h in coop.history]


def test_ownership_rows_follow_the_assignments(scripted):
    _path, (sim, _coop, _m), events = scripted
    rows = assignments_of(events)
    rows = rows[rows.group_id == "orders-app"]
    for truth in sim.history:
        gen = rows[rows.generation_id == truth["generation"]]
        owners = {(r.topic, r.partition): r.member_id for r in gen.itertuples()}
        assert owners == {tp: m for m, tps in truth["assignment"].items() for tp in tps}
    moved = rows.groupby("generation_id").moved.sum().to_dict()
    assert moved == {1: 0, 2: 1, 3: 3, 4: 2, 5: 0}


def test_whatif_range_reproduces_the_leader_and_counts_moves(scripted):
    _path, (sim, _coop, _m), events = scripted
    wi = whatif_of(events)
    wi = wi[wi.group_id == "orders-app"]
    observed = wi[wi.observed]
    assert list(observed.strategy) == ["range"] * 5
    assert list(observed.moved.fillna(-1).astype(int)) == [-1, 1, 3, 2, 0]
    assert wi[(wi.strategy == "range") & ~wi.observed].reproduces_observed.all()


def _assign_directly(strategy, gen_row_members, prev_lists, prev_gen, counts):
    """kwire.assign on member-level objects, with owned partitions carried
    the way clients carry them: sticky userData, cooperative Subscription fields."""
    members = []
    for mid, instance, topics in gen_row_members:
        mine = prev_lists.get(mid, [])
        groups = {}
        for t, p in mine:
            groups.setdefault(t, []).append(p)
        gen = prev_gen if mine else -1
        if strategy == "sticky":
            ud = kwire.StickyAssignorUserData(previous_assignment=[
                kwire.StickyTopicAssignment(topic=t, partitions=ps) for t, ps in groups.items()],
                generation=gen).encode(1)
            sub = kwire.Subscription(topics=list(topics), user_data=ud, generation_id=gen)
        elif strategy == "cooperative-sticky":
            sub = kwire.Subscription(topics=list(topics), generation_id=gen, owned_partitions=[
                kwire.SubscriptionTopicPartition(topic=t, partitions=ps) for t, ps in groups.items()])
        else:
            sub = kwire.Subscription(topics=list(topics))
        members.append(kwire.GroupMember(mid, instance, sub))
    subscribed = {t for _, _, ts in gen_row_members for t in ts}
    return kwire.assign(strategy, members, {t: counts.get(t, 0) for t in subscribed})


def test_whatif_numbers_agree_with_kwire_assign(tmp_path):
    path = tmp_path / "synth.parquet"
    synth(path, groups=12, seed=5, duration_s=240)
    events = events_from_frames(decode_capture(path))
    wi = whatif_of(events)
    checked = Counter()
    for tl in timelines_of(events):
        gid = tl.group_id
        gens = completed_generations(tl)
        for prev, cur in zip(gens, gens[1:]):
            prev_lists = prev.assignment
            prev_owner = {tp: m for m, tps in prev_lists.items() for tp in tps}
            for strategy in STRATEGIES:
                result = _assign_directly(strategy, cur.members, prev_lists, prev.generation_id, cur.partition_counts)
                owner = {tp: m for m, tps in result.items() for tp in tps}
                loads = [len(result[m]) for m, _, _ in cur.members]
                row = wi[(wi.group_id == gid) & (wi.generation_id == cur.generation_id) & (wi.strategy == strategy)
                         & ~wi.observed].iloc[0]
                assert row.moved == sum(1 for tp, m in prev_owner.items() if owner.get(tp) != m)
                assert (row.max_load, row.min_load, row.assigned) == (max(loads), min(loads), len(owner))
                checked[strategy] += 1
    assert min(checked.values()) >= 20, checked


def test_synth_leaders_are_reproduced_exactly(tmp_path):
    """The generator's leaders ran kwire on the real Subscriptions; the
    what-if must rebuild those inputs from the capture alone."""
    path = tmp_path / "synth.parquet"
    synth(path, groups=16, seed=9, duration_s=300)
    wi = whatif_of(events_from_frames(decode_capture(path)))
    proto = wi[wi.observed].set_index(["group_id", "generation_id"]).strategy
    same = wi[~wi.observed & (wi.strategy == [proto[(g, n)] for g, n in zip(wi.group_id, wi.generation_id)])]
    assert len(same) > 40 and same.reproduces_observed.all()
    assert set(wi[wi.observed].strategy) == set(STRATEGIES)


def test_synth_is_deterministic(tmp_path):
    a, b, c = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    synth(a, groups=5, seed=1, duration_s=120)
    synth(b, groups=5, seed=1, duration_s=120)
    synth(c, groups=5, seed=2, duration_s=120)
    import pyarrow.parquet as pq

    ta, tb, tc = (pq.read_table(p) for p in (a, b, c))
    assert ta.equals(tb)
    assert not ta.equals(tc)


def test_synth_covers_the_protocol(tmp_path):
    path = tmp_path / "synth.parquet"
    synth(path, groups=30, seed=4, duration_s=300)
    frames = decode_capture(path).to_pandas()
    assert frames.decode_error.isna().all()
    assert set(frames.api_key.dropna().astype(int)) == {3, 10, 11, 12, 13, 14}
    # Consumers fetch Metadata for their topics before joining; it tells the pool's sizes.
    metadata = frames[(frames.api_key == 3) & (frames.direction == 1)]
    assert {1, 4, 12} <= set(metadata.api_version.astype(int)) and len(metadata) > 30
    pool = topic_pool(4)
    assert all(dict(zip(r.topics, r.partition_counts)) == {t: pool[t] for t in r.topics} and len(r.topics)
               for r in metadata.itertuples())
    assert {22, 25, 27, 79} <= set(frames.error_code.dropna().astype(int))
    versions = frames[frames.api_key == 11].api_version.astype(int)
    assert {2, 5, 9} <= set(versions)
    rb = rebalances_of(events_from_frames(decode_capture(path)))
    assert {"initial", "member_joined", "member_left", "session_timeout", "subscription_change",
            "revocation_followup"} <= set(rb.trigger)


def test_sample_capture_from_real_clients():
    """examples/sample: librdkafka (range) and kafka-python (roundrobin)
    consumers recorded through ``kwire record`` against a Tansu broker."""
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "sample",
                        "capture.parquet")
    frames = decode_capture(path)
    assert frames.column("decode_error").null_count == frames.num_rows
    events = events_from_frames(frames)
    reb = rebalances_of(events)
    for group, protocol in (("sample-confluent", "range"), ("sample-kafka-python", "roundrobin")):
        rows = _by_group(reb, group)
        assert [r["trigger"] for r in rows] == ["initial", "member_joined", "member_joined", "member_left",
                                                "session_timeout"]
        assert [r["member_count"] for r in rows] == [1, 2, 3, 2, 1]
        assert {r["protocol_name"] for r in rows} == {protocol}
        assert all(r["stall_ms"] > 0 for r in rows)
    wi = whatif_of(events)
    ran = wi[~wi.observed & (wi.strategy == wi.group_id.map({"sample-confluent": "range",
                                                               "sample-kafka-python": "roundrobin"}))]
    assert len(ran) == 10 and ran.reproduces_observed.all()


def test_session_timeout_of_a_member_whose_join_carried_no_id(tmp_path):
    """Before JoinGroup v4 a member's first join has an empty member id; its
    session timeout must still be found (through the response) to tell a
    crash from a member that merely went quiet."""
    out = Frames()
    sim = GroupSim(out, "legacy-app", "roundrobin", {"t": 4}, profile="legacy", rng=random.Random(3),
                   session_timeout_ms=10000)
    joiners = [sim.connect(T0 + i * SECOND, ["t"]) for i in range(2)]
    t = sim.rebalance(max(r for _, r in joiners), joiners=joiners)
    victim = joiners[1][0]
    sim.crash(victim)
    expel = t + sim.session_timeout_ms * MS
    sim.heartbeats(t, expel)
    sim.expel(victim)
    t = sim.rebalance(expel)
    out.write(tmp_path / "c.parquet")
    frames = decode_capture(tmp_path / "c.parquet")
    joins = [r for r in frames.to_pylist() if r["api_key"] == 11 and r["direction"] == 0]
    assert [r["member_id"] for r in joins][:2] == ["", ""]
    rows = _by_group(rebalances_of(events_from_frames(frames)), "legacy-app")
    assert [r["trigger"] for r in rows] == ["initial", "session_timeout"]
    assert list(rows[1]["left"]) == [victim.member_id]


@pytest.mark.parametrize("corrupt_rate", [0.0, 0.3])
def test_one_timeline_pass_gives_the_tables_of_one_pass_each(tmp_path, corrupt_rate):
    """The pipeline's ``timelines`` stage builds each group's timeline once and
    reads every table off it, the what-if's and the migration's histories included, from
    Arrow (``applyInArrow``) or pandas (Spark without it): the same rows as building the
    timelines for each table."""
    import pyarrow as pa

    from kwire.pipeline import _spark_stages as stages
    from kwire.pipeline._migrate_history import classic_histories
    from kwire.pipeline._migrate_table import history_table

    path = str(tmp_path / "c.parquet")
    synth(path, groups=15, seed=11, duration_s=240, corrupt_rate=corrupt_rate)
    pdf = events_from_frames(decode_capture(path))
    pdf = pdf[pdf["api_key"] != METADATA].assign(bucket=0)
    counts = COUNT_SCHEMA.empty_table()  # sizes inferred from the assignments, as for any bucket
    events = pa.Table.from_pandas(pdf, preserve_index=False)
    want = {"rebalances": rebalances_of(pdf.drop(columns=["bucket"]), counts=counts),
            "assignments": assignments_of(pdf.drop(columns=["bucket"]), counts=counts),
            "bad_frames": bad_frames_of(pdf.drop(columns=["bucket"]), counts=counts),
            "whatif": whatif_of(pdf.drop(columns=["bucket"]), counts=counts),
            "histories": history_table(classic_histories(events.drop_columns(["bucket"]), counts=counts)).to_pandas()}
    assert len(want["rebalances"]) and len(want["assignments"])
    assert bool(len(want["bad_frames"])) == bool(corrupt_rate)
    assert len(want["whatif"])
    for wide in (stages.analyse_bucket_arrow(events, DEFAULT_MAX_PARTITIONS, counts=counts),
                 pa.Table.from_pandas(stages.analyse_bucket(pdf, DEFAULT_MAX_PARTITIONS, counts=counts),
                                      schema=stages.WIDE_SCHEMA)):
        assert wide.schema == stages.WIDE_SCHEMA
        for name, schema in stages.TIMELINE_TABLES.items():
            mine = wide.filter(pa.compute.equal(wide.column("table"), name))
            got = pa.table({f.name: mine.column(f"{name}__{f.name}") for f in schema}, schema=schema)
            assert got.to_pylist() == pa.Table.from_pandas(want[name], schema=schema,
                                                           preserve_index=False).to_pylist(), name


#: The events' types as the Spark stage hands them over (pandas gives floats for nullable ints).
SPARK_EVENT_TYPES = {"seq": "int64", "ts": "int64", "request_seq": "int64", "request_ts": "int64", "direction": "int8",
                     "api_key": "int16", "generation_id": "int32", "error_code": "int16", "session_timeout_ms": "int32"}


@pytest.mark.parametrize("spark_types", [True, False])
def test_timelines_read_from_columns_are_those_of_event_dicts(tmp_path, spark_types):
    """The pipeline builds timelines from an Arrow table's columns, sorted
    once for all groups; :func:`build_timeline` from one dict per event in
    any order, as pandas gives them.  Both must give every group the same
    timeline, on a damaged capture whose events come in shuffled."""
    import numpy as np
    import pyarrow as pa

    path = str(tmp_path / "c.parquet")
    synth(path, groups=12, seed=4, duration_s=240, corrupt_rate=0.2)
    events = pa.Table.from_pandas(events_from_frames(decode_capture(path)), preserve_index=False)
    if spark_types:
        events = events.cast(pa.schema([pa.field(f.name, SPARK_EVENT_TYPES.get(f.name, f.type))
                                        for f in events.schema]))
    events = events.take(np.random.default_rng(4).permutation(events.num_rows))
    counts, _bad = metadata_partition_counts(events)
    by_group = {}
    for event in events.to_pylist():
        if event["api_key"] != METADATA:
            by_group.setdefault(event["group_id"], []).append(event)
    want = [build_timeline(group, by_group[group], known_counts=MetadataCounts(counts))
            for group in sorted(by_group)]
    got = list(timelines_of_arrow(events))
    assert len(want) == 12 and any(tl.bad_frames for tl in want)
    assert [tl.group_id for tl in got] == [tl.group_id for tl in want]
    for mine, theirs in zip(got, want):
        # repr, not ==: a generation 3.0 equals a generation 3, and dicts equal in another order
        assert repr(mine) == repr(theirs), mine.group_id


@pytest.mark.parametrize("enabled", [True, False])
def test_a_bucket_analysis_leaves_the_cycle_collector_as_it_was(tmp_path, enabled):
    """The timelines stage pauses Python's cycle collector while it analyses
    a bucket: afterwards, and after a failure too, it is on or off as before."""
    import gc

    import pyarrow as pa

    from kwire.pipeline import _spark_stages as stages

    path = str(tmp_path / "c.parquet")
    synth(path, groups=3, seed=5, duration_s=120)
    pdf = events_from_frames(decode_capture(path))
    events = pa.Table.from_pandas(pdf[pdf["api_key"] != METADATA], preserve_index=False)
    counts = COUNT_SCHEMA.empty_table()
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert stages.analyse_bucket_arrow(events, DEFAULT_MAX_PARTITIONS, counts=counts).num_rows
        assert gc.isenabled() == enabled
        with pytest.raises(pa.ArrowInvalid):
            stages.analyse_bucket_arrow(events.drop_columns(["seq"]), DEFAULT_MAX_PARTITIONS, counts=counts)
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()
