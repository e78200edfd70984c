"""The classic consumer-group protocol's two state machines, sans-IO.

:class:`GroupCoordinator` is the broker's side (many groups; JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
and the checks OffsetCommit needs); :class:`ConsumerMember` is the consumer's side (FindCoordinator, join,
sync, heartbeat, leave, eager and cooperative rebalances).  Neither opens a socket, starts a thread or reads
a clock: the caller passes decoded messages and ``now`` in milliseconds and sends what comes back.
See docs/GROUP.md.
"""

from kwire.group import _errors as errors
from kwire.group._coordinator import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    PREPARING_REBALANCE,
    STABLE,
    GroupCoordinator,
    GroupView,
    MemberView,
    Reply,
)
from kwire.group._member import (
    COOPERATIVE,
    DEFAULT_VERSIONS,
    EAGER,
    ConsumerMember,
    CoordinatorFound,
    GroupJoined,
    MemberFailed,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Send,
)
from kwire.group._driver import MemberDriver
from kwire.group._reconcile import ConsumerMemberState
from kwire.group._consumer_group import ConsumerGroupState, GroupInvariantError
from kwire.group._consumer_config import ConsumerGroupConfig
from kwire.group._consumer_coordinator import (
    ConsumerGroupCoordinator,
    GroupEmptied,
    MemberFenced,
    TargetAssignmentComputed,
    TargetAssignmentFailed,
)
from kwire.group._consumer_member import ConsumerMembershipState, ConsumerProtocolMember, CoordinatorLost
from kwire.group._errors import ERROR_NAMES, GroupMemberFatalError, GroupProtocolError

__all__ = [
    "COMPLETING_REBALANCE", "DEAD", "EMPTY", "PREPARING_REBALANCE", "STABLE", "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "ERROR_NAMES", "GroupCoordinator", "GroupMemberFatalError", "GroupProtocolError", "GroupView", "MemberView",
    "Reply", "errors",
    "COOPERATIVE", "DEFAULT_VERSIONS", "EAGER", "ConsumerMember", "CoordinatorFound", "GroupJoined", "MemberFailed",
    "PartitionsAssigned", "PartitionsLost", "PartitionsRevoked", "Send", "MemberDriver",
    "ConsumerMemberState", "ConsumerGroupState", "GroupInvariantError", "ConsumerGroupConfig",
    "ConsumerGroupCoordinator", "GroupEmptied", "MemberFenced", "TargetAssignmentComputed", "TargetAssignmentFailed",
    "ConsumerMembershipState", "ConsumerProtocolMember", "CoordinatorLost",
]
