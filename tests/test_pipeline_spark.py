"""The Spark pipeline end to end, on one shared local[2] session.

One run on a capture with known history (tests/pipeline_captures.py's
scripted groups), a few generated groups, a group whose Metadata and
assignments disagree on a topic's size, some damaged frames and bad
Metadata responses; every table is checked against the single-process
decoder and analysis, which the other pipeline tests check against ground
truth.
"""

import json
import os
import random

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

import pyarrow.parquet as pq  # noqa: E402

from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._synth import BROKER_TO_CLIENT, CLIENT_TO_BROKER  # noqa: E402

from tests.analysis_frames import (assignments_of, bad_frames_of, events_from_frames, rebalances_of,  # noqa: E402
                                   whatif_of)
from tests.pipeline_captures import EXPECTED_RANGE, T0, generated_and_damaged, scripted_capture  # noqa: E402


pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    from kwire.pipeline._spark_stages import spark_session

    session = spark_session("local[2]", shuffle_partitions=4, driver_memory="1g")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def test_a_session_kwire_owns_bounds_the_jvm_outside_its_heap(spark):
    """The JVM of a local session kwire starts also runs the executors: its threads do not keep temporary
    direct buffers as large as their largest file read (docs/PIPELINE.md, the driver's memory)."""
    from kwire.pipeline._spark_stages import EMBEDDED_JAVA_OPTIONS

    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.memory") == "1g"
    assert "-Djdk.nio.maxCachedBufferSize=" in EMBEDDED_JAVA_OPTIONS
    assert EMBEDDED_JAVA_OPTIONS in conf.get("spark.driver.extraJavaOptions")
    # and the JVM really started with it (a conf set after launch would only be recorded)
    jvm_args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                    .getInputArguments())
    assert EMBEDDED_JAVA_OPTIONS in jvm_args, jvm_args


def _extra(out):
    generated_and_damaged(out)
    conn = out.new_conn()
    out.add(T0, conn, BROKER_TO_CLIENT, b"\x00\x00\x00\x04\x00\x00\x00\x07", "x", "b")  # unpaired
    out.add(T0 + 1, conn, CLIENT_TO_BROKER, b"\x00\x00\x00\x20\x00\x0c\x00", "x", "b", truncated=True)
    out.add(T0 + 2, conn, CLIENT_TO_BROKER, b"\xff\xff\xff\xff" + bytes(random.Random(1).randbytes(20)), "x", "b")


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    from kwire.pipeline._spark_stages import run_pipeline

    base = tmp_path_factory.mktemp("spark")
    capture = str(base / "capture.parquet")
    sims = scripted_capture(capture, extra=_extra)
    out = str(base / "out")
    persisted = _persisted(spark)
    summary = run_pipeline(capture, out, spark=spark, buckets=3, partitions=2, log=lambda *_: None)
    _HELD["before"], _HELD["after"] = persisted, _persisted(spark)
    return capture, out, summary, sims


_HELD = {}


def _persisted(spark):
    return sorted(int(k) for k in spark.sparkContext._jsc.getPersistentRDDs().keySet())


def test_a_run_in_a_callers_session_leaves_nothing_held_in_it(run):
    """The run caches and locally checkpoints its events and timelines; in a session it does not own,
    which outlives the run, it frees them all (a local checkpoint's blocks too) when it ends."""
    assert _HELD["after"] == _HELD["before"]


def _read(out, name):
    return pq.read_table(os.path.join(out, name)).to_pandas()


def _rows(df, keys):
    return df.sort_values(keys).reset_index(drop=True)


def test_decode_stage_matches_the_local_decoder(run):
    capture, out, summary, _ = run
    spark_frames = pq.read_table(os.path.join(out, "frames")).sort_by("seq")
    local = decode_capture(capture)
    assert spark_frames.num_rows == local.num_rows == summary["frames"]
    spark_frames = spark_frames.select(local.schema.names)
    for name in local.schema.names:
        assert spark_frames.column(name).to_pylist() == local.column(name).to_pylist(), name
    assert summary["decode_errors"] == 3


def test_tables_match_the_local_analysis(run):
    capture, out, _summary, _ = run
    events = events_from_frames(decode_capture(capture))
    for name, fn, keys in (("rebalances", rebalances_of, ["group_id", "generation_id"]),
                           ("assignments", assignments_of, ["group_id", "generation_id", "topic",
                                                                     "partition"]),
                           ("whatif", whatif_of, ["group_id", "generation_id", "observed", "strategy"])):
        got, want = _rows(_read(out, name), keys), _rows(fn(events), keys)
        assert len(got) == len(want) > 0, name
        assert got.astype(str).equals(want[got.columns].astype(str)), name


