# C types for _sticky_small.py when it is compiled (kwire/_compiled.py): the small cooperative-sticky path's
# work lists and maps as C-typed locals.
cimport cython


@cython.locals(cleaned=dict, rows=list, owned=list)
cpdef small_cooperative_members(read, counts)

@cython.locals(n=Py_ssize_t, by_id=dict, ids=list, order=list, wanted=set, topic_counts=dict, out=dict, seen=set,
               given=Py_ssize_t, groups=dict, mine=list)
cpdef small_cooperative_sticky(members, counts)
