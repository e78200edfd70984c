"""What every ``kwire synth`` generator shares: the frames of a chunk of groups, the time-sorted runs they
are spilled to, the merge of those runs into one capture, and the damage ``--corrupt-rate`` does.

A generator simulates one group at a time into :class:`Frames`; :func:`stream_groups` draws each group's start
time, applies the damage, spills every ``chunk_groups`` groups as one sorted run and merges the runs, so memory
depends on the chunk, not on the number of groups, and the capture is the same whatever the chunking."""

from __future__ import annotations

import contextlib
import os
import random
import tempfile
from typing import List

import numpy as np
import pyarrow as pa

from kwire.errors import ArgumentValueError
from kwire.pipeline._capture import CaptureWriter

SECOND = 1_000_000  # timestamps are microseconds
MS = 1_000


class Frames:
    """Column lists of generated frames, sorted by time when taken out."""

    def __init__(self):
        self._next_conn = 1
        self.clear()

    def clear(self):
        """Forget the frames; connection ids go on from where they were."""
        self.ts: List[int] = []
        self.conn: List[int] = []
        self.direction: List[int] = []
        self.frame: List[bytes] = []
        self.truncated: List[bool] = []
        self.client: List[str] = []
        self.broker: List[str] = []

    def new_conn(self):
        c = self._next_conn
        self._next_conn += 1
        return c

    def add(self, ts, conn, direction, frame, client, broker, truncated=False):
        self.ts.append(ts)
        self.conn.append(conn)
        self.direction.append(direction)
        self.frame.append(frame)
        self.truncated.append(truncated)
        self.client.append(client)
        self.broker.append(broker)

    def sorted_table(self) -> pa.Table:
        """The frames as a table of the capture's columns but ``seq`` (``ts``
        as int64 microseconds), in time order."""
        ts = np.asarray(self.ts, dtype=np.int64)
        table = pa.table({
            "ts": ts, "conn": np.asarray(self.conn, np.int64), "direction": np.asarray(self.direction, np.int8),
            "client": pa.array(self.client, pa.string()), "broker": pa.array(self.broker, pa.string()),
            "frame": pa.array(self.frame, pa.binary()), "truncated": np.asarray(self.truncated, bool)})
        # Stable sort: frames with equal timestamps keep generation order,
        # so a response never precedes its request.
        return table.take(np.argsort(ts, kind="stable"))

    def write(self, path, rows_per_group=65536):
        with CaptureWriter(path, rows_per_group=rows_per_group) as w:
            w.append_table(self.sorted_table())
        return len(self.ts)


class SortedRuns:
    """Time-sorted tables of frames ("runs") spilled to Arrow files in a
    temporary directory, then merged into one capture in time order.

    The merge holds one batch of each run: it writes every buffered frame
    that sorts before the last buffered frame of some run with more to read,
    so what is left unread can only come after it.  Frames with equal
    timestamps are ordered by run, then by place in the run: for runs added
    in generation order, that is generation order, as one stable sort of
    everything would give."""

    def __init__(self, directory, batch_rows=8192):
        self.batch_rows = batch_rows
        self._dir = tempfile.TemporaryDirectory(prefix=".kwire-synth-", dir=directory)
        self._paths: List[str] = []

    def scratch(self, name: str) -> str:
        """A path in the temporary directory, gone with it unless moved out."""
        return os.path.join(self._dir.name, name)

    def add(self, table: pa.Table):
        path = self.scratch(f"run-{len(self._paths):05d}.arrow")
        # LZ4: the runs are read once, soon; 40% of their bytes (zstd: 20%) in two thirds of zstd's time.
        options = pa.ipc.IpcWriteOptions(compression="lz4")
        with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, table.schema, options=options) as w:
            w.write_table(table, max_chunksize=self.batch_rows)
        self._paths.append(path)

    def merge_into(self, writer: CaptureWriter):
        with contextlib.ExitStack() as files:
            readers = [pa.ipc.open_file(files.enter_context(pa.OSFile(p, "rb"))) for p in self._paths]
            read = [0] * len(readers)
            buffered = [None] * len(readers)
            while True:
                for r, reader in enumerate(readers):
                    while (buffered[r] is None or not buffered[r].num_rows) and read[r] < reader.num_record_batches:
                        buffered[r] = reader.get_batch(read[r])
                        read[r] += 1
                ts = [b.column("ts").to_numpy() if b is not None else _NO_TS for b in buffered]
                more = [r for r, reader in enumerate(readers) if read[r] < reader.num_record_batches]
                if more:
                    # min() keeps the first of equal timestamps: the bound is the least (ts, run),
                    # so an earlier run's unread frames at that time are not overtaken.
                    bound_run = min(more, key=lambda r: ts[r][-1])
                    bound = ts[bound_run][-1]
                elif any(len(t) for t in ts):
                    bound_run, bound = len(readers), np.iinfo(np.int64).max
                else:
                    return
                pieces = []
                for r, b in enumerate(buffered):
                    n = int(np.searchsorted(ts[r], bound, side="right" if r <= bound_run else "left"))
                    if n:
                        pieces.append(b.slice(0, n))
                        buffered[r] = b.slice(n)
                step = pa.Table.from_batches(pieces)
                # Pieces are in run order, so a stable sort keeps generation order among equal timestamps.
                writer.append_table(step.take(np.argsort(step.column("ts").to_numpy(), kind="stable")))

    def close(self):
        self._dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_NO_TS = np.empty(0, np.int64)



