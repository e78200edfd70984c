"""Arrow glue for the batch decoder (``kwire.codec.batch_decoder``: ``_batch_c`` or ``_batch_py``).

:func:`decode_record_batch` hands the capture's binary ``frame`` column to
the decoder as NumPy views of its offsets and values buffers: nothing is
copied, which is what makes ``mapInArrow`` cheap.  :func:`decode_to_parquet`
is a decode task's whole partition: decoded and written to one Parquet file
by pyarrow, so the decoded columns never go back to the JVM.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pyarrow as pa

from kwire.codec import batch_decoder
from kwire.errors import ArgumentTypeError
from kwire.pipeline._capture import read_capture

def FRAMES_SCHEMA():  # noqa: N802 - a function so importing this module does not load the decoder
    return batch_decoder().FRAMES_SCHEMA


def _int_view(arr, dtype):
    """Zero-copy NumPy view of a fixed-width Arrow array without nulls."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    width = np.dtype(dtype).itemsize
    buf = arr.buffers()[1]
    return np.frombuffer(buf, dtype=dtype, count=len(arr), offset=arr.offset * width)


def binary_views(arr):
    """``(offsets, values)`` NumPy views of a binary Arrow array, no copy."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_large_binary(arr.type):
        off_dtype = np.int64
    elif pa.types.is_binary(arr.type):
        off_dtype = np.int32
    else:
        raise ArgumentTypeError(f"frame column must be binary, got {arr.type}")
    _validity, off_buf, data_buf = arr.buffers()
    width = np.dtype(off_dtype).itemsize
    offsets = np.frombuffer(off_buf, dtype=off_dtype, count=len(arr) + 1, offset=arr.offset * width)
    values = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets, values


def decode_record_batch(batch, pairing, module=None):
    """Decode one capture batch (columns seq, ts, conn, direction, frame,
    truncated) into a batch of the decoder's ``FRAMES_SCHEMA``."""
    mod = module or batch_decoder()
    col = batch.column
    names = batch.schema.names
    ts = col(names.index("ts"))
    if pa.types.is_timestamp(ts.type):
        ts = ts.cast(pa.int64())
    offsets, values = binary_views(col(names.index("frame")))
    truncated = col(names.index("truncated")).to_numpy(zero_copy_only=False)
    return mod.decode_batch(_int_view(col(names.index("seq")), np.int64), _int_view(ts, np.int64),
                            _int_view(col(names.index("conn")), np.int64),
                            _int_view(col(names.index("direction")), np.int8), truncated, offsets, values, pairing)


#: Rows of one row group of a frames file a decode task writes (a task's
#: Arrow batches are of ten thousand rows): about 115 MB of decoded columns
#: held at a time.  Spark's later reads of the frames took 10-20% more CPU
#: with row groups of 131,072 rows than with these, which read as fast as
#: the files Spark's own writer made.
ROW_GROUP_ROWS = 524288


def decode_to_parquet(batches, pairing, filesystem, path, temporary, module=None, row_group_rows=ROW_GROUP_ROWS):
    """Decode a partition's capture batches (sorted by ``conn``, ``seq``)
    into one Parquet file of the decoder's ``FRAMES_SCHEMA`` at ``path`` in
    ``filesystem`` (a ``pyarrow.fs`` file system).

    The file is written under ``temporary`` (beside ``path``; a name Spark's
    reader skips) and moved to ``path`` once complete, so a reader never sees
    half a file and a retried task replaces its attempt's file whole (a
    failed attempt removes its temporary file).
    Returns ``(frames, decode errors, connections)`` of the partition; a
    connection's frames are all in one partition, so the counts add up over
    partitions."""
    import pyarrow.parquet as pq

    mod = module or batch_decoder()
    frames = errors = connections = 0
    last_conn = None
    pending, pending_rows = [], 0
    try:
        with filesystem.open_output_stream(temporary) as stream, \
                pq.ParquetWriter(stream, mod.FRAMES_SCHEMA) as writer:
            for batch in batches:
                if not batch.num_rows:
                    continue
                decoded = decode_record_batch(batch, pairing, mod)
                frames += decoded.num_rows
                errors += decoded.num_rows - decoded.column(decoded.schema.get_field_index("decode_error")).null_count
                conn = _int_view(batch.column(batch.schema.names.index("conn")), np.int64)
                connections += int(np.count_nonzero(conn[1:] != conn[:-1])) + (int(conn[0]) != last_conn)
                last_conn = int(conn[-1])
                pending.append(decoded)
                pending_rows += decoded.num_rows
                if pending_rows >= row_group_rows:
                    writer.write_table(pa.Table.from_batches(pending))
                    pending, pending_rows = [], 0
            if pending:
                writer.write_table(pa.Table.from_batches(pending))
    except BaseException:
        with contextlib.suppress(OSError):
            filesystem.delete_file(temporary)
        raise
    filesystem.move(temporary, path)
    return frames, errors, connections


def decode_table(table, implementation=None, batch_rows=65536):
    """Decode a whole capture table in one process (no Spark): the reference
    the Spark stage is checked against, and a fast path for small captures."""
    mod = batch_decoder(implementation)
    table = table.sort_by([("conn", "ascending"), ("seq", "ascending")])
    pairing = mod.Pairing()
    out = [decode_record_batch(b, pairing, mod) for b in table.to_batches(max_chunksize=batch_rows)]
    if not out:
        return mod.FRAMES_SCHEMA.empty_table()
    return pa.Table.from_batches(out).sort_by("seq")


def decode_capture(path, implementation=None):
    return decode_table(read_capture(path), implementation)
