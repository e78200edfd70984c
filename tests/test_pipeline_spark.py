"""The Spark pipeline end to end, on one shared local[2] session.

One run on a capture with known history (tests/test_pipeline_analysis.py's
scripted groups), a few generated groups and some damaged frames; every
table is checked against the single-process decoder and analysis, which
the other pipeline tests check against ground truth.
"""

import os
import random

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

import pyarrow.parquet as pq  # noqa: E402

from kwire.pipeline import _analysis as analysis  # noqa: E402
from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._synth import BROKER_TO_CLIENT, CLIENT_TO_BROKER, simulate_group, topic_pool  # noqa: E402

from .test_pipeline_analysis import EXPECTED_RANGE, T0, scripted_capture  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    from kwire.pipeline._spark_stages import spark_session

    session = spark_session("local[2]", shuffle_partitions=4, driver_memory="1g")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _extra(out):
    pool = topic_pool(1, n_topics=6)
    for i in range(3):
        simulate_group(out, 100 + i, 1, T0, 120.0, pool)
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
    summary = run_pipeline(capture, out, spark=spark, buckets=3, partitions=2, log=lambda *_: None)
    return capture, out, summary, sims


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
    events = analysis.events_from_frames(decode_capture(capture))
    for name, fn, keys in (("rebalances", analysis.rebalances_of, ["group_id", "generation_id"]),
                           ("assignments", analysis.assignments_of, ["group_id", "generation_id", "topic",
                                                                     "partition"]),
                           ("whatif", analysis.whatif_of, ["group_id", "generation_id", "observed", "strategy"])):
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
    assert summary["groups"] == reb.group_id.nunique() == 5
    for trigger, n in reb.trigger.value_counts().items():
        assert f"| {trigger} | {n} |" in text
    with_27 = sum(27 in list(codes) for codes in reb.error_codes)
    assert f"| 27 REBALANCE_IN_PROGRESS | {with_27} |" in text
    ok, n = summary["reproduced"]
    assert ok == n > 0
    assert f"exactly in {ok:,} of {n:,} generations" in text
    assert "## Frames that did not decode" in text
