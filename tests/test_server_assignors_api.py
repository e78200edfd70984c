"""The server assignors' public surface: the member level as a coordinator
calls it, the array level, the registry and the preferred-assignor rule, and
typed errors (never a crash) on hostile input, in both twins."""

import uuid

import numpy as np
import pytest

import kwire
from kwire.assignors import (
    DEFAULT_SERVER_ASSIGNOR,
    SERVER_ASSIGNORS,
    ServerAssignment,
    ServerGroupArrays,
    ServerMember,
    TopicMetadata,
    assign_server,
    assign_server_arrays,
    compute_preferred_server_assignor,
    get_server_assignor,
    register_server_assignor,
    unregister_server_assignor,
)
from kwire.assignors._javaorder import string_hashmap_order
from kwire.errors import ArgumentTypeError, ArgumentValueError, AssignmentError
from tests._registry import assert_unregistered
from tests._twins import assignor_implementations

IMPLEMENTATIONS = assignor_implementations()
TID = bytes(range(16))
TID2 = bytes(range(16, 32))


def test_the_issue_example():
    target = assign_server(
        "uniform",
        members={"m-1": ServerMember(subscribed_topic_ids=[TID], assignment={TID: [0, 1]}, instance_id=None,
                                     rack=None, unresolved_topic_names=())},
        topics={TID: TopicMetadata(name="orders", partitions=12, partition_racks=None)},
    )
    assert target == {"m-1": {TID: list(range(12))}}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_output_keeps_the_callers_topic_id_form(implementation):
    forms = [TID, uuid.UUID(bytes=TID), "AAECAwQFBgcICQoLDA0ODw"]
    for form in forms:
        for sub_form in forms:
            members = {"a": ServerMember([sub_form], {sub_form: [1]}), "b": ServerMember([sub_form])}
            result = assign_server("uniform", members, {form: TopicMetadata("t", 4)}, implementation=implementation)
            assert result == {"a": {form: [0, 1]}, "b": {form: [2, 3]}}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_members_and_empty_lists_as_java_keeps_them(implementation):
    topics = {TID: TopicMetadata("t", 2), TID2: TopicMetadata("u", 0)}
    # nobody subscribes to anything: Java's result has no member at all
    assert assign_server("uniform", {"a": ServerMember([]), "b": ServerMember([])}, topics,
                         implementation=implementation) == {}
    # range keeps every member, with an empty map when it gets nothing
    assert assign_server("range", {"a": ServerMember([TID2]), "b": ServerMember([TID2])}, topics,
                         implementation=implementation) == {"a": {}, "b": {}}
    # an empty current set of a subscribed topic stays in the uniform result
    members = {"a": ServerMember([TID, TID2], {TID2: []}), "b": ServerMember([TID, TID2])}
    result = assign_server("uniform", members, topics, implementation=implementation)
    assert result["a"][TID2] == []
    assert assign_server("uniform", {}, topics, implementation=implementation) == {}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_an_unchanged_member_gets_its_own_dict_back(implementation, assignor):
    topics = {TID: TopicMetadata("t", 4), TID2: TopicMetadata("u", 2)}
    first = assign_server(assignor, {m: ServerMember([TID, TID2]) for m in "ab"}, topics, implementation=implementation)
    members = {m: ServerMember([TID, TID2], {t: list(ps) for t, ps in a.items()}) for m, a in first.items()}
    again = assign_server(assignor, members, topics, implementation=implementation)
    assert again == first
    assert all(again[m] is members[m].assignment for m in "ab")
    # a change to one member (here: one more member) leaves the others' dicts where they are equal
    members["c"] = ServerMember([TID, TID2])
    third = assign_server(assignor, members, topics, implementation=implementation)
    for m in "ab":
        assert (third[m] is members[m].assignment) == (third[m] == first[m])
    assert third["c"] is not members["c"].assignment


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_current_assignment_that_differs_in_form_is_not_handed_back(implementation):
    topics = {TID: TopicMetadata("t", 2), TID2: TopicMetadata("u", 2)}
    target = {TID: [0], TID2: [0]}
    variants = [
        {TID: [0], TID2: [0], bytes(16): []},                 # a stale entry
        {TID2: [0], TID: [0]},                                # entries in another order
        {uuid.UUID(bytes=TID): [0], TID2: [0]},               # another form of a topic id
        {TID: (0,), TID2: [0]},                               # a tuple
        {TID: [np.int32(0)], TID2: [0]},                      # not a Python int
        {TID: [0, 0], TID2: [0]},                             # a partition listed twice
    ]
    for variant in variants:
        members = {"a": ServerMember([TID, TID2], variant), "b": ServerMember([TID, TID2], {TID: [1], TID2: [1]})}
        result = assign_server("uniform", members, topics, implementation=implementation)
        assert result["a"] == target and list(result["a"]) == [TID, TID2]
        assert result["a"] is not variant
        assert all(type(p) is int for ps in result["a"].values() for p in ps)
        assert result["b"] is members["b"].assignment
    unsorted = {"a": ServerMember([TID], {TID: [1, 0]})}         # equal as a set, but the result lists ascending
    result = assign_server("uniform", unsorted, {TID: TopicMetadata("t", 2)}, implementation=implementation)
    assert result == {"a": {TID: [0, 1]}} and result["a"] is not unsorted["a"].assignment


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_members_of_a_subclass_read_as_any_member(implementation):
    class Tagged(ServerMember):
        @property
        def tag(self):
            return "read through the class, not the slots"

    topics = {TID: TopicMetadata("t", 6)}
    plain = {m: ServerMember([TID], {TID: [i]}) for i, m in enumerate("abc")}
    tagged = {m: Tagged([TID], {TID: [i]}) for i, m in enumerate("abc")}
    expected = assign_server("uniform", plain, topics, implementation=implementation)
    assert assign_server("uniform", tagged, topics, implementation=implementation) == expected
    with pytest.raises(AttributeError):
        ServerMember([TID]).extra = 1       # the fields are slots


