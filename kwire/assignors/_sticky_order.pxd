# C types for _sticky_order.py when it is compiled (kwire/_compiled.py): the balancing search and the
# movements it records as struct slots and C methods, the steps' work lists, sets and maps as C-typed locals.
cimport cython


@cython.final
cdef class _Movements:
    cdef public dict by_topic, pair_of

    @cython.locals(sets=dict)
    cpdef _drop(self, tp)
    @cython.locals(sets=dict)
    cpdef _record(self, tp, pair)
    cpdef move(self, tp, src, dst)
    @cython.locals(sets=dict)
    cpdef substitute(self, tp, src, dst)


@cython.locals(all_equal=bint, first_topics=set, owned=dict, claimant=dict, contested=set, proto_gen=dict,
               mine=list)
cpdef resolve_owners(members_in_order, dict counts)
cpdef _remove_first(list lst, item)
@cython.locals(out=list, end=Py_ssize_t, k=Py_ssize_t)
cpdef list _walk_unassigned(list all_sorted, list assigned_sorted)
@cython.locals(lst=list)
cpdef Py_ssize_t _give(dict result, set revoked, set contested, dict transferring, tp, mid) except? -1

@cython.locals(n=Py_ssize_t, lo=Py_ssize_t, hi=Py_ssize_t, n_over=Py_ssize_t, over=Py_ssize_t, result=dict,
               kept_all=list, revoked=set, under=list, at_min=list, plain=bint, mine=list, everything=list,
               kept_sorted=list, todo=list, transferring=dict, cursor=Py_ssize_t, rest=list, k=Py_ssize_t,
               size=Py_ssize_t, pos=Py_ssize_t, from_under=bint)
cpdef constrained_assign(order, dict owned, set contested, dict counts, racks)


@cython.final
cdef class _General:
    cdef public object order, by_id, racks, max_gen, total, balanced_at, move_budget
    cdef public dict counts, topic_members, member_topics, current, holder, topic_position, rank
    cdef public list all_partitions
    cdef public set active
    cdef public bint revocation_required, balanced_was
    cdef public _Movements moves
    cdef public Py_ssize_t moves_made

    cpdef _key(self, mid)
    @cython.locals(active=set, current=dict, rank=dict)
    cpdef _first_taking(self, topic, tp=*)
    @cython.locals(topics=list)
    cpdef _max_size(self, mid)
    @cython.locals(place=dict, assigned=list, unassigned=list)
    cpdef build(self)
    @cython.locals(prev=dict)
    cpdef _previous_owners(self)
    @cython.locals(kept=list, subs=set, keep=list, rack_aware=bint)
    cpdef list _keep_owned(self)
    @cython.locals(left=list)
    cpdef list _assign_new(self, list todo, bint use_racks)
    @cython.locals(initializing=bint, todo=list, movable_topics=set, reassignable=list, fixed=dict, saved=dict,
                   saved_holder=dict, changed=bint)
    cpdef _balance(self, prev, list unassigned)
    @cython.locals(mine=list)
    cpdef bint _can_move(self, mid, set movable_topics) except? -1
    @cython.locals(lst=list)
    cpdef Py_ssize_t _size(self, mid) except? -1
    @cython.locals(sizes=list, current=dict, holder_of=dict, shared=bint)
    cpdef bint _balanced(self) except? -1
    @cython.locals(held=dict, counts=dict, member_topics=dict)
    cpdef bint _every_partition_held(self, dict holder_of) except? -1
    @cython.locals(top=dict, counts=dict, n=Py_ssize_t, e=list, lst=list)
    cpdef bint _balanced_by_topic(self) except? -1
    @cython.locals(mine=list, n=Py_ssize_t, have=set)
    cpdef bint _balanced_by_partition(self, dict holder_of) except? -1
    @cython.locals(performed=bint, modified=bint, moved=bint, load=Py_ssize_t)
    cpdef bint _reassign(self, list partitions, prev) except? -1
    cpdef _move_to_best(self, tp)
    cpdef _move(self, tp, dst)


cpdef _withhold(dict assignment, dict transferring)
@cython.locals(added=dict, revoked=set, mine=list, owned_set=set, mine_set=set)
cpdef _computed_transfers(order, by_id, dict assignment)
cpdef assign_in_order(order, by_id, counts, racks, bint cooperative)
