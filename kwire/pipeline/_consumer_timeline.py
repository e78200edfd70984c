"""A consumer-protocol (or mixed) group's timeline, read from its events in
``seq`` order: what each member was told and what it acknowledged.

The walk keeps, per member, the view the coordinator gave it
(``GroupMetadataManager.consumerGroupHeartbeat``): its epoch, the partitions
it was assigned (a response's ``Assignment``, which is the member's current
assignment, pending revocations excluded) and the partitions it is still to
revoke (those a response took away and the member has not yet acknowledged
by leaving them out of a request's ``TopicPartitions``).  From those it
records:

* the group epoch each time it is first seen higher, in a member's response
  (a member is never ahead of the target, so the target epoch is at least the
  member's) or in a ConsumerGroupDescribe response;
* each member's snapshots (epoch, assigned, to revoke) as they change;
* joins, leaves and fencing with the error behind each; a member never heard
  from again is taken to have been fenced by its session timeout when the
  coordinator is seen to have removed it (its partitions given to another
  member at a later epoch, or a Describe at a later epoch without it), at
  that epoch's bump, or else when the group's traffic goes on a session
  past it (the session is broker configuration, in no frame);
* for every partition, the intervals during which no member was consuming it
  (see docs/PIPELINE.md, "measures of a stall");
* anomalies, counted and kept.

Classic members of a mixed group (``ConsumerGroupMigrationHelper``'s view:
``GroupMetadataManager.classicGroupJoinToConsumerGroup``) are read from their
JoinGroup (epoch = the response's generation), SyncGroup responses (their
current assignment), Heartbeat and LeaveGroup frames.

Keep-alive heartbeats reach the analysis folded into one row per (member,
epoch) holding the last one's time, so a member's last row is its last
heartbeat, and nothing is inferred from the gaps between rows.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from typing import Dict, List, Optional

from kwire.pipeline._consumer_schemas import (CONSUMER_DESCRIBE, CONSUMER_HEARTBEAT, CONSUMER_SESSION_TIMEOUT_MS,
                                              FENCING_ERRORS, JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
from kwire.pipeline._events import HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, METADATA, REQUEST, RESPONSE, SYNC_GROUP

CONSUMER, CLASSIC = "consumer", "classic"


class MemberView:
    """One member as the walk sees it (one incarnation at a time: a fenced
    member that rejoins under the same id starts again from nothing)."""

    __slots__ = ("member_id", "protocol", "epoch", "assigned", "to_revoke", "given", "known", "active",
                 "last_ts", "session_ms", "instance_id", "subscription", "rebalance_timeout_ms", "latencies",
                 "fenced_before", "expiry_token", "heard_last")

    def __init__(self, member_id, protocol, session_ms):
        self.member_id = member_id
        self.protocol = protocol
        self.epoch = None
        self.assigned = set()     # (topic, partition) the member consumes
        self.to_revoke = set()    # taken away by a response, not yet acknowledged
        self.given = set()        # everything this incarnation was ever given
        self.known = False        # its assignment is known (joined in the capture, or an assignment seen)
        self.active = True
        self.last_ts = None       # its last successful heartbeat (the request's time): the session's start
        self.session_ms = session_ms
        self.instance_id = None
        self.subscription = None
        self.rebalance_timeout_ms = None
        self.latencies = []
        self.fenced_before = False
        self.expiry_token = 0
        self.heard_last = False   # its last event is behind the walk: it is never heard from again


class ConsumerTimeline:
    """Everything the walk recorded for one group; the tables and the
    reconciliations are read off it (:mod:`kwire.pipeline._consumer_reconcile`)."""

    def __init__(self, group_id):
        self.group_id = group_id
        self.protocol = CONSUMER            # "mixed" once a classic member is seen
        self.members: Dict[str, MemberView] = {}
        self.member_order: List[str] = []
        #: (seq, ts, group_epoch, assignment_epoch, source, member_id)
        self.epochs = []
        #: (group_epoch, ts, seq): the first sighting of each higher group epoch
        self.bumps = []
        #: member_id -> [(seq, ts, epoch, frozenset assigned, frozenset to_revoke)]
        self.snapshots = defaultdict(list)
        #: (member_id, protocol, seq, ts, kind, error_code, epoch, silent_ms)
        self.membership = []
        #: (seq, ts, member_id, kind, detail)
        self.anomalies = []
        #: [topic, partition, start_ts, end_ts or None]
        self.unowned = []
        #: (ts, member_id): a subscription changed (not a join)
        self.subscription_changes = []
        #: (ts, member_id, sorted topic names): every subscription a request set, joins included
        self.subscriptions = []
        #: the server assignor members asked for last (ServerAssignor), None if none did
        self.assignor = None
        #: (ts, error_code) of every error answered to the group
        self.errors = []
        #: (assignment_epoch, member_id) -> frozenset target, from Describe responses
        self.described_targets = {}
        self.first_ts = None
        self.last_ts = None
        self.created = False                # the group's first epoch (1) was seen
        #: indices into ``bumps`` of the first bump of a group made anew after every member had left
        self.new_groups = set()
        self.heartbeat_interval_ms = None
        self.rebalance_timeout_ms = None
        #: member_id -> time of the first request the member sent
        self.first_seen = {}


def topic_names_of(topics_column, topic_ids_column, api_keys, directions):
    """``{topic id text: name}`` from the Metadata responses among events
    (v10+ carry ``topic_ids`` beside ``topics``)."""
    names = {}
    for i in range(len(api_keys)):
        if api_keys[i] != METADATA or directions[i] != RESPONSE:
            continue
        ids, topics = topic_ids_column[i], topics_column[i]
        if ids and topics and len(ids) == len(topics):
            for tid, name in zip(ids, topics):
                if tid and name:
                    names[tid] = name
    return names


def _tps(value, names):
    """``topic_partitions`` cells (``[{topic_id, partitions}]``) as a set of
    (topic name, partition); an id no Metadata names stands as its text."""
    out = set()
    for entry in value:
        tid = entry["topic_id"]
        topic = names.get(tid, tid)
        for p in entry["partitions"] or ():
            out.add((topic, p))
    return out


def _classic_assignment(assignments, member_id):
    out = set()
    for a in assignments or ():
        if a["member_id"] in (None, member_id):
            for p in a["partitions"] or ():
                out.add((a["topic"], p))
    return out


class _Walk:
    """The state of one group's walk; :func:`build_consumer_timeline` drives it."""

    def __init__(self, tl: ConsumerTimeline, names, last_row_of, session_ms, session_known=True):
        self.tl = tl
        self.session_ms = session_ms
        self.session_known = session_known  # the caller gave the brokers' setting
        self.names = names
        self.last_row_of = last_row_of      # member_id -> index of its last row
        self.group_epoch = None             # highest group epoch seen
        self.describe_epoch = None          # highest group epoch a Describe gave
        self.assignment_epoch = None
        self.owner = {}                     # (topic, p) -> member consuming it
        self.open_unowned = {}              # (topic, p) -> index in tl.unowned
        self.ever_owned = set()
        self.requests = {}                  # seq -> (member_id, epoch) of requests kept among the events
        self.expiries = []                  # heap of (expiry ts, token, member_id)
        self.current_bump_ts = None
        self.bump_seen_by = set()           # who showed the highest group epoch

    # -- members ---------------------------------------------------------------------------------

    def member(self, member_id, protocol, ts):
        m = self.tl.members.get(member_id)
        if m is None:
            m = self.tl.members[member_id] = MemberView(member_id, protocol, self.session_ms)
            self.tl.member_order.append(member_id)
            self.tl.first_seen[member_id] = ts
        if protocol == CLASSIC and self.tl.protocol == CONSUMER:
            self.tl.protocol = "mixed"
        return m

    def snapshot(self, m, seq, ts):
        snaps = self.tl.snapshots[m.member_id]
        if snaps:
            last = snaps[-1]
            if last[2] == m.epoch and last[3] == m.assigned and last[4] == m.to_revoke:
                return
        snaps.append((seq, ts, m.epoch, frozenset(m.assigned), frozenset(m.to_revoke)))

    def membership(self, m, seq, ts, kind, error_code=None, silent_ms=None):
        self.tl.membership.append((m.member_id, m.protocol, seq, ts, kind, error_code, m.epoch, silent_ms))

    # -- partitions ------------------------------------------------------------------------------

    def release(self, tp, ts, member_id):
        """``member_id`` stops consuming ``tp`` at ``ts``."""
        if self.owner.get(tp) != member_id:
            return
        del self.owner[tp]
        self.open_unowned[tp] = len(self.tl.unowned)
        self.tl.unowned.append([tp[0], tp[1], ts, None])

    def take(self, tp, ts, member_id):
        """``member_id`` receives ``tp`` at ``ts``."""
        previous = self.owner.get(tp)
        if previous is not None and previous != member_id:
            # The coordinator never gives a partition still held by another
            # (ConsumerGroup.addPartitionEpochs); if the capture says so, the
            # previous holder's release was not seen: it stops here.
            prev = self.tl.members.get(previous)
            receiver = self.tl.members.get(member_id)
            if (prev is not None and receiver is not None and self.removed_unheard(prev, receiver.epoch)):
                self.expire_at_bump(prev)
            elif prev is not None:
                prev.assigned.discard(tp)
                prev.to_revoke.discard(tp)
        self.owner[tp] = member_id
        i = self.open_unowned.pop(tp, None)
        if i is not None:
            self.tl.unowned[i][3] = ts
        elif tp not in self.ever_owned and self.tl.created and self.current_bump_ts is not None:
            # Never assigned before, in a group seen from its creation: unowned since the epoch bump that
            # made a target for it.
            self.tl.unowned.append([tp[0], tp[1], self.current_bump_ts, ts])
        self.ever_owned.add(tp)

    def drop_member(self, m, ts):
        """``m`` stops consuming everything it holds (a leave, a fencing, a crash)."""
        for tp in sorted(m.assigned | m.to_revoke):
            self.release(tp, ts, m.member_id)
        m.assigned, m.to_revoke = set(), set()
        m.active = False

    def assign(self, m, partitions, seq, ts, revoke_now):
        """A response gave ``m`` its current assignment ``partitions``.  Dropped
        partitions are still consumed until acknowledged (consumer protocol), or
        released at once (``revoke_now``: a classic member learns it at its
        SyncGroup response)."""
        for tp in sorted(partitions - m.assigned):
            self.take(tp, ts, m.member_id)
        dropped = m.assigned - partitions
        m.assigned = set(partitions)
        m.given |= partitions
        m.known = True
        if revoke_now:
            for tp in sorted(dropped):
                self.release(tp, ts, m.member_id)
        else:
            m.to_revoke |= dropped
        m.to_revoke -= partitions

    def acknowledge(self, m, owned, seq, ts):
        """A request's ``TopicPartitions``: what ``m`` says it owns now."""
        if m.known:
            never = owned - m.given
            if never:
                self.tl.anomalies.append((seq, ts, m.member_id, "ack_not_given", _tp_text(never)))
        for tp in sorted(m.to_revoke - owned):
            self.release(tp, ts, m.member_id)
            m.to_revoke.discard(tp)

    def fence(self, m, seq, ts, error):
        """An answer with ``error`` told ``m`` the coordinator does not know it (any more) at its epoch: the
        client gives up its partitions as lost (``AbstractMembershipManager.transitionToFenced``).  When its last
        successful heartbeat is older than a session, the session timeout is what fenced it."""
        expired = m.last_ts is not None and ts - m.last_ts >= m.session_ms * 1000
        self.drop_member(m, m.last_ts if expired else ts)
        m.fenced_before = True
        if expired:
            self.membership(m, seq, m.last_ts + m.session_ms * 1000, "session_timeout", error)
        else:
            self.membership(m, seq, ts, "fenced", error)
        m.epoch = None
        self.snapshot(m, seq, ts)

    # -- epochs ----------------------------------------------------------------------------------

    def group_epoch_seen(self, epoch, assignment_epoch, seq, ts, source, member_id):
        if self.group_epoch is None or epoch > self.group_epoch:
            if self.group_epoch is None and self.tl.bumps:
                self.tl.new_groups.add(len(self.tl.bumps))
            elif self.group_epoch is None and epoch == 1:
                self.tl.created = True
            self.group_epoch = epoch
            self.current_bump_ts = ts
            self.tl.bumps.append((epoch, ts, seq))
            self.bump_seen_by = {member_id}
        else:
            if epoch == self.group_epoch:
                self.bump_seen_by.add(member_id)
            if assignment_epoch is None or (self.assignment_epoch is not None
                                            and assignment_epoch <= self.assignment_epoch):
                return
        if assignment_epoch is not None and (self.assignment_epoch is None or assignment_epoch > self.assignment_epoch):
            self.assignment_epoch = assignment_epoch
        self.tl.epochs.append((seq, ts, self.group_epoch, self.assignment_epoch, source, member_id))

    def member_epoch(self, m, epoch, seq, ts, joining):
        if (m.epoch is not None and m.epoch > 0 and 0 < epoch < m.epoch and not joining):
            detail = f"member epoch {m.epoch} -> {epoch}"
            if m.epoch == self.group_epoch and self.bump_seen_by == {m.member_id}:
                detail += self.retract_bump()
            self.tl.anomalies.append((seq, ts, m.member_id, "epoch_backwards", detail))
        m.epoch = epoch
        if epoch > 0:
            source = "heartbeat" if m.protocol == CONSUMER else "join_group"
            # A member's epoch is never ahead of the target's, which is never ahead of the group's.
            self.group_epoch_seen(epoch, epoch, seq, ts, source, m.member_id)

    def new_incarnation(self):
        """A member joins a group that every member had left: the coordinator deleted the empty group (or a
        classic JoinGroup replaced it, ``GroupMetadataManager.maybeDeleteEmptyConsumerGroup``), so its epochs
        start again from 0 and a lower one is no epoch going backwards."""
        self.group_epoch = self.assignment_epoch = self.describe_epoch = None
        self.bump_seen_by = set()

    def retract_bump(self):
        """The highest group epoch was seen only in the one member's answers that now go back below it: a
        damaged frame (a flipped bit decodes to a valid, wrong epoch), not a bump; left out, so that the
        group's later bumps still count."""
        epoch = self.group_epoch
        self.tl.bumps.pop()
        while self.tl.epochs and self.tl.epochs[-1][2] == epoch:
            self.tl.epochs.pop()
        previous = self.tl.bumps[-1] if self.tl.bumps else None
        self.group_epoch = previous[0] if previous else None
        self.current_bump_ts = previous[1] if previous else None
        self.assignment_epoch = self.tl.epochs[-1][3] if self.tl.epochs else None
        self.bump_seen_by = set()
        return f" (group epoch {epoch}, seen nowhere else, left out)"

    # -- session timeouts ------------------------------------------------------------------------

    def arm_expiry(self, m):
        m.expiry_token += 1
        heapq.heappush(self.expiries, (m.last_ts + m.session_ms * 1000, m.expiry_token, m.member_id))

    def removed_unheard(self, m, epoch):
        """``m``, silent for good without a leave, is out of the group at ``epoch``: the coordinator
        removed it (``GroupMetadataManager.consumerGroupFenceMember``, on its session or rebalance timeout)."""
        return (m.active and m.heard_last and m.epoch is not None and m.epoch > 0 and epoch is not None
                and epoch > m.epoch and self.current_bump_ts is not None)

    def expire_at_bump(self, m):
        """``m`` was removed by the coordinator, which bumped the group epoch to the current one for it (a
        session the capture's settings do not say: at most the silence from its last heartbeat to the bump)."""
        snaps = self.tl.snapshots.get(m.member_id)
        at = max(self.current_bump_ts, snaps[-1][1] if snaps else self.current_bump_ts)
        silent = None if m.last_ts is None else (at - m.last_ts) / 1000.0
        self.drop_member(m, m.last_ts if m.last_ts is not None else at)
        self.membership(m, None, at, "session_timeout", silent_ms=silent)
        m.epoch = None
        self.snapshot(m, None, at)
        if m.protocol == CONSUMER and silent is not None and not self.session_known:
            self.bound_session(int(math.ceil(silent)))

    def bound_session(self, ms):
        """The brokers' session is at most ``ms``: the members' sessions from here on (a member that falls
        silent later has timed out by its last heartbeat plus ``ms``), and the one the migration replay takes.
        Expiries already armed are left as they were: nothing is inferred backwards from the bound."""
        if ms >= self.session_ms or ms <= 0:
            return
        self.session_ms = ms
        for m in self.tl.members.values():
            if m.protocol == CONSUMER:
                m.session_ms = ms

    def expire_until(self, ts):
        """Members never heard from again whose session ran out before ``ts``:
        the coordinator fenced them then (``consumerGroupFenceMember``)."""
        while self.expiries and self.expiries[0][0] <= ts:
            expiry, token, member_id = heapq.heappop(self.expiries)
            m = self.tl.members[member_id]
            if not m.active or token != m.expiry_token:
                continue
            # It stopped consuming at its last heartbeat (the crash itself is not in the capture).
            self.drop_member(m, m.last_ts)
            self.membership(m, None, expiry, "session_timeout")
            m.epoch = None
            self.snapshot(m, None, expiry)