def test_unresolved_names_make_a_group_heterogeneous():
    topics = {TID: TopicMetadata("t", 6)}
    alike = {m: ServerMember([TID]) for m in ("a", "b", "c")}
    unlike = dict(alike, c=ServerMember([TID], unresolved_topic_names=("not-yet",)))
    arrays = {}
    for name, members in (("alike", alike), ("unlike", unlike)):
        from kwire.assignors._server_members import server_group
        from kwire.assignors._server import is_homogeneous

        group, _ = server_group(members, topics)
        arrays[name] = is_homogeneous(group, group.member_sub, group.sub_indptr, group.sub_topics)
    assert arrays == {"alike": True, "unlike": False}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_array_level_matches_the_member_level(implementation):
    group = ServerGroupArrays(
        member_ids=["a", "b", "c"], member_sub=np.array([0, 0, 1], dtype=np.int32),
        sub_indptr=np.array([0, 2, 3], dtype=np.int64), sub_topics=np.array([0, 1, 1], dtype=np.int32),
        topic_ids=np.frombuffer(TID + TID2, dtype=np.uint8).reshape(2, 16), partitions=np.array([3, 5], np.int32),
        cur_indptr=np.array([0, 1, 1, 1], dtype=np.int64), cur_topics=np.array([1], dtype=np.int32),
        cur_part_indptr=np.array([0, 2], dtype=np.int64), cur_parts=np.array([4, 0], dtype=np.int32),
    )
    members = {"a": ServerMember([TID, TID2], {TID2: [4, 0]}), "b": ServerMember([TID, TID2]),
               "c": ServerMember([TID2])}
    topics = {TID: TopicMetadata("t", 3), TID2: TopicMetadata("u", 5)}
    for assignor in ("uniform", "range"):
        out = assign_server_arrays(assignor, group, implementation=implementation)
        assert isinstance(out, ServerAssignment)
        expected = assign_server(assignor, members, topics, implementation=implementation)
        keys = [TID, TID2]
        got = {m: {keys[t]: ps for t, ps in out.member(i).items()} for i, m in enumerate("abc") if out.present[i]}
        assert got == expected


def test_registry():
    assert list(SERVER_ASSIGNORS)[:2] == ["uniform", "range"]
    assert DEFAULT_SERVER_ASSIGNOR == "uniform"
    assert get_server_assignor(None).name == "uniform"
    assert get_server_assignor("").name == "uniform"
    assert get_server_assignor("org.apache.kafka.coordinator.group.assignor.UniformAssignor").name == "uniform"
    assert get_server_assignor("org.apache.kafka.coordinator.group.assignor.RangeAssignor").name == "range"
    with pytest.raises(AssignmentError):
        get_server_assignor("sticky")
    calls = []

    def everything_to_the_first(group, implementation=None):
        calls.append(len(group.member_ids))
        return get_server_assignor("range").arrays(group, implementation=implementation)

    register_server_assignor("first", everything_to_the_first, aliases=("com.example.First",))
    try:
        members = {"a": ServerMember([TID])}
        assert assign_server("com.example.First", members, {TID: TopicMetadata("t", 2)}) == {"a": {TID: [0, 1]}}
        assert calls == [1]
    finally:
        unregister_server_assignor("first")
    assert_unregistered(SERVER_ASSIGNORS, "first", unregister_server_assignor,
                        lookup=lambda: get_server_assignor("com.example.First"))


