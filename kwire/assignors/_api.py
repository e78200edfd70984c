"""Member-level entry points and the strategy registry.

Every strategy has an array form (``ArrayGroup -> ArrayAssignment``, what the
Spark pipeline and :func:`assign` run) and may have a reference form
(``GroupInput -> MemberAssignments``, a plain-Python statement used to cross-check
it).  Where a strategy finds a member's owned partitions and generation --
Subscription fields, userData, or nowhere -- is answered once, by
:func:`member_input`, before any assignor sees the group.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .. import codec
from ..errors import AssignmentError
from ._arrays import (ArrayAssignment, ArrayGroup, array_assignment_of, checked_counts, end_to_end, group_input_of,
                      required_list)
from ._leader import ColumnReading, assignment_payloads, join_members_group, member_objects_group, sync_request_frame
from ._model import MemberAssignments, GroupInput, MemberInput
from ._range import SMALL_GROUP_MEMBERS, assign_range, assign_range_many, reference_range, small_range
from ._sticky_small import SMALL_STICKY_MEMBERS, small_cooperative_members, small_cooperative_sticky
from ._userdata import cooperative_generations, member_input_for, protocol_generations, sticky_claim_columns
from ._roundrobin import assign_roundrobin, assign_roundrobin_many, reference_roundrobin

ArrayFn = Callable[..., ArrayAssignment]
ReferenceFn = Callable[[GroupInput], MemberAssignments]
MemberInputFn = Callable[[str, Any], MemberInput]


@dataclass(frozen=True)
class GroupMember:
    """One JoinGroup member as the leader sees it.

    ``subscription`` is a decoded ``kwire.Subscription`` or any object with
    its attributes (``topics``, ``user_data``, ``owned_partitions``,
    ``generation_id``, ``rack_id``)."""

    member_id: str
    group_instance_id: Optional[str]
    subscription: Any


@dataclass(frozen=True)
class Strategy:
    name: str
    #: ``fn(group: ArrayGroup, implementation=None) -> ArrayAssignment``; None if only a reference exists.
    arrays: Optional[ArrayFn] = None
    #: ``fn(group: GroupInput) -> MemberAssignments``, plain Python, for cross-checks.
    reference: Optional[ReferenceFn] = None
    #: ``fn(strategy_name, member) -> MemberInput``; None means "topics and rack only".
    member_input: Optional[MemberInputFn] = None
    #: Whether ``arrays`` accepts ``implementation=`` (decided once, at registration).
    arrays_takes_implementation: bool = False
    #: Whether ``arrays`` and ``reference`` accept ``java_exact=``: a strategy whose
    #: default may depart from Java's answer (the sticky pair, docs/ASSIGNORS.md)
    #: takes it; for the others Java's answer is the only one.
    takes_java_exact: bool = False


_REGISTRY: Dict[str, Strategy] = {}
_LOCK = threading.Lock()

#: Registered strategies by protocol name (a live, read-only view).
STRATEGIES: Mapping[str, Strategy] = types.MappingProxyType(_REGISTRY)


def register_strategy(
    name: str,
    fn: Optional[ArrayFn] = None,
    *,
    reference: Optional[ReferenceFn] = None,
    member_input: Optional[MemberInputFn] = None,
) -> Strategy:
    """Register (or replace) a strategy under its protocol name.

    ``fn`` is the array form: ``fn(group: ArrayGroup, implementation=None)``
    returning an :class:`ArrayAssignment` (a function without an
    ``implementation`` parameter is also accepted).  ``reference`` is an
    optional ``GroupInput -> MemberAssignments`` form; at least one is required.
    ``member_input`` builds a :class:`MemberInput` from a :class:`GroupMember`
    for strategies that read owned partitions or userData."""
    if not isinstance(name, str) or not name:
        raise AssignmentError("a strategy needs a non-empty str name")
    if fn is None and reference is None:
        raise AssignmentError(f"strategy {name!r}: give an array function, a reference function, or both")
    for label, f in (("fn", fn), ("reference", reference), ("member_input", member_input)):
        if f is not None and not callable(f):
            raise AssignmentError(f"strategy {name!r}: {label} is not callable")
    entry = Strategy(name, fn, reference, member_input, fn is not None and _takes_implementation(fn),
                     all(f is None or _takes_keyword(f, "java_exact") for f in (fn, reference)))
    with _LOCK:
        _REGISTRY[name] = entry
    return entry


def unregister_strategy(name: str) -> Strategy:
    """Remove a strategy registered under ``name`` and return it (so a test or
    a plugin can put the previous entry back with :func:`register_strategy`)."""
    with _LOCK:
        entry = _REGISTRY.pop(name, None)
    if entry is None:
        raise AssignmentError(f"no strategy registered as {name!r}")
    return entry


def get_strategy(name: str) -> Strategy:
    entry = _REGISTRY.get(name)
    if entry is None:
        raise AssignmentError(f"unknown assignment strategy {name!r}; registered: {sorted(_REGISTRY)}")
    return entry


def _takes_keyword(fn, keyword: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return keyword in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _takes_implementation(fn) -> bool:
    return _takes_keyword(fn, "implementation")


# -- member-level input -----------------------------------------------------------------------


def _checked_ids(member_id, instance, shown: bool = True) -> None:
    """Refuse a member id that is not a str, or an instance id that is neither
    str nor None (``shown``: the message quotes the instance id)."""
    if not isinstance(member_id, str):
        raise AssignmentError(f"member_id must be str, got {member_id!r}")
    if instance is not None and not isinstance(instance, str):
        got = f", got {instance!r}" if shown else ""
        raise AssignmentError(f"member {member_id!r}: group_instance_id must be str or None{got}")


def _topics_and_rack(member) -> Tuple[str, Optional[str], Tuple[str, ...], Optional[str]]:
    member_id = getattr(member, "member_id", None)
    instance = getattr(member, "group_instance_id", None)
    _checked_ids(member_id, instance)
    sub = getattr(member, "subscription", None)
    if sub is None:
        raise AssignmentError(f"member {member_id!r} has no subscription")
    topics = getattr(sub, "topics", None)
    if topics is None or isinstance(topics, (str, bytes)):
        raise AssignmentError(f"member {member_id!r}: subscription.topics must be a list of str")
    # Element types are checked once per distinct name when the group is built.
    try:
        topics = tuple(topics)
    except TypeError as exc:
        raise AssignmentError(f"member {member_id!r}: subscription.topics must be a list of str") from exc
    rack = getattr(sub, "rack_id", None)
    if rack is not None and not isinstance(rack, str):
        raise AssignmentError(f"member {member_id!r}: rack_id must be str or None, got {rack!r}")
    return member_id, instance, topics, rack


def member_input(strategy: str, member) -> MemberInput:
    """The facts ``strategy`` takes from one member: the single place that
    decides where owned partitions and generations come from."""
    entry = get_strategy(strategy)
    if entry.member_input is not None:
        return entry.member_input(strategy, member)
    # range and roundrobin read nothing but the topics and the rack.
    member_id, instance, topics, rack = _topics_and_rack(member)
    return MemberInput(member_id=member_id, group_instance_id=instance, topics=topics, rack=rack)


def group_input(strategy: str, members: Iterable, partitions_per_topic, *, partition_racks=None) -> GroupInput:
    if isinstance(partitions_per_topic, (str, bytes)) or not hasattr(partitions_per_topic, "items"):
        raise AssignmentError("partitions_per_topic must be a mapping of topic -> partition count")
    if partition_racks is not None and not hasattr(partition_racks, "items"):
        raise AssignmentError("partition_racks must be a mapping of topic -> per-partition replica racks")
    counts = dict(partitions_per_topic)
    return GroupInput(
        members=[_sanitized(member_input(strategy, m), counts) for m in required_list(members, "members")],
        partitions_per_topic=counts,
        partition_racks=dict(partition_racks) if partition_racks is not None else None,
    )


def _sanitized(member: MemberInput, counts, unique_topics: Optional[Dict[tuple, tuple]] = None) -> MemberInput:
    """Clean up what no Java client sends but a hostile or stale peer can.

    The two places kwire departs from Java, both only on input a Java
    consumer never produces, so that the result is always a valid
    assignment (Java's sticky assignors hand out partitions twice, to
    members not subscribed to them, or throw):

    - an owned partition whose index the topic no longer has (it was
      recreated with fewer partitions) is dropped, like a claim on a deleted
      topic; negative indexes are malformed and left for validation to refuse;
    - a topic listed twice in one subscription is kept once (Java's
      ConsumerProtocol writes topics from a set).

    ``unique_topics`` remembers each topic list's cleaned form, so members
    that subscribe alike share one tuple (and its topic-id array later)."""
    try:
        topics = unique_topics.get(member.topics) if unique_topics is not None else None
        if topics is None:
            topics = tuple(dict.fromkeys(member.topics))
            if unique_topics is not None:
                topics = unique_topics.setdefault(member.topics, topics)
        owned = member.owned
        if owned:
            owned = _kept_claims(owned, counts)
    except TypeError:
        return member  # malformed names or indexes: left for validation to refuse with a typed error
    if len(topics) == len(member.topics) and len(owned) == len(member.owned):
        return member  # nothing listed twice, nothing stale
    return dataclasses.replace(member, topics=topics, owned=owned)


def _kept_claims(owned, counts) -> tuple:
    """The ``(topic, partition)`` claims a topic still has (see :func:`_sanitized`;
    the leader path cleans its claim columns by the same rule, ``_leader._current_claims``)."""
    return tuple(tp for tp in owned if counts.get(tp[0]) is None or tp[1] < counts[tp[0]])


# -- running a strategy -----------------------------------------------------------------------


def _java_exact_option(entry: Strategy, java_exact: bool) -> Dict[str, bool]:
    if not isinstance(java_exact, bool):
        raise AssignmentError(f"java_exact must be True or False, not {java_exact!r}")
    # Only a strategy that can depart from Java's answer has a Java-exact form to ask for.
    return {"java_exact": True} if java_exact and entry.takes_java_exact else {}


def assign_arrays(
    strategy: str, group: ArrayGroup, *, implementation: Optional[str] = None, java_exact: bool = False
) -> ArrayAssignment:
    """Run ``strategy`` on an :class:`ArrayGroup`; the fast path.

    ``java_exact=True`` returns exactly what Java's assignor returns, even where
    that is not a valid assignment (see docs/ASSIGNORS.md); by default kwire
    returns Java's answer whenever it is valid."""
    if not isinstance(group, ArrayGroup):
        raise AssignmentError(f"assign_arrays needs an ArrayGroup, got {type(group).__name__}")
    entry = get_strategy(strategy)
    options = _java_exact_option(entry, java_exact)
    if entry.arrays is not None:
        if entry.arrays_takes_implementation:
            options["implementation"] = implementation
        return entry.arrays(group, **options)
    return array_assignment_of(group, entry.reference(group_input_of(group), **options))


