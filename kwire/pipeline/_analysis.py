"""Per-group analysis: rebalances, partition ownership, what-if assignors.

Pure Python over one group's decoded events, so it is tested without
Spark; the Spark stages call it once per bucket of groups, never once
per group.  The what-if packs a task's generations from its Arrow event
columns at once (:func:`pack_replayed`) and replays them on arrays
(:func:`replay_batch`).

Events are rows of the decoded frames table (see ``kwire.codec._batch_py``),
reduced by the Spark stage: heartbeat requests are dropped and successful
heartbeat responses are folded into one row per (group, member,
generation) carrying the last such heartbeat's request time in ``ts``.
Timestamps are integer microseconds.

Topic sizes come from the capture's Metadata responses where it has any
(:func:`metadata_partition_counts`, :class:`MetadataCounts`), and are
otherwise inferred from the partitions assigned.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain, repeat
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kwire import assignors
from kwire.assignors import segment_starts
from kwire.errors import ArgumentValueError, AssignmentError, KwireError

METADATA, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 3, 11, 12, 13, 14
REQUEST, RESPONSE = 0, 1

#: Kafka's default session.timeout.ms, for members whose JoinGroup was not captured.
DEFAULT_SESSION_TIMEOUT_MS = 45000

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")

#: Without Metadata responses a topic's size is inferred from the highest
#: partition assigned in it.  One flipped byte in a SyncGroup frame can name
#: partition 16,777,215, and a topic that size makes the what-if replay take
#: minutes: a partition number at or beyond this cap marks the frame bad
#: instead.  Kafka's own practical limits are far below it.
DEFAULT_MAX_PARTITIONS = 100_000

ERROR_NAMES = {
    0: "NONE", 15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR", 14: "COORDINATOR_LOAD_IN_PROGRESS",
    22: "ILLEGAL_GENERATION", 23: "INCONSISTENT_GROUP_PROTOCOL", 24: "INVALID_GROUP_ID", 25: "UNKNOWN_MEMBER_ID",
    26: "INVALID_SESSION_TIMEOUT", 27: "REBALANCE_IN_PROGRESS", 30: "GROUP_AUTHORIZATION_FAILED",
    79: "MEMBER_ID_REQUIRED", 81: "GROUP_MAX_SIZE_REACHED", 82: "FENCED_INSTANCE_ID",
}

# Columns the Spark stage passes in (and tests build by hand).  Metadata
# responses may be among the events (api key 3, no group), with their
# ``topics`` and ``partition_counts``: see :func:`metadata_partition_counts`.
EVENT_COLUMNS = ["group_id", "seq", "ts", "request_seq", "request_ts", "direction", "api_key", "member_id",
                 "group_instance_id", "generation_id", "error_code", "protocol_name", "leader", "session_timeout_ms", "topics",
                 "partition_counts", "members", "assignments", "leaving"]

REBALANCE_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("generation_id", pa.int32()), ("protocol_name", pa.string()),
    ("leader", pa.string()), ("start_ts", pa.int64()), ("end_ts", pa.int64()), ("stall_ms", pa.float64()),
    ("member_count", pa.int32()), ("members", pa.list_(pa.string())), ("joined", pa.list_(pa.string())),
    ("left", pa.list_(pa.string())), ("trigger", pa.string()), ("triggers", pa.list_(pa.string())),
    ("error_codes", pa.list_(pa.int16())), ("error_count", pa.int64()), ("partitions", pa.int32()),
    ("moved_partitions", pa.int32()),
])

ASSIGNMENT_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("generation_id", pa.int32()), ("topic", pa.string()), ("partition", pa.int32()),
    ("member_id", pa.string()), ("prev_member_id", pa.string()), ("moved", pa.bool_()),
])

WHATIF_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("generation_id", pa.int32()), ("strategy", pa.string()),
    ("observed", pa.bool_()), ("member_count", pa.int32()), ("partitions", pa.int32()), ("assigned", pa.int32()),
    ("moved", pa.int32()), ("max_load", pa.int32()), ("min_load", pa.int32()), ("imbalance", pa.int32()),
    ("reproduces_observed", pa.bool_()),
    # Set when kwire's assignor refused this generation's inputs: the row
    # reports the failure for this group and the job goes on.
    ("error", pa.string()),
])

#: Frames that decoded but contradict the protocol or the rest of the capture.
#: Their content is left out of the analysis; undecodable frames join them in
#: the ``bad_frames`` table with their ``decode_error`` as the reason.
BAD_FRAME_SCHEMA = pa.schema([
    ("seq", pa.int64()), ("ts", pa.int64()), ("group_id", pa.string()), ("api_key", pa.int16()),
    ("direction", pa.int8()), ("member_id", pa.string()), ("generation_id", pa.int32()),
    ("kind", pa.string()),  # "undecodable" (decode_error) or "inconsistent" (left out by the analysis)
    ("reason", pa.string()),
])

#: A topic's partition count from the Metadata response at ``seq``; as
#: :func:`metadata_partition_counts` returns them, only the rows where the
#: count changes.
COUNT_SCHEMA = pa.schema([("topic", pa.string()), ("seq", pa.int64()), ("partitions", pa.int32())])


@dataclass
class Generation:
    generation_id: int
    protocol_name: Optional[str] = None
    leader: Optional[str] = None
    start: Optional[int] = None
    end: Optional[int] = None
    #: (member_id, group_instance_id, topics) in JoinGroup-response order.
    members: List[Tuple[str, Optional[str], Tuple[str, ...]]] = field(default_factory=list)
    #: member_id -> [(topic, partition), ...] in the order the member received them.
    assignment: Dict[str, List[Tuple[str, int]]] = field(default_factory=dict)
    leader_assignment: Dict[str, List[Tuple[str, int]]] = field(default_factory=dict)
    joined_ids: List[str] = field(default_factory=list)
    #: Where in the capture (a ``seq``) the generation's topic sizes are
    #: read: its first assignment frame (the leader's SyncGroup request when
    #: captured), else its last JoinGroup response.
    sizes_seq: Optional[int] = None
    #: Topic sizes as of ``sizes_seq``: what the what-if replays this generation with.
    partition_counts: Dict[str, int] = field(default_factory=dict)
    #: Where the what-if reads the generation in its timeline's event columns
    #: (:attr:`Timeline.source`), rather than from the fields above: the
    #: JoinGroup response that gave ``members``, the SyncGroup responses
    #: merged into ``assignment`` (capture order) and the leader's SyncGroup
    #: request that gave ``leader_assignment``.
    members_row: Optional[int] = field(default=None, repr=False, compare=False)
    sync_rows: List[int] = field(default_factory=list, repr=False, compare=False)
    leader_row: Optional[int] = field(default=None, repr=False, compare=False)

    def member_ids(self):
        if self.members:
            return [m[0] for m in self.members]
        return list(self.joined_ids)

    def ownership(self) -> Dict[Tuple[str, int], str]:
        source = self.assignment or self.leader_assignment
        return {tp: m for m, tps in source.items() for tp in tps}


def _none(v):
    if v is None:
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v


def _assign_rows(rows, member_id, out):
    for r in rows if rows is not None else ():
        mid = r["member_id"] if r["member_id"] is not None else member_id
        out.setdefault(mid, []).extend(zip(repeat(r["topic"]), map(int, r["partitions"])))


@dataclass
class Timeline:
    group_id: str
    generations: Dict[int, Generation]
    errors: List[Tuple[int, int]]  # (ts, error_code) of failed responses
    leaves: List[Tuple[int, str]]  # (ts, member_id)
    last_heartbeat: Dict[Tuple[str, int], int]  # (member, generation) -> ts
    session_timeout: Dict[str, int]
    #: Topic sizes as of the group's last event (each generation has its own).
    partition_counts: Dict[str, int]
    #: rows of :data:`BAD_FRAME_SCHEMA`
    bad_frames: List[dict] = field(default_factory=list)
    #: The event columns the generations' rows (``members_row``...) index.
    source: Optional["_EventSource"] = field(default=None, repr=False, compare=False)


# Which Metadata response an event takes a topic's size from: the last one
# before it in the capture (``seq`` order, which ties never blur, unlike
# ``ts``), and before the topic's first response, that first one.  Metadata is
# cluster-wide, so every client's responses count for every group, not only
# the group's own members' (a member may fetch it from a broker the capture
# does not see).  Per event rather than one size per topic for the whole
# capture, because sizes change: partitions are added (the consumers see it in
# their next Metadata response and rebalance), and a topic deleted and created
# again may be smaller.  A generation replays with the sizes as of its
# assignment, which the leader computed from the Metadata it had then.  Before
# the first response the first one is the best there is: sizes only grow while
# a topic lives, so a later size is at least the size then.  The cost of "as
# of": a leader that saw growth the capture did not (its Metadata went to an
# unrecorded broker) has its assignment of a new partition reported as a bad
# frame, naming the size the capture knew.


def metadata_partition_counts(frames: pa.Table, max_partitions=DEFAULT_MAX_PARTITIONS):
    """Topic sizes from the Metadata responses among ``frames`` (Arrow, with
    ``seq``, ``ts``, ``api_key``, ``direction``, ``topics`` and
    ``partition_counts``; other rows are ignored).

    Returns ``(counts, bad)``: the :data:`COUNT_SCHEMA` rows where a topic's
    size changes (:func:`count_changes`), and the :data:`BAD_FRAME_SCHEMA`
    rows of the responses left out, each with the first reason found: a
    topic whose partitions are not 0..n-1 (the decoder's null count), a size
    beyond ``max_partitions`` (the cap assignments have), or a topic listed
    twice with different sizes.  Columnar: nothing per topic or partition
    becomes a Python object but the reasons' names."""
    is_metadata = pc.and_(pc.equal(frames.column("api_key"), METADATA), pc.equal(frames.column("direction"), RESPONSE))
    f = frames.filter(pc.and_(pc.fill_null(is_metadata, False), pc.and_(pc.is_valid(frames.column("topics")),
                                                                        pc.is_valid(frames.column("partition_counts")))))
    topics = f.column("topics").combine_chunks()
    listed = f.column("partition_counts").combine_chunks()
    if pc.any(pc.not_equal(pc.list_value_length(topics), pc.list_value_length(listed))).as_py():
        raise ArgumentValueError("a Metadata row must have one partition count per topic")
    row = pc.list_parent_indices(topics).to_numpy()
    topic = pc.list_flatten(topics)
    listed = pc.list_flatten(listed)
    code = pc.dictionary_encode(topic).indices.to_numpy(zero_copy_only=False)
    size = pc.fill_null(listed, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    unlisted = listed.is_null().to_numpy(zero_copy_only=False)
    over = size > max_partitions
    by_name = np.lexsort((code, row))
    twice = np.zeros(len(row), bool)
    pairs = (row[by_name][1:] == row[by_name][:-1]) & (code[by_name][1:] == code[by_name][:-1])
    twice[by_name[1:][pairs & (size[by_name][1:] != size[by_name][:-1])]] = True
    wrong = unlisted | over | twice
    bad_rows, first = np.unique(row[wrong], return_index=True)
    seq = f.column("seq").to_numpy()
    ts = f.column("ts").cast(pa.int64()).to_numpy()
    reasons = []
    for i in np.flatnonzero(wrong)[first]:
        name = topic[i].as_py()
        # "Metadata response <kind>: <details>", the report counting reasons by kind.
        if unlisted[i]:
            reasons.append(f"Metadata response with partitions not 0..n-1: topic {name!r}")
        elif over[i]:
            reasons.append(f"Metadata response beyond the cap per topic: topic {name!r} of {size[i]:,} partitions, "
                           f"the cap {max_partitions:,}")
        else:
            reasons.append(f"Metadata response listing a topic twice: {name!r}, with different partition counts")
    n_bad = len(bad_rows)
    bad = pa.table({"seq": seq[bad_rows], "ts": ts[bad_rows], "group_id": pa.nulls(n_bad, pa.string()),
                    "api_key": np.full(n_bad, METADATA, np.int16), "direction": np.full(n_bad, RESPONSE, np.int8),
                    "member_id": pa.nulls(n_bad, pa.string()), "generation_id": pa.nulls(n_bad, pa.int32()),
                    "kind": pa.array(["inconsistent"] * n_bad, pa.string()), "reason": pa.array(reasons, pa.string())},
                   schema=BAD_FRAME_SCHEMA)
    keep = ~np.isin(row, bad_rows)
    counts = pa.table({"topic": topic.filter(keep), "seq": seq[row[keep]], "partitions": size[keep].astype(np.int32)},
                      schema=COUNT_SCHEMA)
    return count_changes(counts), bad


def count_changes(counts: pa.Table) -> pa.Table:
    """``counts`` (:data:`COUNT_SCHEMA`, any order) reduced to where each
    topic's size changes in capture order: its first row, and each row whose
    size differs from the one before.  Reducing a reduction changes nothing,
    so parts of a capture are reduced apart and their results together (the
    Spark stage reduces each partition's, then the driver all of them)."""
    counts = counts.select(COUNT_SCHEMA.names).cast(COUNT_SCHEMA).sort_by([("topic", "ascending"), ("seq", "ascending")])
    if counts.num_rows < 2:
        return counts
    code = pc.dictionary_encode(counts.column("topic").combine_chunks()).indices.to_numpy(zero_copy_only=False)
    size = counts.column("partitions").to_numpy()
    keep = np.ones(len(code), bool)
    keep[1:] = (code[1:] != code[:-1]) | (size[1:] != size[:-1])
    return counts.filter(pa.array(keep))


class MetadataCounts:
    """Topic sizes from a capture's Metadata responses, as of any point of it
    (the rule is the comment above :func:`metadata_partition_counts`)."""

    def __init__(self, changes: Optional[pa.Table] = None):
        #: topic -> (seqs where its size changes, the size from each)
        self._changes: Dict[str, Tuple[List[int], List[int]]] = {}
        if changes is not None:
            changes = count_changes(changes)
            for topic, seq, n in zip(*(changes.column(c).to_pylist() for c in COUNT_SCHEMA.names)):
                seqs, sizes = self._changes.setdefault(topic, ([], []))
                seqs.append(seq)
                sizes.append(n)

    @classmethod
    def constant(cls, counts: Mapping[str, int]) -> "MetadataCounts":
        """Sizes that hold for the whole capture."""
        topics = list(counts)
        return cls(pa.table({"topic": topics, "seq": [0] * len(topics), "partitions": [counts[t] for t in topics]},
                            schema=COUNT_SCHEMA))

    def __contains__(self, topic):
        return topic in self._changes

    def count(self, topic, seq) -> Optional[int]:
        """``topic``'s size as of ``seq``, or None where no Metadata response names it."""
        changes = self._changes.get(topic)
        if changes is None:
            return None
        seqs, sizes = changes
        return sizes[max(bisect_right(seqs, seq) - 1, 0)]

    def varies(self, topic) -> bool:
        """Whether ``topic``'s size changes in the capture."""
        return len(self._changes[topic][0]) > 1


def _assignment_problem(rows, member_id, subscriptions, known: MetadataCounts, seq, max_partitions):
    """Why a SyncGroup frame's assignments (at ``seq``) cannot be true, or None.

    ``subscriptions``: member id -> the topics it subscribed to in this
    generation, for the members whose JoinGroup was captured."""
    for r in rows:
        mid = r["member_id"] if r["member_id"] is not None else member_id
        topic = r["topic"]
        topics = subscriptions.get(mid)
        if topics is not None and topic not in topics:
            return f"assignment of topic {topic!r} to member {mid!r}, which did not subscribe to it"
        limit = known.count(topic, seq)
        partitions = r["partitions"]
        if not len(partitions) or (min(partitions) >= 0
                                   and max(partitions) < (limit if limit is not None else max_partitions)):
            continue  # all in range, and only a frame out of range needs its first culprit found
        for p in partitions:
            p = int(p)
            if p < 0:
                return f"negative partition {p} of topic {topic!r}"
            if limit is not None and p >= limit:
                return f"partition {p} of topic {topic!r}, which has {limit} partitions (Metadata)"
            if limit is None and p >= max_partitions:
                return f"partition {p} of topic {topic!r} beyond the cap of {max_partitions:,} partitions per topic"
    return None


# The columns a timeline reads (the group is given apart, the members'
# instance ids come from the JoinGroup response's member list, and topic
# sizes from Metadata), and which of them hold ints.
_TIMELINE_COLUMNS = [c for c in EVENT_COLUMNS if c not in ("group_id", "group_instance_id", "partition_counts")]
_INT_COLUMNS = frozenset(("seq", "ts", "request_seq", "request_ts", "direction", "api_key", "generation_id",
                          "error_code", "session_timeout_ms"))
_LIST_COLUMNS = frozenset(("topics", "members", "assignments", "leaving"))


def _cell(column, value):
    """An event's value as :func:`_timeline` reads it: None where missing (a
    pandas NaN included, a list cell's after a concat too), an int in an int column."""
    if column in _LIST_COLUMNS:
        return None if value is None or isinstance(value, float) else value
    value = _none(value)
    return int(value) if value is not None and column in _INT_COLUMNS else value


def build_timeline(group_id, events, max_partitions=DEFAULT_MAX_PARTITIONS, known_counts=None) -> Timeline:
    """``events``: dicts with :data:`EVENT_COLUMNS` of one group's frames, any order.

    ``known_counts``: topic sizes from Metadata responses, a
    :class:`MetadataCounts` (or a mapping of sizes that hold throughout);
    they take precedence, and an assignment beyond one is a bad frame.
    Other topics' sizes are inferred from assignments, up to ``max_partitions``."""
    events = sorted(events, key=lambda e: e["seq"])
    columns = {c: [_cell(c, e[c]) for e in events] for c in _TIMELINE_COLUMNS}
    return _timeline(group_id, columns, range(len(events)), max_partitions, known_counts,
                     _EventSource.of_cells(columns))


def _timeline(group_id, columns, rows, max_partitions, known_counts, source=None) -> Timeline:
    """The timeline of the events at ``rows`` (in ``seq`` order) of
    ``columns``, :data:`_TIMELINE_COLUMNS` as lists of :func:`_cell` values:
    read column-wise, many groups' events need no object per event.
    ``source``: the same events' :class:`_EventSource`, rows alike."""
    if not isinstance(known_counts, MetadataCounts):
        known_counts = MetadataCounts.constant(known_counts or {})
    (seqs, tss, request_seqs, request_tss, directions, api_keys, member_ids, generation_ids,
     error_codes, protocol_names, leaders, session_timeouts, topics_of, members_of, assignments_of,
     leaving_of) = (columns[c] for c in _TIMELINE_COLUMNS)
    bad: List[dict] = []
    # member id -> topics of its latest JoinGroup request, for members whose
    # generation's leader response was not captured.
    requested: Dict[str, Tuple[str, ...]] = {}
    gens: Dict[int, Generation] = {}
    errors, leaves = [], []
    last_hb: Dict[Tuple[str, int], int] = {}
    session: Dict[str, int] = {}
    # A first JoinGroup carries no member id: its session timeout is
    # attributed to the id its response names, through the request's seq.
    session_by_seq: Dict[int, int] = {}
    counts: Dict[str, int] = defaultdict(int)
    # Topics the group names, whichever way, for the sizes from Metadata.
    named = set()

    def gen(g):
        if g not in gens:
            gens[g] = Generation(g)
        return gens[g]

    last_seq = 0
    for i in rows:
        key, direction = api_keys[i], directions[i]
        err = error_codes[i]
        g = generation_ids[i]
        ts = tss[i]
        seq = last_seq = seqs[i]
        member = member_ids[i]
        assignments = assignments_of[i]
        if direction == RESPONSE and err:
            errors.append((ts, err))
        if key == JOIN_GROUP and direction == RESPONSE and member:
            rseq = request_seqs[i]
            if rseq is not None and rseq in session_by_seq:
                session[member] = session_by_seq[rseq]
        if key == SYNC_GROUP and assignments is not None and len(assignments):
            gg_members = gens[g].members if g is not None and g in gens else []
            subscriptions = dict(requested)
            subscriptions.update((m[0], set(m[2])) for m in gg_members)
            problem = _assignment_problem(assignments, member, subscriptions, known_counts, seq, max_partitions)
            if problem is not None:
                bad.append({"seq": seq, "ts": ts, "group_id": group_id, "api_key": key,
                            "direction": direction, "member_id": member,
                            "generation_id": g, "kind": "inconsistent", "reason": problem})
                continue
        if key == JOIN_GROUP and direction == REQUEST:
            topics = topics_of[i] if topics_of[i] is not None else ()
            named.update(topics)
            if member and len(topics):
                requested[member] = set(topics)
            st = session_timeouts[i]
            if st is not None:
                session_by_seq[seq] = st
                if member:
                    session[member] = st
        elif key == JOIN_GROUP and direction == RESPONSE and not err and g is not None:
            gg = gen(g)
            rts = request_tss[i]
            start = rts if rts is not None else ts
            gg.start = start if gg.start is None else min(gg.start, start)
            gg.protocol_name = protocol_names[i] or gg.protocol_name
            gg.leader = leaders[i] or gg.leader
            if member and member not in gg.joined_ids:
                gg.joined_ids.append(member)
            if not gg.assignment and not gg.leader_assignment:
                gg.sizes_seq = seq
            ms = members_of[i]
            if ms is not None and len(ms):
                gg.members = [(m["member_id"], _none(m["group_instance_id"]),
                               tuple(m["topics"]) if m["topics"] is not None else ()) for m in ms]
                gg.members_row = i
                named.update(t for m in gg.members for t in m[2])
        elif key == SYNC_GROUP and g is not None:
            gg = gen(g)
            if assignments is not None and len(assignments) and not gg.assignment and not gg.leader_assignment:
                gg.sizes_seq = seq
            if direction == RESPONSE and not err:
                gg.end = ts if gg.end is None else max(gg.end, ts)
                _assign_rows(assignments, member, gg.assignment)
                if assignments is not None and len(assignments):
                    gg.sync_rows.append(i)
            elif direction == REQUEST and assignments is not None and len(assignments):
                gg.leader_assignment = {}
                _assign_rows(assignments, member, gg.leader_assignment)
                gg.leader_row = i
        elif key == LEAVE_GROUP and direction == REQUEST:
            for m in (leaving_of[i] if leaving_of[i] is not None else ()):
                leaves.append((ts, m))
        elif key == HEARTBEAT and direction == RESPONSE and not err and member and g is not None:
            k = (member, g)
            last_hb[k] = max(last_hb.get(k, 0), ts)
        if key == SYNC_GROUP and assignments is not None:
            for r in assignments:
                if len(r["partitions"]):
                    counts[r["topic"]] = max(counts[r["topic"]], int(max(r["partitions"])) + 1)
    known = [t for t in named.union(counts) if t in known_counts]
    varying = [t for t in known if known_counts.varies(t)]

    def sizes_at(seq):
        out = dict(counts)
        out.update((t, known_counts.count(t, seq)) for t in known)
        return out

    group_counts = sizes_at(last_seq)
    for gg in gens.values():
        # Without a topic whose size changes, every generation shares the group's sizes.
        gg.partition_counts = (sizes_at(gg.sizes_seq if gg.sizes_seq is not None else last_seq) if varying
                               else group_counts)
    return Timeline(group_id, gens, errors, leaves, last_hb, session, group_counts, bad, source)


def completed_generations(tl: Timeline) -> List[Generation]:
    """Generations that formed (a successful JoinGroup response), in order."""
    return [tl.generations[g] for g in sorted(tl.generations) if tl.generations[g].start is not None]


def rebalance_rows(tl: Timeline) -> List[dict]:
    rows = []
    prev: Optional[Generation] = None
    prev_end = None
    for gg in completed_generations(tl):
        members = gg.member_ids()
        topics_now = {m[0]: m[2] for m in gg.members}
        triggers = []
        joined, left = [], []
        if prev is None:
            triggers.append("initial")
        else:
            before = prev.member_ids()
            joined = [m for m in members if m not in set(before)]
            left = [m for m in before if m not in set(members)]
            leave_window_start = prev.start
            for m in left:
                if any(m == who and leave_window_start <= t <= gg.start for t, who in tl.leaves):
                    triggers.append("member_left")
                    continue
                hb = tl.last_heartbeat.get((m, prev.generation_id), prev.end or prev.start)
                timeout = tl.session_timeout.get(m, DEFAULT_SESSION_TIMEOUT_MS) * 1000
                triggers.append("session_timeout" if hb + timeout <= gg.start else "member_missing")
            if joined:
                triggers.append("member_joined")
            topics_before = {m[0]: m[2] for m in prev.members}
            if any(m in topics_before and set(topics_before[m]) != set(t) for m, t in topics_now.items()):
                triggers.append("subscription_change")
            if not triggers:
                expected = sum(prev.partition_counts.get(t, 0) for t in set().union(*topics_before.values())) \
                    if topics_before else 0
                assigned = len(prev.ownership())
                triggers.append("revocation_followup" if assigned < expected else "unknown")
        triggers = sorted(set(triggers), key=_TRIGGER_ORDER.index)
        lo = prev_end if prev_end is not None else -1
        hi = gg.end if gg.end is not None else gg.start
        errs = [code for t, code in tl.errors if lo < t <= hi]
        own = gg.ownership()
        moved = None
        if prev is not None and (prev.assignment or prev.leader_assignment) and own:
            moved = sum(1 for tp, owner in prev.ownership().items() if own.get(tp) != owner)
        rows.append({
            "group_id": tl.group_id, "generation_id": gg.generation_id, "protocol_name": gg.protocol_name,
            "leader": gg.leader, "start_ts": gg.start, "end_ts": gg.end,
            "stall_ms": (gg.end - gg.start) / 1000.0 if gg.end is not None else None,
            "member_count": len(members), "members": members, "joined": joined, "left": left,
            "trigger": triggers[0], "triggers": triggers, "error_codes": sorted(set(errs)),
            "error_count": len(errs), "partitions": len(own), "moved_partitions": moved,
        })
        prev = gg
        prev_end = gg.end if gg.end is not None else prev_end
    return rows


_TRIGGER_ORDER = ["session_timeout", "member_left", "member_missing", "member_joined", "subscription_change",
                  "revocation_followup", "initial", "unknown"]


def assignment_columns(timelines) -> Dict[str, list]:
    """The :data:`ASSIGNMENT_SCHEMA` rows of ``timelines`` as a list per
    column: a dict per partition cost more to make into Arrow than reading
    the ownership took."""
    columns: Dict[str, list] = {name: [] for name in ASSIGNMENT_SCHEMA.names}
    group_ids, generation_ids, topics, partitions, member_ids, prev_member_ids, moved = columns.values()
    for tl in timelines:
        prev_own = None
        for gg in completed_generations(tl):
            own = gg.ownership()
            if not own:
                continue
            owned = sorted(own)
            owners = [own[tp] for tp in owned]
            group_ids += [tl.group_id] * len(owned)
            generation_ids += [gg.generation_id] * len(owned)
            topics += [t for t, _p in owned]
            partitions += [p for _t, p in owned]
            member_ids += owners
            if prev_own is None:
                prev_member_ids += [None] * len(owned)
                moved += [False] * len(owned)
            else:
                before = [prev_own.get(tp) for tp in owned]
                prev_member_ids += before
                moved += [b is not None and b != m for b, m in zip(before, owners)]
            prev_own = own
    return columns


# -- what-if -------------------------------------------------------------------------------------------
#
# Each generation is packed into arrays: its ArrayGroups and the ownership
# observed before and at it.  The pipeline packs all of a task's generations
# at once from the event columns (pack_replayed, below the batch);
# replay_input packs one generation from its Generation fields (a
# _ReplayInput), the reference the columnar packing is tested against.  The
# replay then runs every strategy and reads moves, loads and reproduction
# off the ArrayAssignments with NumPy.  Observed partitions are int64 keys
# ``topic id << 32 | partition`` over the generation's own topic ids;
# owners are codes over every member name seen, -1 for no owner.

_I32, _I64 = np.int32, np.int64


class _ReplayInput:
    __slots__ = ("group_id", "generation_id", "protocol_name", "member_ids", "total", "member_codes",
                 "none_code", "n_codes", "n_topic_ids", "has_prev", "prev_keys", "prev_codes",
                 "obs_keys", "obs_codes", "obs_counts", "obs_lists", "plain", "sticky", "head", "columns")


class _Variant:
    """One ArrayGroup of a generation (the strategies that claim nothing share
    one, the sticky ones claim the previous ownership), or the KwireError
    its input earned; with where each previously owned partition sits in it."""

    __slots__ = ("group", "error", "topic_ids", "prev_slots")

    def __init__(self, group=None, error=None):
        self.group, self.error = group, error
        self.topic_ids = self.prev_slots = None


def _last_owner(keys, codes):
    """``(sorted unique keys, owner codes)``: a partition listed twice keeps
    its last owner, as the timeline's ownership dicts do."""
    unique, first = np.unique(keys[::-1], return_index=True)
    return unique, codes[::-1][first]


def _variant(gg: Generation, owned_lists, counts, tid, prev_generation, plain: Optional[_Variant] = None) -> _Variant:
    """The ArrayGroup ``ArrayGroup.from_group_input`` built from the
    member-level input the what-if used to describe: only subscribed topics
    have sizes, topics only owned are known with none, subscription lists are
    kept as sent.  ``owned_lists`` is None for the strategies that claim
    nothing.  ``plain``: the generation's variant that claims nothing, whose
    topic layout a claiming one over the same topics shares (the usual
    case: members own what they subscribe to)."""
    v = _Variant()
    topics_of_members = [m[2] for m in gg.members]
    subscribed = {t for ts in topics_of_members for t in ts}
    names = set(subscribed)
    for tps in owned_lists or ():
        names.update(t for t, _p in tps)
    columns = {}
    if plain is not None and plain.group is not None and names == subscribed:
        # Claims change none of these, and their ids were taken when the plain variant was built.
        group = plain.group
        topics, sizes, sub_indptr, sub_topics = group.topics, group.partition_counts, group.sub_indptr, group.sub_topics
        index = dict(zip(topics, range(len(topics))))
        topic_ids = plain.topic_ids
    else:
        bad = [t for t in names if not isinstance(t, str)]
        if bad:
            v.error = _not_a_topic_name(bad[0])
            return v
        topics = assignors.java_sorted(names)
        index = {t: i for i, t in enumerate(topics)}
        sub_indptr = np.zeros(len(topics_of_members) + 1, dtype=_I64)
        np.cumsum([len(ts) for ts in topics_of_members], out=sub_indptr[1:])
        sizes = np.array([counts.get(t, 0) if t in subscribed else 0 for t in topics], dtype=_I32)
        sub_topics = np.array([index[t] for ts in topics_of_members for t in ts], dtype=_I32)
        topic_ids = None
    if owned_lists is not None:
        owned_indptr = np.zeros(len(owned_lists) + 1, dtype=_I64)
        np.cumsum([len(tps) for tps in owned_lists], out=owned_indptr[1:])
        generation = np.where(np.diff(owned_indptr) > 0, prev_generation, -1).astype(_I32)
        columns = {"owned_indptr": owned_indptr,
                   "owned_topic": np.array([index[t] for tps in owned_lists for t, _p in tps], dtype=_I32),
                   "owned_partition": np.array([p for tps in owned_lists for _t, p in tps], dtype=_I64),
                   "generation": generation, "subscription_generation": generation}
    try:
        v.group = assignors.ArrayGroup(topics, sizes, [m[0] for m in gg.members], sub_indptr, sub_topics,
                                       group_instance_ids=[m[1] for m in gg.members], **columns)
    except KwireError as exc:
        v.error = exc
        return v
    v.topic_ids = topic_ids if topic_ids is not None else np.array([tid(t) for t in topics], dtype=_I64)
    return v


def _place_prev(v: _Variant, prev_keys, n_topic_ids):
    """Each previously owned partition's slot in the group's partition
    layout; the slot past the end for one the group does not have."""
    if v.group is None or prev_keys is None:
        return
    g = v.group
    local = np.full(n_topic_ids, -1, dtype=_I64)
    local[v.topic_ids] = np.arange(len(v.topic_ids))
    t, p = local[prev_keys >> 32], prev_keys & 0xFFFFFFFF
    inside = (t >= 0) & (p < g.partition_counts[np.maximum(t, 0)])
    v.prev_slots = np.where(inside, g.topic_offset[np.maximum(t, 0)] + p, g.num_partitions)


def replay_input(tl: Timeline, gg: Generation, prev: Optional[Generation]) -> _ReplayInput:
    """What a leader at ``gg`` would have seen, as arrays: ``gg``'s members and
    subscriptions, and the ownership observed at ``prev`` (the last
    generation that had one), which the sticky strategies claim."""
    topic_ids: Dict[str, int] = {}
    names: Dict[Optional[str], int] = {}

    def tid(t):
        return topic_ids.setdefault(t, len(topic_ids))

    def code(m):
        return names.setdefault(m, len(names))

    def keys(tps):
        if not tps:
            return np.zeros(0, _I64)
        topics, partitions = zip(*tps)
        # ids in order of first appearance, as one call per partition gave them
        for t in dict.fromkeys(topics):
            tid(t)
        return ((np.fromiter(map(topic_ids.__getitem__, topics), _I64, len(topics)) << 32)
                | np.array(partitions, _I64))

    def owned_keys(lists):
        owners = [code(m) for m, l in lists if l]
        return (keys([tp for _m, l in lists for tp in l]),
                np.repeat(np.array(owners, _I64), [len(l) for _m, l in lists if l]))

    inp = _ReplayInput()
    inp.group_id, inp.generation_id, inp.protocol_name = tl.group_id, gg.generation_id, gg.protocol_name
    inp.member_ids = [m[0] for m in gg.members]
    inp.total = sum(gg.partition_counts.get(t, 0) for t in {t for m in gg.members for t in m[2]})
    inp.member_codes = np.array([code(m) for m in inp.member_ids], dtype=_I64)
    observed = gg.assignment or gg.leader_assignment
    inp.obs_keys, inp.obs_codes = _last_owner(*owned_keys(list(observed.items())))
    mine = [observed.get(m, ()) for m in inp.member_ids]
    inp.obs_counts = np.array([len(l) for l in mine], dtype=_I64)
    inp.obs_lists = keys([tp for l in mine for tp in l])
    inp.has_prev = prev is not None
    inp.prev_keys = inp.prev_codes = owned = None
    if prev is not None:
        prev_lists = prev.assignment or prev.leader_assignment
        inp.prev_keys, inp.prev_codes = _last_owner(*owned_keys(list(prev_lists.items())))
        # Each member claims its list in the order it received it, which
        # Java's sticky iteration order depends on.
        owned = [prev_lists.get(m, ()) for m in inp.member_ids]
    prev_generation = prev.generation_id if prev is not None else -1
    inp.plain = _variant(gg, None, gg.partition_counts, tid, prev_generation)
    inp.sticky = (_variant(gg, owned, gg.partition_counts, tid, prev_generation, inp.plain) if owned and any(owned)
                  else inp.plain)
    _place_prev(inp.plain, inp.prev_keys, len(topic_ids))
    if inp.sticky.topic_ids is inp.plain.topic_ids:
        inp.sticky.prev_slots = inp.plain.prev_slots  # the same topics laid out alike
    else:
        _place_prev(inp.sticky, inp.prev_keys, len(topic_ids))
    # None is a name the dicts allow; only "no owner" and a None owner compare equal there.
    inp.none_code = names.get(None, -2)
    # How many owner codes and topic ids the generation uses, for the batch
    # to give every generation a range of its own.
    inp.n_codes, inp.n_topic_ids = len(names), len(topic_ids)
    _lay_out(inp)
    return inp


# What the batch reads of a generation (:func:`_lay_out`): ``head``, a tuple
# of these fields, and ``columns``, the arrays of _LAID_OUT, then the plain
# variant's and the sticky one's (the sticky one's left out where they
# are the plain one's, _SAME, and any array known empty left out).  A block reads every
# generation's head in one call and all their columns in one
# concatenation: a pass over the inputs per column cost more in
# per-call overhead and cache misses than the reading itself.  (Joining a
# generation's columns as it is packed would take its arrays hot, but at a
# call per generation it cost packing more than it saved here.)
(_M, _CODES, _TOPIC_IDS, _HAS_PREV, _NONE_CODE, _OBS, _LISTS, _PREV, _PLAIN_OK, _STICKY_OK, _SAME,
 _GENERATION, _TOTAL, _CODED, _VARIANT_LENGTHS) = range(15)
_HEAD = _VARIANT_LENGTHS + 6  # each variant's topic offsets, topic ids and previous slots: their lengths
#: The generation's columns, and the head field each one's length is in.
_LAID_OUT = (("member_codes", _CODED), ("obs_counts", _M), ("obs_lists", _LISTS), ("obs_codes", _OBS),
             ("obs_keys", _OBS), ("prev_codes", _PREV), ("prev_keys", _PREV))


def _variant_columns(v: _Variant, prev_len):
    if v.group is None:
        return (), (0, 0, 0)
    if v.prev_slots is None:
        return (v.group.topic_offset, v.topic_ids), (len(v.topic_ids) + 1, len(v.topic_ids), 0)
    return (v.group.topic_offset, v.topic_ids, v.prev_slots), (len(v.topic_ids) + 1, len(v.topic_ids), prev_len)


def _lay_out(inp: _ReplayInput) -> None:
    # Two variants over the same topics have the same topic offsets, ids and
    # previous slots (claims change none of them): the usual sticky variant.
    same = inp.sticky is inp.plain or (inp.sticky.group is not None and inp.plain.group is not None
                                       and inp.sticky.group.topics == inp.plain.group.topics)
    prev_len = len(inp.prev_keys) if inp.has_prev else 0
    plain, plain_lengths = _variant_columns(inp.plain, prev_len)
    sticky, sticky_lengths = (plain, plain_lengths) if same else _variant_columns(inp.sticky, prev_len)
    m = len(inp.member_ids)
    # Members are coded first, so their codes are their positions unless an
    # id repeats (then the last is below m - 1): only then are they laid out.
    coded = m if inp.member_codes[-1] != m - 1 else 0
    inp.head = (m, inp.n_codes, inp.n_topic_ids, inp.has_prev, inp.none_code, len(inp.obs_keys),
                len(inp.obs_lists), prev_len, inp.plain.error is None, inp.sticky.error is None, same,
                inp.generation_id, inp.total, coded) + plain_lengths + sticky_lengths
    inp.columns = (((inp.member_codes,) if coded else ()) + (inp.obs_counts, inp.obs_lists, inp.obs_codes,
                                                             inp.obs_keys)
                   + ((inp.prev_codes, inp.prev_keys) if inp.has_prev else ()) + plain + (() if same else sticky))


def _moved(now, inp):
    """How many previously owned partitions have another owner (``now``:
    the owner code of each, -1 for none)."""
    if not inp.has_prev:
        return None
    if inp.none_code < 0:
        # No owner is named None (the usual case), so "no owner" matches no previous owner.
        return int(np.count_nonzero(now != inp.prev_codes))
    same = (now == inp.prev_codes) | ((now == -1) & (inp.prev_codes == inp.none_code))
    return int(len(same) - np.count_nonzero(same))


def _row(rows, inp, name, is_observed, assigned, loads, moved, reproduces):
    # a few members: Python's max and min on the list cost less than two NumPy calls
    loads = loads.tolist()
    hi, lo = max(loads), min(loads)
    rows.append((inp.group_id, inp.generation_id, name, is_observed, len(inp.member_ids), inp.total, assigned,
                 moved, hi, lo, hi - lo, reproduces, None))


def _observed_row(rows, inp):
    codes = inp.obs_codes
    loads = np.bincount(codes, minlength=int(inp.member_codes.max()) + 1)[inp.member_codes]
    moved = None
    if inp.has_prev:
        keys = inp.obs_keys
        at = np.minimum(np.searchsorted(keys, inp.prev_keys), len(keys) - 1)
        moved = _moved(np.where(keys[at] == inp.prev_keys, codes[at], -1), inp)
    _row(rows, inp, inp.protocol_name, True, len(inp.obs_keys), loads, moved, None)


def _reproduces(result, topic_ids, counts, inp):
    """Whether each member's list, as it reads back from the Assignment bytes
    (topics grouped in order of first appearance, as the Java leader writes
    them), is the list the member received."""
    if not (counts == inp.obs_counts).all():
        return False
    keys = (topic_ids[result.topic] << 32) | result.partition
    if (keys == inp.obs_lists).all():
        return True  # received lists are grouped by topic, so this one is too
    # Regrouping a list keeps its partitions: where a member's key sum (in
    # wrapping int64) differs from its received list's, nothing can match,
    # and that is decided without the sorts below.
    member_sums = np.concatenate(([0], np.cumsum(keys - inp.obs_lists)))[result.indptr]
    if (member_sums[1:] != member_sums[:-1]).any():
        return False
    member = np.repeat(np.arange(len(counts), dtype=_I64), counts)
    _u, first, inverse = np.unique(member * len(topic_ids) + result.topic, return_index=True,
                                   return_inverse=True)
    order = np.lexsort((np.arange(len(keys)), first[inverse]))
    return bool(np.array_equal(keys[order], inp.obs_lists))


def _answers(plain: _Variant, sticky: _Variant, strategies, implementation):
    """Each strategy's ``(variant, ArrayAssignment, None)`` for a
    generation of these variants, or ``(variant, None, error text)`` where
    kwire's assignor refused its inputs."""
    answered = {}
    if sticky.error is None and "sticky" in strategies and "cooperative-sticky" in strategies:
        # The pair shares one run of Java's algorithm, most of what each costs on a small group.
        try:
            answered = dict(zip(("sticky", "cooperative-sticky"),
                                assignors.assign_sticky_pair(sticky.group, implementation=implementation)))
        except KwireError:
            pass  # each strategy then runs, and reports its failure, on its own below
    out = []
    for strategy in strategies:
        v = sticky if strategy in ("sticky", "cooperative-sticky") else plain
        try:
            if v.error is not None:
                raise v.error
            result = answered.get(strategy)
            if result is None:
                result = assignors.assign_arrays(strategy, v.group, implementation=implementation)
        except KwireError as exc:
            # The inputs the capture gives this generation are not a valid
            # group (the bad frames were already left out): the row reports
            # it and the other groups go on.
            out.append((v, None, f"{type(exc).__name__}: {exc}"))
            continue
        out.append((v, result, None))
    return out


def replay(inp: _ReplayInput, rows: list, strategies=STRATEGIES, implementation=None) -> None:
    """Append the generation's what-if rows (tuples in :data:`WHATIF_SCHEMA`
    order) to ``rows``: the observed assignment, then each strategy's.  One
    generation at a time, the reference :func:`replay_batch` is tested
    against (its reading is written apart, per generation)."""
    _observed_row(rows, inp)
    m = len(inp.member_ids)
    member_index = np.arange(m)
    # indexed by member position, -1 for none (made here: the batch, which packing serves, does without)
    owner_codes = np.append(inp.member_codes, -1)
    for strategy, (v, result, error) in zip(strategies, _answers(inp.plain, inp.sticky, strategies, implementation)):
        if result is None:
            rows.append((inp.group_id, inp.generation_id, strategy, False, m, inp.total,
                         None, None, None, None, None, None, error))
            continue
        counts = result.indptr[1:] - result.indptr[:-1]
        # Owner per partition slot, and -1 in the slot past the end; a
        # partition given twice keeps its last owner, as a dict would.
        owner = np.empty(v.group.num_partitions + 1, dtype=_I64)
        owner.fill(-1)
        owner[v.group.topic_offset[result.topic] + result.partition] = np.repeat(member_index, counts)
        taken = owner[owner >= 0]
        moved = None
        if inp.has_prev:
            moved = _moved(owner_codes[owner[v.prev_slots]], inp)
        _row(rows, inp, strategy, False, len(taken), np.bincount(taken, minlength=m), moved,
             _reproduces(result, v.topic_ids, counts, inp))


# -- the batch: every generation of a task read at once ---------------------------------------------------
#
# replay_batch gives replay's rows, but reads them with a fixed number of
# NumPy calls per batch instead of about ten per generation and strategy,
# which on the what-if's groups of three or four members cost more than the
# arithmetic; for the same reason range and roundrobin run on all the
# generations in one call each (assignors.assign_arrays_many).  Each
# generation (and each answer) gets ranges of its own in concatenated
# arrays: owner codes from a code base, topic ids from a topic base (so
# partition keys stay sorted across generations), partition slots from a
# slot base, members from a member base.  Per-segment results are reduceat
# over segments that are never empty (every generation has members, every
# answer a slot past its end) or bincount of the segment numbers.


def _moved_counts(now, prev_codes, none_code, segment, n):
    """Per segment, how many previously owned partitions have another owner
    (``now``: each one's owner code, -1 for none; ``none_code``: each
    segment's code of an owner named None, or -2); :func:`_moved` for many."""
    same = now == prev_codes
    if (none_code >= 0).any():  # rare: most generations name no owner None
        same |= (now == -1) & (prev_codes == none_code[segment])
    return np.bincount(segment[~same], minlength=n)


def _loads_range(loads, starts):
    return np.maximum.reduceat(loads, starts), np.minimum.reduceat(loads, starts)


def _read_observed(c):
    """``(assigned, moved, max_load, min_load)`` of every generation's observed row
    (``c``: the generations' :class:`_Columns`)."""
    n = len(c.head)
    sizes, has_prev, head = c.sizes, c.has_prev, c.head
    every = np.arange(n)
    obs_len = head[:, _OBS]
    code_base, n_codes = segment_starts(head[:, _CODES])
    codes = _gather(c.obs_codes, every)[0]
    member_codes = c.codes_of(every) + np.repeat(code_base, sizes)
    loads = np.bincount(codes + np.repeat(code_base, obs_len), minlength=n_codes)[member_codes]
    hi, lo = _loads_range(loads, segment_starts(sizes)[0])
    moved = np.zeros(n, _I64)
    with_prev = np.flatnonzero(has_prev)
    if len(with_prev):
        topic_base = segment_starts(head[:, _TOPIC_IDS])[0] << 32
        keys = _gather(c.obs_keys, every)[0] + np.repeat(topic_base, obs_len)
        prev_codes, prev_len = _gather(c.prev_codes, with_prev)
        prev_keys = _gather(c.prev_keys, with_prev)[0] + np.repeat(topic_base[with_prev], prev_len)
        at = np.minimum(np.searchsorted(keys, prev_keys), len(keys) - 1)
        now = np.where(keys[at] == prev_keys, codes[at], -1)
        moved[with_prev] = _moved_counts(now, prev_codes, c.none_code[with_prev],
                                         np.repeat(np.arange(len(with_prev)), prev_len), len(with_prev))
    return obs_len, moved, hi, lo


_NONE = np.zeros(0, _I64)


def _gather(ragged, which):
    """The arrays ``which`` of a ragged column ``(values, where each array
    starts in them, its length)`` laid end to end, and their lengths."""
    values, starts, lengths = ragged
    n = lengths[which]
    base, total = segment_starts(n)
    return values[np.repeat(starts[which] - base, n) + np.arange(total)], n


class _Packed:
    """Generations as the batch reads them: ``head``, a row of :func:`_lay_out`'s
    head fields per generation; ``columns``, for each column of
    :data:`_LAID_OUT`, ``(values, where each generation's piece starts in
    them)`` (the head has its length); ``variant_values`` and
    ``variant_bases[i, v]``, where generation ``i``'s variant ``v`` (0 plain,
    1 sticky) has its topic offsets, topic ids and previous slots in them;
    and per generation its group, protocol and two :class:`_Variant`
    objects.  Made from per-generation inputs (:func:`_packed_inputs`) or
    straight from a bucket's event columns (:func:`pack_replayed`)."""

    __slots__ = ("head", "columns", "variant_values", "variant_bases", "group_ids", "protocol_names", "plain",
                 "sticky")

    def __init__(self, head, columns, variant_values, variant_bases, group_ids, protocol_names, plain, sticky):
        self.head, self.columns, self.variant_values, self.variant_bases = head, columns, variant_values, variant_bases
        self.group_ids, self.protocol_names, self.plain, self.sticky = group_ids, protocol_names, plain, sticky

    def __len__(self):
        return len(self.head)

    def block(self, start, stop) -> "_Packed":
        """Generations ``start`` to ``stop``, over the same values."""
        return _Packed(self.head[start:stop], [(v, at[start:stop]) for v, at in self.columns], self.variant_values,
                       self.variant_bases[start:stop], self.group_ids[start:stop], self.protocol_names[start:stop],
                       self.plain[start:stop], self.sticky[start:stop])


def _packed_inputs(inputs) -> _Packed:
    """Per-generation inputs (:func:`replay_input`) as one :class:`_Packed`:
    a head row each, all their columns in one array."""
    n = len(inputs)
    head = np.array([inp.head for inp in inputs], _I64).reshape(n, _HEAD)
    values = np.concatenate([a for inp in inputs for a in inp.columns]) if n else np.zeros(0, _I64)
    # a sticky variant over the plain one's topics left its columns out
    sticky_lengths = head[:, _VARIANT_LENGTHS + 3:_HEAD] * (head[:, _SAME, None] == 0)
    lengths = np.concatenate([head[:, [field for _name, field in _LAID_OUT]],
                              head[:, _VARIANT_LENGTHS:_VARIANT_LENGTHS + 3], sticky_lengths], axis=1)
    bases = (np.cumsum(lengths) - lengths.ravel()).reshape(lengths.shape)
    k = len(_LAID_OUT)
    plain = bases[:, k:k + 3]
    variant_bases = np.stack([plain, np.where(head[:, _SAME, None] > 0, plain, bases[:, k + 3:])], axis=1)
    return _Packed(head, [(values, bases[:, i]) for i in range(k)], values, variant_bases,
                   [inp.group_id for inp in inputs], [inp.protocol_name for inp in inputs],
                   [inp.plain for inp in inputs], [inp.sticky for inp in inputs])


class _Columns:
    """What the batch reads of the generations and (:meth:`of_answers`)
    of their two variants: their heads, and their columns (:func:`_lay_out`),
    each a ragged ``(values, starts, lengths)`` over a :class:`_Packed`'s
    arrays; an answer picks its generation's and variant's pieces by index
    (many answers share them: each generation has four)."""

    def __init__(self, packed: _Packed):
        self.head = head = packed.head
        self.sizes = head[:, _M]
        self.has_prev = head[:, _HAS_PREV] > 0
        self.none_code = head[:, _NONE_CODE]
        for (name, field), (values, starts) in zip(_LAID_OUT, packed.columns):
            setattr(self, name, (values, starts, head[:, field]))
        self.values = packed.variant_values
        # (generation, variant) -> where each of the variant's columns starts; one variant stands for both
        self.variant_bases = packed.variant_bases
        self.variant_lengths = head[:, _VARIANT_LENGTHS:_HEAD].reshape(len(head), 2, 3)

    def codes_of(self, which):
        """The member codes of generations ``which``, end to end."""
        sizes = self.sizes[which]
        base, total = segment_starts(sizes)
        codes = np.arange(total) - np.repeat(base, sizes)
        coded = np.flatnonzero(self.head[which, _CODED])
        if len(coded):
            values, n = _gather(self.member_codes, which[coded])
            codes[np.repeat(base[coded] - segment_starts(n)[0], n) + np.arange(len(values))] = values
        return codes

    def of_answers(self, gen, sticky):
        """The columns of each answer's variant: generation ``gen``'s sticky
        one where ``sticky``, its plain one otherwise."""
        bases, lengths = self.variant_bases[gen, sticky], self.variant_lengths[gen, sticky]
        values = self.values
        # each group's topic offsets, its partition count last
        self.topic_starts = (values, bases[:, 0], lengths[:, 0])
        self.n_partitions = values[bases[:, 0] + lengths[:, 0] - 1]
        self.topic_ids = (values, bases[:, 1], lengths[:, 1])
        self.prev_slots = (values, bases[:, 2], lengths[:, 2])


def _read_answers(c, gen, sticky, answer):
    """``(assigned, moved, max_load, min_load, reproduces)`` of each answer in
    ``answer``, end to end (``assignors.end_to_end``), one per generation
    ``gen[j]`` on its sticky variant's group where ``sticky[j]`` and
    its plain one's otherwise, as :func:`replay` reads them one by one;
    ``moved`` is 0 where the generation has no previous one.  ``c``: the
    generations' :class:`_Columns`."""
    J = len(gen)
    c.of_answers(gen, sticky.astype(_I64))
    sizes = c.sizes[gen]
    # each answer's partition slots, and one past its end for "not in the group"
    slot_base, n_slots = segment_starts(c.n_partitions + 1)
    member_base, n_members = segment_starts(sizes)
    indptr = answer.indptr
    n_elems = int(indptr[-1])
    elem_len = np.diff(np.append(indptr[member_base], n_elems))
    job_of_member = np.repeat(np.arange(J), sizes)
    job_of_elem = np.repeat(np.arange(J), elem_len)

    topic = answer.topic.astype(_I64)  # the group's own topic index
    partition = answer.partition.astype(_I64)
    counts = np.diff(indptr)
    member = np.repeat(np.arange(n_members), counts)
    # Owner per partition slot; a partition given twice keeps its last owner, as a dict would.
    owner = np.full(n_slots, -1, _I64)
    topic_values, topic_at, _n = c.topic_starts
    owner[slot_base[job_of_elem] + topic_values[topic_at[job_of_elem] + topic] + partition] = member
    taken = owner >= 0
    assigned = np.add.reduceat(taken, slot_base, dtype=_I64)
    # Each member's load is its count of entries unless a slot was written
    # twice, and then some answer has fewer slots taken than entries.
    loads = counts
    if (assigned != elem_len).any():
        loads = np.bincount(owner[taken], minlength=n_members)
    hi, lo = _loads_range(loads, member_base)

    moved = np.zeros(J, _I64)
    picked = np.flatnonzero(c.has_prev[gen])
    if len(picked):
        prev_slots, prev_len = _gather(c.prev_slots, picked)
        now = owner[prev_slots + np.repeat(slot_base[picked], prev_len)]
        now = np.where(now >= 0, c.codes_of(gen)[now], -1)
        moved[picked] = _moved_counts(now, _gather(c.prev_codes, gen[picked])[0], c.none_code[gen[picked]],
                                      np.repeat(np.arange(len(picked)), prev_len), len(picked))

    # Reproduces: every member's count as received, then its list as it reads
    # back from the Assignment bytes (topics grouped in order of first
    # appearance) or as it stands (a received list may repeat a topic apart).
    miscounted = counts != _gather(c.obs_counts, gen)[0]
    counted = np.bincount(job_of_member[miscounted], minlength=J) == 0
    reproduces = counted.copy()
    if counted.any():
        keep = counted[job_of_elem]
        id_values, id_at, id_len = c.topic_ids
        job = job_of_elem[keep]
        keys = (id_values[id_at[job] + topic[keep]] << 32) | partition[keep]
        received = _gather(c.obs_lists, gen[counted])[0]
        as_is = np.bincount(job[keys != received], minlength=J) == 0
        reproduces &= as_is
        redo = ~as_is[job]  # only the lists that differ as they stand are regrouped
        if redo.any():
            # each entry's place is where its (member, topic) first appears:
            # written from the back, a repeated index keeps the first one
            width = int(id_len.max()) + 1
            member_topic = (member[keep] * width + topic[keep])[redo]
            place = np.arange(len(member_topic))
            first = np.empty(n_members * width, _I64)
            first[member_topic[::-1]] = place[::-1]
            grouped = keys[redo][np.argsort(first[member_topic], kind="stable")]
            regrouped = np.bincount(job[redo][grouped != received[redo]], minlength=J) == 0
            reproduces |= counted & regrouped
    return assigned, moved, hi, lo, reproduces


def _sticky_pair_stacked(sticky, paired, sizes, implementation):
    """``{strategy: (generations, answer)}`` of both sticky
    strategies run on every generation of ``paired`` (those whose plain and
    sticky groups were built) in one call; a generation the call refuses is
    left out, to run (and report its failure) alone as :func:`_answers` runs it."""
    if not paired:
        return {}
    *both, refused = assignors.assign_sticky_pair_many([sticky[i].group for i in paired],
                                                       implementation=implementation)
    if refused:
        keep = np.ones(len(paired), bool)
        keep[list(refused)] = False
        # a refused group's members hold nothing: dropping their rows leaves the others' entries as they are
        member_kept = np.repeat(keep, sizes[paired])
        both = [assignors.ArrayAssignment(np.append(0, np.cumsum(np.diff(a.indptr)[member_kept])), a.topic,
                                          a.partition) for a in both]
        paired = [i for i, kept in zip(paired, keep) if kept]
    return {strategy: (paired, answer) for strategy, answer in zip(("sticky", "cooperative-sticky"), both)}


#: Generations replayed together.  The batch's arrays grow with it, and past
#: a few hundred generations its scattered reads and sorts leave the CPU's
#: caches: 4,766 generations in blocks of 512 replayed ~1.3x faster than in one.
_BLOCK = 512


def replay_batch(generations, strategies=STRATEGIES, implementation=None) -> pa.Table:
    """The what-if rows (:data:`WHATIF_SCHEMA`) of ``generations``, packed
    from a bucket's event columns (:func:`whatif_generations`) or one by one
    (:func:`replay_inputs`), in order: :func:`replay`'s rows for each, with
    range, roundrobin and the sticky pair run on a block of generations at
    once, and every answer read for the whole block."""
    packed = generations if isinstance(generations, _Packed) else _packed_inputs(list(generations))
    n, width = len(packed), len(strategies) + 1
    if not n:
        return WHATIF_SCHEMA.empty_table()
    # the blocks' columns end to end, made into Arrow once: a table per block cost more than its columns
    blocks = [_replay_block(packed.block(k, k + _BLOCK), strategies, implementation) for k in range(0, n, _BLOCK)]
    head, assigned, moved, max_load, min_load, reproduces, failed, error_at = (
        np.concatenate(column) for column in zip(*(b[:-1] for b in blocks)))
    errors = [e for b in blocks for e in b[-1]]
    # each block numbered its errors from 0
    error_base = np.repeat(segment_starts(np.array([len(b[-1]) for b in blocks], _I64))[0],
                           [len(b[0]) * width for b in blocks])
    error_at = np.where(error_at < 0, -1, error_at + error_base)
    n_rows = n * width
    generation = np.repeat(np.arange(n), width)
    observed = np.zeros(n_rows, bool)
    observed[::width] = True
    # the observed row's name is the group's protocol, the others the strategy's
    names = pa.array(list(packed.protocol_names) + list(strategies), pa.string())
    name_at = np.where(observed, generation, n + np.arange(n_rows) % width - 1)

    def int32(values, mask):
        return pa.array(values.astype(_I32), pa.int32(), mask=mask)

    return pa.Table.from_arrays([
        pa.array(packed.group_ids, pa.string()).take(generation),
        pa.array(head[:, _GENERATION].astype(_I32)[generation], pa.int32()),
        names.take(name_at),
        pa.array(observed, pa.bool_()),
        pa.array(head[:, _M].astype(_I32)[generation], pa.int32()),
        pa.array(head[:, _TOTAL].astype(_I32)[generation], pa.int32()),
        int32(assigned, failed),
        int32(moved, failed | (head[:, _HAS_PREV] == 0)[generation]),
        int32(max_load, failed),
        int32(min_load, failed),
        int32(max_load - min_load, failed),
        pa.array(reproduces, pa.bool_(), mask=failed | observed),
        pa.array(errors, pa.string()).take(pa.array(error_at, mask=error_at < 0)),
    ], schema=WHATIF_SCHEMA)


def _replay_block(packed: _Packed, strategies, implementation):
    """One block of :func:`replay_batch`: the generations' heads, then per row
    (the observed one and each strategy's, generation after generation)
    assigned, moved, max load, min load, reproduces, failed and the index of
    its error in the list of errors that comes last."""
    n, width = len(packed), len(strategies) + 1
    n_rows = n * width
    columns = _Columns(packed)
    sizes = columns.sizes
    assigned, moved, max_load, min_load = (np.zeros(n_rows, _I64) for _ in range(4))
    reproduces = np.zeros(n_rows, bool)
    failed = np.zeros(n_rows, bool)
    error_at = np.full(n_rows, -1, _I64)
    errors: List[str] = []

    observed_rows = np.arange(n) * width
    (assigned[observed_rows], moved[observed_rows], max_load[observed_rows],
     min_load[observed_rows]) = _read_observed(columns)

    # Range and roundrobin run every generation in one call each (their
    # kernels split one topic at a time, whichever group it is of), and the
    # sticky pair every generation in one call too; a generation a stacked
    # call cannot take runs alone.
    head = columns.head
    plain_ok = head[:, _PLAIN_OK] > 0
    plain = np.flatnonzero(plain_ok).tolist()
    plain_groups = [packed.plain[i].group for i in plain]
    stacked = {}  # strategy -> (generations, answer end to end)
    with assignors.sharing_stacks():  # range and roundrobin on the same groups: one stack of their columns
        for strategy in strategies:
            if strategy in ("range", "roundrobin") and plain and strategy not in stacked:
                try:
                    stacked[strategy] = (plain, assignors.assign_arrays_many(strategy, plain_groups,
                                                                             implementation=implementation))
                except KwireError:
                    pass  # each generation then runs, and reports its failure, on its own
    if "sticky" in strategies and "cooperative-sticky" in strategies:
        paired = np.flatnonzero(plain_ok & (head[:, _STICKY_OK] > 0)).tolist()
        stacked.update(_sticky_pair_stacked(packed.sticky, paired, sizes, implementation))
    rows_of, answers = [], []
    # which strategies (columns 1 on) each generation still runs alone
    alone = np.ones((n, width), bool)
    for k, strategy in enumerate(strategies, 1):
        if strategy in stacked:
            done, answer = stacked[strategy]
            rows_of.append(np.array(done, _I64) * width + k)
            answers.append(answer)
            alone[done, k] = False
    for i in np.flatnonzero(alone[:, 1:].any(axis=1)).tolist():
        todo = (np.flatnonzero(alone[i, 1:]) + 1).tolist()
        for k, (_v, result, error) in zip(todo, _answers(packed.plain[i], packed.sticky[i],
                                                         [strategies[k - 1] for k in todo], implementation)):
            k += i * width
            if result is None:
                failed[k] = True
                error_at[k] = len(errors)
                errors.append(error)
            else:
                rows_of.append(np.array([k], _I64))
                answers.append(result)
    if rows_of:
        rows_of = np.concatenate(rows_of)
        # the sticky strategies claim the previous ownership: their answers are on the sticky variant's group
        on_sticky = np.array([False] + [s in ("sticky", "cooperative-sticky") for s in strategies])
        (assigned[rows_of], moved[rows_of], max_load[rows_of], min_load[rows_of],
         reproduces[rows_of]) = _read_answers(columns, rows_of // width, on_sticky[rows_of % width],
                                              assignors.end_to_end(answers))

    return columns.head, assigned, moved, max_load, min_load, reproduces, failed, error_at, errors


def _replayed(tl: Timeline):
    """``(generation, previous)`` for each generation a what-if replays:
    formed, with members known and an observed assignment, each with the
    last observed one before it (None for none)."""
    prev = None
    for gg in completed_generations(tl):
        observed = gg.assignment or gg.leader_assignment
        if gg.members and observed:
            yield gg, prev
        if observed:
            prev = gg


def replay_inputs(tl: Timeline):
    """The generations a what-if replays (:func:`_replayed`), packed one by
    one from their member-level fields: the reference the columnar packing
    (:func:`whatif_generations`) is tested against."""
    for gg, prev in _replayed(tl):
        yield replay_input(tl, gg, prev)


def replayed_rows(tl: Timeline) -> list:
    """What :func:`pack_replayed` needs of each generation of ``tl`` a what-if
    replays: its names and sizes, its timeline's event source and which of
    its rows it reads (its JoinGroup response, its observed assignment's
    frames, and the previous observed generation's, the sticky claims): a
    few ints per generation, kept while a bucket's timelines go by."""
    out = []
    for gg, prev in _replayed(tl):
        out.append((tl.group_id, gg.generation_id, gg.protocol_name, tl.source, gg.members_row,
                    gg.sync_rows or [gg.leader_row], None if prev is None else prev.sync_rows or [prev.leader_row],
                    -1 if prev is None else prev.generation_id, gg.partition_counts))
    return out


def whatif_generations(timelines) -> _Packed:
    """Every generation of ``timelines`` a what-if replays, packed from their
    event columns (:func:`pack_replayed`) for :func:`replay_batch`."""
    return pack_replayed([r for tl in timelines for r in replayed_rows(tl)])


class _EventSource:
    """The event columns the what-if packs from: each event's ``member_id``,
    ``members`` and ``assignments``, as the events came (Arrow arrays or
    chunked arrays); from event dicts (:meth:`of_cells`), made Arrow in the
    decoder's types when first packed."""

    def __init__(self, member_id=None, members=None, assignments=None, cells=None):
        self._arrays = None if cells is not None else (member_id, members, assignments)
        self._cells = cells

    @classmethod
    def of_cells(cls, columns) -> "_EventSource":
        return cls(cells=(columns["member_id"], columns["members"], columns["assignments"]))

    def arrays(self):
        """``(member_id, members, assignments)``, in whichever types they came."""
        if self._arrays is None:
            self._arrays = tuple(pa.array(c, t) for c, t in zip(self._cells, _source_types()))
            self._cells = None
        return self._arrays


@lru_cache(maxsize=None)
def _source_types():
    from kwire.pipeline._decode import FRAMES_SCHEMA

    schema = FRAMES_SCHEMA()
    return tuple(schema.field(name).type for name in ("member_id", "members", "assignments"))


def _typed(columns):
    """``columns`` of :meth:`_EventSource.arrays` in the decoder's types.
    Events from pandas or Spark may come in others that cast to them: a
    struct field pandas saw only nulls in is of the null type, and a list's
    items may be declared non-null."""
    return [c if c.type == t else c.cast(t) for c, t in zip(columns, _source_types())]


def _not_a_topic_name(name) -> AssignmentError:
    # what ArrayGroup says of the same name, said before anything is laid out by it
    return AssignmentError(f"topic names must be str, got {name!r}")


def _fields(structs, names):
    """Fields ``names`` of a StructArray, a null struct's fields null."""
    flat = structs.flatten()
    return [flat[structs.type.get_field_index(name)] for name in names]


def _ints(array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False).astype(_I64)


def _lengths(lists) -> np.ndarray:
    """Each list's length, 0 for a null one."""
    return _ints(pc.fill_null(pc.list_value_length(lists), 0))


def _indptrs(lengths, groups):
    """The CSR indptr of ``lengths`` for each run of ``groups[g]``
    consecutive items, end to end: group ``g``'s starts at
    ``starts(groups)[g] + g`` and has ``groups[g] + 1`` entries."""
    cs = np.zeros(len(lengths) + 1, _I64)
    np.cumsum(lengths, out=cs[1:])
    first = segment_starts(groups)[0]
    wide = groups + 1
    return _gather((cs, first, wide), slice(None))[0] - np.repeat(cs[first], wide)


def _first_of_runs(sorted_keys):
    """Where each run of equal values of ``sorted_keys`` starts."""
    start = np.ones(len(sorted_keys), bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return start


def _rank_in(group, n):
    """Each item's rank among the items of its ``group`` (groups
    non-decreasing), and how many items each of the ``n`` groups has."""
    count = np.bincount(group, minlength=n)
    return np.arange(len(group)) - segment_starts(count)[0][group], count


def _lists_of(pair_of_entry, n_pairs, pair_of_member):
    """The entries of each member (those of its pair), in entry order,
    member after member, and how many each member has."""
    order = np.argsort(pair_of_entry, kind="stable")
    per_pair = np.bincount(pair_of_entry, minlength=n_pairs)
    return _gather((order, segment_starts(per_pair)[0], per_pair), pair_of_member)


def _chunks(parts):
    """Arrays or chunked arrays end to end, as one chunked array (no copy)."""
    return pa.chunked_array([c for p in parts for c in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])],
                            parts[0].type)


def _take(column, rows, to_type) -> pa.Array:
    """``rows`` of a chunked array, as one array of ``to_type`` (see
    :func:`_typed`): only they are copied and cast, not the bucket."""
    taken = column.take(pa.array(rows))
    taken = taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken
    return taken if taken.type == to_type else taken.cast(to_type)


def _unique(keys):
    """``np.unique(keys, return_inverse=True)`` by a stable sort, which on
    keys in runs (generation after generation) costs less than its quicksort."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = _first_of_runs(ordered)
    inverse = np.empty(len(keys), _I64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def pack_replayed(records) -> _Packed:
    """The generations of ``records`` (:func:`replayed_rows`) packed for
    :func:`replay_batch` straight from their events' Arrow columns: what
    :func:`replay_input` packs from a generation's dicts and tuples, with a
    fixed number of Arrow and NumPy calls for all the generations together,
    and no Python object per member or partition but the member ids (and
    topic names) an ArrayGroup takes as lists of str.  The rules are the
    timeline's: members are the JoinGroup response's; a member's list is
    every SyncGroup response's entries for it in capture order (or the
    leader's last request's); a partition listed twice keeps the owner that
    comes last in the ownership dict's order (owners by first appearance,
    an empty list counting, each one's partitions as received); and the
    previous generation's lists are what the sticky strategies claim."""
    n = len(records)
    if not n:
        return _packed_inputs([])
    group_ids, generation_ids, protocol_names, source_of, members_row, obs_rows, prev_rows, prev_generation, \
        counts_of = zip(*records)
    # -- the rows each generation reads, in one set of columns
    sources: Dict[int, int] = {}
    arrays = []
    for source in source_of:
        if id(source) not in sources:
            sources[id(source)] = sum(len(a[0]) for a in arrays)
            arrays.append(source.arrays())
    if len(arrays) > 1:  # timelines built apart (from event dicts): small sources, typed whole
        arrays = [_typed(a) for a in arrays]
    member_id, members, assignments = (_chunks(c) for c in zip(*arrays))
    types = _source_types()
    # segment 2j: generation j's observed rows; 2j + 1: the previous generation's
    has_prev = np.fromiter(map(bool, prev_rows), bool, n)
    lists = list(chain.from_iterable(zip(obs_rows, (rows or () for rows in prev_rows))))
    seg_len = np.fromiter(map(len, lists), _I64, 2 * n)
    seg_rows = np.fromiter(chain.from_iterable(lists), _I64, int(seg_len.sum()))
    members_row = np.array(members_row, _I64)
    if len(sources) > 1:
        base = np.array([sources[id(source)] for source in source_of], _I64)
        members_row += base
        seg_rows += np.repeat(np.repeat(base, 2), seg_len)
    seg_of_row = np.repeat(np.arange(2 * n), seg_len)
    prev_generation = np.array(prev_generation, _I64)

    # -- members, and the assignment entries (one per partition listed)
    listed = _take(members, members_row, types[1])
    m = _lengths(listed)
    mid, instance, topics = _fields(listed.flatten(), ("member_id", "group_instance_id", "topics"))
    member_base, n_members = segment_starts(m)
    g_member = np.repeat(np.arange(n), m)
    sub_len = _lengths(topics)
    sub_names = topics.flatten()
    g_sub = np.repeat(g_member, sub_len)
    sent = _take(assignments, seg_rows, types[2])
    struct_len = _lengths(sent)
    s_mid, s_topic, s_partitions = _fields(sent.flatten(), ("member_id", "topic", "partitions"))
    frame_member = _take(member_id, seg_rows, types[0])
    s_seg = np.repeat(seg_of_row, struct_len)
    g_struct = s_seg >> 1
    p_len = _lengths(s_partitions)
    partition = _ints(s_partitions.flatten())
    e_seg = np.repeat(s_seg, p_len)
    e_gen, e_kind = e_seg >> 1, e_seg & 1
    s_kind = s_seg & 1

    # -- owner codes per generation: its members 0.. by first appearance (a
    # repeated id keeps its first code), then every other owner; a missing
    # id (None) is a name too
    names = pc.dictionary_encode(pa.concat_arrays([mid, s_mid, frame_member]))
    none_id = len(names.dictionary)
    name_id = _ints(pc.fill_null(names.indices, none_id))
    # an assignment that names no member is its frame's member's
    named, frame_id = name_id[n_members:n_members + len(s_seg)], name_id[n_members + len(s_seg):]
    name_id = np.concatenate([name_id[:n_members],
                              np.where(named == none_id, np.repeat(frame_id, struct_len), named)])
    width = none_id + 1
    member_key = g_member * width + name_id[:n_members]
    by_key = np.argsort(member_key, kind="stable")
    sorted_keys = member_key[by_key]
    run = _first_of_runs(sorted_keys)
    first_of = np.empty(n_members, _I64)
    first_of[by_key] = by_key[run][np.cumsum(run) - 1]
    is_first = first_of == np.arange(n_members)
    seen = np.cumsum(is_first)
    member_code = seen[first_of] - (seen - is_first)[member_base][g_member] - 1
    distinct = np.bincount(g_member[is_first], minlength=n)
    owner_key = g_struct * width + name_id[n_members:]
    at = np.minimum(np.searchsorted(sorted_keys, owner_key), n_members - 1)
    is_member = sorted_keys[at] == owner_key
    struct_code = member_code[by_key[at]]
    others, other_at = _unique(owner_key[~is_member])
    other_gen = others // width
    other_rank, n_others = _rank_in(other_gen, n)
    struct_code[~is_member] = (distinct[other_gen] + other_rank)[other_at]
    n_codes = distinct + n_others
    none_code = np.full(n, -2, _I64)
    named_none = name_id[:n_members] == none_id
    none_code[g_member[named_none]] = member_code[named_none]
    none_code[other_gen[others % width == none_id]] = (distinct[other_gen] + other_rank)[others % width == none_id]

    # -- topic ids: the bucket's names in Java order, None last, so that each
    # generation's ids 0.. (of the topics it names anywhere) sort alike
    topic_names = pc.dictionary_encode(pa.concat_arrays([sub_names, s_topic]))
    known = topic_names.dictionary.to_pylist()
    T = len(known)
    in_java_order = assignors.java_sorted(known)
    rank = dict(zip(in_java_order, range(T)))
    tid = np.array([rank[t] for t in known] + [T], _I64)[_ints(pc.fill_null(topic_names.indices, T))]
    name_of_tid = np.array(in_java_order + [None], object)
    n_sub = len(g_sub)
    ut, t_inverse = _unique(np.concatenate([g_sub, g_struct]) * (T + 1) + tid)
    ut_gen, ut_tid = ut // (T + 1), ut % (T + 1)
    local, n_topic_ids = _rank_in(ut_gen, n)
    topic_base = segment_starts(n_topic_ids)[0]
    sub_ut, struct_ut = t_inverse[:n_sub], t_inverse[n_sub:]
    e_ut = np.repeat(struct_ut, p_len)
    e_key = np.repeat(local[struct_ut] << 32, p_len) | partition

    # -- observed and previous ownership, each partition once: sorted by
    # generation, topic (as ids sort), kind and partition, one entry per run
    # (where a partition is listed twice, the last in the dicts' order)
    place = np.repeat((struct_ut * 2 + s_kind) << 32, p_len) | partition
    order = np.argsort(place, kind="stable")
    run = _first_of_runs(place[order])
    kept = order[run]
    if len(kept) < len(order):
        kept = _last_in_dict_order(order, run, s_seg, struct_code, p_len)
    kept_kind = e_kind[kept]
    obs, prev = kept[kept_kind == 0], kept[kept_kind == 1]
    e_code = np.repeat(struct_code, p_len)
    n_obs = np.bincount(e_gen[obs], minlength=n)
    n_prev = np.bincount(e_gen[prev], minlength=n)

    # -- each member's lists: as received (observed) and as claimed (previous)
    code_base, n_pairs = segment_starts(n_codes)
    e_pair = np.repeat(code_base[g_struct] + struct_code, p_len)
    member_pair = code_base[g_member] + member_code
    obs_entries = np.flatnonzero(e_kind == 0)
    at, obs_counts = _lists_of(e_pair[obs_entries], n_pairs, member_pair)
    obs_lists = e_key[obs_entries[at]]
    prev_entries = np.flatnonzero(e_kind)
    at, owned_counts = _lists_of(e_pair[prev_entries], n_pairs, member_pair)
    owned = prev_entries[at]
    has_owned = np.bincount(g_member, owned_counts, minlength=n) > 0

    # -- the plain variant's topics (subscribed), and the sticky one's
    # (owned too) where they are more: elsewhere it is laid out as the plain one
    in_plain = np.zeros(len(ut), bool)
    in_plain[sub_ut] = True
    in_sticky = in_plain.copy()
    in_sticky[e_ut[owned]] = True
    more = np.bincount(ut_gen[in_sticky & ~in_plain], minlength=n) > 0
    in_sticky &= more[ut_gen]
    size = np.where(in_plain, _sizes(counts_of, ut_gen, ut_tid, name_of_tid), 0)  # an owned-only topic has none
    total = np.bincount(ut_gen, size, minlength=n).astype(_I64)
    is_null = ut_tid == T
    plain_v, sticky_v = (_variant_topics(in_v, ut_gen, local, size, sub_ut, g_sub, is_null, n)
                         for in_v in (in_plain, in_sticky))
    prev_more = more[e_gen[prev]]
    plain_v["slots"] = _prev_slots(plain_v, in_plain, e_ut[prev], partition[prev], e_gen[prev])
    sticky_v["slots"] = _prev_slots(sticky_v, in_sticky, e_ut[prev][prev_more], partition[prev][prev_more],
                                    e_gen[prev][prev_more])
    owned_gen, owned_ut = e_gen[owned], e_ut[owned]
    # each claim's topic index in its sticky variant, the plain one's topics where no more
    claims = (plain_v["position"][owned_ut] - plain_v["base"][owned_gen]).astype(_I32)
    beyond = np.flatnonzero(more[owned_gen])
    claims[beyond] = sticky_v["position"][owned_ut[beyond]] - sticky_v["base"][owned_gen[beyond]]
    owned_partition = partition[owned].astype(_I32)
    generation = np.where(owned_counts > 0, prev_generation[g_member], -1).astype(_I32)

    # ArrayGroup's own checks (named errors) only where they can fail: a
    # member id repeated or None, a negative size or owned partition
    check_plain = (distinct < m) | (np.bincount(g_member[named_none], minlength=n) > 0) | (
        np.bincount(ut_gen[in_plain & (size < 0)], minlength=n) > 0)
    check_sticky = check_plain | (np.bincount(owned_gen[owned_partition < 0], minlength=n) > 0)
    # most generations have no static member: their groups get no instance ids, which is all None
    static = np.bincount(g_member, instance.is_valid().to_numpy(zero_copy_only=False), minlength=n) > 0
    plain, sticky = _variant_groups(
        m, mid.to_pylist(), instance.to_pylist(), static, sub_len, plain_v, sticky_v, more, has_owned, check_plain,
        check_sticky, name_of_tid[ut_tid], (_indptrs(owned_counts, m), claims, owned_partition, generation,
                                            owned_counts))

    plain_ok = np.fromiter((v.error is None for v in plain), bool, n)
    sticky_ok = np.fromiter((v.error is None for v in sticky), bool, n)
    same = ~has_owned | (plain_ok & sticky_ok & ~more)
    # each variant's (offsets, ids, previous slots), none for a variant refused
    plain_lengths = np.stack([plain_v["count"] + 1, plain_v["count"], n_prev], axis=1) * plain_ok[:, None]
    sticky_lengths = np.where(same[:, None], plain_lengths,
                              np.stack([sticky_v["count"] + 1, sticky_v["count"], n_prev], axis=1)
                              * (sticky_ok & more)[:, None])
    list_len = np.bincount(g_member, obs_counts, minlength=n).astype(_I64)
    head = np.zeros((n, _HEAD), _I64)
    for fieldno, column in ((_M, m), (_CODES, n_codes), (_TOPIC_IDS, n_topic_ids), (_HAS_PREV, has_prev),
                            (_NONE_CODE, none_code), (_OBS, n_obs), (_LISTS, list_len), (_PREV, n_prev),
                            (_PLAIN_OK, plain_ok), (_STICKY_OK, sticky_ok), (_SAME, same),
                            (_GENERATION, generation_ids), (_TOTAL, total),
                            (_CODED, np.where(distinct < m, m, 0))):
        head[:, fieldno] = column
    head[:, _VARIANT_LENGTHS:_VARIANT_LENGTHS + 3] = plain_lengths
    head[:, _VARIANT_LENGTHS + 3:_HEAD] = sticky_lengths

    obs_base, prev_base = segment_starts(n_obs)[0], segment_starts(n_prev)[0]
    columns = [(member_code, member_base), (obs_counts, member_base), (obs_lists, segment_starts(list_len)[0]),
               (e_code[obs], obs_base), (e_key[obs], obs_base), (e_code[prev], prev_base), (e_key[prev], prev_base)]
    # the variants' columns in one array, as an answer reads either variant's
    sticky_prev_base = segment_starts(np.where(more, n_prev, 0))[0]
    parts = [(plain_v["offsets"], plain_v["base"] + np.arange(n)), (plain_v["ids"], plain_v["base"]),
             (plain_v["slots"], prev_base), (sticky_v["offsets"], sticky_v["base"] + np.arange(n)),
             (sticky_v["ids"], sticky_v["base"]), (sticky_v["slots"], sticky_prev_base)]
    part_base = segment_starts(np.array([len(v) for v, _s in parts], _I64))[0]
    bases = np.stack([b + s for b, (_v, s) in zip(part_base, parts)], axis=1).reshape(n, 2, 3)
    bases[:, 1] = np.where(same[:, None], bases[:, 0], bases[:, 1])
    return _Packed(head, columns, np.concatenate([v for v, _s in parts]), bases, group_ids, protocol_names,
                   plain, sticky)


