"""Topic sizes from captured Metadata responses: they take precedence over
inference, follow the capture as sizes change, make an assignment beyond
them a bad frame, and bad Metadata responses are bad frames themselves.
(The Spark run: tests/test_pipeline_spark.py.)"""

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

import pyarrow as pa  # noqa: E402

from kwire.pipeline._events import COUNT_SCHEMA, METADATA, SYNC_GROUP  # noqa: E402
from kwire.pipeline._metadata import MetadataCounts, count_changes, metadata_partition_counts  # noqa: E402
from kwire.pipeline._timeline import completed_generations, timelines_of  # noqa: E402
from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._synth import SECOND, Frames  # noqa: E402

from tests.analysis_frames import (assignments_of, bad_frames_of, events_from_frames, rebalances_of,  # noqa: E402
                                   whatif_of)
from tests.pipeline_captures import (add_bad_metadata, metadata_group, scripted_capture,  # noqa: E402
                                     stale_leader_group)


def _events(path, build):
    out = Frames()
    build(out)
    out.write(path)
    return events_from_frames(decode_capture(path))


def _without_metadata(events):
    return events[events.api_key != METADATA]


def test_an_assignment_beyond_the_metadata_size_is_a_bad_frame(tmp_path):
    """Metadata says "t" has 8 partitions; the leader assigns t-8 and t-9."""
    def build(out):
        sim, joiners = metadata_group(out, "sized-app", {"t": 8})
        sim.partitions = {"t": 10}
        t = sim.rebalance(max(r for _, r in joiners), joiners=joiners)
        sim.heartbeats(t, t + 10 * SECOND)

    events = _events(tmp_path / "c.parquet", build)
    bad = bad_frames_of(events)
    syncs = events[(events.api_key == SYNC_GROUP)]
    beyond = [int(r.seq) for r in syncs.itertuples() if r.assignments is not None
              and any(p >= 8 for a in r.assignments for p in a["partitions"])]
    assert sorted(bad.seq) == sorted(beyond) and len(beyond) == 2  # the leader's request, one member's response
    assert (bad.kind == "inconsistent").all()
    assert all(reason.endswith("of topic 't', which has 8 partitions (Metadata)") for reason in bad.reason)
    assert any(9 in a["partitions"] for r in syncs.itertuples() if r.seq in beyond for a in r.assignments)
    # What the analysis keeps stays within the 8 partitions.
    owned = assignments_of(events)
    assert owned.partition.max() <= 7
    # Without the Metadata the same frames are plausible: "t" is inferred to have 10 partitions.
    assert bad_frames_of(_without_metadata(events)).empty
    (tl,) = timelines_of(_without_metadata(events))
    assert tl.partition_counts == {"t": 10}


def test_metadata_sizes_take_precedence_over_inference(tmp_path):
    events = _events(tmp_path / "c.parquet", stale_leader_group)
    (tl,) = timelines_of(events)
    assert tl.partition_counts == {"t": 12}
    (gen,) = completed_generations(tl)
    assert gen.partition_counts == {"t": 12} and len(gen.ownership()) == 8
    wi = whatif_of(events)
    assert set(wi.partitions) == {12}
    replayed = wi[~wi.observed & (wi.strategy == "range")].iloc[0]
    assert replayed.assigned == 12 and not replayed.reproduces_observed
    assert wi[wi.observed].assigned.tolist() == [8]
    # Inferred from the assignments alone, the topic has 8 and range reproduces the leader.
    wi = whatif_of(_without_metadata(events))
    assert set(wi.partitions) == {8} and wi[~wi.observed & (wi.strategy == "range")].reproduces_observed.all()