#: The built-in array forms that run many groups in one kernel call.
_MANY = {"range": (assign_range, assign_range_many), "roundrobin": (assign_roundrobin, assign_roundrobin_many)}


def assign_arrays_many(
    strategy: str, groups: Sequence[ArrayGroup], *, implementation: Optional[str] = None
) -> ArrayAssignment:
    """:func:`assign_arrays` of each of ``groups``, end to end: a bare
    :class:`ArrayAssignment` whose rows are the first group's members, then
    the second's, and so on, each group's topics numbered as in that group.
    Range and roundrobin run all the groups in one call of their kernels, so
    many small groups cost about what one larger group does; any other
    strategy (or one registered over either) runs group by group."""
    groups = list(groups)
    for g in groups:
        if not isinstance(g, ArrayGroup):
            raise AssignmentError(f"assign_arrays_many needs ArrayGroups, got {type(g).__name__}")
    entry = get_strategy(strategy)
    many = _MANY.get(strategy)
    if many is not None and entry.arrays is many[0]:
        return many[1](groups, implementation)
    return end_to_end([assign_arrays(strategy, g, implementation=implementation) for g in groups])


def assign_group(
    strategy: str, group: GroupInput, *, implementation: Optional[str] = None, java_exact: bool = False
) -> MemberAssignments:
    """Run ``strategy`` on a :class:`GroupInput`; every member appears in the result."""
    entry = get_strategy(strategy)
    if entry.arrays is None:
        result = entry.reference(group, **_java_exact_option(entry, java_exact))
        return {m.member_id: list(result.get(m.member_id, ())) for m in group.members}
    return assign_arrays(
        strategy, ArrayGroup.from_group_input(group), implementation=implementation, java_exact=java_exact
    ).to_dict()


