"""The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, and their timers.

:class:`ClassicRebalance` is the part of :class:`~kwire.group.GroupCoordinator` that moves classic groups
(``_classic_group.py``) through their states, check by check as Apache Kafka's Java group coordinator does
for classic groups (``GroupMetadataManager.classicGroupJoin``, ``classicGroupSync``, ``classicGroupHeartbeat``,
``classicGroupLeave`` and the timers they arm); the comments name the Kafka method each rule lives in.
Where Kafka's Java and Scala coordinators differ, the Java one is followed (it is the only one in 4.0).

It is a mixin: the coordinator owns the state it reads (``_groups``, a :class:`GroupRegistry`; ``_timers``;
``_out``, the replies not yet drained; and the configuration) and dispatches requests and timers to it.
Every handler takes the decoded request and a :class:`RequestContext`.
"""

import logging

from kwire.codec import (
    ErrorCode,
    HeartbeatResponse,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupResponse,
    MemberResponse,
    SyncGroupResponse,
)

from ._classic_group import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
)
from ._request import Reply

log = logging.getLogger("kwire.group")
_new_tuple = tuple.__new__

# The codes by name, as plain ints: they are read and sent on every request, and the codec takes an int
# faster than an IntEnum member.
NONE = int(ErrorCode.NONE)
COORDINATOR_NOT_AVAILABLE = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
FENCED_INSTANCE_ID = int(ErrorCode.FENCED_INSTANCE_ID)
GROUP_MAX_SIZE_REACHED = int(ErrorCode.GROUP_MAX_SIZE_REACHED)
ILLEGAL_GENERATION = int(ErrorCode.ILLEGAL_GENERATION)
INCONSISTENT_GROUP_PROTOCOL = int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
INVALID_GROUP_ID = int(ErrorCode.INVALID_GROUP_ID)
INVALID_SESSION_TIMEOUT = int(ErrorCode.INVALID_SESSION_TIMEOUT)
MEMBER_ID_REQUIRED = int(ErrorCode.MEMBER_ID_REQUIRED)
REBALANCE_IN_PROGRESS = int(ErrorCode.REBALANCE_IN_PROGRESS)
UNKNOWN_MEMBER_ID = int(ErrorCode.UNKNOWN_MEMBER_ID)
UNKNOWN_SERVER_ERROR = int(ErrorCode.UNKNOWN_SERVER_ERROR)

# The fixed "new member join timeout" (GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS):
# a member added by JoinGroup must see its join complete within this long, whatever its session timeout.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

# Timer kinds (the first element of a timer key); the rest of the key names the group and member.
_SESSION, _JOIN, _SYNC = "session", "join", "sync"

# Answers decided by the group's state alone.  "Refused" tables are checked before the member and its
# generation are (any caller gets that answer); "answer" tables after (a valid member of this generation).
_SYNC_REFUSED_IN = {EMPTY: UNKNOWN_MEMBER_ID, DEAD: COORDINATOR_NOT_AVAILABLE}
_SYNC_ANSWER_IN = {PREPARING_REBALANCE: REBALANCE_IN_PROGRESS}  # Stable answers at once, CompletingRebalance parks
_HEARTBEAT_REFUSED_IN = {DEAD: COORDINATOR_NOT_AVAILABLE}
_HEARTBEAT_ANSWER_IN = {
    EMPTY: UNKNOWN_MEMBER_ID,  # (a group without members has no valid member: kept for completeness)
    PREPARING_REBALANCE: REBALANCE_IN_PROGRESS,
    # CompletingRebalance answers NONE since Kafka 2.7 (KAFKA-10134); up to 2.6 it was REBALANCE_IN_PROGRESS.
    COMPLETING_REBALANCE: NONE,
    STABLE: NONE,
}
_LEAVE_REFUSED_IN = {DEAD: COORDINATOR_NOT_AVAILABLE}