def _tp_text(tps):
    return ", ".join(f"{t}-{p}" for t, p in sorted(tps))


def build_consumer_timeline(group_id, columns, rows, names=None, session_timeout_ms=None) -> ConsumerTimeline:
    """The timeline of one group from event ``columns`` (name -> list, the
    event columns of :data:`~kwire.pipeline._events.EVENT_COLUMNS`)
    at ``rows`` (indices in ``seq`` order, this group's only).  ``names``:
    ``{topic id text: topic name}`` from the capture's Metadata responses.
    ``session_timeout_ms``: the brokers' consumer session timeout
    (``group.consumer.session.timeout.ms``; None: Kafka's default, used only
    where the coordinator is not seen removing a silent member; classic
    members of a mixed group use their JoinGroup's)."""
    names = names or {}
    session_known = session_timeout_ms is not None
    if not session_known:
        session_timeout_ms = CONSUMER_SESSION_TIMEOUT_MS
    tl = ConsumerTimeline(group_id)
    c = columns
    api, direction, member_col = c["api_key"], c["direction"], c["member_id"]
    last_row_of = {}
    for i in rows:
        if member_col[i]:
            last_row_of[member_col[i]] = i
        for gone in (c["leaving"][i] or ()):
            last_row_of[gone] = i
    w = _Walk(tl, names, last_row_of, session_timeout_ms, session_known)
    for i in rows:
        ts, seq = c["ts"][i], c["seq"][i]
        w.expire_until(ts)
        tl.first_ts = ts if tl.first_ts is None else min(tl.first_ts, ts)
        tl.last_ts = ts if tl.last_ts is None else max(tl.last_ts, ts)
        key, d = api[i], direction[i]
        if d == RESPONSE and c["request_seq"][i] is None and not _folded(c, i):
            tl.anomalies.append((seq, ts, member_col[i], "response_without_request",
                                 f"api {key} response with no request in the capture"))
        if key == CONSUMER_HEARTBEAT:
            (_heartbeat_request if d == REQUEST else _heartbeat_response)(w, c, i, seq, ts)
        elif key == CONSUMER_DESCRIBE and d == RESPONSE:
            _describe(w, c, i, seq, ts)
        elif key in (JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP):
            _classic(w, c, i, key, d, seq, ts)
        m = tl.members.get(member_col[i]) if member_col[i] else None
        if m is not None and last_row_of.get(m.member_id) == i:
            m.heard_last = True
            if m.active and m.last_ts is not None:
                w.arm_expiry(m)
    if tl.last_ts is not None:
        w.expire_until(tl.last_ts)
    return tl