def assign_members_arrays(
    strategy: str, members: Sequence, partitions_per_topic, *, partition_racks=None, implementation=None,
    java_exact: bool = False,
) -> ArrayAssignment:
    """Like :func:`assign` but returns the :class:`ArrayAssignment` (no tuple per partition)."""
    entry = get_strategy(strategy)
    if entry.arrays is None:
        group = group_input(strategy, members, partitions_per_topic, partition_racks=partition_racks)
        return assign_arrays(
            strategy, ArrayGroup.from_group_input(group), implementation=implementation, java_exact=java_exact
        )
    counts = _counts_of(partitions_per_topic)
    group = member_objects_group(members, counts, _facts(strategy, counts), partition_racks)
    return assign_arrays(strategy, group, implementation=implementation, java_exact=java_exact)


def _counts_of(partitions_per_topic) -> Dict[str, int]:
    if isinstance(partitions_per_topic, (str, bytes)) or not hasattr(partitions_per_topic, "items"):
        raise AssignmentError("partitions_per_topic must be a mapping of topic -> partition count")
    return checked_counts(partitions_per_topic)


def _facts(strategy: str, counts: Dict[str, int], decoded: bool = False):
    """The strategy's reading of one member, cleaned up like :func:`group_input`
    does: ``facts(member) -> MemberInput``.

    For JoinGroup members (``decoded``: their Subscription bytes are read by
    the leader kernels into columns), ``facts.columns`` is how the strategy
    reads a member from those columns instead (:class:`ColumnReading`), or
    None for a strategy with its own ``member_input``, which is handed
    decoded Subscriptions."""
    unique_topics: Dict[tuple, tuple] = {}

    def facts(member):
        return _sanitized(member_input(strategy, member), counts, unique_topics)

    if decoded:
        facts.columns = _column_reading(strategy, counts)
    return facts