def _last_in_dict_order(order, run, s_seg, struct_code, p_len):
    """The entry kept of each run of ``order`` (entries sorted by partition,
    stably) where a run holds a partition listed more than once: the last in
    the order its ownership dict gives, owners by their first list in the
    segment, each owner's entries in the order received."""
    # each struct's owner's first struct in the segment
    by_owner = np.lexsort((struct_code, s_seg))
    first = _first_of_runs(s_seg[by_owner] * (int(struct_code.max()) + 1) + struct_code[by_owner])
    owner_first = np.empty(len(s_seg), _I64)
    owner_first[by_owner] = by_owner[first][np.cumsum(first) - 1]
    place = np.repeat(owner_first, p_len)[order] * len(order) + order  # (owner's first list, entry) order
    run_id = np.cumsum(run) - 1
    last = np.lexsort((place, run_id))
    end = np.ones(len(last), bool)
    end[:-1] = run_id[last][1:] != run_id[last][:-1]
    return order[last[end]]


def _sizes(counts_of, ut_gen, ut_tid, name_of_tid):
    """Each (generation, topic)'s size in its generation's partition counts
    (``counts_of``), 0 where they have none.  Generations share one dict
    unless a size changes in the capture: each dict is read once."""
    T = len(name_of_tid) - 1
    dict_ids = list(map(id, counts_of))
    dict_at = dict(zip(dict_ids, range(len(dict_ids))))  # each dict's last generation stands for it
    dicts = [counts_of[k] for k in dict_at.values()]
    tid_of = dict(zip(name_of_tid.tolist(), range(T + 1)))
    tids = np.fromiter((tid_of.get(t, -1) for t in chain.from_iterable(dicts)), _I64)
    sizes = np.fromiter(chain.from_iterable(d.values() for d in dicts), _I64, len(tids))
    keys = np.repeat(np.fromiter(dict_at.values(), _I64, len(dicts)) * (T + 1), [len(d) for d in dicts]) + tids
    known = tids >= 0
    keys, sizes = keys[known], sizes[known]
    if not len(keys):
        return np.zeros(len(ut_gen), _I64)
    order = np.argsort(keys)
    keys, sizes = keys[order], sizes[order]
    wanted = np.fromiter(map(dict_at.__getitem__, dict_ids), _I64, len(dict_ids))[ut_gen] * (T + 1) + ut_tid
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[at] == wanted, sizes[at], 0)