def corrupt_frames(out: Frames, rng, rate):
    """Damage a few frames the way real captures are damaged: cut short
    (a capture that stopped mid-frame) or with flipped bytes."""
    n = len(out.frame)
    for i in range(n):
        if rng.random() >= rate:
            continue
        f = out.frame[i]
        if rng.random() < 0.5 and len(f) > 8:
            out.frame[i] = f[: rng.randrange(4, len(f) - 1)]
            out.truncated[i] = True
        elif len(f) > 12:
            pos = rng.randrange(12, len(f))
            out.frame[i] = f[:pos] + bytes([f[pos] ^ 0xFF]) + f[pos + 1:]



def group_starts(groups, seed, duration_s, start_us):
    """Each group's start (µs): within the first tenth of the window, drawn from the seed alone."""
    rng = random.Random(seed)
    for _ in range(groups):
        yield start_us + rng.randrange(int(duration_s * SECOND * 0.1) + 1)


def stream_groups(path, groups, simulate, *, seed=0, duration_s=600.0, corrupt_rate=0.0,
                  start_us=1_767_225_600 * SECOND, chunk_groups=250, batch_rows=8192):
    """Write the frames of ``groups`` groups to the capture ``path``; returns the frame count.

    ``simulate(out, index, t0)`` writes group ``index``'s frames, starting at ``t0`` (µs), into ``out``.
    Groups are generated ``chunk_groups`` at a time; each chunk is sorted and spilled to a temporary directory
    next to ``path``, and the chunks are merged into ``path``, reading ``batch_rows`` of each chunk at a time.
    Memory depends on these, not on ``groups``; the capture is the same whatever they are."""
    if groups < 0:
        raise ArgumentValueError(f"groups must not be negative, not {groups}")
    if chunk_groups < 1:
        raise ArgumentValueError(f"chunk_groups must be positive, not {chunk_groups}")
    if batch_rows < 1:
        raise ArgumentValueError(f"batch_rows must be positive, not {batch_rows}")
    out = Frames()
    count = 0
    with SortedRuns(os.path.dirname(os.path.abspath(path)), batch_rows=batch_rows) as runs:
        for i, t0 in enumerate(group_starts(groups, seed, duration_s, start_us)):
            before = len(out.frame)
            simulate(out, i, t0)
            if corrupt_rate:
                sub = Frames()
                sub.frame, sub.truncated = out.frame[before:], out.truncated[before:]
                corrupt_frames(sub, random.Random(seed * 7 + i), corrupt_rate)
                out.frame[before:], out.truncated[before:] = sub.frame, sub.truncated
            if (i + 1) % chunk_groups == 0 or i + 1 == groups:
                count += len(out.frame)
                runs.add(out.sorted_table())
                out.clear()
        # Written beside the runs and moved into place whole: a merge that
        # fails leaves no half capture at ``path`` (and an older one intact).
        partial = runs.scratch("capture.parquet")
        with CaptureWriter(partial) as w:
            runs.merge_into(w)
        os.replace(partial, path)
    return count