def _column_reading(strategy: str, counts: Dict[str, int]) -> Optional[ColumnReading]:
    """What :func:`member_input` reads, from subscription columns: the same
    checks, sources and cleanup (:func:`_sanitized`'s topic de-duplication is
    done on the topic-id columns, its claim cleanup on the claim columns)."""
    reader = get_strategy(strategy).member_input
    if reader is None:  # topics and rack only
        return ColumnReading(_checked_ids, False, None)
    if reader is not member_input_for:
        return None
    check = functools.partial(_checked_ids, shown=False)
    if strategy == "cooperative-sticky":

        def cooperative_rows(cols, _kernels):
            return (cooperative_generations(cols.generation, cols.user_data), protocol_generations(cols.generation),
                    None)

        return ColumnReading(check, True, cooperative_rows)

    def sticky_rows(cols, kernels):
        generation, claims = sticky_claim_columns(cols.user_data, cols.names, kernels.sticky_userdata_columns)
        return generation, protocol_generations(cols.generation), claims

    return ColumnReading(check, False, sticky_rows)


def reference_assign(strategy: str, group: GroupInput) -> MemberAssignments:
    """The strategy's plain-Python reference result (tests cross-check the array form with it)."""
    entry = get_strategy(strategy)
    if entry.reference is None:
        raise AssignmentError(f"strategy {strategy!r} has no reference implementation")
    return entry.reference(group)


