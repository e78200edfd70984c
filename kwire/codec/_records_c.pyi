# Written by hand from _records_c.pyx; tests/test_stubs.py checks its names and parameters against the module.
# The pure twin, _records_py, has the same names.
from collections.abc import Iterable, Iterator
from typing import NamedTuple, TypeVar

from typing_extensions import Buffer

_T = TypeVar("_T")

DEFAULT_MAX_DECOMPRESSED_SIZE: int

class BatchInfo(NamedTuple):
    position: int
    size: int
    base_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    compression: int
    is_transactional: bool
    is_control: bool
    timestamp_type: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

class BatchList(list[_T]):
    end: int
    partial_tail: int
    def __init__(self, items: Iterable[_T] = (), end: int = 0, partial_tail: int = 0) -> None: ...

class Header:
    key: str
    value: bytes | None
    def __init__(self, key: str, value: bytes | None = None) -> None: ...
    def __iter__(self) -> Iterator[str | bytes | None]: ...

class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    attributes: int
    def __init__(
        self,
        key: bytes | None = None,
        value: bytes | None = None,
        headers: Iterable[Header | tuple[str, bytes | None]] = (),
        *,
        offset: int = 0,
        timestamp: int = 0,
        attributes: int = 0,
    ) -> None: ...

class RecordBatch:
    # The header fields repeat BatchInfo's on purpose: both classes carry DefaultRecordBatch's header, BatchInfo
    # as a summary without the records, and a stub must list each class's own attributes.
    base_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: list[Record]
    def __init__(
        self,
        records: Iterable[Record] = (),
        *,
        base_offset: int = 0,
        partition_leader_epoch: int = -1,
        compression: int | str = 0,
        timestamp_type: int = 0,
        is_transactional: bool = False,
        is_control: bool = False,
        delete_horizon_ms: int | None = None,
        attributes: int | None = None,
        last_offset_delta: int | None = None,
        base_timestamp: int | None = None,
        max_timestamp: int | None = None,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        magic: int = 2,
        crc: int = 0,
    ) -> None: ...
    def __iter__(self) -> Iterator[Record]: ...
    @property
    def compression(self) -> int: ...
    @property
    def timestamp_type(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def delete_horizon_ms(self) -> int | None: ...
    @classmethod
    def decode(cls, data: Buffer, *, check_crc: bool = True, max_decompressed_size: int = ...) -> RecordBatch: ...
    def encode(self) -> bytes: ...

def crc32c(data: Buffer, crc: int = 0) -> int: ...
def crc32c_backend() -> str: ...
def read_batch_infos(
    data: Buffer,
    *,
    check_crc: bool = True,
    allow_partial_tail: bool = False,
    check_records: bool = False,
    max_decompressed_size: int = ...,
) -> BatchList[BatchInfo]: ...
def decode_record_batches(
    data: Buffer, *, check_crc: bool = True, allow_partial_tail: bool = False, max_decompressed_size: int = ...
) -> BatchList[RecordBatch]: ...
def read_record_batches(
    data: Buffer, *, check_crc: bool = True, allow_partial_tail: bool = False, max_decompressed_size: int = ...
) -> BatchList[RecordBatch]: ...
def set_base_offset(buf: Buffer, position: int, base_offset: int) -> None: ...
def encode_record_batches(batches: Iterable[RecordBatch]) -> bytes: ...
