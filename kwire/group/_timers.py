"""Keyed timers on a caller-driven clock.

Kafka's coordinator timer (``CoordinatorTimer``) has one rule the state machines rely on: scheduling a key
that is already scheduled *replaces* it.  Most replacements push a deadline later (every heartbeat re-arms
its member's session timer), so a later deadline only updates the key's entry in a dict and leaves the
heap alone; when the heap's older, earlier entry surfaces, it is pushed back at the key's current
deadline instead of firing.  An earlier deadline, or a new key, pushes a heap entry; entries of cancelled
or re-pushed keys are recognised as stale by their sequence number.  The heap is rebuilt when stale entries
outnumber live keys, so memory stays proportional to the live timers.
"""

import heapq


class Timers:
    __slots__ = ("_heap", "_deadline", "_payload", "_entry", "_seq", "pushes")

    def __init__(self):
        self._heap = []      # (queued deadline, seq, key)
        self._deadline = {}  # key -> the deadline it must fire at
        self._payload = {}   # key -> payload handed back when it fires
        self._entry = {}     # key -> (queued deadline, seq) of its live heap entry
        self._seq = 0
        #: How many deadlines were queued: while it stands still, the next deadline can only move later
        #: (a later deadline, a cancelled or fired key) or stay.
        self.pushes = 0

    def __len__(self):
        return len(self._deadline)

    def schedule(self, key, deadline, payload=None):
        self._deadline[key] = deadline
        self._payload[key] = payload
        entry = self._entry.get(key)
        if entry is not None and entry[0] <= deadline:
            return  # the queued entry surfaces first and is pushed on to the new deadline then
        self._push(key, deadline)

    def _push(self, key, deadline):
        self.pushes += 1
        self._seq += 1
        self._entry[key] = (deadline, self._seq)
        heapq.heappush(self._heap, (deadline, self._seq, key))
        if len(self._heap) > 64 and len(self._heap) > 2 * len(self._entry):
            entry = self._entry
            self._heap = [e for e in self._heap if entry.get(e[2], (None, None))[1] == e[1]]
            heapq.heapify(self._heap)

    def cancel(self, key):
        if key in self._deadline:   # most cancels find nothing (a revocation timer never armed)
            del self._deadline[key]
            self._payload.pop(key, None)
            self._entry.pop(key, None)

    def scheduled(self, key):
        return key in self._deadline

    def _settle_top(self):
        # Drop stale entries and push on entries whose key now wants a later deadline, until the top of
        # the heap is a live key due exactly at its queued time.
        heap, entry, deadlines = self._heap, self._entry, self._deadline
        while heap:
            queued, seq, key = heap[0]
            live = entry.get(key)
            if live is None or live[1] != seq:
                heapq.heappop(heap)
                continue
            wanted = deadlines[key]
            if wanted > queued:
                heapq.heappop(heap)
                self._push(key, wanted)
                continue
            return heap[0]
        return None

    def may_be_due(self, now):
        """A cheap pre-check: False means nothing is due at ``now``.  The raw top of the heap is never
        later than the true next deadline (stale and pushed-on entries are earlier), so True may be a
        false alarm that pop_due() sorts out."""
        heap = self._heap
        return bool(heap) and heap[0][0] <= now

    def next_deadline(self):
        top = self._settle_top()
        return None if top is None else top[0]

    def pop_due(self, now):
        """Remove and return the earliest timer due at ``now`` as ``(key, payload)``, or None.

        One at a time, because firing a timer may schedule or cancel others."""
        top = self._settle_top()
        if top is None or top[0] > now:
            return None
        heapq.heappop(self._heap)
        key = top[2]
        del self._deadline[key], self._entry[key]
        return key, self._payload.pop(key)

    def fire_due(self, now):
        """Every timer due at ``now`` as ``(key, payload)``, earliest first; each is looked up only after the
        previous one was handled, so what firing it schedules or cancels is seen."""
        while True:
            due = self.pop_due(now)
            if due is None:
                return
            yield due
