"""Topic sizes from a capture's Metadata responses, as of any point of it.

Where a capture has Metadata responses, the analysis takes each topic's size
from them (:func:`metadata_partition_counts`, :class:`MetadataCounts`);
elsewhere the timeline infers it from the partitions assigned.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kwire.errors import ArgumentValueError
from kwire.pipeline._events import BAD_FRAME_SCHEMA, COUNT_SCHEMA, DEFAULT_MAX_PARTITIONS, METADATA, RESPONSE

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
