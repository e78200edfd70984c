"""Array form of a consumer group, the input every fast assignor reads.

A :class:`GroupInput` holds one Python object per member and per topic name,
which is fine for the member-level API but not for a million partitions or for
a Spark pipeline that already holds columns.  :class:`ArrayGroup` keeps names
in small Python lists (one entry per topic or per member) and everything that
grows with partitions or subscriptions in NumPy arrays, so the assignors never
create a Python object per partition.

Topic indices are Java ``String.compareTo`` ranks: index order *is* the order
Java's sorted collections (``TreeSet``, ``TopicPartitionComparator``) use, so
kernels sort by integers instead of strings.
"""

from __future__ import annotations

import itertools
import os
import pkgutil
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import _impl
from ._javaorder import capacity_after, hashmap_positions, java_rank, java_sorted, member_info_order
from ..errors import AssignmentError
from ._model import MemberAssignments, GroupInput

_I32 = np.int32
_I64 = np.int64


def load_kernels(name: str, implementation: Optional[str] = None):
    """Import ``kwire.assignors._<name>_c`` or its pure twin ``_<name>_py``
    (the rule of :func:`kwire._impl.load`)."""
    if implementation not in (None, "python", "cython"):
        raise AssignmentError(f"implementation must be 'python' or 'cython', not {implementation!r}")
    return _impl.load(name, implementation, package="kwire.assignors")


def import_kernels(implementation: Optional[str] = None) -> None:
    """Import every kernel module (``_<name>_c`` / ``_<name>_py``, each otherwise imported on its path's first
    call) now: for a process that warms up before work it times (a Spark worker), so that the imports are not
    counted as the first assignments.  The kernels are found by their pure twins, which every one has, so a new
    kernel needs no list kept beside it."""
    here = os.path.dirname(os.path.abspath(__file__))
    for module in pkgutil.iter_modules([here]):
        if module.name.startswith("_") and module.name.endswith("_py"):
            load_kernels(module.name[1:-len("_py")], implementation)


def fast_string_hashes(names: List[str]) -> np.ndarray:
    """Java ``String.hashCode`` of each name (int32)."""
    # Hashes are facts about strings, not a choice of implementation: use the
    # compiled loop whenever the compiled kernels are in use.
    return load_kernels("rangerr").string_hashes(names)


def _as(arr, dtype, name, ndim=1):
    if type(arr) is np.ndarray and arr.dtype == dtype and arr.ndim == ndim and arr.flags.c_contiguous:
        # Kernel outputs and packed columns arrive like this: the checks
        # below would only copy and compare them, and small groups pay
        # that per call.
        return arr
    try:
        a = np.asarray(arr)
    except (TypeError, ValueError) as exc:
        raise AssignmentError(f"{name}: not an array ({exc})") from exc
    if a.ndim != ndim:
        raise AssignmentError(f"{name}: expected a {ndim}-d array, got shape {a.shape}")
    if a.dtype != dtype:
        if a.size and a.dtype.kind not in "iub":
            raise AssignmentError(f"{name}: expected integers, got {a.dtype}")
        b = a.astype(dtype)
        # Refuse values the narrower type would silently wrap.
        if a.size and not np.array_equal(b, a):
            raise AssignmentError(f"{name}: values out of range for {np.dtype(dtype).name}")
        a = b
    return np.ascontiguousarray(a)


#: The most partitions one group's metadata may hold.  The kernels index
#: partitions with int32 (2^31 - 1 at most), and every assignor allocates a
#: few words per partition: 2^27 keeps the largest group within a few GiB and
#: is far beyond any Kafka cluster.  The sticky kernels check the same limit.
MAX_PARTITIONS = 1 << 27


def required_list(values, what: str) -> List:
    """``list(values)``, or an AssignmentError naming ``what`` for None, a
    bare str/bytes or anything not iterable."""
    if values is None or isinstance(values, (str, bytes)):
        raise AssignmentError(f"{what} must be a list, got {values!r}")
    try:
        return list(values)
    except TypeError as exc:
        raise AssignmentError(f"{what} must be a list, got {type(values).__name__}") from exc