def test_scripted_group_rows(run):
    _capture, out, _summary, (sim, _coop, _members) = run
    reb = _rows(_read(out, "rebalances"), ["group_id", "generation_id"])
    rows = reb[reb.group_id == "orders-app"]
    assert list(rows.trigger) == [e[1] for e in EXPECTED_RANGE]
    assert list(rows.end_ts) == [h["end"] for h in sim.history]
    assert list(rows.moved_partitions.fillna(-1).astype(int)) == [-1 if e[4] is None else e[4] for e in EXPECTED_RANGE]
    assert list(reb[reb.group_id == "coop-app"].trigger) == ["initial", "member_joined", "revocation_followup"]


def test_report(run):
    _capture, out, summary, _ = run
    text = open(os.path.join(out, "report.md")).read()
    reb = _read(out, "rebalances")
    assert summary["groups"] == reb.group_id.nunique() == 6
    for trigger, n in reb.trigger.value_counts().items():
        assert f"| {trigger} | {n} |" in text
    with_27 = sum(27 in list(codes) for codes in reb.error_codes)
    assert f"| 27 REBALANCE_IN_PROGRESS | {with_27} |" in text
    ok, n = summary["reproduced"]
    # Every leader but stale-app's, which assigned from a size its members' Metadata contradicts.
    assert ok == n - 1 > 0
    assert f"exactly in {ok:,} of {n:,} generations" in text
    assert "## Bad frames" in text and "5 frames were left out of the analysis" in text


def test_report_json(run):
    _capture, out, summary, _ = run
    doc = json.load(open(os.path.join(out, "report.json")))
    assert doc["spark"]["master"] == "local[2]" and doc["spark"]["app_id"].startswith("local-")
    stages = doc["stages"]
    assert set(stages) >= {"spark_start", "decode", "metadata", "timelines", "whatif", "report"}
    assert all(v["seconds"] >= 0 for v in stages.values())
    assert stages["decode"]["frames"] == summary["frames"] == doc["frames"]
    wi = _read(out, "whatif")
    assert stages["whatif"]["members"] == int(wi[~wi.observed].member_count.sum()) > 0
    assert 0 < stages["whatif"]["replay_seconds"] < stages["whatif"]["seconds"] + stages["timelines"]["seconds"]
    # a thread's CPU time in the replay: its own clock, so at most the wall time (and a tick of rounding)
    assert 0 < stages["whatif"]["replay_cpu_seconds"] <= stages["whatif"]["replay_seconds"] + 0.02
    # one timeline pass wrote the three tables, and counted each
    for name in ("rebalances", "assignments", "bad_frames"):
        assert stages["timelines"][name] == len(_read(out, name))
    assert doc["groups"] == 6 and doc["bad_frames"] == 5 and doc["undecodable_frames"] == 3
    assert stages["metadata"]["topics"] > 0
    bad = _read(out, "bad_frames")
    assert len(bad) == 5 and set(bad.kind) == {"undecodable", "inconsistent"} and bad.reason.notna().all()


def test_the_whatif_uses_the_metadata_counts(run):
    capture, out, _summary, _ = run
    wi = _read(out, "whatif")
    stale = wi[wi.group_id == "stale-app"]
    # Its members' Metadata says 12 partitions; its leader assigned 8 (all the assignments would infer).
    assert len(stale) == 5 and set(stale.partitions) == {12}
    assert stale[stale.observed].assigned.tolist() == [8]
    assert stale[~stale.observed & (stale.strategy == "range")].assigned.tolist() == [12]
    # The bad Metadata responses are bad frames of their own, as the local analysis finds them.
    bad = _read(out, "bad_frames")
    metadata = bad[bad.api_key == 3].sort_values("seq")
    assert (metadata.kind == "inconsistent").all() and len(metadata) == 2
    local = bad_frames_of(events_from_frames(decode_capture(capture)))
    assert metadata.reason.tolist() == local[local.api_key == 3].sort_values("seq").reason.tolist()


def test_spark_session_uses_the_active_session(spark):
    from kwire.pipeline._spark_stages import spark_session

    assert spark_session() is spark


def test_a_corrupted_capture_completes_with_bad_frames(spark, tmp_path):
    from kwire.pipeline._spark_stages import run_pipeline
    from kwire.pipeline._synth import synth

    capture = str(tmp_path / "c.parquet")
    # This seed's damage includes a SyncGroup frame decoding to a negative partition.
    synth(capture, groups=8, seed=2, duration_s=300.0, corrupt_rate=0.03)
    out = str(tmp_path / "out")
    s = run_pipeline(capture, out, spark=spark, buckets=2, partitions=2, log=lambda *_: None)
    bad = _read(out, "bad_frames")
    assert s["bad_frames"] == len(bad) > s["decode_errors"] > 0
    assert (bad.kind == "inconsistent").sum() == s["inconsistent_frames"] > 0
    assert s["groups"] == 8 and os.path.exists(os.path.join(out, "report.md"))