def test_preferred_server_assignor():
    assert compute_preferred_server_assignor({}) == "uniform"
    assert compute_preferred_server_assignor({"range": 2, "uniform": 1}) == "range"
    assert compute_preferred_server_assignor({"range": 1, "uniform": 1}, old="range") == "uniform"
    assert compute_preferred_server_assignor({"uniform": 1}, old="uniform", new="range") == "range"
    assert compute_preferred_server_assignor({"uniform": 1}, old="uniform") == "uniform"   # none left: default
    # a tie goes to the first name in HashMap<String, Integer> order (Stream.max keeps the first maximum)
    names = ["range", "uniform", "sticky-x"]
    assert compute_preferred_server_assignor(dict.fromkeys(names, 3)) == string_hashmap_order(names)[0]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_hostile_member_input_gets_typed_errors(implementation, assignor):
    topics = {TID: TopicMetadata("t", 3)}

    def run(members, topics=topics):
        return assign_server(assignor, members, topics, implementation=implementation)

    with pytest.raises(ArgumentValueError):
        run({"a": ServerMember([TID])}, {TID: TopicMetadata("t", -1)})                  # negative count
    with pytest.raises(ArgumentValueError):
        run({"a": ServerMember([TID])}, {TID: TopicMetadata("t", 2 ** 31)})             # beyond Java's int
    with pytest.raises(ArgumentTypeError):
        run({"a": ServerMember([TID])}, {TID: TopicMetadata("t", "3")})
    with pytest.raises(ArgumentValueError):
        run({"a": ServerMember([TID[:15]])})                                            # a 15-byte topic id
    with pytest.raises(ArgumentValueError):
        run({"a": ServerMember([TID])}, {TID + b"\0": TopicMetadata("t", 3)})
    with pytest.raises(ArgumentValueError):
        run({"a": ServerMember(["not base64 at all!!!!!"])})
    with pytest.raises(ArgumentTypeError):
        run({"a": ServerMember([1234])})
    for assignment, error in (([2 ** 40], ArgumentValueError), (["0"], ArgumentTypeError), ([True], ArgumentTypeError)):
        if assignor == "uniform":
            with pytest.raises(error):
                run({"a": ServerMember([TID], {TID: assignment})})
        else:
            # Kafka's server RangeAssignor never reads the current assignment, and neither does kwire's
            assert run({"a": ServerMember([TID], {TID: assignment})}) == {"a": {TID: [0, 1, 2]}}
    with pytest.raises(ArgumentTypeError):
        run({"a": {"subscribed_topic_ids": [TID]}})
    with pytest.raises(ArgumentTypeError):
        run({7: ServerMember([TID])})
    with pytest.raises(ArgumentValueError):
        run({"a": ServerMember([TID, TID])})                                            # a topic twice
    with pytest.raises(ArgumentValueError):
        run({"a": ServerMember([TID])}, {TID: TopicMetadata("t", 3), uuid.UUID(bytes=TID): TopicMetadata("t", 3)})


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_out_of_range_partitions_follow_java(implementation):
    """Java's own outcomes on current partitions outside the topic: the
    heterogeneous builder indexes an array with them, the homogeneous one
    counts them toward a quota, range ignores them."""
    topics = {TID: TopicMetadata("t", 3), TID2: TopicMetadata("u", 2)}
    hetero = {"a": ServerMember([TID], {TID: [5]}), "b": ServerMember([TID, TID2])}
    with pytest.raises(AssignmentError, match="ArrayIndexOutOfBoundsException: Index 5 out of bounds for length 3"):
        assign_server("uniform", hetero, topics, implementation=implementation)
    homo = {"a": ServerMember([TID], {TID: [-1]}), "b": ServerMember([TID])}
    with pytest.raises(AssignmentError, match="PartitionAssignorException: Partitions were left unassigned"):
        assign_server("uniform", homo, topics, implementation=implementation)
    assert assign_server("range", homo, topics, implementation=implementation) == {"a": {TID: [0, 1]}, "b": {TID: [2]}}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_hostile_arrays_get_typed_errors(implementation):
    def group(**change):
        fields = dict(member_ids=["a", "b"], member_sub=np.zeros(2, np.int32), sub_indptr=np.array([0, 1]),
                      sub_topics=np.zeros(1, np.int32), topic_ids=np.zeros((1, 16), np.uint8),
                      partitions=np.array([4], np.int32))
        fields.update(change)
        return ServerGroupArrays(**fields)

    bad = [
        group(member_ids=["a", "a"]),                                                  # duplicate member ids
        group(partitions=np.array([-2], np.int32)),                                    # negative count
        group(topic_ids=np.zeros((1, 15), np.uint8)),                                  # wrong id length
        group(member_sub=np.array([0, 3], np.int32)),
        group(sub_topics=np.array([9], np.int32)),
        group(sub_indptr=np.array([0, 2])),
        group(sub_indptr=np.array([0, 2]), sub_topics=np.zeros(2, np.int32)),            # a topic twice in a row
        group(cur_indptr=np.array([0, 1, 1]), cur_topics=np.array([5], np.int32),
              cur_part_indptr=np.array([0, 1]), cur_parts=np.array([0], np.int32)),
        group(cur_indptr=np.array([0, 2, 2]), cur_topics=np.array([0, 0], np.int32),
              cur_part_indptr=np.array([0, 1, 2]), cur_parts=np.array([0, 1], np.int32)),
        group(cur_indptr=np.array([0, 1, 1]), cur_topics=np.array([0], np.int32),
              cur_part_indptr=np.array([0, 3]), cur_parts=np.array([0], np.int32)),
        group(partitions=np.array([2.5])),
        group(subscription_type="sideways"),
    ]
    for g in bad:
        for assignor in ("uniform", "range"):
            with pytest.raises(kwire.KwireError):
                assign_server_arrays(assignor, g, implementation=implementation)