def check_partition_total(total: int) -> None:
    """Refuse a metadata total past :data:`MAX_PARTITIONS` before anything per partition is allocated."""
    if total > MAX_PARTITIONS:
        raise AssignmentError(
            f"the metadata holds {total} partitions; kwire assigns at most {MAX_PARTITIONS} in one group"
        )


def _check_csr(indptr, values, rows, name):
    if len(indptr) != rows + 1:
        raise AssignmentError(f"{name}: indptr must have {rows + 1} entries, has {len(indptr)}")
    if rows >= 0 and len(indptr) and (indptr[0] != 0 or indptr[-1] != len(values)):
        raise AssignmentError(f"{name}: indptr must start at 0 and end at {len(values)}")
    if len(indptr) > 1 and (indptr[1:] < indptr[:-1]).any():
        raise AssignmentError(f"{name}: indptr must be non-decreasing")


def checked_counts(partitions_per_topic) -> Dict[str, int]:
    """``partitions_per_topic`` as a dict, every name a str and every count a non-negative int32."""
    # A dict's copy is one table copy; any other mapping is read item by item.
    counts = partitions_per_topic.copy() if type(partitions_per_topic) is dict else dict(partitions_per_topic.items())
    if all_str(counts) and _INT_TYPES.issuperset(map(type, counts.values())):
        # The usual mapping, plain names and ints: checked in C loops, not name by name.
        if not counts or (min(counts.values()) >= 0 and max(counts.values()) <= 0x7FFFFFFF):
            return counts
    for t, n in counts.items():
        if not isinstance(t, str):
            raise AssignmentError(f"topic names must be str, got {t!r}")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0 or n > 0x7FFFFFFF:
            raise AssignmentError(f"partition count of {t!r} must be a non-negative int32, got {n!r}")
    return counts


def interned_topics(names, counts: Dict[str, int]) -> Tuple[List[str], Dict[str, int], np.ndarray]:
    """``(topics, index, partition_counts)`` for a set of topic names: the
    names in Java String order, each name's index, and each topic's count
    (0 where the metadata does not know it).  Refuses a partition total past
    :data:`MAX_PARTITIONS` before anything per partition exists."""
    # Checking distinct names is enough: every subscription entry is one of them.
    if not all_str(names):  # a C loop over the types first; str subclasses are names too
        for t in names:
            if not isinstance(t, str):
                raise AssignmentError(f"topic names must be str, got {t!r}")
    topics = java_sorted(names)
    index = dict(zip(topics, range(len(topics))))
    partition_counts = np.fromiter(map(counts.get, topics, itertools.repeat(0, len(topics))), dtype=_I32,
                                   count=len(topics))
    check_partition_total(int(partition_counts.sum(dtype=_I64)))
    return topics, index, partition_counts


def replica_rack_columns(partition_racks, index: Dict[str, int], counts: np.ndarray):
    """``(rack_names, replica_rack_indptr, replica_racks)`` from
    ``{topic: [replica racks of each partition]}``; ``([], None, None)`` without racks."""
    rack_names: List[str] = []
    if not partition_racks:
        return rack_names, None, None
    rack_index: Dict[str, int] = {}
    total = int(counts.sum(dtype=_I64))
    per_partition: List[Sequence] = [()] * total
    offsets = np.concatenate(([0], np.cumsum(counts, dtype=_I64)))
    for t, lists in partition_racks.items():
        if t not in index:
            continue  # racks of a topic nobody mentions cannot matter
        ti = index[t]
        if isinstance(lists, (str, bytes)) or not hasattr(lists, "__len__"):
            raise AssignmentError(f"partition_racks[{t!r}] must be a list with one entry per partition")
        if len(lists) != counts[ti]:
            raise AssignmentError(
                f"partition_racks[{t!r}] has {len(lists)} entries but the topic has {counts[ti]} partitions"
            )
        base = int(offsets[ti])
        for p, replicas in enumerate(lists):
            if replicas is None:
                replicas = ()
            if isinstance(replicas, (str, bytes)) or not hasattr(replicas, "__iter__"):
                raise AssignmentError(f"partition_racks[{t!r}][{p}] must be a list of racks")
            per_partition[base + p] = replicas
    rr_indptr = np.zeros(total + 1, dtype=_I64)
    flat: List[int] = []
    for g, replicas in enumerate(per_partition):
        for r in replicas:
            if r is None:
                continue  # a broker without broker.rack contributes nothing
            if not isinstance(r, str):
                raise AssignmentError(f"replica racks must be str or None, got {r!r}")
            k = rack_index.get(r)
            if k is None:
                k = rack_index[r] = len(rack_names)
                rack_names.append(r)
            flat.append(k)
        rr_indptr[g + 1] = len(flat)
    return rack_names, rr_indptr, np.array(flat, dtype=_I32)


