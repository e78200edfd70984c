"""Bad input never aborts the analysis or lies: inconsistent frames become
rows of ``bad_frames`` with their reason, a group whose what-if fails is
reported on its own rows, and the command line refuses what it cannot run
with exit status 2 and one line (no Spark needed for any of it)."""

import copy

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import kwire.assignors  # noqa: E402
from kwire.__main__ import main  # noqa: E402
from kwire.errors import AssignmentError  # noqa: E402
from kwire.pipeline._events import METADATA, RESPONSE, SYNC_GROUP  # noqa: E402
from kwire.pipeline._timeline import build_timeline  # noqa: E402
from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._synth import synth  # noqa: E402

from tests.analysis_frames import bad_frames_of, events_from_frames, rebalances_of, whatif_of  # noqa: E402
from tests.pipeline_captures import scripted_capture  # noqa: E402



@pytest.fixture(scope="module")
def events(tmp_path_factory):
    path = tmp_path_factory.mktemp("bad") / "capture.parquet"
    scripted_capture(path)
    return events_from_frames(decode_capture(path))


def _tamper(events, edit):
    """A copy of ``events`` whose first SyncGroup response to orders-app
    generation 2 has its assignments changed by ``edit``; returns (events, seq)."""
    out = events.copy()
    rows = out[(out.group_id == "orders-app") & (out.api_key == SYNC_GROUP)
               & (out.direction == RESPONSE) & (out.generation_id == 2)]
    idx = rows.sort_values("seq").index[0]
    assignments = copy.deepcopy(list(out.at[idx, "assignments"]))
    edit(assignments)
    out.at[idx, "assignments"] = assignments
    return out, int(out.at[idx, "seq"])


def _without_metadata(events):
    """The events without the capture's Metadata responses: topic sizes are then inferred, up to the cap."""
    return events[events.api_key != METADATA]


def _first_partition(value):
    def edit(assignments):
        assignments[0]["partitions"] = [value] + list(assignments[0]["partitions"])[1:]
    return edit


@pytest.mark.parametrize("metadata, edit, reason", [
    (True, _first_partition(-16777215), "negative partition -16777215 of topic 't'"),
    # The capture's Metadata says 't' has 6 partitions; without it, only the cap stands in the way.
    (True, _first_partition(16777215), "partition 16777215 of topic 't', which has 6 partitions (Metadata)"),
    (False, _first_partition(16777215),
     "partition 16777215 of topic 't' beyond the cap of 100,000 partitions per topic"),
    (True, lambda a: a[0].update(topic="not-subscribed"), "assignment of topic 'not-subscribed' to member"),
])
def test_an_inconsistent_sync_group_frame_is_a_bad_frame(events, metadata, edit, reason):
    events = events if metadata else _without_metadata(events)
    tampered, seq = _tamper(events, edit)
    bad = bad_frames_of(tampered)
    assert list(bad.seq) == [seq]
    assert bad.reason[0].startswith(reason) and bad.kind[0] == "inconsistent"
    assert bad_frames_of(events).empty
    # The analysis goes on without the frame: no topic of 16.7M partitions,
    # no topic nobody subscribed to, and every generation still replayed.
    wi = whatif_of(tampered)
    assert wi.error.isna().all()
    assert wi.partitions.max() <= 8
    assert len(rebalances_of(tampered)) == len(rebalances_of(events))


def test_the_partition_cap_is_configurable(events):
    tampered, seq = _tamper(_without_metadata(events), _first_partition(150))
    assert bad_frames_of(tampered).empty  # 150 is a plausible partition under the default cap
    bad = bad_frames_of(tampered, max_partitions=100)
    assert list(bad.seq) == [seq] and "beyond the cap of 100 partitions" in bad.reason[0]


def test_known_partition_counts_take_precedence(events):
    # Sizes given as a mapping hold for the whole capture (tests/test_pipeline_metadata.py: from Metadata).
    group = events[events.group_id == "orders-app"].to_dict("records")
    tl = build_timeline("orders-app", group, known_counts={"t": 4})
    assert tl.partition_counts["t"] == 4
    assert tl.bad_frames and all("which has 4 partitions (Metadata)" in b["reason"] for b in tl.bad_frames)


