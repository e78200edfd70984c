# C types for _consumer_target.py when it is compiled (kwire/_compiled.py): the columns a target is computed
# from as a C type, and the group and members compute_target reads typed as their classes.
cimport cython

from kwire.group._consumer_group cimport ConsumerGroup, ConsumerGroupMember


cdef class _Columns:
    cdef public object read_assignment
    cdef public list keys, counts, names, member_ids, member_sub, instance_ids, racks, current
    cdef public dict ids, index, rows, by_names

    cpdef add(self, member_id, names, instance_id, rack, current_target)
    cpdef _topic(self, tid)
    cpdef sub_rows(self)
    cpdef small(self)
    cpdef lists_targets(self, lists)


@cython.locals(group=ConsumerGroup, m=ConsumerGroupMember, old=ConsumerGroupMember, columns=_Columns)
cpdef compute_target(group, metadata, default_assignor, change=*)