def _no_group_traffic(path):
    from kwire.pipeline._synth import Frames

    out = Frames()
    conn = out.new_conn()
    # ApiVersions v0 request and response: traffic, but no consumer group.
    out.add(T0, conn, CLIENT_TO_BROKER, b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff", "c", "b")
    out.add(T0 + 5, conn, BROKER_TO_CLIENT, b"\x00\x00\x00\x0a\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00",
            "c", "b")
    out.write(path)


def _empty(path):
    from kwire.pipeline._capture import CaptureWriter

    CaptureWriter(path).close()


@pytest.mark.parametrize("make, says", [(_empty, "The capture holds no frames"),
                                        (_no_group_traffic, "The capture holds no consumer-group traffic at all")])
def test_a_capture_without_rebalances_gets_a_report(spark, tmp_path, make, says):
    from kwire.pipeline._spark_stages import run_pipeline

    capture = str(tmp_path / "c.parquet")
    make(capture)
    out = tmp_path / "out"
    s = run_pipeline(capture, f"file://{out}", spark=spark, buckets=2, partitions=2, log=lambda *_: None)
    assert s["groups"] == 0 and says in (out / "report.md").read_text()
    assert json.load(open(out / "report.json"))["generations"] == 0


def test_progress_counts_the_stage_s_spark_tasks(spark):
    import io

    from kwire.pipeline._progress import Progress

    stream = io.StringIO()
    with Progress(spark.sparkContext, stream=stream, live=False).stage("probe") as st:
        spark.range(1000).repartition(3).count()
        done, total = st.tasks()
    assert done == total >= 3
    assert stream.getvalue().startswith("probe: ")


def test_buckets_are_balanced_by_size_one_a_partition(spark):
    from pyspark.sql import functions as F

    from kwire.pipeline._spark_stages import balanced_buckets, bucketed

    plan = balanced_buckets({"big": 100, "a": 30, "b": 30, "c": 30, "d": 10}, 2)
    assert plan["big"] != plan["a"] == plan["b"] == plan["c"]
    rows = [(f"g{i}", i) for i in range(8) for _ in range(1 + 10 * (i == 0))]
    events = spark.createDataFrame(rows, "group_id string, seq int")
    parts = bucketed(events, 8).select("group_id", "bucket", F.spark_partition_id().alias("part")).collect()
    part_of = {}
    for r in parts:
        part_of.setdefault(r["bucket"], set()).add(r["part"])
    assert len(part_of) == 8 and all(len(p) == 1 for p in part_of.values())
    assert len({p for ps in part_of.values() for p in ps}) == 8


def test_partition_labels_hash_as_spark_does(spark):
    from pyspark.sql import functions as F

    from kwire.pipeline._spark_stages import spark_int_hash

    values = [0, 1, -1, 7, 42, 2**31 - 1, -2**31, 123456789]
    rows = spark.createDataFrame([(v,) for v in values], "v int").select("v", F.hash("v").alias("h")).collect()
    assert {r["v"]: r["h"] for r in rows} == {v: spark_int_hash(v) for v in values}


def _event_rows(rows):
    """Event dicts comparable across pandas and Arrow: NaN as None, whole floats as ints, arrays as lists."""
    import math

    def norm(v):
        if isinstance(v, float):
            return None if math.isnan(v) else int(v) if v.is_integer() else v
        if hasattr(v, "tolist") and not isinstance(v, (int, str)):
            v = v.tolist()
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v

    out = [{k: norm(v) for k, v in r.items()} for r in rows]
    return sorted(out, key=lambda r: (r["seq"], r["group_id"] or ""))


def test_consumer_protocol_traffic_is_reduced_as_the_contract_says(spark, tmp_path):
    # Classic and consumer-protocol groups in one capture: the Spark stage's events equal the contract's
    # reduction (tests/analysis_frames.py pairs every response with its request; the stage does without).
    from kwire.pipeline._events import CONSUMER_GROUP_HEARTBEAT, EVENT_COLUMNS, METADATA
    from kwire.pipeline._spark_stages import events_stage
    from tests.consumer_captures import add_consumer_groups

    capture = str(tmp_path / "capture.parquet")
    scripted_capture(capture, extra=lambda out: add_consumer_groups(out, T0, groups=3))
    frames = decode_capture(capture)
    pq.write_table(frames, str(tmp_path / "frames.parquet"))
    got = events_stage(spark.read.parquet(str(tmp_path / "frames.parquet"))).toArrow()
    assert got.schema.names == EVENT_COLUMNS
    want = events_from_frames(frames)
    want = want[want["api_key"] != METADATA]  # read apart by the Spark stage (metadata_stage)
    assert _event_rows(got.to_pylist()) == _event_rows(want.to_dict("records"))
    heartbeats = [r for r in got.to_pylist() if r["api_key"] == CONSUMER_GROUP_HEARTBEAT]
    in_frames = sum(k == CONSUMER_GROUP_HEARTBEAT for k in frames.column("api_key").to_pylist())
    assert 0 < len(heartbeats) < in_frames / 2
