"""Keyed timers on a caller-driven clock.

Kafka's coordinator timer (``CoordinatorTimer``) has one rule the state machines rely on: scheduling a key
that is already scheduled *replaces* it.  A heap cannot delete from its middle cheaply, so a replaced or
cancelled entry stays in the heap and is recognised as stale when it surfaces (its sequence number is no
longer the key's current one).  The heap is rebuilt when stale entries outnumber live ones, so memory stays
proportional to the live timers even when every heartbeat re-arms a session timer.
"""

import heapq


class Timers:
    __slots__ = ("_heap", "_live", "_seq")

    def __init__(self):
        self._heap = []   # (deadline, seq, key, payload)
        self._live = {}   # key -> seq of its current entry
        self._seq = 0

    def __len__(self):
        return len(self._live)

    def schedule(self, key, deadline, payload=None):
        self._seq += 1
        self._live[key] = self._seq
        heapq.heappush(self._heap, (deadline, self._seq, key, payload))
        if len(self._heap) > 64 and len(self._heap) > 2 * len(self._live):
            self._compact()

    def cancel(self, key):
        self._live.pop(key, None)

    def scheduled(self, key):
        return key in self._live

    def _compact(self):
        live = self._live
        self._heap = [e for e in self._heap if live.get(e[2]) == e[1]]
        heapq.heapify(self._heap)

    def next_deadline(self):
        heap, live = self._heap, self._live
        while heap and live.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def pop_due(self, now):
        """Remove and return the earliest timer due at ``now`` as ``(key, payload)``, or None.

        One at a time, because firing a timer may schedule or cancel others."""
        heap, live = self._heap, self._live
        while heap:
            deadline, seq, key, payload = heap[0]
            if live.get(key) != seq:
                heapq.heappop(heap)
                continue
            if deadline > now:
                return None
            heapq.heappop(heap)
            del live[key]
            return key, payload
        return None