def _variant_topics(in_v, ut_gen, local, size, sub_ut, g_sub, is_null, n):
    """One variant's topics (``in_v`` of every generation's), each
    generation's in Java order: how many and where they start, their ids,
    sizes and offsets, each subscription entry's topic index, and whether
    one of them is None."""
    which = np.flatnonzero(in_v)
    count = np.bincount(ut_gen[which], minlength=n)
    base = segment_starts(count)[0]
    sizes = size[which].astype(_I32)
    position = np.cumsum(in_v) - 1
    return {"which": which, "count": count, "base": base, "ids": local[which], "sizes": sizes, "position": position,
            "offsets": _indptrs(sizes, count), "null": np.bincount(ut_gen[which[is_null[which]]], minlength=n) > 0,
            "sub_topics": (position[sub_ut] - base[g_sub]).astype(_I32)}


def _prev_slots(v, in_v, ut_at, partition, gen):
    """Each previously owned partition's slot in the variant's partition
    layout, as :func:`_place_prev` places it; the slot past the end for one
    it lacks (a topic it does not have, or beyond the topic's size)."""
    mine = in_v[ut_at]
    vi = np.where(mine, v["position"][ut_at], 0)  # a stand-in where not mine, read for nothing
    inside = mine & (partition < np.append(v["sizes"], 0)[vi])
    offsets = v["offsets"]
    end = offsets[v["base"][gen] + v["count"][gen] + gen]
    return np.where(inside, offsets[vi + gen] + partition, end)


