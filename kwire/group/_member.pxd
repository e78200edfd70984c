# C types for _member.py when Cython compiles it (kwire/_compiled.py): a ConsumerMember's fields are C slots
# (read at C speed by its own methods, and by a caller that knows it holds a ConsumerMember), and the steps a
# request or response goes through are C calls.  Every field stays readable and settable from Python.
cimport cython


cdef class ConsumerMember:
    # A public class: instances still take other attributes and weak references, as the Python class's do.
    cdef dict __dict__
    cdef object __weakref__
    cdef public object versions, group_id, client_id, group_instance_id, assignors, protocol
    cdef public object session_timeout_ms, rebalance_timeout_ms, heartbeat_interval_ms, retry_backoff_ms
    cdef public object retry_backoff_max_ms, rack_id, partitions_per_topic, _rng, topics, state, coordinator
    cdef public object leader_id, owned, _last_assignment, _joined_topics, _find_token, _join_token
    cdef public object _sync_token, _heartbeat_token, _retry_at, _find_attempts, _heartbeat_due
    cdef public object _heartbeat_attempts, _session_deadline, _metadata_cache
    cdef public tuple generation
    cdef public list _out
    cdef public dict _inflight
    cdef public long _tokens
    cdef public bint _rejoin_needed, _needs_join_prepare, _heartbeat_enabled

    cpdef list poll(self, now)
    cpdef next_deadline(self)
    cpdef list receive(self, token, response, now)
    cpdef _send(self, kind, request, version, to_coordinator=*)
    cpdef list _drain(self)
    cpdef _send_join_group(self)
    cpdef _all_metadata(self)
    cpdef _on_join_complete(self, assignment_bytes)
    cpdef _to(self, target)
    cpdef _request_rejoin(self)
    cpdef _reset(self, reset_member_id)
    cpdef _enable_heartbeat(self, now)
    cpdef _retry_join(self, now)
    cpdef _coordinator_unknown(self, now, backoff=*)
