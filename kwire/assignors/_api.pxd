# C types for _api.py when it is compiled (kwire/_compiled.py): the leader's small paths as C calls with
# C-typed work lists.
cimport cython


@cython.locals(entries=list)
cpdef encode_member_assignment(groups, version=*)

@cython.locals(read=list, rows=list)
cpdef _small_range_assignments(join_group_response, partitions_per_topic, version)

@cython.locals(read=list)
cpdef _small_join_members(members)

@cython.locals(read=list, rows=list)
cpdef _small_cooperative_assignments(join_group_response, partitions_per_topic, version)