def _variant_groups(m, member_ids, instance_ids, static, sub_len, plain_v, sticky_v, more, has_owned, check_plain,
                    check_sticky, topic_names, owned):
    """Each generation's two :class:`_Variant` objects, their ArrayGroups on
    slices of the packed columns, checked by ArrayGroup only where
    ``check_*`` (the packing rules the rest out).  A sticky variant over the
    plain one's topics is the plain group with claims."""
    owned_indptr, claims, owned_partition, generation, owned_counts = owned
    members_at = np.append(0, np.cumsum(m))
    sub_indptr = _indptrs(sub_len, m)
    subs_at = np.append(0, np.cumsum(sub_len))[members_at].tolist()
    owned_at = np.append(0, np.cumsum(owned_counts))[members_at].tolist()
    members_at = members_at.tolist()
    plain_layout, sticky_layout = ((topic_names[v["which"]].tolist(), v["base"].tolist(),
                                    (v["base"] + v["count"]).tolist(), v["sizes"], v["sub_topics"], v["null"].tolist())
                                   for v in (plain_v, sticky_v))
    topics, starts, ends, sizes, sub_topics, null = plain_layout
    # Python's part of an ArrayGroup is most of what a generation costs here:
    # the loop reads its bounds zipped, not a list at a time.
    usual = (~(check_plain | plain_v["null"])).tolist()
    plain_ok_sticky = (has_owned & ~more & ~check_sticky).tolist()
    # What the plain groups claim (nothing): read-only views of one array
    # each, where ArrayGroup would make five arrays per group; no assignor writes its input.
    widest = int(m.max()) + 1
    nothing, none_owned, no_generation = np.zeros(widest, _I64), np.zeros(0, _I32), np.full(widest, -1, _I32)
    for a in (nothing, none_owned, no_generation):
        a.flags.writeable = False
    claim_nothing = [(nothing[:k + 1], no_generation[:k]) for k in range(widest)]
    array_group = assignors.ArrayGroup

    def variant(layout, j, ids, instances, indptr, s0, s1, check, claimed):
        topics, starts, ends, sizes, sub_topics, null = layout
        if null[j]:
            return _Variant(error=_not_a_topic_name(None))
        t0, t1 = starts[j], ends[j]
        try:
            return _Variant(array_group(topics[t0:t1], sizes[t0:t1], ids, indptr, sub_topics[s0:s1],
                                        group_instance_ids=instances, validate=check, **claimed))
        except KwireError as exc:
            return _Variant(error=exc)

    plains, stickies = [], []
    bounds = zip(range(len(m)), members_at, members_at[1:], subs_at, subs_at[1:], starts, ends, owned_at, owned_at[1:],
                 static.tolist(), usual, has_owned.tolist(), plain_ok_sticky)
    for j, m0, m1, s0, s1, t0, t1, o0, o1, has_static, is_usual, claims_any, with_claims in bounds:
        ids, instances = member_ids[m0:m1], instance_ids[m0:m1] if has_static else None
        indptr = sub_indptr[m0 + j:m1 + j + 1]
        if is_usual:
            # its group cannot be refused but for its size: no checks, no arrays of its own for no claims
            none_indptr, no_generations = claim_nothing[m1 - m0]
            try:
                plain = _Variant(array_group(
                    topics[t0:t1], sizes[t0:t1], ids, indptr, sub_topics[s0:s1], group_instance_ids=instances,
                    owned_indptr=none_indptr, owned_topic=none_owned, owned_partition=none_owned,
                    generation=no_generations, subscription_generation=no_generations, validate=False))
            except KwireError as exc:
                plain = _Variant(error=exc)
        else:
            plain = variant(plain_layout, j, ids, instances, indptr, s0, s1, True, {})
        plains.append(plain)
        if not claims_any:
            stickies.append(plain)
            continue
        claimed = (owned_indptr[m0 + j:m1 + j + 1], claims[o0:o1], owned_partition[o0:o1])
        if with_claims and plain.group is not None:
            # the plain group's topics and the facts derived from them, with the claims
            group = plain.group.with_claims(*claimed)
            group.generation = group.subscription_generation = generation[m0:m1]
            stickies.append(_Variant(group))
        else:
            stickies.append(variant(sticky_layout if more[j] else plain_layout, j, ids, instances, indptr, s0, s1,
                                    check_sticky[j], dict(zip(("owned_indptr", "owned_topic", "owned_partition"),
                                                              claimed), generation=generation[m0:m1],
                                                          subscription_generation=generation[m0:m1])))
    return plains, stickies