def test_a_corrupted_capture_is_analysed(tmp_path):
    # One percent of frames cut short or bit-flipped: some SyncGroup frames
    # decode to negative partitions, which made the what-if raise.
    path = tmp_path / "c.parquet"
    # This seed's damage includes a SyncGroup frame decoding to a negative partition.
    synth(path, groups=100, seed=2, duration_s=600.0, corrupt_rate=0.01)
    ev = events_from_frames(decode_capture(path))
    bad = bad_frames_of(ev)
    assert len(bad) > 0 and bad.reason.str.startswith("negative partition").any()
    wi = whatif_of(ev)
    assert wi.group_id.nunique() > 90


def test_a_failing_what_if_is_reported_for_its_group(events, monkeypatch):
    real = kwire.assignors.assign_arrays
    real_many = kwire.assignors.assign_arrays_many

    def refused(group):
        return any(m.startswith("orders-app") for m in group.member_ids) or "t" in group.topics

    def assign_arrays(strategy, group, implementation=None):
        if refused(group):
            raise AssignmentError("refused for the test")
        return real(strategy, group, implementation=implementation)

    def assign_arrays_many(strategy, groups, implementation=None):
        # one group refused refuses the whole call: the what-if then runs each generation alone
        if any(refused(g) for g in groups):
            raise AssignmentError("refused for the test")
        return real_many(strategy, groups, implementation=implementation)

    monkeypatch.setattr(kwire.assignors, "assign_arrays", assign_arrays)
    monkeypatch.setattr(kwire.assignors, "assign_arrays_many", assign_arrays_many)
    wi = whatif_of(events)
    failed = wi[wi.error.notna()]
    assert set(failed.group_id) == {"orders-app"}
    assert (failed.error == "AssignmentError: refused for the test").all()
    coop = wi[wi.group_id == "coop-app"]
    assert len(coop) and coop.error.isna().all() and coop.moved.notna().any()


# -- the command line ------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["synth", "x.parquet", "--groups", "-5"], "--groups: must be positive, not -5"),
    (["synth", "x.parquet", "--groups", "0"], "--groups: must be positive, not 0"),
    (["synth", "x.parquet", "--corrupt-rate", "1.5"], "--corrupt-rate: must be a fraction between 0 and 1"),
    (["synth", "x.parquet", "--duration", "-1"], "--duration: must be a positive number"),
    (["synth", "x.parquet", "--heartbeat-ms", "abc"], "--heartbeat-ms: not an integer"),
    (["pipeline", "c", "--out", "o", "--buckets", "0"], "--buckets: must be positive"),
    (["pipeline", "c", "--out", "o", "--max-partitions", "-1"], "--max-partitions: must be positive"),
    (["pipeline", "c", "--out", "o", "--driver-memory", "lots"], "--driver-memory: expected a JVM memory size"),
    (["pipeline", "c", "--out", "o", "--consumer-session-timeout-ms", "0"],
     "--consumer-session-timeout-ms: must be positive"),
    (["record", "x.parquet", "--upstream", "nohost"], "--upstream: expected HOST:PORT"),
    (["record", "x.parquet", "--upstream", "h:70000"], "--upstream: not a TCP port"),
    (["import-pcap", "x.pcap", "--out", "o", "--port", "0"], "--port: must be positive"),
])
def test_invalid_arguments_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_missing_capture_exits_2_with_one_line(tmp_path, capsys):
    assert main(["pipeline", str(tmp_path / "nope.parquet"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err == f"kwire pipeline: capture not found: {tmp_path / 'nope.parquet'}\n"


def test_a_wrong_schema_exits_2_naming_the_missing_columns(tmp_path, capsys):
    path = tmp_path / "wrong.parquet"
    pq.write_table(pa.table({"seq": [1], "ts": [2], "payload": [b"x"]}), path)
    assert main(["pipeline", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing columns conn, direction, frame, truncated" in err
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all")
    assert main(["pipeline", str(garbage), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a Parquet capture" in err
