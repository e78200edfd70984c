"""The consumer's side of KIP-848's consumer protocol (``group.protocol=consumer``) as a sans-IO state machine.

:class:`ConsumerProtocolMember` does what Java's ``AsyncKafkaConsumer`` does through its membership manager
(``AbstractMembershipManager`` / ``ConsumerMembershipManager``) and heartbeat manager
(``AbstractHeartbeatRequestManager`` / ``ConsumerHeartbeatRequestManager``): it joins with epoch 0, sends
ConsumerGroupHeartbeat on the interval the coordinator gives, reconciles each new assignment (revoke first,
then assign, then acknowledge in the next heartbeat), reacts to each error as Java does, and leaves.

It never touches a socket or a clock.  The caller:

* calls :meth:`poll` with ``now`` (ms) whenever :meth:`next_deadline` passes (or after any call), and gets an
  ordered list of outputs: :class:`kwire.group.Send` (a request to send to the coordinator) and events
  (:class:`PartitionsRevoked`, :class:`PartitionsAssigned`, :class:`PartitionsLost`, :class:`MemberFailed`,
  :class:`CoordinatorLost`);
* hands each decoded response to :meth:`receive` with its Send's token, or a failed request to
  :meth:`request_failed`; both return outputs too;
* tells the member the topic names behind topic ids (:meth:`set_topic_names`, from Metadata): an assignment
  holds ids, the events hold names, and an id not known yet stays pending as Java's does.

Events come in causal order: a revocation before the acknowledging heartbeat that follows it.
"""

from enum import Enum
from typing import NamedTuple

from kwire.codec import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
    ErrorCode,
    error_name,
)
from kwire.errors import ArgumentTypeError

from ._errors import GroupMemberFatalError, GroupProtocolError
from ._member import MemberFailed, PartitionsAssigned, PartitionsLost, PartitionsRevoked, Send

__all__ = ["ConsumerMembershipState", "ConsumerProtocolMember", "CoordinatorLost"]

# The version the Java client sends (ConsumerGroupHeartbeatRequest.Builder without unstable versions).
HEARTBEAT_VERSION = 0


class ConsumerMembershipState(str, Enum):
    """Java's client ``MemberState`` for the consumer protocol."""

    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    PREPARE_LEAVING = "PREPARE_LEAVING"
    LEAVING = "LEAVING"
    STALE = "STALE"
    FATAL = "FATAL"

    def __str__(self):
        return self.value


S = ConsumerMembershipState
# The states as module constants: an Enum member read through its class costs a descriptor call.
_ACKNOWLEDGING = S.ACKNOWLEDGING
_FATAL = S.FATAL
_FENCED = S.FENCED
_JOINING = S.JOINING
_LEAVING = S.LEAVING
_PREPARE_LEAVING = S.PREPARE_LEAVING
_RECONCILING = S.RECONCILING
_STABLE = S.STABLE
_STALE = S.STALE
_UNSUBSCRIBED = S.UNSUBSCRIBED

# MemberState's previous-valid-states lists, turned around: state -> the states it may move to.
_PREVIOUS = {
    _STABLE: (_JOINING, _ACKNOWLEDGING, _RECONCILING),
    _RECONCILING: (_STABLE, _JOINING, _ACKNOWLEDGING, _RECONCILING),
    _ACKNOWLEDGING: (_RECONCILING,),
    _FATAL: (_JOINING, _STABLE, _RECONCILING, _ACKNOWLEDGING, _PREPARE_LEAVING, _LEAVING, _UNSUBSCRIBED),
    _FENCED: (_JOINING, _STABLE, _RECONCILING, _ACKNOWLEDGING, _PREPARE_LEAVING, _LEAVING),
    _JOINING: (_FENCED, _UNSUBSCRIBED, _STALE),
    _PREPARE_LEAVING: (_JOINING, _STABLE, _RECONCILING, _ACKNOWLEDGING, _UNSUBSCRIBED),
    _LEAVING: (_PREPARE_LEAVING,),
    _UNSUBSCRIBED: (_PREPARE_LEAVING, _LEAVING, _FENCED),
    _STALE: (_LEAVING,),
}
TRANSITIONS = {state: frozenset(t for t, previous in _PREVIOUS.items() if state in previous) for state in S}

