"""The capture format: one Parquet row per Kafka frame seen on a connection.

Every producer of captures (``kwire synth``, ``kwire record``, ``kwire
import-pcap``) writes through :class:`CaptureWriter`, so the schema lives in
one place.  docs/PIPELINE.md documents the columns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kwire.errors import CaptureFormatError

#: Frame sent by the client (a request).
CLIENT_TO_BROKER = 0
#: Frame sent by the broker (a response).
BROKER_TO_CLIENT = 1

SCHEMA = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("conn", pa.int64(), nullable=False),
        pa.field("direction", pa.int8(), nullable=False),
        pa.field("client", pa.string()),
        pa.field("broker", pa.string()),
        pa.field("frame", pa.binary(), nullable=False),
        pa.field("truncated", pa.bool_(), nullable=False),
    ],
    metadata={b"kwire.capture": b"1"},
)

COLUMNS = SCHEMA.names


class CaptureWriter:
    """Appends frames to a Parquet capture, ``rows_per_group`` at a time.

    ``seq`` is assigned here, in call order: it is the capture's total order,
    which the decoder relies on to pair a response with the request before it
    on the same connection.  Not thread-safe; the recorder calls it from one
    task."""

    def __init__(self, path, rows_per_group=65536, compression="zstd"):
        self.path = str(path)
        self.rows_per_group = rows_per_group
        self._writer = pq.ParquetWriter(self.path, SCHEMA, compression=compression)
        self._cols = {name: [] for name in COLUMNS}
        # Tables from append_table not yet written: less than a row group.
        self._tables = []
        self._table_rows = 0
        self.seq = 0
        self.closed = False

    def append(self, ts_us, conn, direction, frame, truncated=False, client=None, broker=None):
        if self._tables:
            self._write_tables()  # they came first
        c = self._cols
        c["seq"].append(self.seq)
        c["ts"].append(int(ts_us))
        c["conn"].append(int(conn))
        c["direction"].append(int(direction))
        c["client"].append(client)
        c["broker"].append(broker)
        c["frame"].append(bytes(frame))
        c["truncated"].append(bool(truncated))
        self.seq += 1
        if len(c["seq"]) >= self.rows_per_group:
            self.flush()

    def append_table(self, table: pa.Table):
        """Bulk append (the generator's path): a table with every column but
        ``seq``, ``ts`` as int64 microseconds or as the schema's timestamp.

        Rows are written in whole row groups of ``rows_per_group``; the rest
        waits for the next call or :meth:`flush`.  So a capture appended in
        pieces has the row groups, and the bytes, of one appended at once."""
        self._write_rows()
        n = table.num_rows
        seq = pa.array(np.arange(self.seq, self.seq + n, dtype=np.int64))
        columns = [seq] + [table.column(f.name).cast(f.type) for f in SCHEMA if f.name != "seq"]
        self._tables.append(pa.Table.from_arrays(columns, schema=SCHEMA))
        self._table_rows += n
        self.seq += n
        whole = self._table_rows - self._table_rows % self.rows_per_group
        if whole:
            pending = pa.concat_tables(self._tables)
            # One chunk per column: Parquet's pages break where the input's chunks do.
            self._writer.write_table(pending.slice(0, whole).combine_chunks(), row_group_size=self.rows_per_group)
            self._tables = [pending.slice(whole)]
            self._table_rows -= whole

    def _write_tables(self):
        if self._table_rows:
            self._writer.write_table(pa.concat_tables(self._tables).combine_chunks(),
                                     row_group_size=self.rows_per_group)
        self._tables = []
        self._table_rows = 0

    def _write_rows(self):
        c = self._cols
        if not c["seq"]:
            return
        arrays = []
        for field in SCHEMA:
            if field.name == "ts":
                arrays.append(pa.array(c["ts"], pa.int64()).cast(field.type))
            else:
                arrays.append(pa.array(c[field.name], field.type))
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=SCHEMA))
        for v in c.values():
            v.clear()

    def flush(self):
        self._write_tables()
        self._write_rows()

    def close(self):
        if self.closed:
            return
        self.flush()
        self._writer.close()
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_capture(path) -> pa.Table:
    """The whole capture, checked against :data:`SCHEMA`, in ``seq`` order."""
    table = pq.read_table(path)
    missing = [n for n in COLUMNS if n not in table.column_names]
    if missing:
        raise CaptureFormatError(f"{path} is not a kwire capture: missing columns {missing}")
    table = table.select(COLUMNS).cast(SCHEMA)
    return table.sort_by("seq")
