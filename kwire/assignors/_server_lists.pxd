# C types for _server_lists.py when it is compiled (kwire/_compiled.py): the builders' work lists, maps and
# counters as C-typed locals, the balancer's ranges as struct slots, and the helpers as C calls.
cimport cython


@cython.locals(counts=dict)
cpdef _plain_order(list buckets)

@cython.locals(cap=Py_ssize_t, mask=Py_ssize_t, k=Py_ssize_t, ordered=list, distinct=list, buckets=list)
cpdef set_order(parts)

@cython.locals(spreads=dict, buckets=list)
cpdef entry_order(keys, entries)

@cython.locals(m_count=Py_ssize_t, insub=set, assigned=dict, unassigned=list, total=Py_ssize_t,
               min_quota=Py_ssize_t, extra=Py_ssize_t, got=list, unfilled=list, quota=Py_ssize_t, mine=dict,
               i=Py_ssize_t, q=Py_ssize_t, take=list)
cpdef homogeneous_lists(order, subscribed, keys, partitions, current)


@cython.final
cdef class _Balancer:
    cdef public list size, sorted
    cdef public Py_ssize_t n, least_end, least_level, next_least_i, most_start, most_end, most_level, next_most_i

    @cython.locals(size=list, s=list, n=Py_ssize_t)
    cpdef Py_ssize_t init(self, members) except? -1
    @cython.locals(size=list, s=list)
    cpdef next_least(self)
    @cython.locals(size=list, s=list)
    cpdef next_most(self)
    @cython.locals(s=list, j=Py_ssize_t)
    cpdef exclude(self)
    cpdef bint balanced(self)


cpdef _topic_sort_key(t, partitions, subs, keys)
@cython.locals(decorated=list)
cpdef list _sorted_topics(list topics, partitions, subs, keys)
cpdef bint _out_of_range(entries, set wanted, partitions) except? -1
@cython.locals(holders=set)
cpdef _give(dict owner, list size, dict dup, t, p, i)
cpdef _move(dict owner, list size, dict dup, set removed_from, t, p, i)

@cython.locals(m_count=Py_ssize_t, subs=dict, size=list, owner=dict, dup=dict, kept_empty=set, removed_from=set,
               i=Py_ssize_t, wanted=set, walk=list, own=list, balancer=_Balancer, free_topics=list, shared=list,
               last=Py_ssize_t, k=Py_ssize_t, moved=Py_ssize_t, got=list, mine=dict)
cpdef heterogeneous_lists(order, member_sub, rows, keys, partitions, current)

@cython.locals(parts=list, start=dict, end=dict, moved=Py_ssize_t, k=Py_ssize_t)
cpdef Py_ssize_t _balance_topic(t, list own, members, _Balancer balancer, dict owner, list size, dict dup,
                                set removed_from) except? -1