def whatif_table(timelines, strategies=STRATEGIES, implementation=None, timer=None) -> pa.Table:
    """The what-if rows of ``timelines``.  ``timer``: gets ``add(seconds)``
    with the time spent in :func:`replay_batch` (its Arrow table included),
    not in building timelines or packing arrays."""
    return timed_replay(whatif_generations(timelines), strategies, implementation, timer)


def timed_replay(inputs, strategies=STRATEGIES, implementation=None, timer=None) -> pa.Table:
    """:func:`replay_batch` of packed ``inputs``, its seconds added to ``timer``
    (as :func:`whatif_table` times them)."""
    t = time.perf_counter()
    table = replay_batch(inputs, strategies, implementation)
    if timer is not None:
        timer.add(time.perf_counter() - t)
    return table


def events_from_frames(frames: pa.Table) -> pd.DataFrame:
    """The reduction the Spark stage does, in pandas: group frames only,
    heartbeat requests dropped, successful heartbeats folded into the last
    one per (group, member, generation); and the Metadata responses, which
    the Spark stage reads apart (:func:`metadata_partition_counts`)."""
    for name in ("ts", "request_ts"):
        i = frames.schema.get_field_index(name)
        frames = frames.set_column(i, name, frames.column(name).cast(pa.int64()))
    frames = frames.to_pandas()
    group = frames["group_id"].notna() & frames["api_key"].isin([JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP])
    metadata = (frames["api_key"] == METADATA) & (frames["direction"] == RESPONSE)
    f = frames[group | metadata]
    f = f[f["decode_error"].isna()]
    hb_ok = (f["api_key"] == HEARTBEAT) & (f["direction"] == RESPONSE) & (f["error_code"] == 0)
    keep = f[~hb_ok & ~((f["api_key"] == HEARTBEAT) & (f["direction"] == REQUEST))]
    hb = f[hb_ok].groupby(["group_id", "member_id", "generation_id"], as_index=False).agg(
        ts=("request_ts", "max"), seq=("seq", "max"))
    hb["api_key"] = HEARTBEAT
    hb["direction"] = RESPONSE
    hb["error_code"] = 0
    out = pd.concat([keep, hb], ignore_index=True)
    for c in EVENT_COLUMNS:
        if c not in out:
            out[c] = None
    return out[EVENT_COLUMNS]


