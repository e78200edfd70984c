# Written by hand from _server_c.pyx; tests/test_stubs.py checks its names and parameters against the module.
# Array arguments are typed memoryviews in the .pyx: they must be C-contiguous buffers of exactly the dtype given
# here (Cython raises ValueError on any other dtype).
from typing import Any, Callable, Sequence

import numpy as np
import numpy.typing as npt

_I32 = npt.NDArray[np.int32]
_I64 = npt.NDArray[np.int64]
_U8 = npt.NDArray[np.uint8]
_Result = tuple[npt.NDArray[np.bool_], _I64, _I32, _I64, _I32]

def member_map_order(member_ids: Sequence[str]) -> _I32:
    """Member indices in the iteration order of Java's ``new HashMap<String, ?>()`` filled in index order."""

def uniform_homogeneous(order: _I32, subscribed: _I32, topic_ids: _U8, partitions: _I32, cur_indptr: _I64,
                        cur_topics: _I32, cur_part_indptr: _I64, cur_parts: _I32, scratch: bool = False) -> _Result:
    """(present, indptr, topics, part_indptr, parts); with ``scratch`` in this thread's work arrays."""

def uniform_heterogeneous(order: _I32, member_sub: _I32, sub_indptr: _I64, sub_topics: _I32, topic_ids: _U8,
                          partitions: _I32, cur_indptr: _I64, cur_topics: _I32, cur_part_indptr: _I64,
                          cur_parts: _I32, scratch: bool = False) -> _Result:
    """(present, indptr, topics, part_indptr, parts); with ``scratch`` in this thread's work arrays."""

def range_assign(order: _I32, homogeneous: bool, member_sub: _I32, sub_indptr: _I64, sub_topics: _I32,
                 partitions: _I32, scratch: bool = False) -> _Result:
    """(present, indptr, topics, part_indptr, parts); with ``scratch`` in this thread's work arrays."""

def member_dicts(member_ids: list[str], topic_keys: list[Any], present: npt.NDArray[np.bool_], indptr: _I64,
                 topics: _I32, part_indptr: _I64, parts: _I32, current: list[Any] | None = None,
                 read: tuple[Any, ...] | None = None) -> dict[str, dict[Any, list[int]]]: ...
def first_repeat(indptr: _I64, values: _I32, domain: int) -> int: ...
def member_columns(member_ids: list[str], members: list[Any], member_class: type,
                   topic_index: Callable[[Any], int], read_assignment: bool = True,
                   scratch: bool = False) -> tuple[Any, ...]:
    """(member_sub, rows, unresolved, assignments, canon, cur_indptr, cur_topics, cur_part_indptr, cur_parts)."""
