# Written by hand from _batch_c.pyx; tests/test_stubs.py checks its names and parameters against the module.
from typing import Any

import numpy.typing as npt
from typing_extensions import Buffer

from kwire.codec._codec_c import _AnyRequest, _AnyResponse

#: The group apis whose frames get columns of their own (from kwire.codec._batch_common).
GROUP_APIS: tuple[int, ...]
#: The apis whose response bodies are decoded: the group apis and Metadata (from kwire.codec._batch_common).
RESPONSE_APIS: tuple[int, ...]
#: The pyarrow.Schema of decode_batch's result (pyarrow ships no type information, hence Any).
FRAMES_SCHEMA: Any
REQUEST_CLASS: dict[int, type[_AnyRequest]]
RESPONSE_CLASS: dict[int, type[_AnyResponse]]

class Pairing:
    """Requests waiting for their response, by ``(conn, correlation_id)``."""

    pending: dict[Any, tuple[Any, ...]]
    def __init__(self) -> None: ...
    def __len__(self) -> int: ...

# Returns a pyarrow.RecordBatch of FRAMES_SCHEMA.
def decode_batch(seq: npt.ArrayLike, ts: npt.ArrayLike, conn: npt.ArrayLike, direction: npt.ArrayLike,
                 truncated: npt.ArrayLike, offsets: npt.ArrayLike, values: Buffer, pairing: Pairing) -> Any:
    """See ``kwire.codec._batch_py.decode_batch``."""
