"""Java ordering rules that leak into Kafka's assignor output.

Kafka's Java assignors sort with ``String.compareTo`` (UTF-16 code-unit order)
and iterate ``HashMap``/``HashSet`` instances whose order depends on Java's
hash functions.  kwire must reproduce both to give byte-identical
assignments, so they are modelled here once and shared by every assignor.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple, TypeVar

import numpy as np

T = TypeVar("T")

_MASK32 = 0xFFFFFFFF


def utf16_key(s: str) -> bytes:
    """Sort key equal to Java ``String.compareTo`` order.

    Python orders by code point, which differs from Java for characters
    outside the BMP (Java compares surrogate code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def _plain_order_holds(names: Iterable[str]) -> bool:
    """Whether Python's own str order is ``String.compareTo`` order for ``names``.

    Code-point order equals UTF-16 order unless a name holds a non-BMP
    character, and the plain sort is several times faster.  One join and one
    isascii are C loops; a generator over the names cost the leader's small
    groups more than the sort."""
    return "".join(names).isascii()


def _sorted_by_name(indices: Iterable[int], names: Sequence[str]) -> List[int]:
    """``indices`` sorted (stably) by ``String.compareTo`` of ``names[i]``."""
    indices = list(indices)
    # Plain order holds for the chosen names when it holds for all of them:
    # the whole list is checked when it is no longer (no map over indices).
    if _plain_order_holds(names if len(names) <= len(indices) else map(names.__getitem__, indices)):
        return sorted(indices, key=names.__getitem__)
    return sorted(indices, key=lambda i: utf16_key(names[i]))


def stacked_name_order(names: List[str], sizes, later=None) -> Optional[np.ndarray]:
    """Indices of ``names``, many lists end to end (``sizes`` of each),
    sorted list by list, each in ``String.compareTo`` order (stably): one sort
    for all the lists.  ``later``: where true, the name sorts after every
    name of its list where it is false (a bool per name).  None where NumPy's
    strings cannot stand for Java's order: a name beyond ASCII, or holding a
    NUL (NumPy drops trailing ones)."""
    joined = "".join(names)
    if not joined.isascii() or "\0" in joined:
        return None
    owner = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    keys = (np.arange(len(names)), np.array(names, dtype=str))
    return np.lexsort(keys + ((owner,) if later is None else (later, owner)))


def java_sorted(names: Iterable[str]) -> List[str]:
    """``names`` sorted as Java's ``String.compareTo`` sorts them."""
    names = list(names)
    # Equal names are equal strs, so sorting the names themselves (no index
    # list) gives what the stable sort of _sorted_by_name would.
    return sorted(names, key=None if _plain_order_holds(names) else utf16_key)


def java_rank(names: Sequence[str]) -> np.ndarray:
    """int32 rank of each name in Java ``String.compareTo`` order (equal names
    keep their index order), so kernels compare integers, not strings."""
    n = len(names)
    rank = np.empty(n, dtype=np.int32)
    rank[np.fromiter(_sorted_by_name(range(n), names), dtype=np.intp, count=n)] = np.arange(n, dtype=np.int32)
    return rank


def topic_partition_sort_key(tp: Tuple[str, int]) -> Tuple[bytes, int]:
    """Sort key of Java's ``TopicPartitionComparator``: topic in String order, then partition."""
    return utf16_key(tp[0]), tp[1]


def member_info_order(
    instance_ids: Sequence[Optional[str]], member_ids: Sequence[str], visit_order: Optional[Sequence[int]] = None
) -> List[int]:
    """Member indices in Java's ``MemberInfo`` order: static members (with a
    ``group.instance.id``) first, by instance id, then dynamic members by member id.

    ``Collections.sort`` is stable, so members that compare equal (two static
    members sharing an instance id) keep the order they were collected in:
    ``visit_order`` (index order when None)."""
    visit = range(len(member_ids)) if visit_order is None else visit_order
    if instance_ids.count(None) == len(instance_ids):
        # No static member (the usual group): one C count instead of two
        # passes over the members.
        return _sorted_by_name(visit, member_ids)
    static = [i for i in visit if instance_ids[i] is not None]
    dynamic = [i for i in visit if instance_ids[i] is None]
    return _sorted_by_name(static, instance_ids) + _sorted_by_name(dynamic, member_ids)


def _to_int32(x: int) -> int:
    x &= _MASK32
    return x - 0x100000000 if x & 0x80000000 else x


def string_hash(s: str) -> int:
    """Java ``String.hashCode`` as a signed int32."""
    h = 0
    mask = _MASK32
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & mask
    return _to_int32(h)


def string_hashes(names: Sequence[str]) -> np.ndarray:
    """``String.hashCode`` of every name as int32, without a per-character Python loop
    (:func:`string_hash` for a whole column)."""
    out = np.zeros(len(names), dtype=np.int32)
    if not names:
        return out
    enc = [s.encode("utf-16-be", "surrogatepass") for s in names]
    lens = np.fromiter((len(b) >> 1 for b in enc), dtype=np.int64, count=len(enc))
    total = int(lens.sum())
    if total == 0:
        return out
    units = np.frombuffer(b"".join(enc), dtype=">u2").astype(np.uint32)
    ends = np.cumsum(lens)
    # h = sum(c_i * 31**(L-1-i)) mod 2**32; uint32 arithmetic wraps exactly like Java int.
    exponent = np.repeat(ends, lens) - 1 - np.arange(total, dtype=np.int64)
    powers = np.empty(int(lens.max()), dtype=np.uint32)
    powers[0] = 1
    if len(powers) > 1:
        powers[1:] = np.cumprod(np.full(len(powers) - 1, 31, dtype=np.uint32), dtype=np.uint32)
    terms = units * powers[exponent]
    nonempty = lens > 0
    starts = (ends - lens)[nonempty]
    out[nonempty] = np.add.reduceat(terms, starts, dtype=np.uint32).view(np.int32)
    return out


def topic_partition_hash(topic: str, partition: int) -> int:
    """Java ``TopicPartition.hashCode``: ``31*(31+partition) + topic.hashCode()``."""
    return _to_int32(31 * (31 + partition) + remembered_hash(topic))


def spread(h: int) -> int:
    """``HashMap.hash``: fold the high half into the low half (``h ^ (h >>> 16)``)."""
    h &= _MASK32
    return h ^ (h >> 16)


#: Each name's spread ``String.hashCode``, remembered: a leader or a coordinator puts the same few member ids
#: and topic names into a HashMap at every rebalance.  Cleared when full, so it stays bounded.
_SPREADS: dict = {}
_SPREADS_MAX = 1 << 16


#: Each name's ``String.hashCode``, remembered as ``_SPREADS`` remembers the spread ones: a sticky assignor
#: hashes the same few topic names for every partition it moves.
_HASHES: dict = {}


def remembered_hash(name: str) -> int:
    """``string_hash(name)``, remembered across calls."""
    h = _HASHES.get(name)
    if h is None:
        if len(_HASHES) >= _SPREADS_MAX:
            _HASHES.clear()
        h = _HASHES[name] = string_hash(name)
    return h


def remembered_spread(name: str) -> int:
    """``spread(string_hash(name))``, remembered across calls."""
    h = _SPREADS.get(name)
    if h is None:
        if len(_SPREADS) >= _SPREADS_MAX:
            _SPREADS.clear()
        h = _SPREADS[name] = spread(string_hash(name))
    return h


def small_string_map_positions(keys: Sequence[str], capacity: int) -> List[int]:
    """Positions of distinct ``keys``, inserted in order into a ``HashMap`` of ``capacity`` slots, in its
    iteration order: by bucket, then insertion (what :func:`string_hashmap_order` gives, without arrays, for
    the few keys of a small group's members or topics)."""
    mask = capacity - 1
    buckets = [remembered_spread(k) & mask for k in keys]
    return sorted(range(len(keys)), key=buckets.__getitem__)   # sorted() is stable: insertion within a bucket


# Java's HashMap sizing: DEFAULT_LOAD_FACTOR, TREEIFY_THRESHOLD and MIN_TREEIFY_CAPACITY.
# The compiled mirror is _HashSetOrder in _sticky_balance.pxi; tests/test_java_rules.py holds them together.
_LOAD_NUMERATOR, _LOAD_DENOMINATOR = 3, 4
_TREEIFY_LEN = 9        # a bin reaching this length asks for a tree ...
_MIN_TREE_TABLE = 64    # ... which a smaller table answers by doubling


def _grown(size: int, cap: int) -> int:
    """The capacity after ``size`` entries from ``cap``: the table doubles while
    size exceeds 0.75 * capacity, and never shrinks."""
    while size > cap * _LOAD_NUMERATOR // _LOAD_DENOMINATOR:
        cap *= 2
    return cap


def capacity_after(size: int, initial_capacity: int = 16) -> int:
    """Table capacity of a HashMap after ``size`` insertions.

    ``initial_capacity`` is what the map was built with: 16 for
    ``new HashMap<>()`` and the smallest power of two >= n for ``new HashMap<>(n)`` (``tableSizeFor``).
    The capacity depends only on the largest size reached; colliding keys can
    grow a small table further (:func:`hashmap_capacity`)."""
    return _grown(size, initial_capacity)


class JavaHashTable:
    """The bucket layout of a Java ``HashMap``/``HashSet``, for its iteration order.

    Keys are added with their spread hash (:func:`spread` of ``hashCode``).
    Entries iterate by bucket and, inside a bucket, in insertion order;
    removals never shrink the table.  A bin that reaches 9 entries in a table
    smaller than 64 doubles the table (Java's ``treeifyBin``), which is
    modelled; real tree bins (64+ slots) are not, as Kafka inputs do not put
    9 keys in one bucket of a table that large."""

    __slots__ = ("capacity", "seq", "_next", "_bins", "_hashes")

    def __init__(self, initial_capacity: int = 16):
        self.capacity = initial_capacity
        self.seq: dict = {}       # key -> insertion number
        self._next = 0
        self._bins: dict = {}     # bucket -> entries in it
        self._hashes: dict = {}   # key -> spread hash

    def _rebin(self):
        mask = self.capacity - 1
        bins: dict = {}
        for key in self.seq:
            b = self._hashes[key] & mask
            bins[b] = bins.get(b, 0) + 1
        self._bins = bins

    def add(self, key, h: int) -> None:
        """Insert ``key`` whose spread hash is ``h`` (a no-op when present)."""
        # Mirrored line for line by _HashSetOrder.add in _sticky_balance.pxi:
        # the twins must agree on when the table grows.
        if key in self.seq:
            return
        self.seq[key] = self._next
        self._next += 1
        self._hashes[key] = h
        b = h & (self.capacity - 1)
        n = self._bins.get(b, 0) + 1
        self._bins[b] = n
        cap = self.capacity
        if n >= _TREEIFY_LEN and cap < _MIN_TREE_TABLE:
            cap *= 2
        if len(self.seq) > cap * _LOAD_NUMERATOR // _LOAD_DENOMINATOR:
            cap = _grown(len(self.seq), cap)
        if cap != self.capacity:
            self.capacity = cap
            self._rebin()

    def discard(self, key) -> None:
        if key in self.seq:
            del self.seq[key]
            self._bins[self._hashes.pop(key) & (self.capacity - 1)] -= 1

    def __len__(self):
        return len(self.seq)

    def first(self):
        """The key a Java iterator yields first."""
        mask = self.capacity - 1
        return min(self.seq, key=lambda k: (self._hashes[k] & mask, self.seq[k]))


def hashmap_positions(hashes: np.ndarray, capacity: int) -> np.ndarray:
    """Indices of keys inserted in index order, in the order a Java HashMap
    of ``capacity`` slots iterates them.

    Entries iterate bucket by bucket and, inside a bucket, in insertion order
    (a resize splits buckets but keeps relative order).  This is exact as
    long as no bucket is treeified, which needs 8+ colliding keys in a table
    of 64+ slots -- not a case Kafka's inputs produce in practice."""
    # A stable sort by bucket keeps insertion order inside each bucket.
    return np.argsort(hashmap_buckets(hashes, capacity), kind="stable").astype(np.int32)


def stacked_hashmap_positions(hashes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """:func:`hashmap_positions` of many maps at once: ``hashes`` of each
    map's keys end to end (``sizes`` of them), each map of
    :func:`capacity_after` its size; the positions are numbered end to end,
    map after map."""
    sizes = np.asarray(sizes, dtype=np.int64)
    capacity = np.full(len(sizes), 16, dtype=np.int64)
    while True:
        # capacity_after for every size at once: double while the size exceeds 0.75 of it
        grow = sizes > capacity * _LOAD_NUMERATOR // _LOAD_DENOMINATOR
        if not grow.any():
            break
        capacity[grow] *= 2
    bucket = hashmap_buckets(hashes, np.repeat(capacity, sizes).astype(np.uint32))
    owner = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    return np.lexsort((np.arange(len(bucket)), bucket, owner)).astype(np.int32)


def hashmap_buckets(hashes: np.ndarray, capacity) -> np.ndarray:
    """The bucket of each key (int32 ``hashCode``) in a Java HashMap of
    ``capacity`` slots (one number, or one per key): :func:`spread` over a
    column, masked to the table."""
    h = np.asarray(hashes, dtype=np.int32).view(np.uint32)
    return (h ^ (h >> np.uint32(16))) & np.uint32(capacity - 1)


def hashmap_order(keys: Sequence[T], hashes: Sequence[int], capacity: int) -> List[T]:
    """``keys`` (in insertion order) in a Java HashMap's iteration order."""
    return [keys[i] for i in hashmap_positions(np.asarray(hashes, dtype=np.int64).astype(np.int32), capacity)]


def string_hashmap_order(keys: Sequence[str], capacity: int | None = None) -> List[str]:
    """Iteration order of a ``HashMap<String, ?>`` built by inserting ``keys`` in order."""
    if capacity is None:
        capacity = capacity_after(len(keys))
    return hashmap_order(keys, [string_hash(k) for k in keys], capacity)


def hashmap_capacity(hashes: Sequence[int], initial_capacity: int = 16) -> int:
    """Table capacity of a Java HashMap after inserting keys with ``hashes``
    (``hashCode``, a sequence or an int32 array) in order.

    Like :func:`capacity_after`, plus one more way the table grows: a bucket
    that reaches 9 entries while the table is smaller than 64 makes Java
    double the table instead of building a tree bin (``treeifyBin``).
    Colliding keys (``"Aa"`` and ``"BB"`` share a hash) can trigger it in
    small groups.  Tree bins themselves (64+ slots) are not modelled."""
    if len(hashes) < _TREEIFY_LEN:
        # No bucket can crowd with fewer keys than a tree bin needs, so only
        # the size rule applies: the common small group skips the table walk.
        return _grown(len(hashes), initial_capacity)
    first = hashes[:49]
    if np.bincount(hashmap_buckets(first, initial_capacity)).max() < _TREEIFY_LEN:
        # A bigger table only splits buckets and a prefix only drops keys, so
        # no bucket of any table the walk would pass through can crowd when
        # none of the first table does: the usual group skips the walk too.
        return _grown(len(hashes), initial_capacity)
    table = JavaHashTable(initial_capacity)
    # only tables below 64 slots can be resized by a crowded bucket, and the
    # size rule alone takes a table past 64 after 48 entries
    for i, h in enumerate(first.tolist() if isinstance(first, np.ndarray) else first):
        table.add(i, spread(h))
    return _grown(len(hashes), table.capacity)


# ---------------------------------------------------------------------------
# The rules the server-side (KIP-848) assignors add: Uuid keys, HashSet sizing
# from a collection, and tree bins.


def _signed64(x: int) -> int:
    x &= 0xFFFFFFFFFFFFFFFF
    return x - (1 << 64) if x >> 63 else x


def uuid_halves(topic_id: bytes) -> Tuple[int, int]:
    """The signed ``(mostSignificantBits, leastSignificantBits)`` of a 16-byte Uuid."""
    return (int.from_bytes(topic_id[:8], "big", signed=True), int.from_bytes(topic_id[8:16], "big", signed=True))


def uuid_hash(topic_id: bytes) -> int:
    """Kafka ``Uuid.hashCode``: ``x = msb ^ lsb``, then ``(int)(x >> 32) ^ (int)x``, as a signed int32."""
    msb, lsb = uuid_halves(topic_id)
    x = _signed64(msb ^ lsb)
    return _to_int32((x >> 32) ^ x)


def uuid_hashes(topic_ids: np.ndarray) -> np.ndarray:
    """:func:`uuid_hash` of every row of a ``(T, 16)`` uint8 array, as int32."""
    ids = np.ascontiguousarray(topic_ids, dtype=np.uint8).reshape(-1, 16)
    halves = ids.view(">u8").astype(np.uint64)
    x = halves[:, 0] ^ halves[:, 1]
    return ((x >> np.uint64(32)) ^ (x & np.uint64(_MASK32))).astype(np.uint32).view(np.int32)


def uuid_order_key(topic_id: bytes) -> Tuple[int, int]:
    """Sort key of ``Uuid.compareTo``: signed msb, then signed lsb."""
    return uuid_halves(topic_id)


def table_size_for(n: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def hashset_capacity_from(size: int) -> int:
    """The table of ``new HashSet<>(collection)`` of ``size`` elements:
    ``tableSizeFor(max((int) (size / .75f) + 1, 16))``, in float32 as Java computes it."""
    return table_size_for(max(int(np.float32(size) / np.float32(0.75)) + 1, 16))


def hashmap_capacity_from(n: int) -> int:
    """The table of ``new HashMap<>(n)`` once its first key is put: ``tableSizeFor(n)``."""
    return table_size_for(n)


def may_crowd(spread_hashes: np.ndarray, initial_capacity: int) -> bool:
    """Whether some bin of a HashMap filled with these keys (spread hashes, in
    insertion order, all distinct keys) could ever hold 9 entries, the point
    where Java either doubles a small table or turns the bin into a tree.

    When it cannot, the iteration order is plain: buckets of the final table
    ascending, insertion order inside each.  The check walks the capacities
    the table passes through and looks at the keys it held at each."""
    n = len(spread_hashes)
    if n < _TREEIFY_LEN:
        return False
    h = np.asarray(spread_hashes).astype(np.int64) & _MASK32
    cap = initial_capacity
    while True:
        held = min(n, cap * _LOAD_NUMERATOR // _LOAD_DENOMINATOR + 1)
        if held >= _TREEIFY_LEN and np.bincount(h[:held] & (cap - 1)).max() >= _TREEIFY_LEN:
            return True
        if held >= n:
            return False
        cap *= 2


class _TreeNode:
    __slots__ = ("key", "hash", "left", "right", "parent", "red")

    def __init__(self, key, h):
        self.key, self.hash = key, h
        self.left = self.right = self.parent = None
        self.red = False


def _rotate(root, p, left):
    """``TreeNode.rotateLeft`` (``left``) or ``rotateRight``: p's child on the
    other side takes p's place, and p becomes that child's ``left``-side child."""
    near, far = ("left", "right") if left else ("right", "left")
    r = getattr(p, far)
    inner = getattr(r, near)
    setattr(p, far, inner)
    if inner is not None:
        inner.parent = p
    r.parent = pp = p.parent
    if pp is None:
        root = r
        r.red = False
    elif getattr(pp, near) is p:
        setattr(pp, near, r)
    else:
        setattr(pp, far, r)
    setattr(r, near, p)
    p.parent = r
    return root


def _balance_insertion(root, x):
    """``HashMap.TreeNode.balanceInsertion``: the red-black fix-up after an
    insert.  Java writes the two mirror cases out; here ``near``/``far`` name
    the sides for whichever side of its grandparent x's parent hangs on."""
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        on_left = xp is xpp.left
        near, far = ("left", "right") if on_left else ("right", "left")
        uncle = getattr(xpp, far)
        if uncle is not None and uncle.red:
            uncle.red = xp.red = False
            xpp.red = True
            x = xpp
            continue
        if x is getattr(xp, far):
            x = xp
            root = _rotate(root, x, on_left)
            xp = x.parent
            xpp = None if xp is None else xp.parent
        if xp is not None:
            xp.red = False
            if xpp is not None:
                xpp.red = True
                root = _rotate(root, xpp, not on_left)


def _signed32(h: int) -> int:
    return h - 0x100000000 if h & 0x80000000 else h


class _TreeBin:
    """A treeified bin: its red-black tree (placement by spread hash as a
    signed int, then the keys' ``compareTo``) and its ``next`` list, which is
    what iteration follows (``moveRootToFront`` puts the root first; a new
    node goes right after its tree parent)."""

    __slots__ = ("root", "order", "less")

    def __init__(self, keys_hashes, less):
        self.less = less
        self.root = None
        self.order = []
        for key, h in keys_hashes:
            self._insert(key, h, after_parent=False)
        self._root_to_front()

    def _insert(self, key, h, after_parent):
        x = _TreeNode(key, h)
        if self.root is None:
            self.root = x
            self.order.append(x)
            return
        hs = _signed32(h)
        p = self.root
        while True:
            ph = _signed32(p.hash)
            if ph > hs:
                left = True
            elif ph < hs:
                left = False
            else:
                # equal hashes: compareTo (keys are never equal here; Java's
                # tieBreakOrder would only be reached by keys comparing equal)
                left = self.less(key, p.key)
            nxt = p.left if left else p.right
            if nxt is None:
                x.parent = p
                if left:
                    p.left = x
                else:
                    p.right = x
                if after_parent:
                    self.order.insert(self.order.index(p) + 1, x)
                else:
                    self.order.append(x)
                self.root = _balance_insertion(self.root, x)
                return
            p = nxt

    def _root_to_front(self):
        if self.order[0] is not self.root:
            self.order.remove(self.root)
            self.order.insert(0, self.root)

    def put(self, key, h):
        self._insert(key, h, after_parent=True)
        self._root_to_front()

    def keys(self):
        return [(n.key, n.hash) for n in self.order]


_UNTREEIFY_LEN = 6


def java_hash_iteration(keys: Sequence, spread_hashes: Sequence[int], initial_capacity: int = 16,
                        less=None) -> List[int]:
    """The positions of ``keys`` (distinct, put in index order into a Java
    HashMap of ``initial_capacity`` slots) in the map's iteration order.

    The plain rule (bucket, then insertion) holds unless a bin ever reaches 9
    keys (:func:`may_crowd`); then this simulates JDK 17's table exactly:
    ``treeifyBin`` doubling tables under 64 slots, tree bins above (red-black
    placement by hash then ``less``, the keys' ``compareTo``), and resizes that
    split tree bins, untreeifying halves of 6 or fewer and re-treeifying the
    rest when both halves are non-empty (``TreeNode.split``)."""
    hashes = np.asarray(spread_hashes, dtype=np.int64) & _MASK32
    n = len(keys)
    if not may_crowd(hashes, initial_capacity):
        cap = _grown(n, initial_capacity) if n else initial_capacity
        return np.argsort(hashes & (cap - 1), kind="stable").tolist()
    if less is None:
        def less(a, b):
            return a < b
    cap = initial_capacity
    table: List = [None] * cap   # None, a list of (index, hash), or a _TreeBin
    size = 0

    def resize(table, cap):
        new_cap = cap * 2
        new = [None] * new_cap
        for b, binv in enumerate(table):
            if binv is None:
                continue
            entries = binv.keys() if isinstance(binv, _TreeBin) else binv
            lo = [e for e in entries if not e[1] & cap]
            hi = [e for e in entries if e[1] & cap]
            if isinstance(binv, _TreeBin):
                for half, other, slot in ((lo, hi, b), (hi, lo, b + cap)):
                    if not half:
                        continue
                    if len(half) <= _UNTREEIFY_LEN:
                        new[slot] = half
                    elif other:
                        new[slot] = _TreeBin(half, binv.less)
                    else:
                        new[slot] = binv
            else:
                if lo:
                    new[b] = lo
                if hi:
                    new[b + cap] = hi
        return new, new_cap

    wrapped_less = (lambda a, b: less(keys[a], keys[b]))
    for i in range(n):
        h = int(hashes[i])
        b = h & (cap - 1)
        binv = table[b]
        if binv is None:
            table[b] = [(i, h)]
        elif isinstance(binv, _TreeBin):
            binv.put(i, h)
        else:
            binv.append((i, h))
            if len(binv) >= _TREEIFY_LEN:
                if cap < _MIN_TREE_TABLE:
                    table, cap = resize(table, cap)
                else:
                    table[b] = _TreeBin(binv, wrapped_less)
        size += 1
        if size > cap * _LOAD_NUMERATOR // _LOAD_DENOMINATOR:
            table, cap = resize(table, cap)
    out: List[int] = []
    for binv in table:
        if binv is not None:
            out.extend(e[0] for e in (binv.keys() if isinstance(binv, _TreeBin) else binv))
    return out


def string_hashmap_iteration(names: Sequence[str]) -> List[int]:
    """Positions of ``names`` in the order of a ``new HashMap<String, ?>()``
    they were put into in index order (tree bins order keys by ``String.compareTo``)."""
    hashes = string_hashes(list(names)).view(np.uint32).astype(np.int64)
    return java_hash_iteration(names, hashes ^ (hashes >> 16), 16, lambda a, b: utf16_key(a) < utf16_key(b))


def uuid_hash_iteration(topic_ids: Sequence[bytes], initial_capacity: int) -> List[int]:
    """Positions of 16-byte Uuids put in index order into a Java hash table of
    ``initial_capacity`` slots, in its iteration order (tree bins by ``Uuid.compareTo``)."""
    h = np.array([uuid_hash(t) for t in topic_ids], dtype=np.int64) & _MASK32
    return java_hash_iteration(topic_ids, h ^ (h >> 16), initial_capacity,
                               lambda a, b: uuid_halves(a) < uuid_halves(b))


def integer_hash_iteration(values: Sequence[int], initial_capacity: int) -> List[int]:
    """Positions of distinct ints put in index order into a ``HashSet<Integer>``
    of ``initial_capacity`` slots, in its iteration order (``Integer.hashCode`` is the value)."""
    h = np.asarray(values, dtype=np.int64) & _MASK32
    return java_hash_iteration(values, h ^ (h >> 16), initial_capacity, lambda a, b: a < b)
