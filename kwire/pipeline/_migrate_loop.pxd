# C types for _migrate_loop.py when Cython compiles it (kwire/_compiled.py): the replay's clock, its members
# and its ledger are C-level objects, and the loop's steps (handle, outputs, schedule_poll, request, respond)
# and the protocol hooks (send, deliver, tick, ...) are C calls, overridden by the protocol modules' cdef
# subclasses (_migrate_classic.pxd, _migrate_consumer.pxd).  Times are C doubles: the clock's values are ms as
# floats (a deadline a state machine gives as an int is the same number).
cimport cython

from kwire.pipeline._migrate_ledger cimport Ledger


cdef class Member:
    cdef public object machine, index, key, topics, poll_at
    cdef public double latency
    cdef public long version
    cdef public bint live


cdef class Replay:
    cdef public object h, topic_index, tick_at, t0, coordinator, protocol
    cdef public double interval, offset, settle
    cdef public list names, heap
    cdef public Ledger ledger
    cdef public long seq, in_flight
    cdef public dict members, incarnations
    cdef public set silent

    cpdef make_machine(self, key, index, topic_names)
    cpdef send(self, Member m, out, double t)
    cpdef deliver(self, Member m, token, request, double t)
    cpdef leave(self, Member m, double t)
    cpdef silent_id(self, Member m)
    cpdef bint settled(self)
    cpdef bint steady(self, Member m)
    cpdef push(self, double t, kind, a=*, b=*, c=*)
    @cython.locals(t=double, next_history=double, head=double, interval2=double, i=Py_ssize_t, n=Py_ssize_t,
                   steps=cython.longlong, budget=cython.longlong, heap=list, ledger=Ledger, at=list, entry=tuple)
    cpdef run(self)
    cpdef bint quiet(self)
    @cython.locals(m=Member)
    cpdef bint all_steady(self)
    cpdef skip_steady(self, now, next_history)   # Python floats: `//` as Python floors it
    @cython.locals(ledger=Ledger, m=Member)
    cpdef history_event(self, double t, index, kind, topics, rebalance)
    cpdef gone(self, Member m, double t)
    @cython.locals(m=Member)
    cpdef join(self, double t, index, topics)
    @cython.locals(t=double, ledger=Ledger, m=Member)
    cpdef handle(self, tuple entry)
    cpdef respond(self, Member m, token, response, double t)
    cpdef request(self, Member m, token, payload, double t)
    cpdef tick(self, double t)
    cpdef after_coordinator(self, double t)
    @cython.locals(ledger=Ledger)
    cpdef outputs(self, Member m, outs, double t)
    cpdef schedule_poll(self, Member m, double t)
