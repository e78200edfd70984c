"""Arrow glue for the batch decoder (``kwire.codec.batch_decoder``: ``_batch_c`` or ``_batch_py``).

:func:`decode_record_batch` hands the capture's binary ``frame`` column to
the decoder as NumPy views of its offsets and values buffers: nothing is
copied, which is what makes ``mapInArrow`` cheap.
"""

from __future__ import annotations

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