def _frame(rows, schema):
    table = pa.Table.from_pylist(rows, schema=schema)
    return table.to_pandas()


def _timelines(records, max_partitions, known: MetadataCounts):
    by_group = defaultdict(list)
    for r in records:
        by_group[r["group_id"]].append(r)
    for gid in sorted(by_group):
        yield build_timeline(gid, by_group[gid], max_partitions, known)


# The columns of Metadata responses among events, as :func:`metadata_partition_counts` reads them.
_METADATA_EVENT_SCHEMA = pa.schema([("seq", pa.int64()), ("ts", pa.int64()), ("api_key", pa.int16()),
                                    ("direction", pa.int8()), ("topics", pa.list_(pa.string())),
                                    ("partition_counts", pa.list_(pa.int32()))])


def _split_metadata(pdf, counts, max_partitions):
    """``(group events, MetadataCounts, bad Metadata frames)`` of a pandas
    events frame.  ``counts``: the capture's (the Spark stage has them, and a
    bucket's events hold no Metadata), or None to read the Metadata
    responses among the events."""
    is_metadata = (pdf["api_key"] == METADATA).to_numpy(dtype=bool, na_value=False) if len(pdf) else np.zeros(0, bool)
    bad = BAD_FRAME_SCHEMA.empty_table()
    if counts is None:
        meta = pa.Table.from_pandas(pdf.loc[is_metadata, _METADATA_EVENT_SCHEMA.names], schema=_METADATA_EVENT_SCHEMA,
                                    preserve_index=False)
        counts, bad = metadata_partition_counts(meta, max_partitions)
    groups = pdf[~is_metadata]
    return groups.to_dict("records") if not groups.empty else (), MetadataCounts(counts), bad


