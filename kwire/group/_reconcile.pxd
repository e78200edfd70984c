# C types for _reconcile.py when it is compiled (kwire/_compiled.py): the assignments and the partition ->
# epoch map as dicts, so that their lookups are C calls, and the steps of the build as C functions.
cimport cython


cpdef owned_map(topic_partitions)
cpdef owns_any(dict owned, dict partitions)

@cython.locals(keep=dict, revoke=dict, give=dict, held=dict)
cpdef _next_assignment(e, previous, dict assigned, target_epoch, dict target, owned, dict partition_epochs)

cpdef _from_stable(epoch, assigned, pending, target_epoch, target, owned, partition_epochs)
cpdef _from_unrevoked(epoch, assigned, pending, target_epoch, target, owned, partition_epochs)
cpdef _from_unreleased(epoch, assigned, pending, target_epoch, target, owned, partition_epochs)
cpdef _from_unknown(epoch, assigned, pending, target_epoch, target, owned, partition_epochs)
cpdef reconcile(state, epoch, assigned, pending, target_epoch, target, owned, partition_epochs)
