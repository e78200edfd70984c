"""The consumer-protocol analysis's Spark stage on local[2]: groups with ConsumerGroupHeartbeat traffic are routed
to it and off the classic path, ConsumerGroupDescribe responses reach their group's bucket, every table is written,
and the report's figures come from them."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kwire.pipeline._consumer_schemas import CONSUMER_TABLES
from kwire.pipeline._consumer_tables import consumer_tables, consumer_timelines
from kwire.pipeline._decode import decode_capture
from kwire.pipeline._migrate_table import migrate_bucket, migrate_histories

from .analysis_frames import events_from_frames

from .consumer_events import JOIN, REQUEST, RESPONSE, SYNC, Events, event_schema, tp
from .test_pipeline_consumer import described, worked_sequence

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.slow]

from .test_pipeline_spark import spark  # noqa: E402, F401  (the local[2] session fixture)


def capture_events():
    """Group g (consumer protocol, the worked sequence, a Describe of it), and group k (classic only)."""
    e = worked_sequence()
    e.describe(2005, 2, 2, [described("A", 1, tp(0, 1, 2, 3), tp(0, 1)), described("B", 0, tp(), tp(2, 3))])
    e.rows.sort(key=lambda r: r["ts"])
    for i, r in enumerate(e.rows):
        r["seq"] = i + 1
    k = Events("k")
    k.seq = e.seq = len(e.rows)
    j = k.classic(500, JOIN, REQUEST, "x", session_timeout_ms=10_000, topics=["foo"])
    k.classic(510, JOIN, RESPONSE, "x", generation=1, request_seq=j, leader="x",
              members=[{"member_id": "x", "group_instance_id": None, "topics": ["foo"]}])
    s = k.classic(520, SYNC, REQUEST, "x", generation=1)
    k.classic(530, SYNC, RESPONSE, "x", generation=1, request_seq=s,
              assignments=[{"member_id": "x", "topic": "foo", "partitions": [0, 1]}])
    e.rows += k.rows
    return e.table()


def events_arrow(table, group_id):
    """The events of ``group_id`` in ``table``, and the capture's Metadata responses."""
    import pyarrow.compute as pc

    keep = pc.or_(pc.equal(table.column("group_id"), group_id), pc.equal(table.column("api_key"), 3))
    return table.filter(pc.fill_null(keep, False))


def test_the_consumer_stage_routes_groups_and_writes_its_tables(spark, tmp_path):  # noqa: F811 (the fixture)
    from pyspark.sql import functions as F

    from kwire.pipeline._spark_consumer import consumer_stage, consumer_summary, split_protocols
    from kwire.pipeline._spark_stages import bucketed, spark_schema

    table = capture_events()
    rows = spark.createDataFrame(table)
    frames = rows.withColumn("ts", F.timestamp_micros("ts")).withColumn("request_ts", F.timestamp_micros(
        "request_ts")).withColumn("decode_error", F.lit(None).cast("string"))
    events = rows.where(F.col("api_key") != 3)
    consumer, classic = split_protocols(events.where(F.col("group_id").isNotNull()))
    assert {r["group_id"] for r in consumer.select("group_id").distinct().collect()} == {"g"}
    assert {r["group_id"] for r in classic.select("group_id").distinct().collect()} == {"k"}
    tables, counts, names, histories = consumer_stage(bucketed(consumer, 2), frames, str(tmp_path),
                                                      spark_schema=spark_schema)
    assert set(counts) == set(CONSUMER_TABLES)
    # The groups' membership histories, read off the same pass for the migration stage: replayed, the rows that
    # building the timelines again from the events gives.
    kept = histories.toArrow()
    histories.unpersist()
    assert kept.column("group_id").to_pylist() == ["g"]
    replayed = pa.Table.from_batches(list(migrate_histories(kept.to_batches())))
    assert replayed.num_rows and replayed.equals(migrate_bucket(events_arrow(table, "g"), names=names))
    for name in CONSUMER_TABLES:
        assert (tmp_path / name).is_dir()
    recs = tables["reconciliations"].orderBy("group_epoch").collect()
    # The Describe at 2.005 s shows epoch 2 first; B owns its target at 7.010 s; 2 and 3 unowned 3.5 s -> 7.01 s.
    assert [(r["group_epoch"], r["start_ts"], r["time_to_stable_ms"]) for r in recs] == [
        (1, 1_010_000, 0.0), (2, 2_005_000, 5005.0)]
    assert recs[1]["partition_seconds_unowned"] == pytest.approx(7.02)
    members = tables["consumer_members"].where(F.col("member_id") == "A").orderBy("seq").first()
    assert members["assigned"][0]["topic"] == "foo"   # named by the Metadata response's topic_ids
    s = {"frames": table.num_rows}
    consumer_summary(s, tables, events.where(F.col("group_id").isNotNull()))
    c = s["consumer"]
    assert (c["groups"], c["reconciliations"], s["group_traffic"]) == (1, 2, True)
    assert c["time_to_stable_ms"]["max"] == 5005.0 and c["partition_seconds_unowned"]["total"] == pytest.approx(7.02)
    json.dumps(c)


def test_the_pipeline_analyses_both_protocols_in_one_capture(spark, tmp_path):  # noqa: F811 (the fixture)
    # Two classic groups (tests/pipeline_captures.py) and three consumer-protocol groups made by kwire's own
    # coordinator and members (tests/consumer_captures.py: three members join, a fourth joins, the first leaves).
    from kwire.pipeline._spark_stages import run_pipeline

    from .consumer_captures import add_consumer_groups
    from .pipeline_captures import T0, scripted_capture

    capture = str(tmp_path / "capture.parquet")
    scripted_capture(capture, extra=lambda out: add_consumer_groups(out, T0, groups=3))
    out = tmp_path / "out"
    s = run_pipeline(capture, str(out), spark=spark, buckets=3, partitions=2, log=lambda *_: None)
    assert s["groups"] == 2          # the classic path keeps the classic groups only
    doc = json.load(open(out / "report.json"))
    c = doc["consumer"]
    assert (c["groups"], c["mixed_groups"], doc["group_traffic"]) == (3, 0, True)
    # Each group: epoch 1 (the first member), 3 (the next two joined at once: the coordinator's target batching
    # skips 2, which no response ever carries), 4 (the fourth), 5 (the first leaves).
    assert c["reconciliations"] == 12 and c["outcomes"] == {"stable": 12}
    assert c["membership"] == {"join": 12, "leave": 3} and c["anomalies"] == {}
    assert c["triggers"] == {"initial": 3, "member_joined": 6, "member_left": 3}
    stages = doc["stages"]["consumer"]
    assert stages["reconciliations"] == 12 and stages["seconds"] > 0
    assert stages["consumer_membership"] == 15
    # The Spark stage's rows are the analysis's in one process, on the same capture's events.
    events = pa.Table.from_pandas(events_from_frames(decode_capture(capture)), schema=event_schema(),
                                  preserve_index=False)
    local = [r for r in consumer_tables(consumer_timelines(events))["reconciliations"].to_pylist()
             if r["group_id"].startswith("kip848-")]
    got = pq.read_table(str(out / "reconciliations")).to_pylist()
    key = lambda r: (r["group_id"], r["group_epoch"])  # noqa: E731
    assert sorted(got, key=key) == sorted(local, key=key)
    report = (out / "report.md").read_text()
    assert "## Consumer-protocol groups (KIP-848)" in report and "## How long rebalances stall" in report
    assert "## Classic-protocol groups" in report and "With the consumer protocol: 3 groups" in report