def _folded(c, i):
    # The events stage folds keep-alive heartbeats (both protocols) into one row holding no request: a
    # successful response without an assignment.
    key = c["api_key"][i]
    return (key in (CONSUMER_HEARTBEAT, HEARTBEAT) and not c["error_code"][i]
            and c["topic_partitions"][i] is None)


def _heartbeat_request(w: _Walk, c, i, seq, ts):
    member_id, epoch = c["member_id"][i] or "", c["generation_id"][i]
    w.requests[seq] = (member_id, epoch, c["topics"][i])
    if c["rebalance_timeout_ms"][i] not in (None, -1):
        w.tl.rebalance_timeout_ms = c["rebalance_timeout_ms"][i]
    if not member_id:
        return  # a first join without a client-made id: the member is known from the response
    m = w.member(member_id, CONSUMER, ts)
    if c["group_instance_id"][i]:
        m.instance_id = c["group_instance_id"][i]
    if c["rebalance_timeout_ms"][i] not in (None, -1):
        m.rebalance_timeout_ms = c["rebalance_timeout_ms"][i]
    if c["protocol_name"][i]:
        w.tl.assignor = c["protocol_name"][i]
    topics = c["topics"][i]
    if topics is not None:
        _subscribed(w, m, topics, ts, epoch not in (None, JOIN_EPOCH))
    if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        if m.active:
            w.drop_member(m, ts)
            m.epoch = epoch
            w.snapshot(m, seq, ts)
            w.membership(m, seq, ts, "leave" if epoch == LEAVE_EPOCH else "static_leave")
        return
    if epoch is not None and epoch > 0 and m.active:
        owned = c["topic_partitions"][i]
        if owned is not None:
            w.acknowledge(m, _tps(owned, w.names), seq, ts)
            w.snapshot(m, seq, ts)