def timelines_of(pdf, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None):
    """Timelines of a pandas events frame (:data:`EVENT_COLUMNS`).  ``counts``:
    the capture's Metadata counts (:func:`metadata_partition_counts`), or None
    to take them from the Metadata responses among the events."""
    records, known, _bad = _split_metadata(pdf, counts, max_partitions)
    return _timelines(records, max_partitions, known)


def timelines_of_arrow(events: pa.Table, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None):
    """Timelines of an Arrow table of events (:data:`EVENT_COLUMNS`), without
    pandas, in :func:`timelines_of`'s order: read a column at a time, where a
    dict per event cost more than building the timelines from it."""
    is_metadata = pc.fill_null(pc.equal(events.column("api_key"), METADATA), False)
    if counts is None:
        counts, _bad = metadata_partition_counts(events, max_partitions)
    known = MetadataCounts(counts)
    groups = events.filter(pc.invert(is_metadata))
    # One stable sort gives each group's events in seq order, as build_timeline sorts them.
    groups = groups.take(pc.sort_indices(groups, [("group_id", "ascending"), ("seq", "ascending")]))
    columns = {c: (groups.column(c).cast(pa.int64()) if c in _INT_COLUMNS else groups.column(c)).to_pylist()
               for c in _TIMELINE_COLUMNS}
    return _timelines_of_columns(groups.column("group_id").to_pylist(), columns, max_partitions, known,
                                 _EventSource(groups.column("member_id"), groups.column("members"),
                                              groups.column("assignments")))