class ClassicRebalance:
    """The classic group handlers of :class:`~kwire.group.GroupCoordinator` (a mixin; see the module)."""

    def _refuse_new_group(self, group_id, ctx):
        # Kafka has no cap on groups; kwire's optional one (max_groups) answers a retriable error that
        # every client handles by finding the coordinator again and retrying after its backoff.
        log.warning("refusing to create group %r for %s (%s): %d groups exist, none idle (max_groups)",
                    group_id, ctx.client_id, ctx.client_host, len(self._groups))

    # -- JoinGroup (GroupMetadataManager.classicGroupJoin) -----------------------------------------------

    def _join_group(self, req, ctx):
        self._join(req, ctx)
        if req.group_id:
            self._groups.settle(req.group_id, ctx.now)

    def _join(self, req, ctx):
        version, now = ctx.version, ctx.now
        parked = (ctx.handle, version)
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
            group = self._groups.create(req.group_id, ClassicGroup, now)
            if group is None:
                self._refuse_new_group(req.group_id, ctx)
                return self._reply_join(parked, self._join_error(version, COORDINATOR_NOT_AVAILABLE, member_id))
        if not self._accept_joining_member(group, member_id):
            # GroupMetadataManager.acceptJoiningMember refused: forget the id (member or pending) and
            # let the join timer complete the phase (Java does not re-check completion here).
            self._forget(group, member_id)
            return self._reply_join(parked, self._join_error(version, GROUP_MAX_SIZE_REACHED, ""))
        protocols = [(p.name, p.metadata) for p in req.protocols]
        if not member_id:
            self._join_new_member(group, req, ctx, parked, instance_id, rebalance_timeout, protocols)
        else:
            self._join_existing_member(group, req, ctx, parked, instance_id, rebalance_timeout, protocols)

    def _accept_joining_member(self, group, member_id):
        if not member_id and len(group.pending_join) >= self.max_group_size:
            # Not in Kafka, which lets ids handed out by MEMBER_ID_REQUIRED pile up until their session
            # timers end them: here they count against group.max.size too, so a flood of JoinGroups that
            # never come back holds at most max_group_size ids per group.
            return False
        state = group.state
        if state in (EMPTY, DEAD):
            return True
        member = group.members.get(member_id)
        if state == PREPARING_REBALANCE:
            return (member is not None and member.join is not None) or group.awaiting_join < self.max_group_size
        return member is not None or len(group.members) < self.max_group_size

    def _join_new_member(self, group, req, ctx, parked, instance_id, rebalance_timeout, protocols):
        # GroupMetadataManager.classicGroupJoinNewMember
        version, now = ctx.version, ctx.now
        if group.state == DEAD:
            return self._reply_join(parked, self._join_error(version, COORDINATOR_NOT_AVAILABLE, ""))
        if not group.supports(req.protocol_type, [name for name, _ in protocols]):
            return self._reply_join(parked, self._join_error(version, INCONSISTENT_GROUP_PROTOCOL, ""))
        new_id = self._new_member_id(instance_id if instance_id is not None else ctx.client_id)
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
        self._add_member(group, new_id, instance_id, req, ctx, parked, rebalance_timeout, protocols)

    def _join_existing_member(self, group, req, ctx, parked, instance_id, rebalance_timeout, protocols):
        # GroupMetadataManager.classicGroupJoinExistingMember
        version, now = ctx.version, ctx.now
        member_id = req.member_id
        if group.state == DEAD:
            return self._reply_join(parked, self._join_error(version, COORDINATOR_NOT_AVAILABLE, member_id))
        if not group.supports(req.protocol_type, [name for name, _ in protocols]):
            return self._reply_join(parked, self._join_error(version, INCONSISTENT_GROUP_PROTOCOL, member_id))
        if member_id in group.pending_join:
            if instance_id is not None:  # Kafka: a pending id is never static; treated as an internal error
                return self._reply_join(parked, self._join_error(version, UNKNOWN_SERVER_ERROR, member_id))
            return self._add_member(group, member_id, None, req, ctx, parked, rebalance_timeout, protocols)
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

    def _add_member(self, group, member_id, instance_id, req, ctx, parked, rebalance_timeout, protocols):
        # GroupMetadataManager.addMemberThenRebalanceOrCompleteJoin
        now = ctx.now
        member = ClassicMember(member_id, instance_id, ctx.client_id, ctx.client_host, rebalance_timeout,
                               req.session_timeout_ms, req.protocol_type, protocols)
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
        # GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin
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

    # -- the rebalance itself (GroupMetadataManager.prepareRebalance, completeClassicGroupJoin) ---------

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
        group.to(PREPARING_REBALANCE, now)
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
            leader = None
            for m in group.members.values():   # a loop, not next() over a generator: a C method can hold it
                if m.join is not None:
                    leader = m
                    break
            if leader is None:
                # Only static members that have not rejoined: wait for them (or their sessions to end).
                timers.schedule((_JOIN, gid), now + group.rebalance_timeout_ms(), None)
                return
            group.leader_id = leader.member_id
        group.generation_id += 1
        group.pending_sync.clear()
        if not group.members:
            group.protocol_name = None
            group.to(EMPTY, now)
            return
        group.protocol_name = group.select_protocol()
        group.to(COMPLETING_REBALANCE, now)
        leader_id = group.leader_id
        out = self._out
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
                out.append(_new_tuple(Reply, (parked[0], version, response)))
            timers.schedule((_SESSION, gid, member_id), now + member.session_timeout_ms)
            member.is_new = False
        group.awaiting_join = 0
        group.pending_sync.update(group.members)
        timers.schedule((_SYNC, gid), now + group.rebalance_timeout_ms(), group.generation_id)

    # -- SyncGroup (GroupMetadataManager.classicGroupSync) ----------------------------------------------

    def _sync_group(self, req, ctx):
        version, now = ctx.version, ctx.now
        parked = (ctx.handle, version)
        if version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            return self._reply_sync(parked, INCONSISTENT_GROUP_PROTOCOL)
        if not req.group_id:
            return self._reply_sync(parked, INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        if group is None:
            return self._reply_sync(parked, UNKNOWN_MEMBER_ID)
        error = _SYNC_REFUSED_IN.get(group.state)
        if error is not None:
            return self._reply_sync(parked, error)
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
        error = _SYNC_ANSWER_IN.get(state)
        if error is not None:
            return self._reply_sync(parked, error)
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
            group.to(STABLE, now)

    def _synced(self, group, member_id):
        pending = group.pending_sync
        if member_id in pending:
            pending.discard(member_id)
            if not pending:
                self._timers.cancel((_SYNC, group.group_id))

    # -- Heartbeat (GroupMetadataManager.classicGroupHeartbeat) ------------------------------------------

    def _heartbeat(self, req, ctx):
        version = ctx.version
        error = self._heartbeat_error(req, version, ctx.now)
        # The hot path: a Reply built without the namedtuple's Python-level __new__.
        self._out.append(_new_tuple(Reply, (ctx.handle, version, HeartbeatResponse(error_code=error))))

    def _heartbeat_error(self, req, version, now):
        group_id = req.group_id
        if not group_id:
            return INVALID_GROUP_ID
        group = self._groups.get(group_id)
        if group is None:
            return UNKNOWN_MEMBER_ID
        state = group.state
        error = _HEARTBEAT_REFUSED_IN.get(state)
        if error is not None:
            return error
        member_id = req.member_id
        instance_id = req.group_instance_id if version >= 3 else None
        if instance_id is not None:
            error = group.validate_member(member_id, instance_id)
            if error:
                return error
        member = group.members.get(member_id)
        if member is None:
            return UNKNOWN_MEMBER_ID   # validate_member's answer for a dynamic member
        if req.generation_id != group.generation_id:
            return ILLEGAL_GENERATION
        answer = _HEARTBEAT_ANSWER_IN[state]
        if answer != UNKNOWN_MEMBER_ID:
            self._timers.schedule((_SESSION, group_id, member_id), now + member.session_timeout_ms)
        return answer

    # -- LeaveGroup (GroupMetadataManager.classicGroupLeave) ---------------------------------------------

    def _leave_group(self, req, ctx):
        version, now = ctx.version, ctx.now
        if version >= 3:
            identities = [(m.member_id, m.group_instance_id) for m in req.members]
        else:
            identities = [(req.member_id, None)]
        group = self._groups.get(req.group_id) if req.group_id else None
        if not req.group_id:
            top, errors = INVALID_GROUP_ID, None
        elif group is None:
            top, errors = NONE, [UNKNOWN_MEMBER_ID] * len(identities)
        elif group.state in _LEAVE_REFUSED_IN:
            top, errors = _LEAVE_REFUSED_IN[group.state], None
        else:
            top, errors = NONE, [self._leave_one(group, member_id, instance_id)
                                 for member_id, instance_id in identities]
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
        self._out.append(Reply(ctx.handle, version, response))
        if group is not None:
            self._groups.settle(req.group_id, now)

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

    # -- timers (the join, sync and heartbeat expirations of GroupMetadataManager) --------------------

    def _arm_session(self, group, member_id, deadline):
        self._timers.schedule((_SESSION, group.group_id, member_id), deadline)

    def _classic_timer(self, group, key, payload, now):
        """A timer of this module fired for ``group``."""
        kind = key[0]
        if kind == _SESSION:
            self._session_expired(group, key[2], now)
        elif kind == _JOIN:
            self._join_timer(group, payload, now)
        else:
            self._sync_timer(group, payload, now)

    def _cancel_timers(self, group):
        timers, gid = self._timers, group.group_id
        timers.cancel((_JOIN, gid))
        timers.cancel((_SYNC, gid))
        for member_id in (*group.members, *group.pending_join):
            timers.cancel((_SESSION, gid, member_id))

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

    def _forget(self, group, member_id):
        if member_id in group.members or member_id in group.pending_join:
            group.remove(member_id)
            self._timers.cancel((_SESSION, group.group_id, member_id))

    def _reply_join(self, parked, response):
        self._out.append(_new_tuple(Reply, parked + (response,)))

    def _reply_sync(self, parked, error, group=None, assignment=b""):
        version = parked[1]
        if error or version < 5:
            response = SyncGroupResponse(error_code=error, assignment=assignment)
        else:
            response = SyncGroupResponse(error_code=NONE, protocol_type=group.protocol_type,
                                         protocol_name=group.protocol_name, assignment=assignment)
        self._out.append(_new_tuple(Reply, (parked[0], version, response)))

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
