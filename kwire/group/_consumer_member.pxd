# C types for _consumer_member.py when it is compiled (kwire/_compiled.py): the member's fields as C struct
# slots and its methods as C calls, so a heartbeat's many reads of the member's own state are not dict
# lookups.  The .py stays the source of behaviour; this file only declares.
cimport cython

cdef class ConsumerProtocolMember:
    cdef public object group_id, instance_id, rebalance_timeout_ms, server_assignor
    cdef public object retry_backoff_ms, retry_backoff_max_ms
    cdef public object state, member_id, member_epoch, heartbeat_interval_ms, subscription, assignment
    cdef public object _assignment_epoch, _target, _target_topics
    cdef public dict _topic_names
    cdef public object _next_send, _last_sent_at, _backoff_until, _attempts, _in_flight, _tokens
    cdef public set _leave_tokens
    cdef public object _sent, _coordinator_known, _pending_leave_epoch, _stale_after_leave

    cpdef _to(self, state)
    cpdef set_topic_names(self, topic_names)
    cpdef leave(self, now)
    cpdef poll_timeout_expired(self, now)
    cpdef rejoin(self, now)
    cpdef coordinator_found(self, now)
    cpdef next_deadline(self)
    cpdef poll(self, now)
    cpdef receive(self, token, response, now)
    cpdef request_failed(self, token, now)
    cpdef _join(self)
    cpdef _back_off(self, now, skip=*)
    cpdef _on_error(self, code, message, now, out)
    cpdef _fenced(self, out)
    cpdef _fatal(self, code, message, out)
    cpdef _drop_all(self, out, lost)
    @cython.locals(names=dict)
    cpdef _resolved(self, tps)
    @cython.locals(names=dict)
    cpdef _reconcile(self, out)
    @cython.locals(by_topic=dict)
    cpdef _topic_partitions(self)
    cpdef _send_heartbeat(self, now)
    cpdef _send_leave(self)
    cpdef _finish_leave(self, out)