def assign(
    strategy: str,
    members: Sequence,
    partitions_per_topic: Mapping[str, int],
    *,
    partition_racks: Optional[Mapping[str, List[Sequence[Optional[str]]]]] = None,
    implementation: Optional[str] = None,
    java_exact: bool = False,
) -> Dict[str, List[Tuple[str, int]]]:
    """Assign partitions the way Kafka's Java client leader would.

    ``members`` are :class:`GroupMember` objects in JoinGroup-response order
    (that order matters to Java's result).  ``partition_racks`` maps a topic
    to one list of replica racks per partition, for rack-aware assignment.
    Returns ``{member_id: [(topic, partition), ...]}`` with every member
    present and each list in Java's order.  Where Java's sticky assignors
    would answer with an invalid assignment (or throw), kwire's default
    answer is a valid one; ``java_exact=True`` gives Java's (docs/ASSIGNORS.md)."""
    if get_strategy(strategy).arrays is None:
        group = group_input(strategy, members, partitions_per_topic, partition_racks=partition_racks)
        return assign_group(strategy, group, implementation=implementation, java_exact=java_exact)
    return assign_members_arrays(
        strategy, members, partitions_per_topic, partition_racks=partition_racks, implementation=implementation,
        java_exact=java_exact,
    ).to_dict()


# -- the leader's SyncGroup payload -----------------------------------------------------------


def encode_member_assignment(groups: Iterable[Tuple[str, List[int]]], version: int = 3) -> bytes:
    """``ConsumerProtocolAssignment`` bytes as Java's leader writes them from
    ``[(topic, [partition, ...]), ...]`` (topics in order of first appearance)."""
    entries = [codec.AssignmentTopicPartition(topic=t, partitions=list(ps)) for t, ps in groups]
    return codec.Assignment(assigned_partitions=entries, user_data=None).encode(version)


def leader_group(
    strategy: str,
    join_group_response,
    partitions_per_topic: Mapping[str, int],
    *,
    partition_racks=None,
    implementation: Optional[str] = None,
) -> ArrayGroup:
    """The :class:`ArrayGroup` :func:`leader_assignments` assigns: the members
    of a decoded JoinGroupResponse, each Subscription read as ``strategy``
    reads it (by the ``implementation`` leader kernels), in response order.

    ``assign_arrays(strategy, leader_group(...))`` is the leader's answer
    before it is encoded; this is the way to see what the leader saw, or to
    time the array core on exactly the group the leader path builds."""
    if join_group_response is None:
        raise AssignmentError("the leader path needs a JoinGroupResponse, got None")
    counts = _counts_of(partitions_per_topic)
    return join_members_group(
        getattr(join_group_response, "members", None), counts, _facts(strategy, counts, decoded=True), partition_racks,
        implementation,
    )