def _subscribed(w: _Walk, m: MemberView, topics, ts, may_change):
    subscription = tuple(sorted(set(topics)))
    if may_change and m.subscription is not None and subscription != m.subscription:
        w.tl.subscription_changes.append((ts, m.member_id))
    if subscription != m.subscription:
        w.tl.subscriptions.append((ts, m.member_id, subscription))
    m.subscription = subscription


def _heartbeat_response(w: _Walk, c, i, seq, ts):
    member_id, epoch, error = c["member_id"][i] or "", c["generation_id"][i], c["error_code"][i] or 0
    request = w.requests.get(c["request_seq"][i])
    request_epoch = request[1] if request else None
    if c["heartbeat_interval_ms"][i]:
        w.tl.heartbeat_interval_ms = c["heartbeat_interval_ms"][i]
    if error:
        w.tl.errors.append((ts, error))
        m = w.tl.members.get(member_id) or (w.tl.members.get(request[0]) if request and request[0] else None)
        if m is None or error not in FENCING_ERRORS or not m.active:
            return
        w.fence(m, seq, ts, error)
        return
    if not member_id:
        return
    m = w.member(member_id, CONSUMER, ts)
    _latency(m, c, i, ts)
    if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        if m.active:  # its request was not among the events
            w.drop_member(m, ts)
            m.epoch = epoch
            w.snapshot(m, seq, ts)
            w.membership(m, seq, ts, "leave" if epoch == LEAVE_EPOCH else "static_leave")
        return
    joining = request_epoch == JOIN_EPOCH
    if joining or not m.active:
        _joined(w, m, c["request_ts"][i], seq, ts)
        if request is not None and not request[0] and request[2] is not None:
            # Its join request had no member id yet: its subscription is known from here.
            _subscribed(w, m, request[2], c["request_ts"][i] or ts, False)
    # The session is re-armed when the coordinator handles the request (GroupMetadataManager
    # .consumerGroupHeartbeat); a folded keep-alive row's ts is that request's time already.
    m.last_ts = ts if c["request_ts"][i] is None else c["request_ts"][i]
    if epoch is not None:
        w.member_epoch(m, epoch, seq, ts, joining)
    assignment = c["topic_partitions"][i]
    if assignment is not None:
        w.assign(m, _tps(assignment, w.names), seq, ts, revoke_now=False)
    w.snapshot(m, seq, ts)


