"""The consumer-group protocols' state machines, sans-IO: the classic protocol and KIP-848's consumer protocol.

:class:`GroupCoordinator` is the broker's side (many groups of either protocol, mixed groups included;
JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat, ConsumerGroupDescribe, OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups); :class:`ConsumerMember` is a classic consumer's side (FindCoordinator,
join, sync, heartbeat, leave, eager and cooperative rebalances) and :class:`ConsumerProtocolMember` a
consumer-protocol one (heartbeats, revoke then assign, leave).  Neither opens a socket,
starts a thread or reads a clock: the caller passes decoded messages and ``now`` in milliseconds and sends
what comes back.  Their states are :class:`GroupState` and :class:`MemberState`, string-valued enums.
See docs/GROUP.md.
"""

# ``errors`` and ``ERROR_NAMES`` are kept for callers of earlier versions: Kafka's codes are
# kwire.codec.ErrorCode, and ``errors.NOT_COORDINATOR`` is ``ErrorCode.NOT_COORDINATOR``.
from kwire.group import _errors as errors
from kwire.group._classic_group import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    GroupState,
    GroupView,
    MemberView,
)
from kwire.group._classic_rebalance import NEW_MEMBER_JOIN_TIMEOUT_MS
from kwire.group._coordinator import GroupCoordinator
from kwire.group._request import Reply, RequestContext
from kwire.group._member import (
    COOPERATIVE,
    DEFAULT_VERSIONS,
    EAGER,
    ConsumerMember,
    CoordinatorFound,
    GroupJoined,
    MemberFailed,
    MemberState,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Send,
)
from kwire.group._driver import MemberDriver
from kwire.group._reconcile import ConsumerMemberState
from kwire.group._consumer_group import ConsumerGroupState, GroupInvariantError
from kwire.group._consumer_config import CONSUMER_CONFIG_DEFAULTS, ConsumerGroupConfig
from kwire.group._consumer_coordinator import (
    ConsumerGroupCoordinator,
    GroupEmptied,
    MemberFenced,
    TargetAssignmentComputed,
    TargetAssignmentFailed,
)
from kwire.group._consumer_member import ConsumerMembershipState, ConsumerProtocolMember, CoordinatorLost
from kwire.group._consumer_driver import ConsumerProtocolDriver
from kwire.group._errors import ERROR_NAMES, GroupMemberFatalError, GroupProtocolError

__all__ = [
    "GroupState", "MemberState",
    "COMPLETING_REBALANCE", "DEAD", "EMPTY", "PREPARING_REBALANCE", "STABLE", "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "ERROR_NAMES", "GroupCoordinator", "GroupMemberFatalError", "GroupProtocolError", "GroupView", "MemberView",
    "Reply", "RequestContext", "errors",
    "COOPERATIVE", "DEFAULT_VERSIONS", "EAGER", "ConsumerMember", "CoordinatorFound", "GroupJoined", "MemberFailed",
    "PartitionsAssigned", "PartitionsLost", "PartitionsRevoked", "Send", "MemberDriver", "ConsumerProtocolDriver",
    "ConsumerMemberState", "ConsumerGroupState", "GroupInvariantError", "ConsumerGroupConfig", "CONSUMER_CONFIG_DEFAULTS",
    "ConsumerGroupCoordinator", "GroupEmptied", "MemberFenced", "TargetAssignmentComputed", "TargetAssignmentFailed",
    "ConsumerMembershipState", "ConsumerProtocolMember", "CoordinatorLost",
]
