"""The assignor API's input rules: the member-level result type has its own
name, a missing value or an absurd partition total is a typed kwire error
(never a bare TypeError or MemoryError), and strategies can be unregistered."""

import re
from types import SimpleNamespace

import numpy as np
import pytest

import kwire
import kwire.assignors as ka
from kwire.assignors import ArrayGroup, GroupMember, assign, assign_arrays, leader_assignments
from kwire.assignors._arrays import checked_counts
from kwire.codec import JoinGroupResponseMember, Subscription
from kwire.errors import AssignmentError, KwireError
from tests._twins import IMPLS as IMPLEMENTATIONS

STRATEGY_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def test_member_level_result_type_is_not_the_assignment_message():
    assert not hasattr(ka, "Assignment")
    assert "Assignment" not in ka.__all__
    assert ka.MemberAssignments.__origin__ is dict
    # the message keeps the name
    assert kwire.codec.Assignment.decode(kwire.codec.Assignment(assigned_partitions=[]).encode(0)) is not None


def sub(topics=("t",), **kw):
    return Subscription(topics=None if topics is None else list(topics), **kw)


def join_response(*members):
    return SimpleNamespace(members=list(members))


MISSING = {
    "member id": lambda s: assign(s, [GroupMember(None, None, sub())], {"t": 2}),
    "topics": lambda s: assign(s, [GroupMember("a", None, sub(None))], {"t": 2}),
    "a topic": lambda s: assign(s, [GroupMember("a", None, sub([None]))], {"t": 2}),
    "members": lambda s: assign(s, None, {"t": 2}),
    "a member": lambda s: assign(s, [None], {"t": 2}),
    "partitions_per_topic": lambda s: assign(s, [GroupMember("a", None, sub())], None),
    "a partition count": lambda s: assign(s, [GroupMember("a", None, sub())], {"t": None}),
    "a topic key": lambda s: assign(s, [GroupMember("a", None, sub())], {None: 2}),
    "subscription": lambda s: assign(s, [GroupMember("a", None, None)], {"t": 2}),
    "strategy": lambda s: assign(None, [GroupMember("a", None, sub())], {"t": 2}),
    "join response": lambda s: leader_assignments(s, None, {"t": 2}),
    "join response members": lambda s: leader_assignments(s, SimpleNamespace(members=None), {"t": 2}),
    "a join member": lambda s: leader_assignments(s, join_response(None), {"t": 2}),
    "metadata": lambda s: leader_assignments(s, join_response(JoinGroupResponseMember(member_id="a", metadata=None)), {"t": 2}),
    "join member id": lambda s: leader_assignments(
        s, join_response(JoinGroupResponseMember(member_id=None, metadata=sub().encode(0))), {"t": 2}
    ),
    "ArrayGroup topics": lambda s: assign_arrays(s, ArrayGroup(None, [1], ["a"], [0, 1], [0])),
    "ArrayGroup counts": lambda s: assign_arrays(s, ArrayGroup(["t"], None, ["a"], [0, 1], [0])),
    "ArrayGroup member ids": lambda s: assign_arrays(s, ArrayGroup(["t"], [1], None, [0, 1], [0])),
    "ArrayGroup sub_indptr": lambda s: assign_arrays(s, ArrayGroup(["t"], [1], ["a"], None, [0])),
    "ArrayGroup sub_topics": lambda s: assign_arrays(s, ArrayGroup(["t"], [1], ["a"], [0, 1], None)),
    "ArrayGroup a member id": lambda s: assign_arrays(s, ArrayGroup(["t"], [1], [None], [0, 1], [0])),
    "ArrayGroup a count": lambda s: assign_arrays(s, ArrayGroup(["t"], [None], ["a"], [0, 1], [0])),
}


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@pytest.mark.parametrize("what", sorted(MISSING))
def test_none_where_a_value_is_required_is_a_typed_error(strategy, what):
    with pytest.raises(KwireError):
        MISSING[what](strategy)


