"""The report's pieces without Spark: units, report.md / report.json through a
file system URI, charts (and their absence), where the master comes from,
and stage progress."""

import io
import json
import sys

import pytest

pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")

from kwire.pipeline._events import REBALANCE_SCHEMA, WHATIF_SCHEMA  # noqa: E402
from kwire.pipeline import _report as report  # noqa: E402
from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._progress import Progress, format_seconds  # noqa: E402
from kwire.pipeline._spark_stages import configured_master  # noqa: E402

from tests.analysis_frames import bad_frames_of, events_from_frames, rebalances_of, whatif_of  # noqa: E402
from tests.pipeline_captures import scripted_capture  # noqa: E402



@pytest.mark.parametrize("ms, text", [
    (0.25, "0.2 ms"), (820, "820 ms"), (3536.5, "3.54 s"), (35270.2, "35.3 s"), (725_000, "12 min 5 s"),
    (69_539_414, "19 h 18 min"), (3 * 86_400_000 + 4 * 3_600_000, "3 d 4 h"), (None, "–"),
])
def test_durations_are_in_a_readable_unit(ms, text):
    assert report.format_duration(ms) == text


def test_format_seconds():
    assert [format_seconds(s) for s in (0, 65, 3725)] == ["0:00", "1:05", "1:02:05"]


def test_configured_master(tmp_path):
    assert configured_master({}) is None
    assert configured_master({"PYSPARK_GATEWAY_PORT": "4242"}) == "spark-submit"
    assert configured_master({"PYSPARK_SUBMIT_ARGS": "--master spark://h:7077 pyspark-shell"}) == "spark://h:7077"
    assert configured_master({"MASTER": "local[3]"}) == "local[3]"
    (tmp_path / "spark-defaults.conf").write_text("# x\nspark.executor.memory 1g\nspark.master   yarn\n")
    assert configured_master({"SPARK_CONF_DIR": str(tmp_path)}) == "yarn"
    assert configured_master({"SPARK_HOME": str(tmp_path / "nowhere")}) is None


def _tables(tmp_path):
    path = tmp_path / "capture.parquet"
    scripted_capture(path)
    frames = decode_capture(path)
    events = events_from_frames(frames)
    reb, wi, bad = rebalances_of(events), whatif_of(events), bad_frames_of(events)
    s = {"frames": frames.num_rows, "decode_errors": 0, "connections": 9, "error_kinds": []}
    return report.summarize(s, reb, wi, bad), reb, wi


def _run():
    return {"spark": {"master": "local[2]", "app_id": "local-1"},
            "stages": {"spark_start": {"seconds": 4.0}, "decode": {"seconds": 2.0, "frames": 10},
                       "whatif": {"seconds": 1.0, "members": 5, "replay_seconds": 0.5}}}


def test_report_files_through_a_uri(tmp_path):
    pytest.importorskip("matplotlib")
    s, reb, wi = _tables(tmp_path)
    out = tmp_path / "out"
    doc = report.write_report(f"file://{out}", "capture.parquet", s, reb, wi, _run())
    on_disk = json.loads((out / "report.json").read_text())
    assert on_disk == json.loads(json.dumps(doc))
    assert on_disk["spark"] == {"master": "local[2]", "app_id": "local-1"}
    assert on_disk["stages"]["decode"]["frames"] == 10 and on_disk["stages"]["whatif"]["members"] == 5
    assert on_disk["groups"] == 2 and on_disk["generations"] == len(reb) and on_disk["bad_frames"] == 0
    md = (out / "report.md").read_text()
    for name in ("timeline", "stalls", "whatif"):
        assert f"(chart-{name}.png)" in md
        assert (out / f"chart-{name}.png").read_bytes().startswith(b"\x89PNG")
    assert "## Generation by generation" in md and "| orders-app | 5 | subscription_change |" in md
    total = reb.stall_ms.sum()
    assert f"| {report.format_duration(total)} |" in md and " ms |" not in md.split("## Why")[0].split("| p50")[1]


def test_without_matplotlib_the_report_says_charts_were_skipped(tmp_path, monkeypatch):
    s, reb, wi = _tables(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    report.write_report(str(tmp_path / "out"), "capture.parquet", s, reb, wi, _run())
    md = (tmp_path / "out" / "report.md").read_text()
    assert "Charts were skipped: matplotlib is not installed" in md and ".png" not in md
    assert json.loads((tmp_path / "out" / "report.json").read_text())["charts"] == {}


@pytest.mark.parametrize("frames, says", [(0, "The capture holds no frames"),
                                          (120, "The capture holds no consumer-group rebalance")])
def test_a_capture_without_rebalances_gets_a_report_that_says_so(frames, says):
    reb = pd.DataFrame({f.name: pd.Series(dtype=object) for f in REBALANCE_SCHEMA})
    wi = pd.DataFrame({f.name: pd.Series(dtype=object) for f in WHATIF_SCHEMA})
    bad = pd.DataFrame({"reason": pd.Series(dtype=object)})
    s = report.summarize({"frames": frames, "decode_errors": 0, "connections": 0, "error_kinds": []}, reb, wi, bad)
    md = report.render_markdown("c.parquet", s, {"stages": {}})
    assert says in md and s["groups"] == 0
    assert report.report_json("c.parquet", s, {"spark": {}, "stages": {}})["generations"] == 0


class _Tracker:
    def __init__(self, done, total):
        self.done, self.total = done, total

    def getJobIdsForGroup(self, group):  # noqa: N802 - Spark's names
        return [1] if group == "kwire-decode" else []

    def getJobInfo(self, job_id):  # noqa: N802
        return type("Job", (), {"stageIds": [7], "status": "RUNNING"})()

    def getStageInfo(self, stage_id):  # noqa: N802
        return type("Stage", (), {"numCompletedTasks": self.done, "numTasks": self.total})()


class _Context:
    def __init__(self, tracker):
        self.tracker = tracker
        self.properties = {}

    def statusTracker(self):  # noqa: N802
        return self.tracker

    def setJobGroup(self, group, description):  # noqa: N802
        self.properties["spark.jobGroup.id"] = group

    def setLocalProperty(self, key, value):  # noqa: N802
        self.properties[key] = value


def test_progress_is_one_line_a_stage_in_a_log():
    stream = io.StringIO()
    sc = _Context(_Tracker(1, 4))
    progress = Progress(sc, stream=stream, live=False)
    with progress.stage("decode") as st:
        assert sc.properties["spark.jobGroup.id"] == "kwire-decode"
        st.done(frames=1234)
    assert sc.properties["spark.jobGroup.id"] is None
    assert stream.getvalue().startswith("decode: ") and stream.getvalue().endswith(" s, 1,234 frames\n")
    assert stream.getvalue().count("\n") == 1


def test_progress_on_a_terminal_shows_tasks_and_time_left():
    import time

    stream = io.StringIO()
    progress = Progress(_Context(_Tracker(1, 4)), stream=stream, live=True, interval=0.02)
    with progress.stage("decode"):
        time.sleep(0.2)
    text = stream.getvalue()
    assert "\r\x1b[K" in text and "1/4 tasks" in text and "left" in text
    assert text.endswith("\n") and "decode: " in text.rsplit("\r\x1b[K", 1)[1]
