# Written by hand from _sticky_c.pyx; tests/test_stubs.py checks its names and parameters against the module.
from typing import Literal

import numpy as np
import numpy.typing as npt

from kwire.assignors._arrays import ArrayGroup
from kwire.assignors._model import GroupInput, MemberAssignments

IMPLEMENTATION: Literal["cython"]

def sticky_arrays(group: ArrayGroup, cooperative: bool) -> tuple[
        npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """Assign an :class:`ArrayGroup`; returns ``(indptr, topic, partition)``
    with each member's partitions in Java's list order."""

def sticky_pair_arrays(group: ArrayGroup) -> tuple[
        tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int32]],
        tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int32]]]:
    """``(sticky_arrays(group, False), sticky_arrays(group, True))`` from one
    run: the two differ only in the cooperative adjustment at the end."""

def sticky_assign(group: GroupInput, cooperative: bool) -> MemberAssignments:
    """``_sticky_py.sticky_assign`` on the compiled kernels."""

def hash_set_trace(topic_hash: int, operations: list[tuple[bool, int]]) -> list[tuple[int, int]]:
    """``(capacity, first partition or -1)`` of one topic's ``HashSet<TopicPartition>``
    after each ``(add, partition)`` operation: a test hook holding the C hash-set
    model to ``_javaorder.JavaHashTable``."""

def sticky_pair_many(groups: list[ArrayGroup]) -> tuple[
        npt.NDArray[np.uint8],
        tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int32]],
        tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int32]]]:
    """``sticky_pair_arrays`` of each group, end to end (see ``_sticky_rules.pair_many``)."""