# MemberState.canHandleNewAssignment; and the states whose responses are dropped (a leave is not awaited).
_TAKES_ASSIGNMENTS = frozenset({_JOINING, _STABLE, _RECONCILING, _ACKNOWLEDGING})
_IGNORES_RESPONSES = frozenset({_LEAVING, _FENCED, _STALE, _FATAL, _UNSUBSCRIBED, _PREPARE_LEAVING})
# AbstractHeartbeatRequestManager.poll sends nothing in these.
_SILENT = frozenset({_UNSUBSCRIBED, _FATAL, _STALE, _FENCED, _PREPARE_LEAVING})
_IN_GROUP = frozenset({_JOINING, _RECONCILING, _ACKNOWLEDGING, _STABLE})

# AbstractHeartbeatRequestManager.onErrorResponse: errors retried without backoff, and the fencing ones.
_COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
_FENCING_ERRORS = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
_RETRIED_ERRORS = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class CoordinatorLost(NamedTuple):
    """NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE: look the coordinator up again, then call
    :meth:`ConsumerProtocolMember.coordinator_found`; no heartbeat is sent meanwhile."""
    error_code: int


# A NamedTuple's own constructor is namedtuple's generated __new__, a Python function: the outputs made on
# every heartbeat are made as tuples of their class instead (the same objects, fields in declaration order).
_make = tuple.__new__


def _names(tps):
    return tuple(sorted(tps))


