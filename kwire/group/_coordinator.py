"""Kafka's classic group coordinator as a sans-IO state machine.

The caller owns sockets and the clock.  It hands :meth:`GroupCoordinator.handle` one decoded request,
its api version, an opaque handle (whatever routes an answer back to its connection) and ``now`` in
milliseconds, and gets back every :class:`Reply` that became ready: the request's own answer if it is
not parked, and the answers of *earlier* parked requests that this one completed.  :meth:`tick` fires
timers; :meth:`next_deadline` says when the next one is due.  Nothing here sleeps, blocks or reads a
clock, so an asyncio server and a unit test drive it the same way.

Semantics follow Apache Kafka's Java ("new") group coordinator for classic groups, check by check; the
section numbers in comments (``§4.4``) are those of the reference notes kwire was written from, and the
Kafka names (``GroupMetadataManager.prepareRebalance``) are where each rule lives in Kafka's source.
Where Kafka's Java and Scala coordinators differ, the Java one is followed (it is the only one in 4.0).

One deliberate difference: Kafka iterates members in ``java.util.HashMap`` order, which decides who
becomes leader after the leader leaves and the order of the leader's member list.  Here members are
kept in insertion order (a dict), which clients cannot tell apart from any other arbitrary order.

Cost: every request is O(1) in the group's size apart from the ones whose answer *is* O(n) (the
leader's JoinGroup response lists every member; the leader's SyncGroup carries every assignment) and
the once-per-rebalance steps (completing the join phase, preparing a rebalance from
CompletingRebalance).  Counters kept on the group (members awaiting join, votes per protocol, pending
ids, rebalance timeouts) make ``hasAllMembersJoined`` and ``supportsProtocols`` constant time.
"""

import os
from typing import Any, NamedTuple, Optional

from kwire.codec import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    MemberResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kwire.errors import UnsupportedVersionError

# The codes by name, not as attributes of a module: they are read on every request.  _member.py imports the
# codes it handles the same way, so the two lists overlap where both machines deal with the same code.
from ._errors import (
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_GROUP_ID,
    INVALID_SESSION_TIMEOUT,
    MEMBER_ID_REQUIRED,
    NONE,
    NOT_COORDINATOR,
    OFFSET_METADATA_TOO_LARGE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
    GroupProtocolError,
)
from ._timers import Timers

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

# ClassicGroupState's legal transitions: target -> allowed sources.  A transition outside this table
# is a bug in this module, so it raises instead of answering a client.
_ALLOWED_FROM = {
    PREPARING_REBALANCE: (STABLE, COMPLETING_REBALANCE, EMPTY),
    COMPLETING_REBALANCE: (PREPARING_REBALANCE,),
    STABLE: (COMPLETING_REBALANCE,),
    EMPTY: (PREPARING_REBALANCE,),
    DEAD: (STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD),
}

# The fixed "new member join timeout" (GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS):
# a member added by JoinGroup must see its join complete within this long, whatever its session timeout.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

# Timer kinds (the first element of a timer key); the rest of the key names the group and member.
_SESSION, _JOIN, _SYNC = "session", "join", "sync"


def _random_member_id(prefix):
    # Kafka's ``prefix + "-" + UUID.randomUUID()``: a version-4 UUID in its canonical text form.  Formatted
    # by hand because uuid.uuid4() costs a third of a whole JoinGroup here.
    h = os.urandom(16).hex()
    return f"{prefix}-{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


class Reply(NamedTuple):
    """One answer ready to be sent: the caller's ``handle`` as given with the request, the response
    message, and the api version to encode it at (the request's)."""

    handle: Any
    version: int
    response: Any


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
    state: str
    protocol_type: str   # "" if none (a simple group)
    protocol_name: str   # the selected protocol in Stable, else ""
    generation_id: int
    leader_id: Optional[str]
    members: tuple


class _Member:
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


class _Group:
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
        self.members = {}               # member id -> _Member, insertion ordered
        self.static_members = {}        # group.instance.id -> member id
        self.pending_join = set()       # ids handed out with MEMBER_ID_REQUIRED, not joined yet
        self.awaiting_join = 0          # members with a parked JoinGroup (numMembersAwaitingJoin)
        self.protocol_votes = {}        # protocol name -> members listing it (supportedProtocols)
        self.rebalance_timeouts = {}    # rebalance timeout -> members with it (max is the group's)
        self.pending_sync = set()       # members of this generation that have not sent SyncGroup
        self.parked_syncs = {}          # member id -> _Member, those with a parked SyncGroup
        self.new_member_added = False

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
                return UNKNOWN_MEMBER_ID
            if owner != member_id:
                return FENCED_INSTANCE_ID
        if member_id not in self.members:
            return UNKNOWN_MEMBER_ID
        return NONE

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


