"""The switch between the two record-batch twins (``_records_c.pyx`` and
``_records_py.py``), and the names ``kwire.codec`` re-exports from the one
the switch selected.

Record batches are the payload of Produce and Fetch; the twins read and write
them (magic 2, every codec) at two levels: a header reader for servers,
:func:`read_batch_infos` with :func:`set_base_offset`, and the objects
:class:`RecordBatch`, :class:`Record`, :class:`Header`.
"""

from kwire import _impl


def records_module(implementation=None):
    """The record-batch twin: ``implementation`` "cython" or "python" (None for kwire's switch)."""
    return _impl.load("records", implementation, package="kwire.codec")


_twin = records_module()

Header = _twin.Header
Record = _twin.Record
RecordBatch = _twin.RecordBatch
BatchInfo = _twin.BatchInfo
BatchList = _twin.BatchList
read_batch_infos = _twin.read_batch_infos
set_base_offset = _twin.set_base_offset
decode_record_batches = _twin.decode_record_batches
read_record_batches = _twin.read_record_batches
encode_record_batches = _twin.encode_record_batches
crc32c = _twin.crc32c
crc32c_backend = _twin.crc32c_backend
DEFAULT_MAX_DECOMPRESSED_SIZE = _twin.DEFAULT_MAX_DECOMPRESSED_SIZE
