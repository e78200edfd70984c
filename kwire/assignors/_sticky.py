"""Java's client ``StickyAssignor`` (eager) and ``CooperativeStickyAssignor``.

Importing this module registers both protocol names with
:mod:`kwire.assignors._api`.  The work happens in the ``_sticky`` kernels:
``_sticky_c`` (compiled, array based) or its pure twin ``_sticky_py``, which
is also the plain-Python reference the tests cross-check against; the rules
both share are in ``_sticky_rules``.  Where a member's previous assignment
comes from (userData vs. Subscription fields) is decided in
:mod:`kwire.assignors._userdata`.
"""

from __future__ import annotations

from typing import Optional

from ._arrays import ArrayAssignment, ArrayGroup, load_kernels
from ._model import MemberAssignments, GroupInput
from . import _sticky_py
from ._api import register_strategy
from ._userdata import member_input_for

NAMES = ("sticky", "cooperative-sticky")


def sticky_arrays(group: ArrayGroup, cooperative: bool, implementation: Optional[str] = None):
    """``(indptr, topic, partition)`` for ``group`` from the chosen kernel."""
    out = load_kernels("sticky", implementation).sticky_arrays(group, cooperative)
    if out is None:
        # The one place the compiled kernel hands a group to the pure twin:
        # a topic listed twice in one subscription, a claim past its topic's
        # end or listed twice by one member, or consumer racks on the general
        # path.  A known performance cliff (the reference is plain Python),
        # tracked by issue 12.
        out = _sticky_py.sticky_arrays(group, cooperative)
    return out


def _run(group: ArrayGroup, cooperative: bool, implementation: Optional[str]) -> ArrayAssignment:
    return ArrayAssignment.for_group(group, *sticky_arrays(group, cooperative, implementation))


def assign_sticky(group: ArrayGroup, implementation: Optional[str] = None) -> ArrayAssignment:
    """Eager ``sticky``: every subscribed partition is assigned this round."""
    return _run(group, False, implementation)


def assign_cooperative_sticky(group: ArrayGroup, implementation: Optional[str] = None) -> ArrayAssignment:
    """``cooperative-sticky``: partitions changing hands are withheld until
    their previous owner has revoked them (the next rebalance)."""
    return _run(group, True, implementation)


def reference_sticky(group: GroupInput) -> MemberAssignments:
    return _sticky_py.sticky_assign(group, False)


def reference_cooperative_sticky(group: GroupInput) -> MemberAssignments:
    return _sticky_py.sticky_assign(group, True)


register_strategy("sticky", assign_sticky, reference=reference_sticky, member_input=member_input_for)
register_strategy(
    "cooperative-sticky",
    assign_cooperative_sticky,
    reference=reference_cooperative_sticky,
    member_input=member_input_for,
)