_STR_TYPES = frozenset((str,))
_INT_TYPES = frozenset((int,))
_OPTIONAL_STR_TYPES = frozenset((str, type(None)))


def all_str(values) -> bool:
    """Whether every value is exactly a str (a few C loops: counting types, not testing each value)."""
    return _STR_TYPES.issuperset(map(type, values))


def all_optional_str(values) -> bool:
    """Whether every value is exactly a str or None."""
    return _OPTIONAL_STR_TYPES.issuperset(map(type, values))


class ArrayGroup:
    """A consumer group as arrays: see docs/ASSIGNORS.md for the full layout.

    Members are in JoinGroup-response order (Java's HashMap insertion order);
    topics are sorted in Java String order, so a topic's index is its sort rank.
    ``partition_counts[t]`` is 0 for a topic the metadata does not know (or that
    has no partitions); such topics may still be subscribed or owned.
    """

    def __init__(
        self,
        topics: Sequence[str],
        partition_counts,
        member_ids: Sequence[str],
        sub_indptr,
        sub_topics,
        *,
        shared_topics=None,
        group_instance_ids: Optional[Sequence[Optional[str]]] = None,
        racks: Optional[Sequence[Optional[str]]] = None,
        owned_indptr=None,
        owned_topic=None,
        owned_partition=None,
        generation=None,
        subscription_generation=None,
        rack_names: Optional[Sequence[str]] = None,
        replica_rack_indptr=None,
        replica_racks=None,
        validate: bool = True,
    ):
        self.topics: List[str] = required_list(topics, "topics")
        self.member_ids: List[str] = required_list(member_ids, "member_ids")
        T, M = len(self.topics), len(self.member_ids)
        self.partition_counts = _as(partition_counts, _I32, "partition_counts")
        self._shared_topics: Optional[np.ndarray] = None
        if shared_topics is None:
            self.sub_indptr = _as(sub_indptr, _I64, "sub_indptr")
            self._sub_topics: Optional[np.ndarray] = _as(sub_topics, _I32, "sub_topics")
        elif sub_indptr is not None or sub_topics is not None:
            raise AssignmentError("give shared_topics or sub_indptr and sub_topics, not both")
        else:
            # Every member subscribes to this one list (the usual group): its
            # sub_topics, a copy of the list per member (8 MB for 2000 members
            # of 1000 topics), is only built if something asks for it; the
            # range and roundrobin kernels take the list once.
            self._shared_topics = _as(shared_topics, _I32, "shared_topics")
            self.sub_indptr = np.arange(M + 1, dtype=_I64) * len(self._shared_topics)
            self._sub_topics = None
        self.group_instance_ids = list(group_instance_ids) if group_instance_ids is not None else [None] * M
        self.racks = list(racks) if racks is not None else [None] * M
        if owned_indptr is None:
            owned_indptr, owned_topic, owned_partition = np.zeros(M + 1, _I64), np.zeros(0, _I32), np.zeros(0, _I32)
        self.owned_indptr = _as(owned_indptr, _I64, "owned_indptr")
        self.owned_topic = _as(owned_topic, _I32, "owned_topic")
        self.owned_partition = _as(owned_partition, _I32, "owned_partition")
        # The defaults made as int32: an int64 one cost a copy and a range check each time a group is built.
        self.generation = _as(np.full(M, -1, _I32) if generation is None else generation, _I32, "generation")
        self.subscription_generation = _as(
            np.full(M, -1, _I32) if subscription_generation is None else subscription_generation,
            _I32,
            "subscription_generation",
        )
        if len(self.partition_counts) != T:
            raise AssignmentError(f"partition_counts has {len(self.partition_counts)} entries for {T} topics")
        self.topic_offset = np.zeros(T + 1, dtype=_I64)
        if T:
            np.cumsum(self.partition_counts, out=self.topic_offset[1:])
            check_partition_total(int(self.topic_offset[-1]))
        self.rack_names: List[str] = list(rack_names) if rack_names is not None else []
        # Without replica racks the indptr would be a zero array over every
        # partition; it is only materialized if someone asks for it.
        if replica_rack_indptr is None:
            if replica_racks is not None and len(replica_racks):
                raise AssignmentError("replica_racks given without replica_rack_indptr")
            self._replica_rack_indptr = None
            self.replica_racks = np.zeros(0, dtype=_I32)
        else:
            self._replica_rack_indptr = _as(replica_rack_indptr, _I64, "replica_rack_indptr")
            self.replica_racks = _as(np.zeros(0) if replica_racks is None else replica_racks, _I32, "replica_racks")
        self._cache: Dict[str, object] = {}
        if validate:
            self._validate()

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_group_input(cls, group: GroupInput) -> "ArrayGroup":
        if not isinstance(group, GroupInput):
            raise AssignmentError(f"expected a GroupInput, got {type(group).__name__}")
        ppt = checked_counts(group.partitions_per_topic or {})
        names = set(ppt)
        for m in group.members:
            try:
                names.update(m.topics)
            except TypeError as exc:
                raise AssignmentError(f"member {m.member_id!r}: topics must be str, got {m.topics!r}") from exc
            for tp in m.owned:
                if not (isinstance(tp, tuple) and len(tp) == 2 and isinstance(tp[0], str)):
                    raise AssignmentError(f"member {m.member_id!r}: owned partitions must be (topic, partition)")
                names.add(tp[0])
        topics, index, counts = interned_topics(names, ppt)

        M = len(group.members)
        sub_indptr = np.zeros(M + 1, dtype=_I64)
        owned_indptr = np.zeros(M + 1, dtype=_I64)
        subs: List[int] = []
        owned_t: List[int] = []
        owned_p: List[int] = []
        for i, m in enumerate(group.members):
            subs.extend(map(index.__getitem__, m.topics))
            sub_indptr[i + 1] = len(subs)
            for t, p in m.owned:
                if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not 0 <= p <= 0x7FFFFFFF:
                    raise AssignmentError(f"member {m.member_id!r}: bad owned partition {t!r}-{p!r}")
                owned_t.append(index[t])
                owned_p.append(p)
            owned_indptr[i + 1] = len(owned_t)

        rack_names, rr_indptr, rr = replica_rack_columns(group.partition_racks, index, counts)

        return cls(
            topics,
            counts,
            [m.member_id for m in group.members],
            sub_indptr,
            np.array(subs, dtype=_I32),
            group_instance_ids=[m.group_instance_id for m in group.members],
            racks=[m.rack for m in group.members],
            owned_indptr=owned_indptr,
            owned_topic=np.array(owned_t, dtype=_I32),
            owned_partition=np.array(owned_p, dtype=_I32),
            generation=np.array([m.generation for m in group.members], dtype=_I32),
            subscription_generation=np.array([m.subscription_generation for m in group.members], dtype=_I32),
            rack_names=rack_names,
            replica_rack_indptr=rr_indptr,
            replica_racks=rr,
        )

    def _validate(self):
        T, M = len(self.topics), len(self.member_ids)
        for t in self.topics:
            if not isinstance(t, str):
                raise AssignmentError(f"topic names must be str, got {t!r}")
        if len(set(self.topics)) != T:
            raise AssignmentError("topic names must be unique")
        if self.topics != java_sorted(self.topics):
            raise AssignmentError("topics must be sorted in Java String order (UTF-16 code units)")
        if len(self.partition_counts) != T:
            raise AssignmentError(f"partition_counts has {len(self.partition_counts)} entries for {T} topics")
        if T and self.partition_counts.min() < 0:
            raise AssignmentError("partition counts must be >= 0")
        self.check_members()
        for r in self.rack_names:
            if not isinstance(r, str):
                raise AssignmentError(f"rack_names entries must be str, got {r!r}")
        _check_csr(self.sub_indptr, self.sub_topics, M, "sub_indptr")
        if len(self.sub_topics) and (self.sub_topics.min() < 0 or self.sub_topics.max() >= T):
            raise AssignmentError("sub_topics holds a topic index out of range")
        _check_csr(self.owned_indptr, self.owned_topic, M, "owned_indptr")
        if len(self.owned_partition) != len(self.owned_topic):
            raise AssignmentError("owned_topic and owned_partition differ in length")
        if len(self.owned_topic) and (self.owned_topic.min() < 0 or self.owned_topic.max() >= T):
            raise AssignmentError("owned_topic holds a topic index out of range")
        if len(self.owned_partition) and self.owned_partition.min() < 0:
            raise AssignmentError("owned partitions must be >= 0")
        for name in ("generation", "subscription_generation"):
            if len(getattr(self, name)) != M:
                raise AssignmentError(f"{name} must have one entry per member")
        if self._replica_rack_indptr is not None:
            _check_csr(self._replica_rack_indptr, self.replica_racks, self.num_partitions, "replica_rack_indptr")
        if len(self.replica_racks) and (self.replica_racks.min() < 0 or self.replica_racks.max() >= len(self.rack_names)):
            raise AssignmentError("replica_racks holds a rack index out of range")

    def check_members(self, ids_are_str: bool = False) -> None:
        """Refuse member ids that are not unique strs, and instance ids or
        racks that are not str or None, one per member.  The part of the
        checks a builder that made every other column itself (the leader
        path) still needs: these come from the caller's members as given.
        ``ids_are_str``: the builder has found every member id a str and
        every instance id a str or None (only uniqueness is left of those)."""
        M = len(self.member_ids)
        # Counting the types first is a few C loops: the per-value loops
        # below, which name the offender, run only when there is one.
        if not ids_are_str and not all_str(self.member_ids):
            for m in self.member_ids:
                if not isinstance(m, str):
                    raise AssignmentError(f"member ids must be str, got {m!r}")
        if len(set(self.member_ids)) != M:
            seen, dup = set(), None
            for m in self.member_ids:
                if m in seen:
                    dup = m
                    break
                seen.add(m)
            raise AssignmentError(f"member id {dup!r} appears more than once")
        for name, values in (("group_instance_ids", self.group_instance_ids), ("racks", self.racks)):
            if ids_are_str and name == "group_instance_ids":
                continue
            if len(values) != M:
                raise AssignmentError(f"{name} has {len(values)} entries for {M} members")
            if all_optional_str(values):
                continue
            for v in values:
                if v is not None and not isinstance(v, str):
                    raise AssignmentError(f"{name} entries must be str or None, got {v!r}")

    def with_claims(self, owned_indptr, owned_topic, owned_partition) -> "ArrayGroup":
        """This group with other owned partitions (trusted: the caller took
        them from this group's).  Everything else is shared, the derived
        facts below included: none of them depends on what members own."""
        other = ArrayGroup.__new__(ArrayGroup)
        other.__dict__.update(self.__dict__)
        other.owned_indptr = np.ascontiguousarray(owned_indptr, dtype=_I64)
        other.owned_topic = np.ascontiguousarray(owned_topic, dtype=_I32)
        other.owned_partition = np.ascontiguousarray(owned_partition, dtype=_I32)
        return other

    @property
    def sub_topics(self) -> np.ndarray:
        if self._sub_topics is None:
            # np.repeat of one row: np.tile's Python steps cost a small group more than the copy
            self._sub_topics = np.repeat(self._shared_topics[None, :], self.num_members, axis=0).ravel()
        return self._sub_topics

    def shared_topics(self) -> Optional[np.ndarray]:
        """The one topic list every member subscribes to, when the group was
        built with one (``shared_topics=``); None otherwise."""
        return self._shared_topics

    # -- derived facts shared by the assignors ------------------------------------------------

    @property
    def replica_rack_indptr(self) -> np.ndarray:
        if self._replica_rack_indptr is None:
            self._replica_rack_indptr = np.zeros(self.num_partitions + 1, dtype=_I64)
        return self._replica_rack_indptr

    @property
    def num_members(self) -> int:
        return len(self.member_ids)

    @property
    def num_partitions(self) -> int:
        return int(self.topic_offset[-1])

    def _cached(self, key, compute):
        value = self._cache.get(key)
        if value is None:
            value = self._cache[key] = compute()
        return value

    def topic_index(self) -> Dict[str, int]:
        return self._cached("topic_index", lambda: {t: i for i, t in enumerate(self.topics)})

    def topic_hashes(self) -> np.ndarray:
        return self._cached("topic_hashes", lambda: fast_string_hashes(self.topics))

    def member_hashes(self) -> np.ndarray:
        return self._cached("member_hashes", lambda: fast_string_hashes(self.member_ids))

    def member_id_rank(self) -> np.ndarray:
        """Each member id's rank in Java String order (read-only: shared by
        every assignor run on this group, as the what-if runs the sticky pair)."""
        return self._cached("member_id_rank", self._member_id_rank)

    def _member_id_rank(self):
        rank = java_rank(self.member_ids)
        rank.flags.writeable = False
        return rank

    def member_hashmap_order(self) -> np.ndarray:
        """Member indices in the leader's ``HashMap<String, Subscription>`` iteration order."""
        return self._cached(
            "member_hashmap_order",
            lambda: hashmap_positions(self.member_hashes(), capacity_after(self.num_members)),
        )

    def member_sort_order(self) -> np.ndarray:
        """Member indices in ``MemberInfo`` order: static members by instance id, then dynamic by member id."""
        return self._cached("member_sort_order", self._member_sort_order)

    def _member_sort_order(self):
        gids = self.group_instance_ids
        if gids.count(None) == len(gids):
            # No static member: MemberInfo order is member id order, which
            # the rank (also needed by the sticky kernels) already holds.
            order = np.empty(self.num_members, dtype=_I32)
            order[self.member_id_rank()] = np.arange(self.num_members, dtype=_I32)
            return order
        static = [g for g in gids if g is not None]
        visit = None
        if len(set(static)) != len(static):
            # Equal instance ids compare equal, and Java's stable sort then keeps
            # the HashMap iteration order the members were collected in.
            visit = self.member_hashmap_order().tolist()
        return np.array(member_info_order(gids, self.member_ids, visit), dtype=_I32)

    def member_rack_index(self) -> np.ndarray:
        """Each member's rack as an index into ``rack_names``; -1 for none.

        A consumer rack no replica lives on gets an index past ``rack_names``
        so it still counts as "has a rack" but never matches."""

        def compute():
            index = {r: i for i, r in enumerate(self.rack_names)}
            extra: Dict[str, int] = {}
            out = np.full(self.num_members, -1, dtype=_I32)
            for i, r in enumerate(self.racks):
                if r:  # Java treats an empty client.rack as no rack
                    k = index.get(r)
                    if k is None:
                        k = extra.setdefault(r, len(self.rack_names) + len(extra))
                    out[i] = k
            return out

        return self._cached("member_rack_index", compute)

    def __repr__(self):
        return (
            f"ArrayGroup({self.num_members} members, {len(self.topics)} topics, "
            f"{self.num_partitions} partitions)"
        )


