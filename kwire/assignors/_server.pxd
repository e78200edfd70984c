# C types for _server.py when it is compiled (kwire/_compiled.py): the uniform assignor's list form, which a
# coordinator calls at every epoch bump of a small group, as a C function with C-typed work lists.
cimport cython


cpdef _small_map_order(member_ids, implementation)

@cython.locals(m_count=Py_ssize_t, order=list, subscribed=list)
cpdef uniform_lists(member_ids, member_sub, rows, keys, partitions, current, homogeneous, implementation=*,
                    by_id=*)
