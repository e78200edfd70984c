"""What a simulated rebalance cost: who consumes each partition, integrated over simulated time.

Both simulations of the migration what-if (:mod:`kwire.pipeline._migrate_consumer` and
:mod:`kwire.pipeline._migrate_classic`) tell a :class:`Ledger` when a member starts or stops consuming a
partition, when a member's subscription counts or stops counting, and when the group becomes stable; the
ledger turns that into the two measures of a stall per observed rebalance (docs/PIPELINE.md):

* **partition-seconds unowned**: the integral over time of the number of partitions that some live member
  subscribes to and that no member consumes.  It is kept as a running count, so each change costs O(1);
  the integral is credited to the observed rebalance of the latest history event (its window), so a
  simulated stall lands beside the observed rebalance that caused it.
* **time to stable**: from a rebalance's first history event to the first moment after it at which the
  simulation says the group is stable; rebalances whose events overlap share that moment.

Times are on the simulation's clock, in the unit it says (``unit_us`` µs).
"""

from __future__ import annotations

from typing import List, NamedTuple

import numpy as np


class SimulatedStall(NamedTuple):
    """One group's simulation under one protocol, per observed rebalance of its history."""

    #: The simulated protocol: "consumer", "classic-eager" or "classic-cooperative".
    protocol: str
    #: float64 per rebalance: partition-seconds unowned.
    unowned_ps: np.ndarray
    #: int64 per rebalance: time to stable, µs; -1 when the simulation never became stable again.
    stable_us: np.ndarray
    #: int64 per rebalance: member-events (requests the coordinator handled) within its window.
    member_events: np.ndarray

    @property
    def total_member_events(self) -> int:
        return int(self.member_events.sum())


class Ledger:
    """Ownership and stability bookkeeping for one simulated group of ``partition_counts`` topics."""

    __slots__ = ("counts", "consumers", "free", "subscribers", "unowned", "last_t", "current", "acc", "events",
                 "starts", "stable", "open", "owned_by", "unit_us")

    def __init__(self, partition_counts, n_rebalances, unit_us=1):
        self.unit_us = unit_us
        # An array's values read once as Python ints (numpy's scalar access costs several times a list's).
        self.counts = [int(c) for c in (partition_counts.tolist() if hasattr(partition_counts, "tolist")
                                        else partition_counts)]
        #: per topic, per partition: how many members consume it (0 or 1 in a correct protocol)
        self.consumers = [[0] * c for c in self.counts]
        #: per topic: its partitions no member consumes
        self.free = list(self.counts)
        #: per topic: how many live members subscribe to it
        self.subscribers = [0] * len(self.counts)
        self.unowned = 0          # partitions of subscribed topics that no member consumes
        self.last_t = None
        self.current = -1         # the observed rebalance whose window the clock is in
        # Per rebalance, as Python lists (a replay updates them one item at a time; numpy's scalar access
        # costs several times a list's): partition-units of time, member-events, the first history event's
        # time (None: not started) and the time to stable (-1: not stable).
        self.acc = [0.0] * n_rebalances
        self.events = [0] * n_rebalances
        self.starts = [None] * n_rebalances
        self.stable = [-1] * n_rebalances
        self.open: List[int] = []  # rebalances not yet stable
        #: member key -> set of (topic, partition) it consumes
        self.owned_by = {}

    def advance(self, t):
        """Credit the unowned partitions up to ``t`` to the current rebalance."""
        last = self.last_t
        if last is not None and t > last and self.unowned and self.current >= 0:
            self.acc[self.current] += self.unowned * (t - last)
        if last is None or t > last:
            self.last_t = t

    def enter(self, rebalance, t):
        """A history event of observed rebalance ``rebalance`` (-1: none) happens at ``t``."""
        self.advance(t)
        if rebalance < 0:
            return
        self.current = rebalance
        if self.starts[rebalance] is None:
            self.starts[rebalance] = float(t)
        if rebalance not in self.open:
            # A later event of a rebalance that had settled (a second joiner): it settles again later.
            self.open.append(rebalance)

    def subscribe(self, topics, t, delta):
        """A live member's subscription starts (``delta`` 1) or stops (-1) counting at ``t``."""
        self.advance(t)
        subscribers, free = self.subscribers, self.free
        for k in topics:
            before = subscribers[k]
            subscribers[k] = before + delta
            if before == 0 and delta > 0:
                self.unowned += free[k]
            elif before + delta == 0:
                self.unowned -= free[k]

    def consume(self, member, tps, t):
        """``member`` starts consuming ``tps`` ((topic index, partition) pairs) at ``t``."""
        if not tps:
            return
        self.advance(t)
        mine = self.owned_by.setdefault(member, set())
        consumers, free, subscribers = self.consumers, self.free, self.subscribers
        counts = self.counts
        owned = 0
        for tp in tps:
            if tp in mine:
                continue   # already consumed
            k, p = tp
            if not 0 <= p < counts[k]:
                continue   # beyond the topic's size (nothing to count)
            mine.add(tp)
            row = consumers[k]
            if row[p] == 0:
                free[k] -= 1
                if subscribers[k]:
                    owned += 1
            row[p] += 1
        self.unowned -= owned

    def release(self, member, tps, t):
        """``member`` stops consuming ``tps`` at ``t`` (None: everything it consumes)."""
        mine = self.owned_by.get(member)
        if not mine:
            return
        self.advance(t)
        if tps is None:
            tps = list(mine)
        consumers, free, subscribers = self.consumers, self.free, self.subscribers
        freed = 0
        for tp in tps:
            if tp not in mine:
                continue
            mine.discard(tp)
            k, p = tp
            row = consumers[k]
            row[p] -= 1
            if row[p] == 0:
                free[k] += 1
                if subscribers[k]:
                    freed += 1
        self.unowned += freed

    def consumed(self, member):
        return self.owned_by.get(member, set())

    def double_owned(self) -> bool:
        """Whether some partition has two consumers now (a protocol's invariant broken)."""
        return any(c > 1 for row in self.consumers for c in row)

    def settle(self, t):
        """The group is stable at ``t``: every open rebalance's time to stable ends here."""
        self.advance(t)
        for r in self.open:
            self.stable[r] = round((t - self.starts[r]) * self.unit_us)
        self.open.clear()

    def result(self, protocol, t_end) -> SimulatedStall:
        """The stall per rebalance up to ``t_end``.  A rebalance none of whose history events happened here
        (a cooperative follow-up generation, which has none) took no time to become stable."""
        self.advance(t_end)
        stable = np.array([0 if start is None else s for s, start in zip(self.stable, self.starts)], np.int64)
        return SimulatedStall(protocol, np.array(self.acc, np.float64) * (self.unit_us / 1e6), stable,
                              np.array(self.events, np.int64))