def _timelines_of_columns(group_ids, columns, max_partitions, known: MetadataCounts, source):
    """Each group's timeline, one at a time, from events sorted by group (``group_ids``) and ``seq``."""
    start = 0
    for end in range(1, len(group_ids) + 1):
        if end == len(group_ids) or group_ids[end] != group_ids[start]:
            yield _timeline(group_ids[start], columns, range(start, end), max_partitions, known, source)
            start = end


def timeline_tables(timelines) -> Dict[str, pa.Table]:
    """The rebalances, assignments and bad frames of ``timelines``, read off
    each timeline in one pass: building a group's timeline is most of what
    each of these tables costs, so the pipeline builds it once for the three."""
    rebalances: list = []
    bad: list = []

    def reading(timelines):
        for tl in timelines:
            rebalances.extend(rebalance_rows(tl))
            bad.extend(tl.bad_frames)
            yield tl

    assignments = assignment_columns(reading(timelines))
    return {"rebalances": pa.Table.from_pylist(rebalances, schema=REBALANCE_SCHEMA),
            "assignments": pa.table(assignments, schema=ASSIGNMENT_SCHEMA),
            "bad_frames": pa.Table.from_pylist(bad, schema=BAD_FRAME_SCHEMA)}


def rebalances_of(pdf: pd.DataFrame, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None) -> pd.DataFrame:
    return _frame([r for tl in timelines_of(pdf, max_partitions, counts) for r in rebalance_rows(tl)],
                  REBALANCE_SCHEMA)


def assignments_of(pdf: pd.DataFrame, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None) -> pd.DataFrame:
    return pa.table(assignment_columns(timelines_of(pdf, max_partitions, counts)), schema=ASSIGNMENT_SCHEMA).to_pandas()


def whatif_of(pdf: pd.DataFrame, max_partitions=DEFAULT_MAX_PARTITIONS, timer=None, counts=None) -> pd.DataFrame:
    return whatif_table(timelines_of(pdf, max_partitions, counts), timer=timer).to_pandas()


def bad_frames_of(pdf: pd.DataFrame, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None) -> pd.DataFrame:
    """The frames the analysis left out: the groups' and, when the Metadata
    comes from ``pdf`` itself (``counts`` None), the Metadata responses'."""
    records, known, bad = _split_metadata(pdf, counts, max_partitions)
    rows = [r for tl in _timelines(records, max_partitions, known) for r in tl.bad_frames]
    return pa.concat_tables([bad, pa.Table.from_pylist(rows, schema=BAD_FRAME_SCHEMA)]).to_pandas()
