"""``python -m kwire synth``, ``import-pcap`` and ``pipeline``'s arguments through the command line's own entry
point."""

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("dpkt")

from kwire.__main__ import main  # noqa: E402
from kwire.pipeline._capture import read_capture  # noqa: E402

from tests.pcap_writer import Flow, Pcap, hb_request, hb_response  # noqa: E402


def test_synth_command(tmp_path, capsys):
    out = tmp_path / "s.parquet"
    assert main(["synth", str(out), "--groups", "3", "--seed", "4", "--duration", "60", "--corrupt-rate", "0.01"]) == 0
    table = read_capture(out)
    assert f"{table.num_rows:,} frames from 3 groups" in capsys.readouterr().out
    assert table.num_rows > 100 and any(table.column("truncated").to_pylist())


def test_import_pcap_command(tmp_path, capsys):
    path = tmp_path / "k.pcap"
    p = Pcap(path)
    a = Flow(p, 40001, bport=19092)
    for s in a.segments(0, hb_request(1), [3]) + a.segments(1, hb_response(1), []):
        a.write(s)
    p.close()
    out = tmp_path / "c.parquet"
    assert main(["import-pcap", str(path), "--out", str(out), "--port", "19092"]) == 0
    assert "2 frames (0 truncated) from 1 connections" in capsys.readouterr().out
    assert [r["frame"] for r in read_capture(out).to_pylist()] == [hb_request(1), hb_response(1)]


def test_pipeline_passes_the_consumer_session_timeout_and_counts_in_words(monkeypatch, capsys):
    import kwire.pipeline._spark_stages as stages

    seen = {}

    def run_pipeline(capture, out, **kw):
        seen.update(kw)
        return {"frames": 1, "groups": 0, "rebalances": 0, "bad_frames": 0, "wall_s": 1.0,
                "spark": {"master": "local[1]"}, "consumer": {"groups": 1, "reconciliations": 5}}

    monkeypatch.setattr(stages, "run_pipeline", run_pipeline)
    assert main(["pipeline", "c.parquet", "--out", "o", "--consumer-session-timeout-ms", "6000"]) == 0
    assert seen["consumer_session_timeout_ms"] == 6000
    out = capsys.readouterr().out
    assert out.startswith("1 frame, 0 classic groups (0 generations), 1 consumer group (5 reconciliations), 0 bad")
    assert main(["pipeline", "c.parquet", "--out", "o"]) == 0
    assert seen["consumer_session_timeout_ms"] is None