class GroupCoordinator:
    """Many classic consumer groups, sans-IO.  See the module docstring for the calling convention.

    Configuration mirrors the broker's: ``initial_rebalance_delay_ms`` (group.initial.rebalance.delay.ms),
    ``min_session_timeout_ms`` / ``max_session_timeout_ms`` (group.min/max.session.timeout.ms),
    ``max_group_size`` (group.max.size).  ``member_id_factory(prefix)`` makes member ids; the default is
    Kafka's ``prefix + "-" + uuid4``; tests inject a deterministic one.
    """

    def __init__(self, *, initial_rebalance_delay_ms=3000, min_session_timeout_ms=6000,
                 max_session_timeout_ms=1_800_000, max_group_size=2**31 - 1, member_id_factory=None,
                 partition_exists=None, offset_metadata_max_bytes=4096):
        if max_group_size < 1:
            raise GroupProtocolError("max_group_size must be at least 1 (group.max.size)")
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.max_group_size = max_group_size
        self._new_member_id = member_id_factory or _random_member_id
        # ``partition_exists(topic, partition)``: the cluster's answer to "is this a partition?", for
        # OffsetCommit's UNKNOWN_TOPIC_OR_PARTITION; None accepts every partition (a coordinator alone).
        self._partition_exists = partition_exists
        self.offset_metadata_max_bytes = offset_metadata_max_bytes
        self._groups = {}
        # group id -> {(topic, partition): (offset, leader_epoch, metadata)}.  Kept apart from the groups:
        # committed offsets live in Kafka's log and outlast a group's unloading (a coordinator move).
        self._offsets = {}
        self._timers = Timers()
        self._out = []
        self._handlers = {
            JoinGroupRequest: self._join_group,
            SyncGroupRequest: self._sync_group,
            HeartbeatRequest: self._heartbeat,
            LeaveGroupRequest: self._leave_group,
            OffsetCommitRequest: self._offset_commit,
            OffsetFetchRequest: self._offset_fetch,
            DescribeGroupsRequest: self._describe_groups,
            ListGroupsRequest: self._list_groups,
        }

    # -- the driving surface ----------------------------------------------------------------------------

    def handle(self, handle, request, version, now, *, client_id="", client_host="/127.0.0.1"):
        """Process one request; return every Reply ready now (possibly none: the request is parked).

        ``client_id`` is the request header's client id (the prefix of a dynamic member's new id) and
        ``client_host`` the peer address as Java prints it; both are reported by DescribeGroups."""
        handler = self._handlers.get(type(request))
        if handler is None:
            raise GroupProtocolError(
                f"GroupCoordinator handles JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, "
                f"DescribeGroups and ListGroups requests, "
                f"not {type(request).__name__}")
        if not request.min_version <= version <= request.max_version:
            raise UnsupportedVersionError(
                f"{type(request).__name__} has versions {request.min_version}-{request.max_version}, not {version}")
        if self._timers.may_be_due(now):
            self._fire_due(now)
        handler(handle, request, version, now, client_id, client_host)
        return self._drain()

    def tick(self, now):
        """Fire every timer due at ``now``; return the replies that became ready."""
        self._fire_due(now)
        return self._drain()

    def next_deadline(self):
        """The time (ms) at which :meth:`tick` has work to do, or None if no timer is armed."""
        return self._timers.next_deadline()

    def unload_group(self, group_id, now):
        """The coordinator stops owning ``group_id`` (Kafka: its offsets partition moved away).

        Parked requests are answered NOT_COORDINATOR, as ``GroupMetadataManager.onUnloaded`` does, the
        group passes through Dead and is forgotten with its timers.  Returns the replies."""
        group = self._groups.pop(group_id, None)
        if group is not None:
            if group.state == PREPARING_REBALANCE:
                for member in group.members.values():
                    if member.join is not None:
                        self._reply_join(member.join, self._join_error(member.join[1], NOT_COORDINATOR, ""))
                        group.park_join(member, None)
            elif group.state in (COMPLETING_REBALANCE, STABLE):
                for member in group.parked_syncs.values():
                    self._reply_sync(member.sync, NOT_COORDINATOR)
                    member.sync = None
                group.parked_syncs.clear()
            self._transition(group, DEAD, now)
            timers = self._timers
            timers.cancel((_JOIN, group_id))
            timers.cancel((_SYNC, group_id))
            for member_id in (*group.members, *group.pending_join):
                timers.cancel((_SESSION, group_id, member_id))
        return self._drain()

    # -- the read surface for DescribeGroups, ListGroups and offsets -----------------------------------

    def group_ids(self):
        return list(self._groups)

    def has_group(self, group_id):
        return group_id in self._groups

    def describe_group(self, group_id):
        """A :class:`GroupView`, or None for a group this coordinator does not have (DescribeGroups then
        answers NONE with state "Dead")."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        stable = group.state == STABLE
        members = tuple(
            MemberView(m.member_id, m.instance_id, m.client_id, m.client_host,
                       m.metadata_for(group.protocol_name) if stable else b"", m.assignment)
            for m in group.members.values()
        )
        return GroupView(group.group_id, group.state, group.protocol_type or "",
                         (group.protocol_name or "") if stable else "", group.generation_id, group.leader_id,
                         members)

    def list_groups(self, states=None):
        """``[(group_id, protocol_type, state)]``; ``states`` filters case-insensitively as ListGroups v4+."""
        wanted = {s.strip().lower() for s in states} if states else None
        return [(g.group_id, g.protocol_type or "", g.state) for g in self._groups.values()
                if wanted is None or g.state.lower() in wanted]

    def validate_offset_commit(self, group_id, generation_id, member_id, group_instance_id, *, version, now):
        """The group-level checks of OffsetCommit (``ClassicGroup.validateOffsetCommit`` and
        ``OffsetMetadataManager.validateOffsetCommit``, §8.1): returns the error code every partition
        gets, NONE if the commit may be stored.

        Side effects as Kafka's: an unknown group with ``generation_id < 0`` is created as a simple
        group (Empty, no protocol type); an accepted member commit in Stable or PreparingRebalance
        re-arms that member's session timer."""
        group = self._groups.get(group_id)
        if group is None:
            if generation_id < 0:
                self._groups[group_id] = _Group(group_id, now)
                return NONE
            return GROUP_ID_NOT_FOUND if version >= 9 else ILLEGAL_GENERATION
        if group.state == DEAD:
            return COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.state == EMPTY:
            return NONE
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = group.validate_member(member_id, group_instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return ILLEGAL_GENERATION
        else:
            return UNKNOWN_MEMBER_ID
        if group.state == COMPLETING_REBALANCE:
            return REBALANCE_IN_PROGRESS
        if group.state in (STABLE, PREPARING_REBALANCE):
            member = group.members[member_id]
            self._arm_session(group, member_id, now + member.session_timeout_ms)
        return NONE

    # -- OffsetCommit (§8.1) ----------------------------------------------------------------------------

    def _offset_commit(self, handle, req, version, now, client_id, client_host):
        generation = req.generation_id_or_member_epoch if version >= 1 else -1
        member_id = req.member_id if version >= 1 else ""
        instance_id = req.group_instance_id if version >= 7 else None
        # The group-level verdict, copied into every partition (OffsetCommitRequest.getErrorResponse).
        error = self.validate_offset_commit(req.group_id, generation, member_id, instance_id, version=version,
                                            now=now)
        exists = self._partition_exists
        stored = self._offsets.setdefault(req.group_id, {}) if not error else None
        topics = []
        for topic in req.topics:
            partitions = []
            for p in topic.partitions:
                code = error
                if not code and exists is not None and not exists(topic.name, p.partition_index):
                    code = UNKNOWN_TOPIC_OR_PARTITION
                metadata = p.committed_metadata or ""  # null is stored as ""
                if not code and len(metadata.encode()) > self.offset_metadata_max_bytes:
                    code = OFFSET_METADATA_TOO_LARGE
                if not code:
                    epoch = p.committed_leader_epoch if version >= 6 else -1
                    stored[(topic.name, p.partition_index)] = (p.committed_offset, epoch, metadata)
                partitions.append(OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code))
            topics.append(OffsetCommitResponseTopic(name=topic.name, partitions=partitions))
        self._out.append(Reply(handle, version, OffsetCommitResponse(topics=topics)))

    # -- OffsetFetch (§8.3): every state, no member or generation checks for classic groups -----------

    def committed(self, group_id, topic, partition):
        """``(offset, leader_epoch, metadata)`` committed for a partition, or ``(-1, -1, "")``."""
        return self._offsets.get(group_id, {}).get((topic, partition), (-1, -1, ""))

    def _fetch_group(self, group_id, topics):
        """``[(topic, [(partition, offset, epoch, metadata)])]`` for the requested topics (a list of
        ``(name, partition_indexes)``), or every committed offset when ``topics`` is None."""
        stored = self._offsets.get(group_id, {})
        if topics is None:
            by_topic = {}
            for (name, partition), (offset, epoch, metadata) in stored.items():
                by_topic.setdefault(name, []).append((partition, offset, epoch, metadata))
            return [(name, sorted(rows)) for name, rows in by_topic.items()]
        out = []
        for name, indexes in topics:
            out.append((name, [(i, *stored.get((name, i), (-1, -1, ""))) for i in indexes]))
        return out

    def _offset_fetch(self, handle, req, version, now, client_id, client_host):
        if version >= 8:
            groups = []
            for g in req.groups:
                topics = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
                rows = self._fetch_group(g.group_id, topics)
                groups.append(OffsetFetchResponseGroup(group_id=g.group_id, error_code=NONE, topics=[
                    OffsetFetchResponseTopics(name=name, partitions=[
                        OffsetFetchResponsePartitions(partition_index=i, committed_offset=o, committed_leader_epoch=e,
                                                      metadata=m, error_code=NONE)
                        for i, o, e, m in parts])
                    for name, parts in rows]))
            self._out.append(Reply(handle, version, OffsetFetchResponse(groups=groups)))
            return
        topics = None if req.topics is None else [(t.name, t.partition_indexes) for t in req.topics]
        rows = self._fetch_group(req.group_id, topics)
        with_epoch = version >= 5
        response = OffsetFetchResponse(topics=[
            OffsetFetchResponseTopic(name=name, partitions=[
                OffsetFetchResponsePartition(partition_index=i, committed_offset=o,
                                             committed_leader_epoch=e if with_epoch else -1, metadata=m,
                                             error_code=NONE)
                for i, o, e, m in parts])
            for name, parts in rows])
        self._out.append(Reply(handle, version, response))

    # -- DescribeGroups (§8.4) and ListGroups (§8.5) ----------------------------------------------------

    def _describe_groups(self, handle, req, version, now, client_id, client_host):
        described = []
        for group_id in req.groups:
            view = self.describe_group(group_id)
            if view is None:
                # Unknown: NONE with state Dead, as GroupMetadataManager.describeGroups answers.
                described.append(DescribedGroup(group_id=group_id, group_state=DEAD))
                continue
            described.append(DescribedGroup(
                group_id=group_id, group_state=view.state, protocol_type=view.protocol_type,
                protocol_data=view.protocol_name,
                members=[DescribedGroupMember(member_id=m.member_id,
                                              group_instance_id=m.group_instance_id if version >= 4 else None,
                                              client_id=m.client_id, client_host=m.client_host,
                                              member_metadata=m.metadata, member_assignment=m.assignment)
                         for m in view.members]))
        self._out.append(Reply(handle, version, DescribeGroupsResponse(groups=described)))

    def _list_groups(self, handle, req, version, now, client_id, client_host):
        states = req.states_filter if version >= 4 else None
        if version >= 5 and req.types_filter and "classic" not in {t.strip().lower() for t in req.types_filter}:
            listed = []  # every group here is a classic group
        else:
            listed = [ListedGroup(group_id=g, protocol_type=p, group_state=s if version >= 4 else "",
                                  group_type="classic" if version >= 5 else "")
                      for g, p, s in self.list_groups(states)]
        self._out.append(Reply(handle, version, ListGroupsResponse(groups=listed)))

    # -- JoinGroup (§4) ---------------------------------------------------------------------------------

    def _join_group(self, handle, req, version, now, client_id, client_host):
        parked = (handle, version)
        member_id = req.member_id
        instance_id = req.group_instance_id if version >= 5 else None
        # v0 has no rebalance timeout; the broker uses the session timeout (maybeOverrideRebalanceTimeout)
        rebalance_timeout = req.session_timeout_ms if version == 0 else req.rebalance_timeout_ms
        if not req.group_id:
            return self._reply_join(parked, self._join_error(version, INVALID_GROUP_ID, member_id))
        if not self.min_session_timeout_ms <= req.session_timeout_ms <= self.max_session_timeout_ms:
            return self._reply_join(parked, self._join_error(version, INVALID_SESSION_TIMEOUT, member_id))
        group = self._groups.get(req.group_id)
        if group is None:
            if member_id:
                return self._reply_join(parked, self._join_error(version, UNKNOWN_MEMBER_ID, member_id))
            group = self._groups[req.group_id] = _Group(req.group_id, now)
        if not self._accept_joining_member(group, member_id):
            # GroupMetadataManager.acceptJoiningMember refused: forget the id (member or pending) and
            # let the join timer complete the phase (Java does not re-check completion here).
            self._forget(group, member_id)
            return self._reply_join(parked, self._join_error(version, GROUP_MAX_SIZE_REACHED, ""))
        protocols = [(p.name, p.metadata) for p in req.protocols]
        if not member_id:
            self._join_new_member(group, req, version, parked, instance_id, rebalance_timeout, protocols, now,
                                  client_id, client_host)
        else:
            self._join_existing_member(group, req, version, parked, instance_id, rebalance_timeout, protocols,
                                       now, client_id, client_host)

    def _accept_joining_member(self, group, member_id):
        state = group.state
        if state in (EMPTY, DEAD):
            return True
        member = group.members.get(member_id)
        if state == PREPARING_REBALANCE:
            return (member is not None and member.join is not None) or group.awaiting_join < self.max_group_size
        return member is not None or len(group.members) < self.max_group_size

    def _join_new_member(self, group, req, version, parked, instance_id, rebalance_timeout, protocols, now,
                         client_id, client_host):
        if group.state == DEAD:
            return self._reply_join(parked, self._join_error(version, COORDINATOR_NOT_AVAILABLE, ""))
        if not group.supports(req.protocol_type, [name for name, _ in protocols]):
            return self._reply_join(parked, self._join_error(version, INCONSISTENT_GROUP_PROTOCOL, ""))
        new_id = self._new_member_id(instance_id if instance_id is not None else client_id)
        if instance_id is not None:
            old_id = group.static_members.get(instance_id)
            if old_id is not None:
                return self._replace_static_member(group, req, version, parked, old_id, new_id, rebalance_timeout,
                                                   protocols, now)
        elif version >= 4:
            # KIP-394: hand out the id and wait for the member to come back with it; the group's state
            # does not change, and the id expires on its own session timer if it never returns.
            group.pending_join.add(new_id)
            self._arm_session(group, new_id, now + req.session_timeout_ms)
            return self._reply_join(parked, self._join_error(version, MEMBER_ID_REQUIRED, new_id))
        self._add_member(group, new_id, instance_id, req, version, parked, rebalance_timeout, protocols, now,
                         client_id, client_host)

    def _join_existing_member(self, group, req, version, parked, instance_id, rebalance_timeout, protocols, now,
                              client_id, client_host):
        member_id = req.member_id
        if group.state == DEAD:
            return self._reply_join(parked, self._join_error(version, COORDINATOR_NOT_AVAILABLE, member_id))
        if not group.supports(req.protocol_type, [name for name, _ in protocols]):
            return self._reply_join(parked, self._join_error(version, INCONSISTENT_GROUP_PROTOCOL, member_id))
        if member_id in group.pending_join:
            if instance_id is not None:  # Kafka: a pending id is never static; treated as an internal error
                return self._reply_join(parked, self._join_error(version, UNKNOWN_SERVER_ERROR, member_id))
            return self._add_member(group, member_id, None, req, version, parked, rebalance_timeout, protocols, now,
                                    client_id, client_host)
        error = group.validate_member(member_id, instance_id)
        if error:
            return self._reply_join(parked, self._join_error(version, error, member_id))
        member = group.members[member_id]
        state = group.state
        if state == PREPARING_REBALANCE:
            group.update(member, protocols, rebalance_timeout, req.session_timeout_ms, parked)
            self._maybe_complete_join(group, now)
        elif state == COMPLETING_REBALANCE:
            if member.protocols == protocols:
                # Nothing changed: the member missed its JoinGroup response; send it again.
                self._reply_join(parked, self._join_response(group, member, version))
            else:
                group.update(member, protocols, rebalance_timeout, req.session_timeout_ms, parked)
                self._prepare_rebalance(group, now)
        elif state == STABLE:
            if member_id == group.leader_id or member.protocols != protocols:
                # The leader rejoining is how a client asks for a new assignment (e.g. metadata changed).
                group.update(member, protocols, rebalance_timeout, req.session_timeout_ms, parked)
                self._prepare_rebalance(group, now)
            else:
                self._reply_join(parked, self._join_response(group, member, version, with_members=False))
        else:  # Empty: unreachable, validate_member already failed on a group without members
            self._reply_join(parked, self._join_error(version, UNKNOWN_MEMBER_ID, member_id))

    def _add_member(self, group, member_id, instance_id, req, version, parked, rebalance_timeout, protocols, now,
                    client_id, client_host):
        member = _Member(member_id, instance_id, client_id, client_host, rebalance_timeout, req.session_timeout_ms,
                         req.protocol_type, protocols)
        member.is_new = True
        member.join = parked
        if group.state == PREPARING_REBALANCE and group.previous_state == EMPTY:
            group.new_member_added = True
        group.add(member)
        self._arm_session(group, member_id, now + NEW_MEMBER_JOIN_TIMEOUT_MS)
        if group.state in (EMPTY, STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now)
        else:
            self._maybe_complete_join(group, now)

    def _replace_static_member(self, group, req, version, parked, old_id, new_id, rebalance_timeout, protocols, now):
        # §4.5, GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin
        current_leader = group.leader_id
        member = group.members[old_id]
        old_protocols = member.protocols
        if member.join is not None:
            self._reply_join(member.join, self._join_error(member.join[1], FENCED_INSTANCE_ID, old_id))
            group.park_join(member, None)
        if member.sync is not None:
            self._reply_sync(member.sync, FENCED_INSTANCE_ID)
            member.sync = None
        # Re-key the member under the new id: Kafka's members.remove(old) + put(new).  Counts do not change
        # (same member, same protocols until update() below).
        del group.members[old_id]
        group.members[new_id] = member
        group.parked_syncs.pop(old_id, None)
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        member.member_id = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        group.static_members[member.instance_id] = new_id
        self._timers.cancel((_SESSION, group.group_id, old_id))
        self._arm_session(group, new_id, now + member.session_timeout_ms)
        group.update(member, protocols, rebalance_timeout, req.session_timeout_ms, parked)
        state = group.state
        if state == STABLE:
            # Same protocols cannot change the vote; otherwise re-run it (O(n), once per restart).
            unchanged = old_protocols == protocols or group.select_protocol() == group.protocol_name
            if not unchanged:
                return self._prepare_rebalance(group, now)
            is_leader = group.leader_id == new_id
            group.park_join(member, None)
            if version >= 9:
                response = self._join_response(group, member, version, with_members=is_leader,
                                               skip_assignment=is_leader)
            else:
                # Before KIP-814 a restarted leader is told the *old* leader id, so it does not think it
                # must assign; it syncs as a follower and gets its stored assignment.
                response = self._join_response(group, member, version, with_members=False, leader=current_leader)
            self._reply_join(parked, response)
        elif state == COMPLETING_REBALANCE:
            self._prepare_rebalance(group, now)
        elif state == PREPARING_REBALANCE:
            self._maybe_complete_join(group, now)

    # -- the rebalance itself (§4.6, §4.7) --------------------------------------------------------------

    def _prepare_rebalance(self, group, now):
        if group.state == COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
            for member in group.parked_syncs.values():
                self._reply_sync(member.sync, REBALANCE_IN_PROGRESS)
                member.sync = None
                self._arm_session(group, member.member_id, now + member.session_timeout_ms)
            group.parked_syncs.clear()
        group.pending_sync.clear()
        self._timers.cancel((_SYNC, group.group_id))
        initial = group.state == EMPTY
        if initial:
            delay = self.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._timers.schedule((_JOIN, group.group_id), now + delay, (delay, remaining))
        self._transition(group, PREPARING_REBALANCE, now)
        if not initial:
            if group.all_joined():
                self._complete_join(group, now)
            else:
                self._timers.schedule((_JOIN, group.group_id), now + group.rebalance_timeout_ms(), None)

    def _maybe_complete_join(self, group, now):
        if group.state == PREPARING_REBALANCE and group.previous_state != EMPTY and group.all_joined():
            self._complete_join(group, now)

    def _complete_join(self, group, now):
        gid = group.group_id
        timers = self._timers
        timers.cancel((_JOIN, gid))
        # Dynamic members that did not rejoin are out; static ones stay (their restart will find them).
        gone = [m for m in group.members.values() if m.join is None and m.instance_id is None]
        for member in gone:
            group.remove(member.member_id)
            timers.cancel((_SESSION, gid, member.member_id))
        if group.state == DEAD:
            return
        leader = group.members.get(group.leader_id)
        if group.members and (leader is None or leader.join is None):
            leader = next((m for m in group.members.values() if m.join is not None), None)
            if leader is None:
                # Only static members that have not rejoined: wait for them (or their sessions to end).
                timers.schedule((_JOIN, gid), now + group.rebalance_timeout_ms(), None)
                return
            group.leader_id = leader.member_id
        group.generation_id += 1
        group.pending_sync.clear()
        if not group.members:
            group.protocol_name = None
            self._transition(group, EMPTY, now)
            return
        group.protocol_name = group.select_protocol()
        self._transition(group, COMPLETING_REBALANCE, now)
        leader_id = group.leader_id
        out, schedule = self._out, self._timers.schedule
        follower_fields = {}  # version -> the fields every follower's response shares (built once)
        for member in group.members.values():
            member_id = member.member_id
            parked = member.join
            if parked is not None:
                member.join = None
                version = parked[1]
                if member_id == leader_id:
                    response = self._join_response(group, member, version, with_members=True)
                else:
                    fields = follower_fields.get(version)
                    if fields is None:
                        fields = follower_fields[version] = self._join_fields(group, version)
                    response = JoinGroupResponse(member_id=member_id, **fields)
                out.append(Reply(parked[0], version, response))
            schedule((_SESSION, gid, member_id), now + member.session_timeout_ms)
            member.is_new = False
        group.awaiting_join = 0
        group.pending_sync.update(group.members)
        timers.schedule((_SYNC, gid), now + group.rebalance_timeout_ms(), group.generation_id)

    # -- SyncGroup (§5) ---------------------------------------------------------------------------------

    def _sync_group(self, handle, req, version, now, client_id, client_host):
        parked = (handle, version)
        if version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            return self._reply_sync(parked, INCONSISTENT_GROUP_PROTOCOL)
        if not req.group_id:
            return self._reply_sync(parked, INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        if group is None or group.state == EMPTY:
            return self._reply_sync(parked, UNKNOWN_MEMBER_ID)
        if group.state == DEAD:
            return self._reply_sync(parked, COORDINATOR_NOT_AVAILABLE)
        member_id = req.member_id
        error = group.validate_member(member_id, req.group_instance_id if version >= 3 else None)
        if error:
            return self._reply_sync(parked, error)
        if req.generation_id != group.generation_id:
            return self._reply_sync(parked, ILLEGAL_GENERATION)
        if version >= 5 and (
            (group.protocol_type is not None and req.protocol_type != group.protocol_type)
            or (group.protocol_name is not None and req.protocol_name != group.protocol_name)
        ):
            return self._reply_sync(parked, INCONSISTENT_GROUP_PROTOCOL)
        state = group.state
        if state == PREPARING_REBALANCE:
            return self._reply_sync(parked, REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        self._synced(group, member_id)
        if state == STABLE:
            # A follower slower than the leader, or a static member restarted without a rebalance.
            return self._reply_sync(parked, NONE, group, member.assignment)
        # CompletingRebalance: park; a second SyncGroup from the same member replaces the first.
        member.sync = parked
        group.parked_syncs[member_id] = member
        if member_id == group.leader_id:
            given = {a.member_id: a.assignment for a in req.assignments}  # a repeated id: the last one wins
            for m in group.members.values():
                m.assignment = given.get(m.member_id, b"")
            for m in group.parked_syncs.values():
                self._reply_sync(m.sync, NONE, group, m.assignment)
                m.sync = None
                self._arm_session(group, m.member_id, now + m.session_timeout_ms)
            group.parked_syncs.clear()
            self._transition(group, STABLE, now)

    def _synced(self, group, member_id):
        pending = group.pending_sync
        if member_id in pending:
            pending.discard(member_id)
            if not pending:
                self._timers.cancel((_SYNC, group.group_id))

    # -- Heartbeat (§6.1) -------------------------------------------------------------------------------

    def _heartbeat(self, handle, req, version, now, client_id, client_host):
        self._out.append(Reply(handle, version, HeartbeatResponse(error_code=self._heartbeat_error(req, version, now))))

    def _heartbeat_error(self, req, version, now):
        if not req.group_id:
            return INVALID_GROUP_ID
        group = self._groups.get(req.group_id)
        if group is None:
            return UNKNOWN_MEMBER_ID
        if group.state == DEAD:
            return COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(req.member_id, req.group_instance_id if version >= 3 else None)
        if error:
            return error
        if req.generation_id != group.generation_id:
            return ILLEGAL_GENERATION
        state = group.state
        if state == EMPTY:
            return UNKNOWN_MEMBER_ID
        member = group.members[req.member_id]
        self._arm_session(group, req.member_id, now + member.session_timeout_ms)
        # CompletingRebalance answers NONE since Kafka 2.7 (KAFKA-10134); up to 2.6 it was REBALANCE_IN_PROGRESS.
        return REBALANCE_IN_PROGRESS if state == PREPARING_REBALANCE else NONE

    # -- LeaveGroup (§7) --------------------------------------------------------------------------------

    def _leave_group(self, handle, req, version, now, client_id, client_host):
        if version >= 3:
            identities = [(m.member_id, m.group_instance_id) for m in req.members]
        else:
            identities = [(req.member_id, None)]
        group = self._groups.get(req.group_id) if req.group_id else None
        if not req.group_id:
            top, errors = INVALID_GROUP_ID, None
        elif group is None:
            top, errors = NONE, [UNKNOWN_MEMBER_ID] * len(identities)
        elif group.state == DEAD:
            top, errors = COORDINATOR_NOT_AVAILABLE, None
        else:
            top, errors = NONE, [self._leave_one(group, member_id, instance_id) for member_id, instance_id in identities]
            if NONE in errors:
                if group.state in (STABLE, COMPLETING_REBALANCE):
                    self._prepare_rebalance(group, now)
                else:
                    self._maybe_complete_join(group, now)
        if version >= 3:
            members = [MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=error)
                       for (member_id, instance_id), error in zip(identities, errors or ())]
            response = LeaveGroupResponse(error_code=top, members=members)
        else:
            response = LeaveGroupResponse(error_code=top if top or errors is None else errors[0])
        self._out.append(Reply(handle, version, response))

    def _leave_one(self, group, member_id, instance_id):
        if not member_id:
            owner = group.static_members.get(instance_id) if instance_id is not None else None
            if owner is None:
                return UNKNOWN_MEMBER_ID
            member_id = owner  # the admin "remove this static member" path: the id is not checked
        elif member_id in group.pending_join:
            group.pending_join.discard(member_id)
            self._timers.cancel((_SESSION, group.group_id, member_id))
            return NONE
        else:
            error = group.validate_member(member_id, instance_id)
            if error:
                return error
        self._timers.cancel((_SESSION, group.group_id, member_id))
        member = group.members[member_id]
        if member.join is not None:
            self._reply_join(member.join, self._join_error(member.join[1], UNKNOWN_MEMBER_ID, ""))
        # A parked SyncGroup of a leaving member is never answered, as in Kafka.
        group.remove(member_id)
        return NONE

    # -- timers (§3, §4.7.1, §5.3, §6.2) ----------------------------------------------------------------

    def _arm_session(self, group, member_id, deadline):
        self._timers.schedule((_SESSION, group.group_id, member_id), deadline)

    def _fire_due(self, now):
        timers = self._timers
        while True:
            due = timers.pop_due(now)
            if due is None:
                return
            key, payload = due
            group = self._groups.get(key[1])
            if group is None:
                continue
            kind = key[0]
            if kind == _SESSION:
                self._session_expired(group, key[2], now)
            elif kind == _JOIN:
                self._join_timer(group, payload, now)
            else:
                self._sync_timer(group, payload, now)

    def _join_timer(self, group, initial, now):
        if initial is not None:
            delay, remaining = initial
            if group.new_member_added and remaining:
                # Members are still arriving: extend the initial delay by one more window.
                group.new_member_added = False
                next_delay = min(self.initial_rebalance_delay_ms, remaining)
                self._timers.schedule((_JOIN, group.group_id), now + next_delay,
                                      (next_delay, max(remaining - delay, 0)))
                return
        self._complete_join(group, now)

    def _sync_timer(self, group, generation_id, now):
        if generation_id != group.generation_id or group.state not in (COMPLETING_REBALANCE, STABLE):
            return
        if group.pending_sync:
            # Whoever never sent SyncGroup (the leader included) is dropped, and the group rebalances.
            for member_id in list(group.pending_sync):
                group.remove(member_id)
                self._timers.cancel((_SESSION, group.group_id, member_id))
            self._prepare_rebalance(group, now)

    def _session_expired(self, group, member_id, now):
        if group.state == DEAD:
            return
        if member_id in group.pending_join:
            group.pending_join.discard(member_id)
            # Java completes the join at once here, even inside the initial delay (Scala waits).
            if group.state == PREPARING_REBALANCE and group.all_joined():
                self._complete_join(group, now)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if not member.is_new and (member.join is not None or member.sync is not None):
            return  # waiting on the group, not on the member; re-armed when its request is answered
        if member.join is not None:
            self._reply_join(member.join, self._join_error(member.join[1], UNKNOWN_MEMBER_ID, ""))
        group.remove(member_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now)
        elif group.state == PREPARING_REBALANCE and group.all_joined():
            self._complete_join(group, now)

    # -- helpers ----------------------------------------------------------------------------------------

    def _transition(self, group, target, now):
        if group.state not in _ALLOWED_FROM[target]:
            raise AssertionError(f"group {group.group_id!r}: illegal transition {group.state} -> {target}")
        group.previous_state = group.state
        group.state = target
        group.state_timestamp = now

    def _drain(self):
        out = self._out
        self._out = []
        return out

    def _forget(self, group, member_id):
        if member_id in group.members or member_id in group.pending_join:
            group.remove(member_id)
            self._timers.cancel((_SESSION, group.group_id, member_id))

    def _reply_join(self, parked, response):
        self._out.append(Reply(parked[0], parked[1], response))

    def _reply_sync(self, parked, error, group=None, assignment=b""):
        version = parked[1]
        if error or version < 5:
            response = SyncGroupResponse(error_code=error, assignment=assignment)
        else:
            response = SyncGroupResponse(error_code=NONE, protocol_type=group.protocol_type,
                                         protocol_name=group.protocol_name, assignment=assignment)
        self._out.append(Reply(parked[0], version, response))

    @staticmethod
    def _join_error(version, error, member_id):
        # v0-6 cannot carry a null protocol name; Kafka sends "" there and null from v7.
        return JoinGroupResponse(error_code=error, generation_id=-1, member_id=member_id, leader="",
                                 protocol_name=None if version >= 7 else "")

    @staticmethod
    def _join_fields(group, version, leader=None, skip_assignment=False):
        name = group.protocol_name
        if name is None and version < 7:
            name = ""  # v0-6 cannot carry a null protocol name
        return {
            "error_code": NONE,
            "generation_id": group.generation_id,
            "protocol_type": group.protocol_type if version >= 7 else None,
            "protocol_name": name,
            "leader": group.leader_id if leader is None else leader,
            "skip_assignment": skip_assignment if version >= 9 else False,
        }

    def _join_response(self, group, member, version, with_members=None, leader=None, skip_assignment=False):
        if with_members is None:
            with_members = member.member_id == group.leader_id
        members = []
        if with_members:
            name = group.protocol_name
            if version >= 5:
                members = [JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.instance_id,
                                                   metadata=m.metadata_for(name)) for m in group.members.values()]
            else:
                members = [JoinGroupResponseMember(member_id=m.member_id, metadata=m.metadata_for(name))
                           for m in group.members.values()]
        return JoinGroupResponse(member_id=member.member_id, members=members,
                                 **self._join_fields(group, version, leader, skip_assignment))