class ArrayAssignment:
    """Per-member partition lists as CSR arrays, each list in Java's order.

    ``topic[indptr[m]:indptr[m+1]]`` and ``partition[...]`` are member ``m``'s
    partitions (member index as in the :class:`ArrayGroup`)."""

    __slots__ = ("indptr", "topic", "partition", "member_ids", "topics", "topic_offset")

    def __init__(self, indptr, topic, partition, member_ids=None, topics=None, topic_offset=None):
        self.indptr = _as(indptr, _I64, "indptr")
        self.topic = _as(topic, _I32, "topic")
        self.partition = _as(partition, _I32, "partition")
        if len(self.indptr) == 0:
            raise AssignmentError("indptr needs at least one entry")
        if len(self.topic) != len(self.partition):
            raise AssignmentError("topic and partition differ in length")
        _check_csr(self.indptr, self.topic, len(self.indptr) - 1, "indptr")
        # Names are optional so pipelines can hold bare arrays; to_dict() and
        # owner_of_each_partition() need them.
        self.member_ids = list(member_ids) if member_ids is not None else None
        self.topics = list(topics) if topics is not None else None
        self.topic_offset = _as(topic_offset, _I64, "topic_offset") if topic_offset is not None else None

    def _need(self, what, *names):
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            raise AssignmentError(f"{what} needs {', '.join(missing)}; build the assignment with for_group()")

    @classmethod
    def for_group(cls, group: ArrayGroup, indptr, topic, partition) -> "ArrayAssignment":
        out = cls(indptr, topic, partition)
        if len(out.indptr) != group.num_members + 1:
            raise AssignmentError(f"indptr has {len(out.indptr)} entries for {group.num_members} members")
        # Shared with the group, not copied: the names are per member/topic only.
        out.member_ids, out.topics, out.topic_offset = group.member_ids, group.topics, group.topic_offset
        return out

    def __len__(self):
        return len(self.indptr) - 1

    def member_slice(self, m: int) -> Tuple[np.ndarray, np.ndarray]:
        a, b = self.indptr[m], self.indptr[m + 1]
        return self.topic[a:b], self.partition[a:b]

    def owner_of_each_partition(self) -> np.ndarray:
        """Owning member index per global partition ``topic_offset[t] + p``; -1 when unassigned."""
        self._need("owner_of_each_partition()", "topic_offset")
        owner = np.full(int(self.topic_offset[-1]), -1, dtype=_I32)
        members = np.repeat(np.arange(len(self), dtype=_I32), np.diff(self.indptr))
        owner[self.topic_offset[self.topic] + self.partition] = members
        return owner

    def topic_groups(self) -> Dict[str, List[Tuple[str, List[int]]]]:
        """``{member_id: [(topic, [partition, ...]), ...]}``, topics in order of
        first appearance in the member's list (how the assignment is serialized)."""
        self._need("topic_groups()", "member_ids", "topics")
        n = len(self.topic)
        ptr = self.indptr
        change = np.zeros(n, dtype=bool)
        if n:
            change[0] = True
            change[1:] = self.topic[1:] != self.topic[:-1]
            starts_of_members = ptr[:-1][ptr[:-1] < n]
            change[starts_of_members] = True
        run_start = np.flatnonzero(change)
        run_end = np.append(run_start[1:], n)
        run_topic_a = self.topic[run_start]
        first_run_a = np.searchsorted(run_start, ptr)
        topics = self.topics
        parts = self.partition.tolist()
        runs = list(
            zip(
                map(topics.__getitem__, run_topic_a.tolist()),
                map(parts.__getitem__, map(slice, run_start.tolist(), run_end.tolist())),
            )
        )
        first_run = first_run_a.tolist()
        run_member = np.repeat(np.arange(len(self.member_ids), dtype=_I64), np.diff(first_run_a))
        key = run_member * max(len(topics), 1) + run_topic_a
        if len(np.unique(key)) == len(key):
            # The usual case: each topic forms one run in a member's list.
            return {mid: runs[first_run[i] : first_run[i + 1]] for i, mid in enumerate(self.member_ids)}
        out = {}
        for i, mid in enumerate(self.member_ids):
            groups: Dict[str, List[int]] = {}
            for t, seg in runs[first_run[i] : first_run[i + 1]]:
                if t in groups:
                    groups[t] = groups[t] + seg  # a topic may come back later in the list
                else:
                    groups[t] = seg
            out[mid] = list(groups.items())
        return out

    def to_dict(self) -> MemberAssignments:
        """``{member_id: [(topic, partition), ...]}`` -- one Python tuple per partition, so not for hot paths."""
        self._need("to_dict()", "member_ids", "topics")
        topics = self.topics
        t_list = self.topic.tolist()
        p_list = self.partition.tolist()
        ptr = self.indptr.tolist()
        return {
            mid: [(topics[t], p) for t, p in zip(t_list[ptr[i] : ptr[i + 1]], p_list[ptr[i] : ptr[i + 1]])]
            for i, mid in enumerate(self.member_ids)
        }

    def __eq__(self, other):
        if not isinstance(other, ArrayAssignment):
            return NotImplemented
        return (
            self.member_ids == other.member_ids
            and self.topics == other.topics
            and np.array_equal(self.indptr, other.indptr)
            and np.array_equal(self.topic, other.topic)
            and np.array_equal(self.partition, other.partition)
        )

    __hash__ = None

    def __repr__(self):
        return f"ArrayAssignment({len(self)} members, {len(self.topic)} partitions)"


