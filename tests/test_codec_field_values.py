"""What a field gives back is what was put in it, in both twins (the memory a field keeps).

The compiled classes keep an integer field as a C value and an empty decoded array as a shared marker (see
``class_def`` in kwire/codec/_codegen_classes.py); the pure twin keeps every value as given.  Whatever a user assigns
must read back, compare, print, pickle and encode (or fail to) exactly as in the pure twin."""

import copy
import enum
import pickle
import sys

import pytest

import kwire

from tests._twins import CODECS, IMPLS
from tests._twins import same_in_both as _same_in_both


class Code(enum.IntEnum):
    NOT_COORDINATOR = 16


class MyInt(int):
    pass


# Each kind of value an integer field may be given: in and out of its range, of int subclasses and of
# other types.  A float that is NaN compares unequal to itself in both twins.
VALUES = [0, -1, 1, 1000, -1000, 32767, -32768, 32768, -32769, 2**31 - 1, -2**31, 2**31, 2**63 - 1, -2**63,
          2**63, 2**100, True, False, Code.NOT_COORDINATOR, MyInt(7), MyInt(2**40), None, 1.0, float("nan"), "3",
          b"\x01", [1]]


def _read(value):
    """What reading a field back shows about it: its type and value (``is``-identity for all but exact ints,
    which a C slot makes anew on each read)."""
    return type(value).__name__, repr(value)


# (a message's maker, the path to an integer field in it, how to encode it): int8, int16, int32, int64, a
# tagged int64 with a default of -1, and an element's field.
FIELDS = [
    ("FindCoordinatorRequest", lambda c: c.FindCoordinatorRequest(key="g"), (), "key_type", [0, 1, 3, 6]),
    ("ApiVersionsResponse", lambda c: c.ApiVersionsResponse(), (), "error_code", [0, 3, 4]),
    ("HeartbeatRequest", lambda c: c.HeartbeatRequest(group_id="g", member_id="m"), (), "generation_id", [0, 4]),
    ("ApiVersionsResponse", lambda c: c.ApiVersionsResponse(), (), "finalized_features_epoch", [0, 3]),
    ("ApiVersionsResponse", lambda c: c.ApiVersionsResponse(api_keys=[c.ApiVersionsResponse.ApiVersion()]),
     ("api_keys", 0), "max_version", [0, 3]),
    ("OffsetCommitRequest",
     lambda c: c.OffsetCommitRequest(group_id="g", topics=[c.OffsetCommitRequest.OffsetCommitRequestTopic(
         name="t", partitions=[c.OffsetCommitRequest.OffsetCommitRequestPartition()])]),
     ("topics", 0, "partitions", 0), "committed_offset", [1, 8]),
]


def _holder(msg, path):
    obj = msg
    for step in path:
        obj = obj[step] if isinstance(step, int) else getattr(obj, step)
    return obj


@pytest.mark.parametrize("value", VALUES, ids=repr)
@pytest.mark.parametrize("case", FIELDS, ids=lambda c: f"{c[0]}.{c[3]}")
def test_an_assigned_value_reads_compares_and_encodes_as_in_the_pure_twin(case, value):
    _name, make, path, attr, versions = case

    def assigned(codec):
        msg = make(codec)
        setattr(_holder(msg, path), attr, value)
        return msg

    for codec in CODECS:
        got = getattr(_holder(assigned(codec), path), attr)
        if type(value) is int:
            assert type(got) is int and got == value
        else:
            assert got is value
    _same_in_both(lambda c: lambda: repr(assigned(c)))
    _same_in_both(lambda c: lambda: (assigned(c) == assigned(c), assigned(c) != make(c), make(c) == assigned(c)))
    for version in versions:
        _same_in_both(lambda c: lambda: assigned(c).encode(version))
    for codec in CODECS:
        # Pickle finds a class by its module and name, so only the selected twin's messages pickle, and the
        # pure twin's only where ``kwire`` itself exports them; both twins copy.
        msg = assigned(codec)
        found = getattr(sys.modules[type(msg).__module__], type(msg).__qualname__, None) is type(msg)
        pickled = [pickle.loads(pickle.dumps(msg))] if codec is kwire.codec._codec and found else []
        for twin in (*pickled, copy.copy(assigned(codec)), copy.deepcopy(assigned(codec))):
            assert _read(getattr(_holder(twin, path), attr)) == _read(value)


@pytest.mark.parametrize("codec", CODECS, ids=IMPLS)
def test_a_field_given_back_an_int_forgets_what_it_held(codec):
    msg = codec.HeartbeatRequest(group_id="g", member_id="m", generation_id=None)
    assert msg.generation_id is None
    msg.generation_id = True
    assert msg.generation_id is True
    msg.generation_id = 70000
    assert type(msg.generation_id) is int and msg.generation_id == 70000
    assert msg == codec.HeartbeatRequest(group_id="g", member_id="m", generation_id=70000)
    assert msg.encode(4) == codec.HeartbeatRequest(group_id="g", member_id="m", generation_id=70000).encode(4)
    assert repr(msg) == repr(codec.HeartbeatRequest(group_id="g", member_id="m", generation_id=70000))


@pytest.mark.parametrize("codec", CODECS, ids=IMPLS)
def test_an_empty_array_reads_as_a_list_of_its_own(codec):
    """A decoded empty array, and one left out of a constructor, is a list the field keeps: changing it
    changes the message, and no two messages share it."""
    empty = codec.OffsetFetchResponse.OffsetFetchResponseGroup(group_id="g")
    data = codec.OffsetFetchResponse(groups=[empty, empty]).encode(9)
    decoded = codec.OffsetFetchResponse.decode(data, 9)
    first, second = decoded.groups
    assert first.topics == [] and first.topics is first.topics
    assert first == second == empty
    first.topics.append(codec.OffsetFetchResponse.OffsetFetchResponseTopics(name="t"))
    assert first.topics[0].name == "t" and second.topics == []
    assert first != second
    again = codec.OffsetFetchResponse.decode(decoded.encode(9), 9)
    assert again == decoded and len(again.groups[0].topics) == 1
    built = codec.OffsetFetchResponse.OffsetFetchResponseGroup(group_id="g")
    other = codec.OffsetFetchResponse.OffsetFetchResponseGroup(group_id="g")
    built.topics.append(1)
    assert other.topics == [] and built.topics == [1]


def test_an_empty_array_and_a_null_one_stay_distinct_in_both():
    def decoded(codec, topics):
        msg = codec.OffsetFetchRequest(groups=[codec.OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id="g", topics=topics)])
        return codec.OffsetFetchRequest.decode(msg.encode(9), 9).groups[0]

    assert _same_in_both(lambda c: lambda: repr(decoded(c, None).topics)) == ("ok", "None")
    assert _same_in_both(lambda c: lambda: repr(decoded(c, []).topics)) == ("ok", "[]")
    assert _same_in_both(lambda c: lambda: decoded(c, None) == decoded(c, [])) == ("ok", False)
    assert _same_in_both(lambda c: lambda: repr(decoded(c, []))) == _same_in_both(
        lambda c: lambda: repr(c.OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g")))