HUGE = {
    "one topic of 2^31-1": lambda s: assign(s, [GroupMember("a", None, sub())], {"t": 2**31 - 1}),
    "two topics past int32": lambda s: assign(s, [GroupMember("a", None, sub(["t", "u"]))], {"t": 2**30, "u": 2**30}),
    "ArrayGroup of 2^31-1": lambda s: assign_arrays(s, ArrayGroup(["t"], [2**31 - 1], ["a"], [0, 1], [0])),
    "leader of 2^31-1": lambda s: leader_assignments(
        s, join_response(JoinGroupResponseMember(member_id="a", metadata=sub().encode(0))), {"t": 2**31 - 1}
    ),
}


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@pytest.mark.parametrize("what", sorted(HUGE))
def test_partition_totals_past_the_cap_are_refused_before_allocating(strategy, what):
    import resource

    # A refusal costs nothing; allocating would need gigabytes.  Cap the
    # address space at 2 GiB past what the process maps now, so a missing
    # refusal fails fast as a MemoryError instead of swapping.
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as status:
        mapped_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = (mapped_kib << 10) + (2 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    try:
        with pytest.raises(AssignmentError, match="partitions"):
            HUGE[what](strategy)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class _Name(str):
    pass


@pytest.mark.parametrize(
    "member_ids, instance_ids, racks, error",
    [
        (["a", "b"], None, None, None),
        ([_Name("a"), "b"], [_Name("i"), None], [None, _Name("r")], None),
        (["a", 7], None, None, "member ids must be str, got 7"),
        (["a", "b", "a"], None, None, "member id 'a' appears more than once"),
        (["a", "b"], [None, b"i"], None, "group_instance_ids entries must be str or None, got b'i'"),
        (["a", "b"], None, ["r", 0], "racks entries must be str or None, got 0"),
        (["a", "b"], ["i"], None, "group_instance_ids has 1 entries for 2 members"),
    ],
)
def test_array_group_checks_its_members(member_ids, instance_ids, racks, error):
    def build():
        M = len(member_ids)
        return ArrayGroup(["t"], [1], member_ids, np.zeros(M + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
                          group_instance_ids=instance_ids, racks=racks)

    if error is None:
        build().check_members()
    else:
        with pytest.raises(AssignmentError, match=re.escape(error)):
            build()


class _Name(str):
    pass


@pytest.mark.parametrize("counts, error", [
    ({"a": 1, "b": -1}, "partition count of 'b' must be a non-negative int32, got -1"),
    ({"a": 1, "b": 2**31}, "partition count of 'b' must be a non-negative int32, got 2147483648"),
    ({"a": 1, "b": 2**70}, "partition count of 'b' must be a non-negative int32, got 1180591620717411303424"),
    ({"a": True}, "partition count of 'a' must be a non-negative int32, got True"),
    ({"a": 1.0}, "partition count of 'a' must be a non-negative int32, got 1.0"),
    ({"a": None}, "partition count of 'a' must be a non-negative int32, got None"),
    ({1: 3}, "topic names must be str, got 1"),
    ({"a": 1, b"b": 3}, "topic names must be str, got b'b'"),
    ({"a": 0, "b": 2**31 - 1, _Name("c"): np.int32(4), "d": np.int64(5)}, None),
    ({}, None),
])
def test_partition_counts_are_checked_name_by_name_or_all_at_once_alike(counts, error):
    """A mapping of plain names and ints is checked in C loops; anything else name by name.  Both give the
    same dict, or the same error for the first bad entry."""
    if error is None:
        assert checked_counts(counts) == counts and checked_counts(counts) is not counts
    else:
        with pytest.raises(AssignmentError, match=re.escape(error)):
            checked_counts(counts)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_import_kernels_imports_every_kernel_of_the_package(impl):
    # In a fresh process (this one may have imported them already): every kernel the package ships, one pure
    # twin per kernel, is imported by import_kernels in the form asked for, and nothing else of theirs.
    import glob
    import os
    import subprocess
    import sys

    folder = os.path.dirname(ka.__file__)
    twins = sorted(os.path.basename(p)[1:-len("_py.py")] for p in glob.glob(os.path.join(folder, "_*_py.py")))
    suffix = "_c" if impl == "cython" else "_py"
    code = ("import sys\nfrom kwire.assignors import import_kernels\nimport_kernels(%r)\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('kwire.assignors._') and m.endswith(%r))))"
            % (impl, suffix))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == [f"kwire.assignors._{name}{suffix}" for name in twins]
    assert len(twins) >= 4
