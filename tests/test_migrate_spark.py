"""The migration what-if end to end on local[2]: a capture of classic and consumer-protocol groups through
``run_pipeline``, its ``migration`` table against the same replay in one process, report.json's keys and the
report's section."""

import json

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

import pyarrow.parquet as pq  # noqa: E402

from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._events import EVENT_COLUMNS  # noqa: E402
from kwire.pipeline._migrate_table import MIGRATION_SCHEMA, migrate_bucket  # noqa: E402

from tests.analysis_frames import events_from_frames  # noqa: E402

from .test_pipeline_spark import spark  # noqa: F401,E402  (the local[2] session fixture)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _key(r):
    return (r["group_id"], r["simulated_protocol"], r["rebalance"])


def test_the_migration_stage_replays_both_directions(spark, tmp_path):  # noqa: F811
    from kwire.pipeline._spark_stages import run_pipeline

    from .consumer_captures import add_consumer_groups
    from .pipeline_captures import T0, scripted_capture

    capture = str(tmp_path / "capture.parquet")
    scripted_capture(capture, extra=lambda out: add_consumer_groups(out, T0, groups=2))
    out = tmp_path / "out"
    run_pipeline(capture, str(out), spark=spark, buckets=3, partitions=2, log=lambda *_: None)

    got = pq.read_table(str(out / "migration"))
    assert got.schema.names == MIGRATION_SCHEMA.names
    rows = got.to_pylist()
    assert not [r for r in rows if r["error"]]
    directions = {(r["observed_protocol"], r["simulated_protocol"]) for r in rows}
    assert directions == {("classic-eager", "consumer"), ("classic-cooperative", "consumer"),
                          ("consumer", "classic-eager"), ("consumer", "classic-cooperative")}
    # The classic groups' rows: one per generation, as the rebalances table has them.
    rebalances = pq.read_table(str(out / "rebalances")).to_pylist()
    classic = sorted((r["group_id"], r["epoch"]) for r in rows if r["simulated_protocol"] == "consumer")
    assert classic == sorted((r["group_id"], r["generation_id"]) for r in rebalances)

    # The same replay in one process, on the same events, gives the same rows.
    events = events_from_frames(decode_capture(capture))
    kip848 = events.group_id.fillna("").str.startswith("kip848-")
    table = pa.Table.from_pandas(events[EVENT_COLUMNS][~kip848], preserve_index=False)
    local = migrate_bucket(table).to_pylist()
    assert sorted((r for r in rows if r["simulated_protocol"] == "consumer"), key=_key) == sorted(local, key=_key)

    doc = json.load(open(out / "report.json"))
    stage = doc["stages"]["migration"]
    assert stage["rows"] == len(rows) and stage["member_events"] == sum(r["member_events"] for r in rows) > 0
    assert 0 < stage["replay_seconds"] < stage["seconds"]
    assert stage["member_events_per_second"] == pytest.approx(stage["member_events"] / stage["replay_seconds"])
    # Every task says whether it replayed compiled: all of them as Python with the extensions off, none
    # otherwise (a build that is not current fails tests/test_compiled.py).
    from kwire import _impl

    # Both protocols' histories are replayed in one task a core (six bucket partitions here, for two cores).
    assert stage["replay_tasks"] == spark.sparkContext.defaultParallelism == 2
    assert stage["replay_tasks_python"] == (stage["replay_tasks"] if _impl.NO_EXTENSIONS else 0)
    migration = doc["migration"]
    assert migration["rows"] == len(rows) and migration["groups"] == 4 and migration["failed_groups"] == 0
    assert {(d["observed_protocol"], d["simulated_protocol"]) for d in migration["directions"]} == directions
    report = (out / "report.md").read_text()
    assert "## What moving to the other protocol would change" in report
    if "migration" in doc["charts"]:
        assert (out / doc["charts"]["migration"]).exists()
