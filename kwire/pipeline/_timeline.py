"""Each group's timeline: its generations, who joined and left, heartbeats,
errors, and the frames that contradict the rest of the capture.

Pure Python over one group's decoded events (:data:`EVENT_COLUMNS`), so it
is tested without Spark; the Spark stages build a bucket of groups'
timelines at once (:func:`timelines_of_arrow`), never one task per group.
Topic sizes come from the capture's Metadata responses where it has any
(:mod:`kwire.pipeline._metadata`), and are otherwise inferred from the
partitions assigned.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kwire.pipeline._events import (BAD_FRAME_SCHEMA, CLASSIC_EVENT_COLUMNS, DEFAULT_MAX_PARTITIONS, GROUP_API_KEYS,
                                    HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, METADATA, METADATA_EVENT_SCHEMA, REQUEST,
                                    RESPONSE, SYNC_GROUP)
from kwire.pipeline._metadata import MetadataCounts, metadata_partition_counts


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
    source: Optional["EventSource"] = field(default=None, repr=False, compare=False)
    #: This group's rows of ``source`` (its events in ``seq`` order), for
    #: readers of the events beside the timeline (the migration what-if's
    #: member timings) that would otherwise sort and convert them again.
    rows: range = field(default=range(0), repr=False, compare=False)


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
_TIMELINE_COLUMNS = [c for c in CLASSIC_EVENT_COLUMNS if c not in ("group_id", "group_instance_id", "partition_counts")]
# The classic protocol's apis: a consumer-protocol group's events (ConsumerGroupHeartbeat and
# Describe, the analysis of kwire.pipeline._consumer_*) are not a classic timeline's.
_CLASSIC_KEYS = frozenset(GROUP_API_KEYS)
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
                     EventSource.of_cells(columns))


def _timeline(group_id, columns, rows, max_partitions, known_counts, source=None) -> Timeline:
    """The timeline of the events at ``rows`` (in ``seq`` order) of
    ``columns``, :data:`_TIMELINE_COLUMNS` as lists of :func:`_cell` values:
    read column-wise, many groups' events need no object per event.
    ``source``: the same events' :class:`EventSource`, rows alike."""
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
        if key not in _CLASSIC_KEYS:
            continue
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
    return Timeline(group_id, gens, errors, leaves, last_hb, session, group_counts, bad, source, rows)


def completed_generations(tl: Timeline) -> List[Generation]:
    """Generations that formed (a successful JoinGroup response), in order."""
    return [tl.generations[g] for g in sorted(tl.generations) if tl.generations[g].start is not None]

class EventSource:
    """The event columns the what-if packs from: each event's ``member_id``,
    ``members`` and ``assignments``, as the events came (Arrow arrays or
    chunked arrays); from event dicts (:meth:`of_cells`), made Arrow in the
    decoder's types when first packed.  ``columns``: the same events'
    :data:`_TIMELINE_COLUMNS` as lists of :func:`_cell` values, the timeline's own."""

    def __init__(self, member_id=None, members=None, assignments=None, cells=None, columns=None):
        self._arrays = None if cells is not None else (member_id, members, assignments)
        self._cells = cells
        self.columns = columns

    @classmethod
    def of_cells(cls, columns) -> "EventSource":
        return cls(cells=(columns["member_id"], columns["members"], columns["assignments"]), columns=columns)

    def arrays(self):
        """``(member_id, members, assignments)``, in whichever types they came."""
        if self._arrays is None:
            self._arrays = tuple(pa.array(c, t) for c, t in zip(self._cells, source_types()))
            self._cells = None
        return self._arrays


@lru_cache(maxsize=None)
def source_types():
    from kwire.pipeline._decode import FRAMES_SCHEMA

    schema = FRAMES_SCHEMA()
    return tuple(schema.field(name).type for name in ("member_id", "members", "assignments"))


def typed(columns):
    """``columns`` of :meth:`EventSource.arrays` in the decoder's types.
    Events from pandas or Spark may come in others that cast to them: a
    struct field pandas saw only nulls in is of the null type, and a list's
    items may be declared non-null."""
    return [c if c.type == t else c.cast(t) for c, t in zip(columns, source_types())]

def timelines_of_records(records, max_partitions, known: MetadataCounts):
    """Each group's timeline, in group order, from event dicts of any groups."""
    by_group = defaultdict(list)
    for r in records:
        by_group[r["group_id"]].append(r)
    for gid in sorted(by_group):
        yield build_timeline(gid, by_group[gid], max_partitions, known)


def split_metadata(pdf, counts, max_partitions):
    """``(group events, MetadataCounts, bad Metadata frames)`` of a pandas
    events frame.  ``counts``: the capture's (the Spark stage has them, and a
    bucket's events hold no Metadata), or None to read the Metadata
    responses among the events."""
    is_metadata = (pdf["api_key"] == METADATA).to_numpy(dtype=bool, na_value=False) if len(pdf) else np.zeros(0, bool)
    bad = BAD_FRAME_SCHEMA.empty_table()
    if counts is None:
        meta = pa.Table.from_pandas(pdf.loc[is_metadata, METADATA_EVENT_SCHEMA.names], schema=METADATA_EVENT_SCHEMA,
                                    preserve_index=False)
        counts, bad = metadata_partition_counts(meta, max_partitions)
    groups = pdf[~is_metadata]
    return groups.to_dict("records") if not groups.empty else (), MetadataCounts(counts), bad


def timelines_of(pdf, max_partitions=DEFAULT_MAX_PARTITIONS, counts=None):
    """Timelines of a pandas events frame (:data:`EVENT_COLUMNS`).  ``counts``:
    the capture's Metadata counts (:func:`metadata_partition_counts`), or None
    to take them from the Metadata responses among the events."""
    records, known, _bad = split_metadata(pdf, counts, max_partitions)
    return timelines_of_records(records, max_partitions, known)


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
                                 EventSource(groups.column("member_id"), groups.column("members"),
                                              groups.column("assignments"), columns=columns))


def _timelines_of_columns(group_ids, columns, max_partitions, known: MetadataCounts, source):
    """Each group's timeline, one at a time, from events sorted by group (``group_ids``) and ``seq``."""
    start = 0
    for end in range(1, len(group_ids) + 1):
        if end == len(group_ids) or group_ids[end] != group_ids[start]:
            yield _timeline(group_ids[start], columns, range(start, end), max_partitions, known, source)
            start = end
