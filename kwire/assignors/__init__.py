"""Kafka consumer partition assignors that give exactly what the Java client gives.

Member level: :func:`assign` with :class:`GroupMember` objects, or
:func:`leader_assignments` straight from a JoinGroupResponse
(:func:`leader_sync_request`: the SyncGroupRequest frame itself).  Array level
(no Python object per partition): :func:`assign_arrays` on an
:class:`ArrayGroup`, :func:`assign_arrays_many` on many at once
(:func:`assign_sticky_pair_many`: both sticky strategies on many; inside
:func:`sharing_stacks`, range and roundrobin on the same groups share their columns).  See docs/ASSIGNORS.md.
"""

from ._arrays import ArrayAssignment, ArrayGroup, end_to_end, import_kernels, segment_starts
from ._javaorder import java_sorted
from ._model import MemberAssignments, GroupInput, MemberInput
from ._range import sharing_stacks
from ._api import (
    STRATEGIES,
    GroupMember,
    Strategy,
    assign,
    assign_arrays,
    assign_arrays_many,
    assign_group,
    assign_members_arrays,
    get_strategy,
    leader_assignments,
    leader_group,
    leader_sync_request,
    member_input,
    register_strategy,
    unregister_strategy,
)

# range and roundrobin register in ._api; sticky and cooperative-sticky
# register when their module is imported, here, so STRATEGIES is complete.
from . import _sticky  # noqa: F401,E402
from ._sticky import assign_sticky_pair, assign_sticky_pair_many  # noqa: E402
from ._server import (  # noqa: E402
    DEFAULT_SERVER_ASSIGNOR,
    SERVER_ASSIGNORS,
    ServerAssignor,
    assign_server_arrays,
    compute_preferred_server_assignor,
    get_server_assignor,
    register_server_assignor,
    unregister_server_assignor,
)
from ._server_common import INT32_MAX, MemberLevelColumns, ServerAssignment, ServerGroupArrays  # noqa: E402
from ._server_members import ServerMember, TopicMetadata, assign_server  # noqa: E402
from ._userdata import encode_cooperative_userdata as cooperative_user_data, sticky_user_data  # noqa: E402

__all__ = [
    "ArrayAssignment",
    "DEFAULT_SERVER_ASSIGNOR",
    "INT32_MAX",
    "MemberLevelColumns",
    "SERVER_ASSIGNORS",
    "ServerAssignment",
    "ServerAssignor",
    "ServerGroupArrays",
    "ServerMember",
    "TopicMetadata",
    "assign_server",
    "assign_server_arrays",
    "compute_preferred_server_assignor",
    "get_server_assignor",
    "register_server_assignor",
    "unregister_server_assignor",
    "ArrayGroup",
    "MemberAssignments",
    "GroupInput",
    "GroupMember",
    "MemberInput",
    "STRATEGIES",
    "Strategy",
    "assign",
    "assign_arrays",
    "assign_arrays_many",
    "assign_group",
    "assign_members_arrays",
    "assign_sticky_pair",
    "assign_sticky_pair_many",
    "cooperative_user_data",
    "end_to_end",
    "get_strategy",
    "import_kernels",
    "java_sorted",
    "leader_assignments",
    "leader_group",
    "leader_sync_request",
    "sharing_stacks",
    "member_input",
    "register_strategy",
    "segment_starts",
    "sticky_user_data",
    "unregister_strategy",
]
