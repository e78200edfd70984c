"""Kafka consumer partition assignors that give exactly what the Java client gives.

Member level: :func:`assign` with :class:`GroupMember` objects, or
:func:`leader_assignments` straight from a JoinGroupResponse.  Array level
(no Python object per partition): :func:`assign_arrays` on an
:class:`ArrayGroup`.  See docs/ASSIGNORS.md.
"""

# Note: importing the ``range`` submodule binds the name ``range`` in this
# package namespace, so the builtin is not usable in this file.
from ._arrays import ArrayAssignment, ArrayGroup
from ._model import Assignment, GroupInput, MemberInput
from ._api import (
    STRATEGIES,
    GroupMember,
    Strategy,
    assign,
    assign_arrays,
    assign_group,
    get_strategy,
    leader_assignments,
    member_input,
    register_strategy,
)
from ._api import _load_plugins

# Strategies living in their own modules (sticky, cooperative-sticky) register
# themselves on import; doing it here makes STRATEGIES complete from the start.
_load_plugins()

__all__ = [
    "ArrayAssignment",
    "ArrayGroup",
    "Assignment",
    "GroupInput",
    "GroupMember",
    "MemberInput",
    "STRATEGIES",
    "Strategy",
    "assign",
    "assign_arrays",
    "assign_group",
    "get_strategy",
    "leader_assignments",
    "member_input",
    "register_strategy",
]