def segment_starts(lengths) -> Tuple[np.ndarray, int]:
    """Where each of ``lengths``' segments starts when they are laid end to end, and the total."""
    ends = np.cumsum(lengths, dtype=_I64)
    return ends - lengths, int(ends[-1]) if len(ends) else 0


def end_to_end(answers: Sequence[ArrayAssignment]) -> ArrayAssignment:
    """Many groups' answers as one bare :class:`ArrayAssignment`: member ``m``
    of ``answers[g]`` is row ``m`` plus the members of the answers before it;
    topics keep each group's own indices."""
    if not answers:
        return ArrayAssignment(np.zeros(1, _I64), np.zeros(0, _I32), np.zeros(0, _I32))
    lengths = np.array([len(a.topic) for a in answers], _I64)
    members = np.array([len(a.indptr) - 1 for a in answers], _I64)
    base, total = segment_starts(lengths)
    indptr = np.append(np.concatenate([a.indptr[:-1] for a in answers]) + np.repeat(base, members), total)
    return ArrayAssignment(indptr, np.concatenate([a.topic for a in answers]),
                           np.concatenate([a.partition for a in answers]))


def group_input_of(group: ArrayGroup) -> GroupInput:
    """The :class:`GroupInput` an :class:`ArrayGroup` describes (for strategies that only have a reference form)."""
    from ._model import MemberInput

    topics = group.topics
    members = []
    for i, mid in enumerate(group.member_ids):
        a, b = group.sub_indptr[i], group.sub_indptr[i + 1]
        oa, ob = group.owned_indptr[i], group.owned_indptr[i + 1]
        members.append(
            MemberInput(
                member_id=mid,
                group_instance_id=group.group_instance_ids[i],
                topics=tuple(topics[t] for t in group.sub_topics[a:b].tolist()),
                owned=tuple(
                    (topics[t], p)
                    for t, p in zip(group.owned_topic[oa:ob].tolist(), group.owned_partition[oa:ob].tolist())
                ),
                generation=int(group.generation[i]),
                subscription_generation=int(group.subscription_generation[i]),
                rack=group.racks[i],
            )
        )
    counts = group.partition_counts.tolist()
    ppt = {t: n for t, n in zip(topics, counts) if n > 0}
    racks = None
    if len(group.replica_racks):
        racks = {}
        ptr = group.replica_rack_indptr.tolist()
        flat = group.replica_racks.tolist()
        for ti, t in enumerate(topics):
            base = int(group.topic_offset[ti])
            if counts[ti]:
                racks[t] = [[group.rack_names[r] for r in flat[ptr[base + p] : ptr[base + p + 1]]] for p in range(counts[ti])]
    return GroupInput(members=members, partitions_per_topic=ppt, partition_racks=racks)


def array_assignment_of(group: ArrayGroup, assignment: MemberAssignments) -> ArrayAssignment:
    """Pack a ``{member_id: [(topic, partition), ...]}`` result into an :class:`ArrayAssignment`."""
    index = group.topic_index()
    indptr = np.zeros(group.num_members + 1, dtype=_I64)
    topic: List[int] = []
    partition: List[int] = []
    for i, mid in enumerate(group.member_ids):
        for t, p in assignment.get(mid, ()):
            ti = index.get(t)
            if ti is None:
                raise AssignmentError(f"assignment names topic {t!r} that the group does not know")
            topic.append(ti)
            partition.append(p)
        indptr[i + 1] = len(topic)
    unknown = set(assignment) - set(group.member_ids)
    if unknown:
        raise AssignmentError(f"assignment names members outside the group: {sorted(unknown)!r}")
    return ArrayAssignment.for_group(group, indptr, np.array(topic, dtype=_I32), np.array(partition, dtype=_I32))