def leader_assignments(
    strategy: str,
    join_group_response,
    partitions_per_topic: Mapping[str, int],
    *,
    partition_racks=None,
    version: int = 3,
    implementation: Optional[str] = None,
    java_exact: bool = False,
) -> list:
    """Everything the group leader puts in its SyncGroupRequest.

    Takes a decoded JoinGroupResponse (members with ``member_id``,
    ``group_instance_id`` and ``metadata`` bytes), reads each member's
    Subscription bytes into columns (:func:`leader_group`), assigns, and
    returns one ``kwire.SyncGroupRequestAssignment`` per member, in response
    order.  ``java_exact`` as for :func:`assign`."""
    if join_group_response is None:
        raise AssignmentError("leader_assignments needs a JoinGroupResponse, got None")
    if partition_racks is None and implementation is None:
        small = None
        if strategy == "range":
            small = _small_range_assignments(join_group_response, partitions_per_topic, version)
        elif strategy == "cooperative-sticky" and not java_exact:
            small = _small_cooperative_assignments(join_group_response, partitions_per_topic, version)
        if small is not None:
            return small
    group = leader_group(strategy, join_group_response, partitions_per_topic, partition_racks=partition_racks,
                         implementation=implementation)
    result = assign_arrays(strategy, group, implementation=implementation, java_exact=java_exact)
    return _sync_assignments(group, result, version, implementation)


def _small_range_assignments(join_group_response, partitions_per_topic, version: int) -> Optional[list]:
    """:func:`leader_assignments` of a small group under the built-in ``range`` (:func:`small_range`), or None
    for any group it does not take: a large one, one with odd ids or undecodable bytes (the array path then
    answers, or refuses the input as it always does)."""
    if get_strategy("range").arrays is not assign_range:
        return None   # "range" re-registered by the caller
    members = getattr(join_group_response, "members", None)
    if type(members) is not list or not members or len(members) > SMALL_GROUP_MEMBERS:
        return None
    counts = _counts_of(partitions_per_topic)
    read = _small_join_members(members)
    if read is None:
        return None
    rows = []
    for member_id, instance_id, subscription in read:
        topics = subscription.topics
        if topics is None:
            return None
        for t in topics:
            if type(t) is not str:
                return None
        rows.append((member_id, instance_id, tuple(dict.fromkeys(topics))))
    result = small_range(rows, counts)
    if result is None:
        return None
    return [codec.SyncGroupRequestAssignment(member_id=member_id,
                                             assignment=encode_member_assignment(result[member_id], version))
            for member_id, _, _ in rows]


def _small_join_members(members) -> Optional[list]:
    """``[(member_id, group_instance_id, Subscription), ...]`` of a small path's JoinGroup members, or None
    for ids of the wrong type or bytes that do not decode (the array path reads them again and says what is
    wrong)."""
    read = []
    for m in members:
        member_id = getattr(m, "member_id", None)
        instance_id = getattr(m, "group_instance_id", None)
        metadata = getattr(m, "metadata", None)
        if type(member_id) is not str or not (instance_id is None or type(instance_id) is str) or metadata is None:
            return None
        try:
            read.append((member_id, instance_id, codec.Subscription.decode(metadata)))
        except Exception:  # noqa: BLE001 - see above
            return None
    return read


#: The ``cooperative-sticky`` array function whose default answers ``small_cooperative_sticky`` gives
#: (``_sticky`` registers it): a strategy registered under that name by a caller is not taken by it.
_SMALL_COOPERATIVE_OF: Dict[str, ArrayFn] = {}


def small_cooperative_path_for(arrays: ArrayFn) -> None:
    """Mark ``arrays`` as the ``cooperative-sticky`` whose default answers the leader's small path gives."""
    _SMALL_COOPERATIVE_OF["cooperative-sticky"] = arrays


def _small_cooperative_assignments(join_group_response, partitions_per_topic, version: int) -> Optional[list]:
    """:func:`leader_assignments` of a small group under the built-in ``cooperative-sticky``
    (:func:`small_cooperative_sticky`), or None for any group it does not take: a large one, one with odd
    ids, undecodable bytes, a negative claim or a rack (the array path then answers, or refuses the input
    as it always does)."""
    if get_strategy("cooperative-sticky").arrays is not _SMALL_COOPERATIVE_OF.get("cooperative-sticky"):
        return None
    members = getattr(join_group_response, "members", None)
    if type(members) is not list or not members or len(members) > SMALL_STICKY_MEMBERS:
        return None
    read = _small_join_members(members)
    if read is None:
        return None
    counts = _counts_of(partitions_per_topic)
    rows = small_cooperative_members(read, counts)
    if rows is None:
        return None
    result = small_cooperative_sticky(rows, counts)
    if result is None:
        return None
    return [codec.SyncGroupRequestAssignment(member_id=m.member_id,
                                             assignment=encode_member_assignment(result[m.member_id], version))
            for m in rows]