def test_each_generation_replays_with_the_sizes_as_of_its_assignment(tmp_path):
    """Partitions are added between two generations: each is replayed with
    the size its leader assigned from, so range reproduces both."""
    def build(out):
        sim, joiners = metadata_group(out, "growing-app", {"t": 8})
        t = sim.rebalance(max(r for _, r in joiners), joiners=joiners)
        sim.heartbeats(t, t + 10 * SECOND)
        sim.partitions = {"t": 12}
        m, ready = sim.connect(t + 10 * SECOND, ["t"])  # its Metadata says 12
        t = sim.rebalance(ready, joiners=[(m, ready)])
        sim.heartbeats(t, t + 10 * SECOND)

    events = _events(tmp_path / "c.parquet", build)
    (tl,) = timelines_of(events)
    assert [g.partition_counts["t"] for g in completed_generations(tl)] == [8, 12]
    assert tl.partition_counts == {"t": 12}
    assert bad_frames_of(events).empty
    wi = whatif_of(events)
    rng = wi[~wi.observed & (wi.strategy == "range")].sort_values("generation_id")
    assert rng.partitions.tolist() == [8, 12] and rng.reproduces_observed.all()
    # One size for the whole capture (the inferred 12) would replay the first generation with 12.
    wi = whatif_of(_without_metadata(events))
    rng = wi[~wi.observed & (wi.strategy == "range")].sort_values("generation_id")
    assert rng.partitions.tolist() == [12, 12] and not rng.reproduces_observed.iloc[0]


def test_bad_metadata_responses_are_bad_frames_and_the_analysis_goes_on(tmp_path):
    path = tmp_path / "c.parquet"
    times = []
    scripted_capture(path, extra=lambda out: times.extend(add_bad_metadata(out)))
    events = events_from_frames(decode_capture(path))
    bad = bad_frames_of(events, max_partitions=6)
    assert sorted(bad.ts) == times
    assert (bad.kind == "inconsistent").all() and (bad.api_key == METADATA).all()
    assert sorted(bad.reason) == [
        "Metadata response beyond the cap per topic: topic 'big' of 7 partitions, the cap 6",
        "Metadata response listing a topic twice: 't', with different partition counts",
        "Metadata response with partitions not 0..n-1: topic 't'",
    ]
    # Their sizes are left out: had "u" had 1 partition, the assignment of u-1 (generation 5) would be a bad frame.
    clean = path.parent / "clean.parquet"
    scripted_capture(clean)
    clean_events = events_from_frames(decode_capture(clean))
    assert rebalances_of(events, 6).equals(rebalances_of(clean_events, 6))
    assert whatif_of(events, 6).equals(whatif_of(clean_events, 6))
    (tl,) = [tl for tl in timelines_of(events, 6) if tl.group_id == "orders-app"]
    assert tl.partition_counts == {"t": 6, "u": 2}


def test_count_changes_reduce_in_parts():
    rows = [("t", 5, 8), ("t", 1, 8), ("u", 3, 2), ("t", 9, 12), ("t", 7, 8), ("t", 12, 12), ("u", 2, 2)]
    table = pa.table({"topic": [r[0] for r in rows], "seq": [r[1] for r in rows], "partitions": [r[2] for r in rows]},
                     schema=COUNT_SCHEMA)
    whole = count_changes(table)
    assert whole.to_pylist() == [{"topic": "t", "seq": 1, "partitions": 8}, {"topic": "t", "seq": 9, "partitions": 12},
                                 {"topic": "u", "seq": 2, "partitions": 2}]
    parts = pa.concat_tables([count_changes(table.slice(0, 3)), count_changes(table.slice(3))])
    assert count_changes(parts).equals(whole) and count_changes(whole).equals(whole)
    known = MetadataCounts(table)
    # Before a topic's first response, that first one; then the last one before.
    assert [known.count("t", s) for s in (0, 1, 8, 9, 100)] == [8, 8, 8, 12, 12]
    assert known.count("v", 5) is None and "u" in known and "v" not in known


def test_metadata_rows_must_pair_topics_and_counts():
    from kwire.errors import ArgumentValueError

    frames = pa.table({"seq": [1], "ts": [1], "api_key": pa.array([3], pa.int16()), "direction": pa.array([1], pa.int8()),
                       "topics": [["t", "u"]], "partition_counts": pa.array([[4]], pa.list_(pa.int32()))})
    with pytest.raises(ArgumentValueError):
        metadata_partition_counts(frames)
