"""The coordinator's two ways to a target: a small group goes to the assignor's list form
(``uniform_lists``), a large one through the columns and the kernels.  The same traffic gives the same
answers, byte for byte, either way."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.codec import encode_response
from kwire.group import _consumer_target

from .consumer_group_loop import ConsumerLoop

FAST = {"group.consumer.assignment.interval.ms": 0, "group.consumer.min.session.timeout.ms": 1000,
        "group.consumer.session.timeout.ms": 3000, "group.consumer.min.heartbeat.interval.ms": 100,
        "group.consumer.heartbeat.interval.ms": 500}
TOPICS = {"a": 20, "b": 7, "c": 33}


def _answers(ops, small):
    """Every heartbeat answer's bytes and every client event of one run, with the list form on or off."""
    saved = _consumer_target.SMALL_GROUP_MEMBERS
    _consumer_target.SMALL_GROUP_MEMBERS = saved if small else 0
    try:
        loop = ConsumerLoop(TOPICS, FAST)
        answers = []
        heartbeat = loop.coordinator.heartbeat

        def recorded(req, version, now, *args, **kwargs):
            response = heartbeat(req, version, now, *args, **kwargs)
            answers.append(encode_response(response, version, 1))
            return response

        loop.coordinator.heartbeat = recorded
        for op, who, subscription in ops:
            name = f"c{who}"
            present = name in loop.members
            if op == "join" and not present:
                loop.add(name, list(subscription))
            elif op == "leave" and present:
                loop.handle(name, loop.members[name].leave(loop.now))
                del loop.members[name]
            elif op == "subscribe" and present:
                loop.members[name].subscribe(list(subscription))
            for _ in range(3):
                loop.step(150)
        computed = loop.coordinator.assignments_computed
        return answers, [(who, repr(event)) for who, event in loop.events], computed
    finally:
        _consumer_target.SMALL_GROUP_MEMBERS = saved


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["join", "join", "leave", "subscribe"]), st.integers(0, 9),
                          st.sampled_from([("a",), ("b",), ("a", "b"), ("a", "b", "c"), ("c",)])),
                min_size=1, max_size=16))
def test_the_list_form_answers_as_the_columns_do(ops):
    small, columns = _answers(ops, True), _answers(ops, False)
    assert small == columns
