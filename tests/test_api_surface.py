"""What a newcomer meets first: the top-level names, the one error tree, typed errors for bad arguments,
decoded consumer data that says its version, and a header decoder that returns a header."""

import inspect
import pickle
import struct

import pytest

import kwire
import kwire.errors
from kwire import _impl
from kwire.codec import ApiKey, _schema
from kwire.codec._framing import FrameSplitter, Framing, split_frames
from tests._twins import IMPLS


# The top level has the group-coordination apis a client or coordinator speaks (FindCoordinator, JoinGroup,
# Heartbeat, LeaveGroup, SyncGroup, ApiVersions), the headers and the consumer protocol; the other apis the mock
# cluster answers (Metadata, offsets, Fetch, ...) are reached as kwire.codec.X.
TOP_LEVEL_APIS = {ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP,
                  ApiKey.API_VERSIONS}
TOP_MESSAGES = [m for m in _schema.ALL_MESSAGES if getattr(m, "api_key", None) in TOP_LEVEL_APIS | {None}]
MESSAGE_NAMES = {m.class_name for m in TOP_MESSAGES} | {
    cname for m in TOP_MESSAGES for cname, _k, _f, _r in m.structs()}
TOP_LEVEL = MESSAGE_NAMES | {
    "encode_request", "encode_response", "decode_request", "decode_response", "FrameSplitter",
    "assign", "leader_assignments", "GroupMember",
    "KwireError", "AssignmentError", "DecodeError", "EncodeError", "FrameTooLargeError", "LimitExceededError",
    "UnsupportedVersionError",
    "IMPLEMENTATION",
}


def test_the_top_level_holds_messages_framing_assign_and_errors_only():
    assert set(kwire.__all__) == TOP_LEVEL
    # every message of the schema, top level or not, is in kwire.codec
    from kwire import codec as kwire_codec

    assert {m.class_name for m in _schema.ALL_MESSAGES} <= set(kwire_codec.__all__)
    assert isinstance(kwire.__version__, str)
    for name in ("message_class", "ArrayGroup", "ArrayAssignment", "assign_arrays", "STRATEGIES",
                 "register_strategy", "split_frames", "Framing"):
        assert not hasattr(kwire, name), name
    # What left the top level is where the docstring says it is.
    from kwire import assignors, codec
    for name in ("message_class", "split_frames", "split_request", "decode_request_header", "Framing"):
        assert hasattr(codec, name), name
    for name in ("ArrayGroup", "ArrayAssignment", "assign_arrays", "STRATEGIES", "register_strategy"):
        assert hasattr(assignors, name), name


def test_one_error_tree():
    assert kwire.AssignmentError is kwire.errors.AssignmentError
    classes = [c for _n, c in inspect.getmembers(kwire.errors, inspect.isclass) if issubclass(c, Exception)]
    assert len(classes) > 8
    for cls in classes:
        assert issubclass(cls, kwire.KwireError), cls
    # Callers who caught the builtins keep catching them.
    assert issubclass(kwire.AssignmentError, ValueError)
    assert issubclass(kwire.errors.ArgumentTypeError, TypeError)
    assert issubclass(kwire.errors.ArgumentValueError, ValueError)
    assert issubclass(kwire.errors.ExtensionMissingError, ImportError)


def test_an_unknown_implementation_is_a_typed_error():
    with pytest.raises(kwire.errors.ArgumentValueError):
        _impl.load("codec", "rust", package="kwire.codec")


def _frame(codec):
    return Framing(codec).encode_request(codec.HeartbeatRequest(group_id="g", member_id="m"), 4, 1, "c")


