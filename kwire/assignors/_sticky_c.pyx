# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled sticky / cooperative-sticky assignors over an ArrayGroup.

Same public names and, for every input it covers, the same output as the
pure twin ``_sticky_py`` (the reference).  The module is one extension built
from include files, one per phase of Java's ``AbstractStickyAssignor``:

* ``_sticky_claims.pxi``       input and claims: owner resolution, path choice, rack facts, ``_Run``;
* ``_sticky_constrained.pxi``  the constrained path (all subscriptions equal);
* ``_sticky_balance.pxi``      balance: sortedCurrentSubscriptions, PartitionMovements, isBalanced,
                               performReassignments;
* ``_sticky_general.pxi``      the general path (subscriptions differ);
* ``_sticky_cooperative.pxi``  the cooperative adjustment.

Include files, not cimported modules: the phases call each other's ``cdef``
methods in the inner loops, and inside one extension those stay direct C
calls that the compiler can inline.

Every input the pure twin takes stays here, claims past a topic's end
included (see ``_Run``).  Where Java throws, the entry points raise
``JavaAssignorFailure``.
"""

import numpy as np
cimport numpy as cnp
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy, memset
from libc.stdint cimport int64_t, int32_t, uint32_t, uint8_t

from ._javaorder import capacity_after, hashmap_capacity, hashmap_positions
from ..errors import AssignmentError, KwireError
from ._sticky_rules import JavaAssignorFailure, balance_score, check_partition_total, move_budget, validate

cnp.import_array()

IMPLEMENTATION = "cython"

include "_sticky_claims.pxi"
include "_sticky_constrained.pxi"
include "_sticky_balance.pxi"
include "_sticky_general.pxi"
include "_sticky_cooperative.pxi"
include "_sticky_many.pxi"


# --------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------

_NO_I32 = np.zeros(1, dtype=np.int32)
_NO_I64 = np.zeros(1, dtype=np.int64)


def sticky_arrays(group, bint cooperative):
    """Assign an :class:`ArrayGroup`; returns ``(indptr, topic, partition)``
    with each member's partitions in Java's list order."""
    answers = _answers(group, not cooperative, cooperative)
    return answers[1] if cooperative else answers[0]


def sticky_pair_arrays(group):
    """``(sticky_arrays(group, False), sticky_arrays(group, True))`` from one
    run: the two differ only in the cooperative adjustment at the end."""
    return _answers(group, True, True)


def _no_partitions():
    return np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32)


cdef _answers(group, bint eager, bint cooperative, _Arena arena=None):
    """``(eager answer, cooperative answer)``, each only if asked for (None
    otherwise); ``arena``: scratch buffers to reuse (reset here)."""
    if group.num_members == 0:
        return (_no_partitions() if eager else None), (_no_partitions() if cooperative else None)
    check_partition_total(_partition_total(group))
    assignable = _assignable_topics(group)
    rack_active, member_rack, replica_rack_start, replica_rack, crowd = False, _NO_I32, _NO_I64, _NO_I32, None
    if any(group.racks):
        rack_active, member_rack, replica_rack_start, replica_rack, crowd = _rack_setup(group, assignable)
    if arena is not None:
        arena.reset()
    cdef _Run r = _Run(group, assignable, arena)
    return _run_paths(r, group, rack_active, member_rack, replica_rack_start, replica_rack, crowd, eager, cooperative,
                      None, None)


cdef tuple _run_paths(_Run r, group, bint rack_active, const int32_t[::1] member_rack,
                      const int64_t[::1] replica_rack_start, const int32_t[::1] replica_rack, object crowd,
                      bint eager, bint cooperative, _Answers eager_out, _Answers cooperative_out):
    """Java's run on ``r``: each answer asked for, as arrays; or, with both
    ``_out`` given, both appended to them and ``(both valid, None)``."""
    cdef _Classes classes
    r.resolve()
    transferring = None
    if r.all_subscriptions_equal:
        transferring = _constrained(r, rack_active, member_rack, replica_rack_start, replica_rack, crowd)
    else:
        if not rack_active and r.n_members <= _C_CLASSES_MEMBERS:
            classes = _member_classes(r)
        else:
            classes = _Classes()
            classes.of_member, classes.rack, classes.topic_start, classes.topic_class = _classes(
                group, np.asarray(r.assignable), member_rack if rack_active else None)
        _general(r, classes.of_member, classes.rack, classes.topic_start, classes.topic_class, _sorted_topics(r),
                 rack_active, member_rack, replica_rack_start, replica_rack)
    # the eager answer is taken before the cooperative adjustment unlinks anything
    eager_answer = None
    if eager_out is not None:
        eager_answer = r.export_into(eager_out)
    elif eager:
        eager_answer = r.export()
    if not cooperative:
        return eager_answer, None
    if transferring is not None:
        _withhold_transferring(r, transferring)
    else:
        _withhold_computed(r)
    if cooperative_out is not None:
        return r.export_into(cooperative_out) and eager_answer, None
    return eager_answer, r.export()


def sticky_assign(group, cooperative):
    """``_sticky_py.sticky_assign`` on the compiled kernels."""
    from ._arrays import ArrayGroup, ArrayAssignment
    validate(group)
    if not group.members:
        return {}
    array_group = ArrayGroup.from_group_input(group)
    out = sticky_arrays(array_group, bool(cooperative))
    return ArrayAssignment.for_group(array_group, *out).to_dict()