def _alive(m: MemberView, ts):
    """``m`` may still be in the group at ``ts``: it did not leave, was not fenced, and its last successful
    heartbeat is less than a session old (one that is older is gone, whatever the capture tells later)."""
    return m.active and (m.last_ts is None or ts - m.last_ts < m.session_ms * 1000)


def _latency(m: MemberView, c, i, ts):
    # A folded keep-alive row holds its request's time in ``ts``: no latency in it.
    request_ts = c["request_ts"][i]
    if request_ts is not None and ts > request_ts:
        m.latencies.append(ts - request_ts)


def _joined(w: _Walk, m: MemberView, request_ts, seq, ts):
    """``m`` (re)joins: a new incarnation, holding nothing until a response gives it partitions."""
    kind = "rejoin" if m.fenced_before or m.epoch is not None or w.tl.snapshots.get(m.member_id) else "join"
    join_ts = request_ts if request_ts is not None else ts
    if w.group_epoch is not None and not any(_alive(o, join_ts) for o in w.tl.members.values() if o is not m):
        w.new_incarnation()
    if m.active and (m.assigned or m.to_revoke):
        w.drop_member(m, join_ts)   # epoch 0 again without a leave or a fencing seen: it starts over
    m.assigned, m.to_revoke, m.given = set(), set(), set()
    m.active, m.known, m.epoch = True, True, None
    w.membership(m, seq, join_ts, kind)