class ConsumerProtocolMember:
    """One consumer of a consumer-protocol group.  ``rebalance_timeout_ms`` is Java's ``max.poll.interval.ms``,
    ``server_assignor`` its ``group.remote.assignor``; ``retry_backoff_ms`` / ``retry_backoff_max_ms`` its
    ``retry.backoff.ms`` / ``retry.backoff.max.ms`` (the backoff here has no jitter)."""

    def __init__(self, group_id, topics=(), *, instance_id=None, rebalance_timeout_ms=300_000, server_assignor=None,
                 topic_names=None, retry_backoff_ms=100, retry_backoff_max_ms=1000, member_id=""):
        if not isinstance(group_id, str) or not group_id:
            raise ArgumentTypeError("group_id must be a non-empty str")
        self.group_id = group_id
        self.instance_id = instance_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self.state = _UNSUBSCRIBED
        self.member_id = member_id
        self.member_epoch = 0
        self.heartbeat_interval_ms = 0        # 0 until the first response says otherwise
        self.subscription = ()
        self.assignment = frozenset()         # current: {(topic id, partition)}
        self._assignment_epoch = 0            # local epoch of the current assignment (the ack is its change)
        self._target = None                   # last received target: frozenset of (topic id, partition)
        self._target_topics = ()              # the topic ids that target's response listed
        self._topic_names = dict(topic_names or {})
        self._next_send = 0
        self._last_sent_at = 0
        self._backoff_until = 0
        self._attempts = 0
        self._in_flight = None                # token of the heartbeat awaited
        self._leave_tokens = set()            # leave heartbeats: answers are read and dropped
        self._tokens = 0
        self._sent = None                     # what the last heartbeat carried (None: send everything)
        self._coordinator_known = True
        self._pending_leave_epoch = None
        self._stale_after_leave = False
        if topics:
            self.subscribe(topics)

    # -- the state machine's one door -----------------------------------------------------------------------

    def _to(self, state):
        if state not in TRANSITIONS[self.state]:
            raise GroupProtocolError(f"consumer member: no transition from {self.state.value} to {state.value}")
        self.state = state

    # -- application calls ----------------------------------------------------------------------------------

    def subscribe(self, topics):
        """``subscribe()``: the next poll joins (or, in the group, sends the new subscription)."""
        if isinstance(topics, (str, bytes)) or not all(isinstance(t, str) for t in topics):
            raise ArgumentTypeError("topics must be an iterable of topic names")
        self.subscription = tuple(sorted(set(topics)))
        if self.state is _UNSUBSCRIBED:
            self._join()

    def set_topic_names(self, topic_names):
        """``{topic_id: name}`` from Metadata; a pending target whose ids become known is reconciled at the next
        poll."""
        self._topic_names.update(topic_names)

    def leave(self, now):
        """``unsubscribe()`` / ``close()`` (``AbstractMembershipManager.leaveGroup``): revoke everything (lost
        if the member never got an epoch), then one leave heartbeat, -1 or -2 for a static member."""
        if self.state not in _IN_GROUP:
            return []
        out = []
        self._to(_PREPARE_LEAVING)
        self._drop_all(out, lost=self.member_epoch <= 0)
        self._pending_leave_epoch = STATIC_LEAVE_EPOCH if self.instance_id is not None else LEAVE_EPOCH
        self._to(_LEAVING)
        return out + self.poll(now)

    def poll_timeout_expired(self, now):
        """``max.poll.interval.ms`` passed without an application poll (``AbstractHeartbeatRequestManager.poll``):
        send the leave at once, then the partitions are lost and the member is STALE until :meth:`rejoin`."""
        if self.state not in _IN_GROUP:
            return []
        self._to(_PREPARE_LEAVING)
        self._pending_leave_epoch = STATIC_LEAVE_EPOCH if self.instance_id is not None else LEAVE_EPOCH
        self._to(_LEAVING)
        self._stale_after_leave = True
        return self.poll(now)

    def rejoin(self, now):
        """The application polls again after a poll timeout: join with the same member id at epoch 0."""
        if self.state is not _STALE:
            return []
        self._join()
        return self.poll(now)

    def coordinator_found(self, now):
        self._coordinator_known = True
        return self.poll(now)

    # -- driving ------------------------------------------------------------------------------------------

    def next_deadline(self):
        """When :meth:`poll` may send (ms), or None when nothing is scheduled."""
        state = self.state
        if state in _SILENT or not self._coordinator_known:
            return None
        if state is _LEAVING:
            return 0
        if self._in_flight is not None:
            return None
        if state is _JOINING or state is _ACKNOWLEDGING:
            return self._backoff_until
        return max(self._next_send, self._backoff_until)

    def poll(self, now):
        out = []
        state = self.state
        if state is _RECONCILING:
            self._reconcile(out)
            state = self.state
        if state in _SILENT or not self._coordinator_known:
            if state is _LEAVING:   # onHeartbeatRequestSkipped: the leave is dropped
                self._finish_leave(out)
            return out
        if state is _LEAVING:
            out.append(self._send_leave())
            self._finish_leave(out)
            return out
        if self._in_flight is not None or now < self._backoff_until:
            return out
        # shouldHeartbeatNow: JOINING and ACKNOWLEDGING go at once; otherwise the interval decides.
        if state is _JOINING or state is _ACKNOWLEDGING or now >= self._next_send:
            out.append(self._send_heartbeat(now))
        return out

    def receive(self, token, response, now):
        if self._leave_tokens and token in self._leave_tokens:
            self._leave_tokens.discard(token)
            return []
        if token != self._in_flight:
            raise GroupProtocolError(f"consumer member: no heartbeat in flight with token {token}")
        if type(response) is not ConsumerGroupHeartbeatResponse:
            raise GroupProtocolError(f"expected a ConsumerGroupHeartbeatResponse, got {type(response).__name__}")
        self._in_flight = None
        state = self.state
        if state in _IGNORES_RESPONSES:
            return []
        if response.error_code:
            out = []
            try:
                code = ErrorCode(response.error_code)
            except ValueError:
                code = response.error_code
            self._on_error(code, response.error_message, now, out)
            return out + self.poll(now)
        # ConsumerMembershipManager.onHeartbeatSuccess
        self._attempts = 0
        if response.member_id:
            self.member_id = response.member_id
        self.member_epoch = response.member_epoch
        interval = response.heartbeat_interval_ms
        if interval > 0:
            self.heartbeat_interval_ms = interval
            self._next_send = self._last_sent_at + interval
        assignment = response.assignment
        if assignment is not None and state in _TAKES_ASSIGNMENTS:
            tps = assignment.topic_partitions
            target = frozenset([(tid, p) for tp in tps for tid in (tp.topic_id,) for p in tp.partitions])
            self._target = target
            self._target_topics = [tp.topic_id for tp in tps]
            if target != self.assignment:
                self._to(_RECONCILING)
            elif state is _JOINING or state is _RECONCILING:
                self._to(_STABLE)
        elif state is _STABLE and now < self._next_send and self._coordinator_known:
            return []   # a steady answer: poll() would send nothing before the interval ends
        return self.poll(now)

    def request_failed(self, token, now):
        """A heartbeat that got no answer (disconnect, timeout): ``AbstractHeartbeatRequestManager.onFailure``
        resets the sent fields and backs off."""
        if token in self._leave_tokens:
            self._leave_tokens.discard(token)
            return []
        if token != self._in_flight:
            raise GroupProtocolError(f"consumer member: no heartbeat in flight with token {token}")
        self._in_flight = None
        self._sent = None
        self._back_off(now)
        return self.poll(now)

    # -- inside -------------------------------------------------------------------------------------------

    def _join(self):
        # AbstractMembershipManager.transitionToJoining: epoch 0, no target, same member id.
        self._to(_JOINING)
        self.member_epoch = 0
        self._target = None
        self._sent = None
        self._next_send = 0

    def _back_off(self, now, skip=False):
        self._next_send = now   # the interval timer is reset to 0 after any failure
        if skip:
            self._backoff_until = now
            return
        delay = min(self.retry_backoff_ms * (2 ** self._attempts), self.retry_backoff_max_ms)
        self._attempts += 1
        self._backoff_until = now + delay

    def _on_error(self, code, message, now, out):
        """``AbstractHeartbeatRequestManager.onErrorResponse`` / ``ConsumerHeartbeatRequestManager
        .handleSpecificError``: the next heartbeat is full after any error."""
        self._sent = None
        if code in _COORDINATOR_ERRORS:
            self._coordinator_known = False
            self._back_off(now, skip=True)
            out.append(CoordinatorLost(int(code)))
        elif code in _RETRIED_ERRORS:
            self._back_off(now)
        elif code in _FENCING_ERRORS:
            self._back_off(now, skip=True)
            self._fenced(out)
        else:
            self._fatal(code, message, out)

    def _fenced(self, out):
        # AbstractMembershipManager.transitionToFenced: lost, not revoked; then rejoin with the same id.
        if self.state is _PREPARE_LEAVING or self.state is _LEAVING:
            self._to(_UNSUBSCRIBED)
            return
        self._to(_FENCED)
        self._drop_all(out, lost=True)
        self._join()

    def _fatal(self, code, message, out):
        leaving = self.state in (_PREPARE_LEAVING, _LEAVING, _UNSUBSCRIBED)
        self._to(_FATAL)
        if not leaving:
            self._drop_all(out, lost=True)
        name = error_name(code) if isinstance(code, int) else str(code)
        out.append(MemberFailed(GroupMemberFatalError(int(code), f"ConsumerGroupHeartbeat failed with {name}"
                                                                 f"{': ' + message if message else ''}")))

    def _drop_all(self, out, lost):
        if self.assignment:
            names = self._resolved(self.assignment)
            out.append(_make(PartitionsLost if lost else PartitionsRevoked, (names,)))
        self.assignment = frozenset()
        self._assignment_epoch += 1
        self._target = None

    def _resolved(self, tps):
        names = self._topic_names
        return _names([(names[t], p) for t, p in tps if t in names])

    def _reconcile(self, out):
        """``AbstractMembershipManager.maybeReconcile`` / ``revokeAndAssign``: resolve what can be, revoke what
        is gone (one event), assign what is new (one event, even if empty), then acknowledge."""
        target = self._target or frozenset()
        names = self._topic_names
        named = bool(target)
        if named:
            for t in self._target_topics:
                if t not in names:
                    named = False
                    break
        if named:
            resolvable = target   # every topic id named (the usual case): nothing to filter
        else:
            resolvable = frozenset([tp for tp in target if tp[0] in names])
        if resolvable == self.assignment and resolvable != target:
            return  # only unresolved topic ids differ: wait for their names
        revoked = self.assignment - resolvable
        added = resolvable - self.assignment
        if revoked:
            out.append(_make(PartitionsRevoked, (self._resolved(revoked),)))
        self.assignment = resolvable
        self._assignment_epoch += 1
        out.append(_make(PartitionsAssigned, (self._resolved(added),)))
        self._to(_ACKNOWLEDGING)

    def _topic_partitions(self):
        by_topic = {}
        for topic_id, p in self.assignment:
            by_topic.setdefault(topic_id, []).append(p)
        return [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in sorted(by_topic.items())]

    def _send_heartbeat(self, now):
        """``ConsumerHeartbeatRequestManager.HeartbeatState.buildRequestData``: ids and epoch always; the
        rebalance timeout, subscription, assignor and owned partitions when joining or when they changed since
        the last heartbeat (the owned partitions change with every completed reconciliation: that is the
        acknowledgement)."""
        joining = self.state is _JOINING
        now_sending = (self.rebalance_timeout_ms, self.subscription, self.server_assignor, self._assignment_epoch)
        sent = self._sent
        if sent == now_sending and not joining:
            # A steady heartbeat: nothing changed since the last one, ids and epoch only.
            request = ConsumerGroupHeartbeatRequest(group_id=self.group_id, member_id=self.member_id,
                                                    member_epoch=self.member_epoch, instance_id=self.instance_id)
        else:
            full = joining or sent is None
            timeout, topics, assignor, owned = sent if sent is not None else (None, None, None, None)
            fields = {}
            if full or timeout != self.rebalance_timeout_ms:
                fields["rebalance_timeout_ms"] = self.rebalance_timeout_ms
            if full or topics != self.subscription:
                fields["subscribed_topic_names"] = list(self.subscription)
            if self.server_assignor is not None and (full or assignor != self.server_assignor):
                fields["server_assignor"] = self.server_assignor
            if full or owned != self._assignment_epoch:
                fields["topic_partitions"] = [] if joining else self._topic_partitions()
            request = ConsumerGroupHeartbeatRequest(group_id=self.group_id, member_id=self.member_id,
                                                    member_epoch=self.member_epoch, instance_id=self.instance_id,
                                                    **fields)
        # What this heartbeat carried: (rebalance timeout, topics, assignor, owned partitions' local epoch).
        self._sent = now_sending
        self._tokens += 1
        self._in_flight = self._tokens
        self._last_sent_at = now
        self._next_send = now + self.heartbeat_interval_ms
        if self.state is _ACKNOWLEDGING:
            # onHeartbeatRequestGenerated: the ack is on its way.
            waiting = (self._target or frozenset()) != self.assignment   # e.g. topic ids without names yet
            self._to(_RECONCILING if waiting else _STABLE)
        return _make(Send, (self._tokens, request, HEARTBEAT_VERSION, True))

    def _send_leave(self):
        request = ConsumerGroupHeartbeatRequest(group_id=self.group_id, member_id=self.member_id,
                                                member_epoch=self._pending_leave_epoch, instance_id=self.instance_id)
        self._tokens += 1
        self._leave_tokens.add(self._tokens)
        if self._in_flight is not None:
            # A heartbeat still in flight is answered into a member that has left: read and dropped.
            self._leave_tokens.add(self._in_flight)
        self._in_flight = None
        return _make(Send, (self._tokens, request, HEARTBEAT_VERSION, True))

    def _finish_leave(self, out):
        self.member_epoch = self._pending_leave_epoch
        self._pending_leave_epoch = None
        self._sent = None
        if self._stale_after_leave:
            # transitionToStale: the partitions are lost after the leave went out (or was dropped).
            self._stale_after_leave = False
            self._drop_all(out, lost=True)
            self._to(_STALE)
        else:
            self._to(_UNSUBSCRIBED)
