"""One classic consumer group as the coordinator keeps it: its states, their transition table, its members.

This is Kafka's ``ClassicGroup`` and ``ClassicGroupMember``: the data and the rules that read only the
group itself (who may join, which protocol wins the vote, whether everyone has rejoined).  The requests
that move a group through its states are handled in ``_classic_rebalance.py``; committed offsets are not
kept here but in ``_offsets.py``, which outlives a group.
"""

from typing import NamedTuple, Optional

from kwire.codec import ErrorCode

from ._states import StrState

# Plain ints: validate_member answers every member request.
_NONE, _UNKNOWN_MEMBER_ID, _FENCED_INSTANCE_ID = (int(ErrorCode.NONE), int(ErrorCode.UNKNOWN_MEMBER_ID),
                                                  int(ErrorCode.FENCED_INSTANCE_ID))


class GroupState(StrState):
    """A classic group's state (Kafka's ``ClassicGroupState``), valued as Kafka prints it, so a state
    compares equal to the string DescribeGroups and ListGroups carry: ``"Stable" == GroupState.STABLE``."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


EMPTY = GroupState.EMPTY
PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

# ClassicGroupState's legal transitions: target -> allowed sources.  A transition outside this table
# is a bug in the coordinator, not a client's mistake, so it raises AssertionError instead of answering.
_ALLOWED_FROM = {
    PREPARING_REBALANCE: (STABLE, COMPLETING_REBALANCE, EMPTY),
    COMPLETING_REBALANCE: (PREPARING_REBALANCE,),
    STABLE: (COMPLETING_REBALANCE,),
    EMPTY: (PREPARING_REBALANCE,),
    DEAD: (STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD),
}


class MemberView(NamedTuple):
    """What DescribeGroups reports of a member (Java ``ClassicGroupMember.describe``)."""

    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    metadata: bytes      # the bytes for the selected protocol in Stable, else b"" (describeNoMetadata)
    assignment: bytes    # the stored assignment (Java keeps it outside Stable too; Scala sends b"")


class GroupView(NamedTuple):
    """A snapshot of one group for DescribeGroups and ListGroups."""

    group_id: str
    state: GroupState
    protocol_type: str   # "" if none (a simple group)
    protocol_name: str   # the selected protocol in Stable, else ""
    generation_id: int
    leader_id: Optional[str]
    members: tuple


class ClassicMember:
    __slots__ = (
        "member_id", "instance_id", "client_id", "client_host", "rebalance_timeout_ms", "session_timeout_ms",
        "protocol_type", "protocols", "assignment", "join", "sync", "is_new",
    )

    def __init__(self, member_id, instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
                 protocol_type, protocols):
        # (a plain slot-per-field record, like any other in kwire: `duplicates` pairs such blocks by shape)
        self.member_id = member_id
        self.instance_id = instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols      # [(name, metadata bytes)] in the client's order of preference
        self.assignment = b""
        self.join = None                # the parked JoinGroup: (handle, version)
        self.sync = None                # the parked SyncGroup: (handle, version)
        self.is_new = False

    def metadata_for(self, name):
        for proto, metadata in self.protocols:
            if proto == name:
                return metadata
        return b""


class ClassicGroup:
    __slots__ = (
        "group_id", "state", "previous_state", "state_timestamp", "generation_id", "protocol_type",
        "protocol_name", "leader_id", "members", "static_members", "pending_join", "awaiting_join",
        "protocol_votes", "rebalance_timeouts", "pending_sync", "parked_syncs", "new_member_added",
    )

    def __init__(self, group_id, now):
        self.group_id = group_id
        self.state = EMPTY
        self.previous_state = DEAD
        self.state_timestamp = now
        self.generation_id = 0
        self.protocol_type = None
        self.protocol_name = None
        self.leader_id = None
        self.members = {}               # member id -> ClassicMember, insertion ordered
        self.static_members = {}        # group.instance.id -> member id
        self.pending_join = set()       # ids handed out with MEMBER_ID_REQUIRED, not joined yet
        self.awaiting_join = 0          # members with a parked JoinGroup (numMembersAwaitingJoin)
        self.protocol_votes = {}        # protocol name -> members listing it (supportedProtocols)
        self.rebalance_timeouts = {}    # rebalance timeout -> members with it (max is the group's)
        self.pending_sync = set()       # members of this generation that have not sent SyncGroup
        self.parked_syncs = {}          # member id -> ClassicMember, those with a parked SyncGroup
        self.new_member_added = False

    # -- what the group registry asks of every group type (see _registry.py) ---------------------------

    @property
    def has_members(self):
        return bool(self.members)

    @property
    def has_pending_members(self):
        return bool(self.pending_join)

    # -- the state machine ---------------------------------------------------------------------------

    def to(self, target, now):
        """Move to ``target`` through the transition table (ClassicGroup.transitionTo)."""
        if self.state not in _ALLOWED_FROM[target]:
            raise AssertionError(f"group {self.group_id!r}: illegal transition {self.state} -> {target}")
        self.previous_state = self.state
        self.state = target
        self.state_timestamp = now

    # -- derived rules (ClassicGroup) ---------------------------------------------------------------

    def rebalance_timeout_ms(self):
        return max(self.rebalance_timeouts) if self.rebalance_timeouts else 0

    def all_joined(self):
        return len(self.members) == self.awaiting_join and not self.pending_join

    def supports(self, protocol_type, names):
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        votes, size = self.protocol_votes, len(self.members)
        for name in names:
            if votes.get(name, 0) == size:
                return True
        return False

    def select_protocol(self):
        # Each member votes for its first preference among the protocols every member lists; the most
        # votes win, the first maximum in iteration order on a tie (ClassicGroup.selectProtocol).
        size = len(self.members)
        candidates = {name for name, count in self.protocol_votes.items() if count == size}
        tally = {}
        for member in self.members.values():
            for name, _ in member.protocols:
                if name in candidates:
                    tally[name] = tally.get(name, 0) + 1
                    break
        best, best_votes = None, -1
        for name, votes in tally.items():
            if votes > best_votes:
                best, best_votes = name, votes
        return best

    def validate_member(self, member_id, instance_id):
        if instance_id is not None:
            owner = self.static_members.get(instance_id)
            if owner is None:
                return _UNKNOWN_MEMBER_ID
            if owner != member_id:
                return _FENCED_INSTANCE_ID
        if member_id not in self.members:
            return _UNKNOWN_MEMBER_ID
        return _NONE

    def validate_offset_commit(self, generation_id, member_id, instance_id):
        """The group's half of OffsetCommit's checks (``ClassicGroup.validateOffsetCommit``): the error
        code every partition of the commit gets, NONE if it may be stored."""
        if self.state == DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and self.state == EMPTY:
            return _NONE  # a commit from outside the group (a simple consumer or an admin tool)
        if not (generation_id >= 0 or member_id or instance_id is not None):
            return _UNKNOWN_MEMBER_ID
        error = self.validate_member(member_id, instance_id)
        if error:
            return error
        if generation_id != self.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if self.state == COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return _NONE

    def describe(self):
        """A :class:`GroupView` of the group now."""
        stable = self.state == STABLE
        members = tuple(
            MemberView(m.member_id, m.instance_id, m.client_id, m.client_host,
                       m.metadata_for(self.protocol_name) if stable else b"", m.assignment)
            for m in self.members.values()
        )
        return GroupView(self.group_id, self.state, self.protocol_type or "",
                         (self.protocol_name or "") if stable else "", self.generation_id, self.leader_id,
                         members)

    # -- membership (ClassicGroup.add / remove / updateMember) ------------------------------------------

    def _count(self, member, sign):
        votes = self.protocol_votes
        for name, _ in member.protocols:
            count = votes.get(name, 0) + sign
            if count:
                votes[name] = count
            else:
                del votes[name]
        timeouts = self.rebalance_timeouts
        count = timeouts.get(member.rebalance_timeout_ms, 0) + sign
        if count:
            timeouts[member.rebalance_timeout_ms] = count
        else:
            del timeouts[member.rebalance_timeout_ms]

    def add(self, member):
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if self.leader_id is None:
            self.leader_id = member.member_id
        self._count(member, 1)
        if member.join is not None:
            self.awaiting_join += 1
        self.pending_join.discard(member.member_id)

    def remove(self, member_id):
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count(member, -1)
            if member.join is not None:
                self.awaiting_join -= 1
            if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
                del self.static_members[member.instance_id]
            self.parked_syncs.pop(member_id, None)
            if self.leader_id == member_id:
                self.leader_id = next(iter(self.members), None)
        self.pending_join.discard(member_id)
        self.pending_sync.discard(member_id)
        return member

    def update(self, member, protocols, rebalance_timeout_ms, session_timeout_ms, join):
        self._count(member, -1)
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        self._count(member, 1)
        self.park_join(member, join)

    def park_join(self, member, join):
        # A second JoinGroup from a member with one parked replaces it; the old one is never answered
        # (Kafka does the same: its client has long timed that request out).
        if member.join is None and join is not None:
            self.awaiting_join += 1
        elif member.join is not None and join is None:
            self.awaiting_join -= 1
        member.join = join
