# C types for _javaorder.py when it is compiled (kwire/_compiled.py): the small groups' Java orders and
# hashes as C functions, String.hashCode's loop over C integers.
cimport cython


cpdef _plain_order_holds(names)
cpdef java_sorted(names)
@cython.locals(static=list, dynamic=list)
cpdef member_info_order(instance_ids, member_ids, visit_order=*)
cpdef _to_int32(x)
@cython.locals(h=Py_ssize_t, mask=Py_ssize_t, i=Py_ssize_t, data=bytes)
cpdef string_hash(s)
cpdef topic_partition_hash(topic, partition)
cpdef spread(h)
cpdef remembered_hash(name)
cpdef remembered_spread(name)
@cython.locals(buckets=list)
cpdef small_string_map_positions(keys, capacity)
cpdef _grown(size, cap)
cpdef capacity_after(size, initial_capacity=*)