def _describe(w: _Walk, c, i, seq, ts):
    for g in c["described"][i] or ():
        if g["group_id"] != w.tl.group_id or g["error_code"]:
            continue
        epoch, assignment_epoch = g["group_epoch"], g["assignment_epoch"]
        if epoch is None:
            continue
        if w.describe_epoch is not None and epoch < w.describe_epoch:
            w.tl.anomalies.append((seq, ts, None, "epoch_backwards",
                                   f"described group epoch {w.describe_epoch} -> {epoch}"))
        w.describe_epoch = epoch if w.describe_epoch is None else max(w.describe_epoch, epoch)
        w.group_epoch_seen(epoch, assignment_epoch, seq, ts, "describe", None)
        if g["members"] is not None and epoch == w.group_epoch:
            # A member silent for good that a later epoch's Describe no longer lists was removed by then.
            listed = {member["member_id"] for member in g["members"]}
            for m in list(w.tl.members.values()):
                if m.member_id not in listed and w.removed_unheard(m, epoch):
                    w.expire_at_bump(m)
        for member in g["members"] or ():
            if member["target"] is not None and assignment_epoch is not None:
                w.tl.described_targets[(assignment_epoch, member["member_id"])] = frozenset(
                    _tps(member["target"], w.names))


def _classic(w: _Walk, c, i, key, d, seq, ts):
    member_id, error = c["member_id"][i] or "", c["error_code"][i] or 0
    if d == REQUEST:
        w.requests[seq] = (member_id, c["generation_id"][i], None)
        if key == LEAVE_GROUP:
            for gone in (c["leaving"][i] or [member_id] if member_id else ()):
                m = w.tl.members.get(gone)
                if m is not None and m.active:
                    w.drop_member(m, ts)
                    m.epoch = LEAVE_EPOCH
                    w.snapshot(m, seq, ts)
                    w.membership(m, seq, ts, "leave")
            return
        if not member_id:
            return
        m = w.member(member_id, CLASSIC, ts)
        m.protocol = CLASSIC
        if key == JOIN_GROUP:
            if c["session_timeout_ms"][i]:
                m.session_ms = c["session_timeout_ms"][i]
            if c["topics"][i] is not None:
                _subscribed(w, m, c["topics"][i], ts, True)
        return
    if error:
        w.tl.errors.append((ts, error))
        m = w.tl.members.get(member_id)
        if m is not None and m.active and error in FENCING_ERRORS:
            w.fence(m, seq, ts, error)
        return
    if not member_id:
        return
    m = w.member(member_id, CLASSIC, ts)
    m.protocol = CLASSIC
    _latency(m, c, i, ts)
    m.last_ts = c["request_ts"][i] if c["request_ts"][i] is not None else ts
    if key == JOIN_GROUP:
        if not m.active or m.epoch is None:
            _joined(w, m, c["request_ts"][i], seq, ts)
        if c["generation_id"][i] is not None:
            w.member_epoch(m, c["generation_id"][i], seq, ts, False)
        w.snapshot(m, seq, ts)
    elif key == SYNC_GROUP:
        w.assign(m, _classic_assignment(c["assignments"][i], member_id), seq, ts, revoke_now=True)
        w.snapshot(m, seq, ts)


def member_ids(tl: ConsumerTimeline) -> List[str]:
    return list(tl.member_order)


def median(values) -> Optional[float]:
    if not values:
        return None
    s = sorted(values)
    n = len(s)
    return float(s[n // 2]) if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0