def _sync_assignments(group: ArrayGroup, result: ArrayAssignment, version: int, implementation) -> list:
    payloads = assignment_payloads(result, version, implementation)
    if payloads is None:
        groups = result.topic_groups()
        payloads = [encode_member_assignment(groups[mid], version) for mid in group.member_ids]
    return [
        codec.SyncGroupRequestAssignment(member_id=mid, assignment=payload)
        for mid, payload in zip(group.member_ids, payloads)
    ]


def leader_sync_request(
    strategy: str,
    join_group_response,
    partitions_per_topic: Mapping[str, int],
    *,
    group_id: str,
    correlation_id: int,
    version: int = 5,
    group_instance_id: Optional[str] = None,
    client_id: Optional[str] = None,
    partition_racks=None,
    assignment_version: int = 3,
    implementation: Optional[str] = None,
    java_exact: bool = False,
) -> bytes:
    """The leader's SyncGroupRequest, bytes out: the whole frame (size prefix,
    header, body) that ``kwire.encode_request`` gives for a SyncGroupRequest
    of ``group_id`` holding :func:`leader_assignments`, byte for byte.  The
    generation, the leader's member id and the protocol come from the
    JoinGroupResponse.

    Each member's Assignment is written straight into the frame, so nothing
    is made per member (no Assignment bytes, no SyncGroupRequestAssignment)
    and the assignments are written once instead of written and then
    copied: the fastest way from a JoinGroupResponse to the bytes to send.
    Decode that response with ``views=True`` (``kwire.decode_response(frame,
    11, version, views=True)``) and the members' metadata are read where
    they lie in its frame: nothing is copied per member on the way in either."""
    if join_group_response is None:
        raise AssignmentError("leader_sync_request needs a JoinGroupResponse, got None")
    group = leader_group(strategy, join_group_response, partitions_per_topic, partition_racks=partition_racks,
                         implementation=implementation)
    result = assign_arrays(strategy, group, implementation=implementation, java_exact=java_exact)
    # A response without one of these gets the codec's EncodeError for it, not an AttributeError.
    request = codec.SyncGroupRequest(
        group_id=group_id, generation_id=getattr(join_group_response, "generation_id", None),
        member_id=getattr(join_group_response, "member_id", None), group_instance_id=group_instance_id,
        protocol_type=getattr(join_group_response, "protocol_type", None),
        protocol_name=getattr(join_group_response, "protocol_name", None),
        assignments=[],
    )
    # The codec writes (and checks) everything but the assignments, which
    # are the body's last field: its frame ends with their empty array and,
    # when flexible, the empty tag section.
    head = codec.encode_request(request, version, correlation_id=correlation_id, client_id=client_id)
    flexible = version >= codec.SyncGroupRequest.flexible_from
    empty_end = b"\x01\x00" if flexible else b"\x00\x00\x00\x00"
    frame = None
    if head.endswith(empty_end):
        frame = sync_request_frame(result, group.member_ids, assignment_version, head[:-len(empty_end)], flexible,
                                   implementation)
    if frame is None:
        request.assignments = _sync_assignments(group, result, assignment_version, implementation)
        frame = codec.encode_request(request, version, correlation_id=correlation_id, client_id=client_id)
    return frame


register_strategy("range", assign_range, reference=reference_range)
register_strategy("roundrobin", assign_roundrobin, reference=reference_roundrobin)