def _bad_argument_calls(codec):
    f = Framing(codec)
    frame = _frame(codec)
    return {
        "decode(None)": lambda: codec.HeartbeatRequest.decode(None, 0),
        "decode(max_elements='x')": lambda: codec.HeartbeatRequest.decode(b"", 0, max_elements="x"),
        "decode(max_elements=-1)": lambda: codec.HeartbeatRequest.decode(b"", 0, max_elements=-1),
        "Subscription.decode(None)": lambda: codec.Subscription.decode(None),
        "decode_request(None)": lambda: f.decode_request(None),
        "decode_request(max_elements='x')": lambda: f.decode_request(frame, max_elements="x"),
        "decode_request_header(None)": lambda: f.decode_request_header(None),
        "split_request(None)": lambda: f.split_request(None),
        "decode_response(None, 12, 0)": lambda: f.decode_response(None, 12, 0),
        "decode_response(frame, 12, None)": lambda: f.decode_response(frame, 12, None),
        "decode_response(frame, None, 0)": lambda: f.decode_response(frame, None, 0),
        "encode_request(version=None)": lambda: f.encode_request(codec.HeartbeatRequest(), None, 1),
        "encode_request(correlation_id=None)": lambda: f.encode_request(codec.HeartbeatRequest(), 4, None),
        "encode_request(client_id=5)": lambda: f.encode_request(codec.HeartbeatRequest(), 4, 1, 5),
        "encode_response(correlation_id=None)": lambda: f.encode_response(codec.HeartbeatResponse(), 4, None),
        "encode_request(None)": lambda: f.encode_request(None, 4, 1),
        "FrameSplitter(None)": lambda: FrameSplitter(None),
        "FrameSplitter(-1)": lambda: FrameSplitter(-1),
        "feed(None)": lambda: FrameSplitter().feed(None),
        "split_frames(None)": lambda: split_frames(None),
    }


def test_none_and_wrong_arguments_give_typed_errors(codec):
    for name, call in _bad_argument_calls(codec).items():
        with pytest.raises(kwire.KwireError):
            call()
        try:
            call()
        except kwire.KwireError as e:
            assert type(e).__module__ == "kwire.errors", name


def test_the_twins_raise_the_same_error_for_each_bad_argument():
    if len(IMPLS) < 2:
        pytest.skip("KWIRE_NO_EXTENSIONS=1")
    outcomes = []
    for impl in IMPLS:
        codec = _impl.load("codec", impl, package="kwire.codec")
        seen = {}
        for name, call in _bad_argument_calls(codec).items():
            try:
                call()
            except kwire.KwireError as e:
                seen[name] = (type(e).__name__, str(e))
        outcomes.append(seen)
    assert outcomes[0] == outcomes[1]


def _required_fields():
    for m in _schema.ALL_MESSAGES:
        v = m.valid.hi
        for f in m.fields:
            if v in f.versions and v not in f.nullable and f.tag is None:
                yield m, f


@pytest.mark.parametrize("msg,field", list(_required_fields()),
                         ids=lambda x: getattr(x, "class_name", None) or getattr(x, "attr", ""))
def test_none_in_a_required_field_is_an_encode_error_with_its_path(codec, msg, field):
    obj = getattr(codec, msg.class_name)()
    setattr(obj, field.attr, None)
    with pytest.raises(kwire.EncodeError) as info:
        obj.encode() if msg.version_prefixed else obj.encode(msg.valid.hi)
    assert info.value.path == field.attr


def test_decoded_consumer_data_says_its_version(codec):
    prefixed = [getattr(codec, m.class_name) for m in _schema.ALL_MESSAGES if m.version_prefixed]
    assert {c.__name__ for c in prefixed} >= {"Subscription", "Assignment"}
    for cls in prefixed:
        built = cls()
        assert built.version is None
        for version in range(cls.min_version, cls.max_version + 1):
            decoded = cls.decode(built.encode(version))
            assert decoded.version == version
            assert decoded == built  # not a field: equality ignores it
            if cls is getattr(kwire, cls.__name__):  # the other twin's classes are not importable by name
                assert pickle.loads(pickle.dumps(decoded)).version == version
    # A newer writer's version is the one reported, though the newest known layout was read.
    newer = struct.pack(">h", 99) + codec.Subscription(topics=["t"]).encode()[2:] + b"extra"
    assert codec.Subscription.decode(newer).version == 99


def test_decode_request_header_returns_the_header(codec):
    f = Framing(codec)
    frame = _frame(codec)
    header = f.decode_request_header(frame)
    assert type(header) is codec.RequestHeader
    assert (header.request_api_key, header.request_api_version, header.correlation_id, header.client_id) == (
        12, 4, 1, "c")
    same, body = f.split_request(frame)
    assert same == header and bytes(body) == codec.HeartbeatRequest(group_id="g", member_id="m").encode(4)
