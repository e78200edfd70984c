# Written by hand from _rangerr_c.pyx; tests/test_stubs.py checks its names and parameters against the module.
# Array arguments are typed memoryviews in the .pyx: they must be C-contiguous-or-strided buffers of exactly the
# dtype given here (Cython raises ValueError on any other dtype).
import numpy as np
import numpy.typing as npt

_I32 = npt.NDArray[np.int32]
_I64 = npt.NDArray[np.int64]
_U8 = npt.NDArray[np.uint8]

def subscribers_of_shared_topics(num_topics: int, topic_list: _I32, member_order: _I32) -> tuple[_I64, _I32]: ...
def subscribers_by_topic(num_topics: int, sub_indptr: _I64, sub_topics: _I32, member_order: _I32) -> tuple[_I64, _I32]:
    """(tp_indptr, tp_members): each topic's subscribers, in ``member_order``, a member listed once per topic."""

def first_seen(num_topics: int, sub_indptr: _I64, sub_topics: _I32, member_visit_order: _I32,
               num_distinct: int) -> _I64: ...
def range_plain(num_members: int, partition_counts: _I32, tp_indptr: _I64, tp_members: _I32,
                topic_order: _I32) -> tuple[_I64, _I32, _I32]:
    """(indptr, topic, partition) per member."""

def roundrobin(num_members: int, partition_counts: _I32, tp_indptr: _I64, tp_members: _I32, topic_order: _I32,
               member_rank: _I32) -> tuple[_I64, _I32, _I32]:
    """(indptr, topic, partition) per member."""

def rack_needs(partition_counts: _I32, topic_offset: _I64, tp_indptr: _I64, tp_members: _I32, member_rack: _I32,
               rr_indptr: _I64, rr: _I32) -> _U8: ...
def range_rack(num_members: int, partition_counts: _I32, topic_offset: _I64, tp_indptr: _I64, tp_members: _I32,
               topic_order: _I32, needs: _U8, co_indptr: _I64, co_topics: _I32, member_rack: _I32,
               rr_indptr: _I64, rr: _I32) -> tuple[_I64, _I32, _I32]:
    """(indptr, topic, partition) per member."""

def string_hashes(names: list[str]) -> _I32:
    """Java ``String.hashCode`` of each name (int32), over UTF-16 code units."""

def assignment_is_valid(partition_counts: _I32, topic_offset: _I64, sub_indptr: _I64, sub_topics: _I32,
                        indptr: _I64, topic: _I32, number: _I32) -> bool:
    """Every entry an existing partition of a topic its member subscribes to, each partition once."""
def consistent_claims(partition_counts: _I32, topic_offset: _I64, generation: _I32, sub_indptr: _I64,
                      sub_topics: _I32, owned_indptr: _I64, owned_topic: _I32,
                      owned_partition: _I32) -> npt.NDArray[np.bool_]:
    """Per owned entry: whether a consistent group could send it (the sticky default's repair, step 3)."""

def transfers_withheld(partition_counts: _I32, topic_offset: _I64, owned_indptr: _I64, owned_topic: _I32,
                       owned_partition: _I32, indptr: _I64, topic: _I32, number: _I32) -> tuple[_I64, _I32, _I32]:
    """The valid answer ``(indptr, topic, number)`` without the partitions still to be revoked (step 4)."""
