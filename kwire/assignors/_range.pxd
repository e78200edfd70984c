# C types for _range.py when it is compiled (kwire/_compiled.py): the leader's small range path as C calls
# with C-typed work lists and maps.
cimport cython


cpdef list _small_map_order(keys)

@cython.locals(by_id=dict, in_map=list, inserted=list, with_partitions=list, out=dict, subscribers=list,
               order=list, start=Py_ssize_t, n=Py_ssize_t, k=Py_ssize_t, quota=Py_ssize_t, extra=Py_ssize_t)
cpdef small_range(members, counts)
