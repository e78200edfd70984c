"""``synth`` streams: chunks of groups are sorted, spilled and merged, and the
capture is byte for byte the one a single in-memory sort of every frame gives."""

import os

import numpy as np
import pytest

pytest.importorskip("pyarrow")

import pyarrow as pa  # noqa: E402

from kwire.errors import ArgumentValueError  # noqa: E402
from kwire.pipeline import _synth  # noqa: E402
from kwire.pipeline._capture import CaptureWriter, read_capture  # noqa: E402
from kwire.pipeline._synth import SortedRuns, synth  # noqa: E402


@pytest.mark.parametrize("corrupt_rate", [0.0, 0.05])
def test_streamed_synth_is_the_in_memory_capture(tmp_path, corrupt_rate):
    kw = dict(groups=7, seed=11, duration_s=90, corrupt_rate=corrupt_rate)
    # One chunk holding every group is one stable sort of every frame: what synth did before it streamed.
    whole = tmp_path / "whole.parquet"
    n = synth(whole, chunk_groups=7, **kw)
    expected = whole.read_bytes()
    for chunk_groups, batch_rows in [(1, 16), (3, 7), (2, 8192)]:
        streamed = tmp_path / f"streamed-{chunk_groups}-{batch_rows}.parquet"
        assert synth(streamed, chunk_groups=chunk_groups, batch_rows=batch_rows, **kw) == n
        assert streamed.read_bytes() == expected, (chunk_groups, batch_rows)
    capture = read_capture(whole)
    assert capture.num_rows == n
    assert (np.diff(capture.column("ts").cast(pa.int64()).to_numpy()) >= 0).all()
    assert capture.column("truncated").to_numpy().any() == (corrupt_rate > 0)
    assert all(p.suffix == ".parquet" for p in tmp_path.iterdir())  # no spilled chunks left


def test_merge_orders_equal_timestamps_by_run_then_place(tmp_path):
    # Ties inside runs, across runs, and at every batch boundary (batches of 2 rows).
    runs = [[5, 5, 5, 7, 9, 9], [5, 6, 7, 7, 9], [1, 5, 5, 9, 9, 9, 12], [], [9]]
    tag = 0
    with SortedRuns(tmp_path, batch_rows=2) as merger:
        for ts in runs:
            tags = list(range(tag, tag + len(ts)))
            tag += len(ts)
            merger.add(pa.table({"ts": pa.array(ts, pa.int64()), "conn": pa.array(tags, pa.int64()),
                                 "direction": pa.array([0] * len(ts), pa.int8()),
                                 "client": pa.array([None] * len(ts), pa.string()),
                                 "broker": pa.array([None] * len(ts), pa.string()),
                                 "frame": pa.array([b"x"] * len(ts), pa.binary()),
                                 "truncated": pa.array([False] * len(ts))}))
        with CaptureWriter(tmp_path / "merged.parquet", rows_per_group=4) as w:
            merger.merge_into(w)
    merged = read_capture(tmp_path / "merged.parquet")
    everything = [t for ts in runs for t in ts]
    assert merged.column("conn").to_pylist() == list(np.argsort(everything, kind="stable"))
    assert merged.column("seq").to_pylist() == list(range(len(everything)))
    assert os.listdir(tmp_path) == ["merged.parquet"]


def test_temporary_files_go_on_error(tmp_path, monkeypatch):
    simulate = _synth.simulate_group

    def failing(out, index, *args, **kw):
        if index == 5:
            raise RuntimeError("boom")
        return simulate(out, index, *args, **kw)

    monkeypatch.setattr(_synth, "simulate_group", failing)
    with pytest.raises(RuntimeError, match="boom"):
        synth(tmp_path / "x.parquet", groups=8, duration_s=30, chunk_groups=2)
    assert os.listdir(tmp_path) == []


def test_a_merge_that_fails_leaves_the_previous_capture(tmp_path, monkeypatch):
    out = tmp_path / "x.parquet"
    synth(out, groups=2, duration_s=30)
    before = out.read_bytes()

    def failing(self, writer):
        raise RuntimeError("disk full")

    monkeypatch.setattr(_synth.SortedRuns, "merge_into", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        synth(out, groups=4, duration_s=30, chunk_groups=2)
    assert out.read_bytes() == before
    assert os.listdir(tmp_path) == ["x.parquet"]


@pytest.mark.parametrize("kw", [dict(groups=-1), dict(chunk_groups=0), dict(batch_rows=0)])
def test_synth_refuses_bad_sizes(tmp_path, kw):
    with pytest.raises(ArgumentValueError):
        synth(tmp_path / "x.parquet", **{"groups": 2, **kw})
    assert os.listdir(tmp_path) == []
