"""Round trips of random messages at every (api, version, direction).

For each message kwire knows and every valid version: a hypothesis-built
message encodes, decodes back equal, and both implementations produce the
same bytes and decode each other's output to equal values.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import strategies as S
from tests._twins import IMPLS, codec_module

CASES = S.all_message_versions()


def _encode(obj, msg, version):
    return obj.encode(version)


def _decode(cls, msg, data, version):
    return cls.decode(data) if msg.version_prefixed else cls.decode(data, version)


# Messages drawn per version: a few in the README's test command, which must stay within minutes on two cores,
# and many in the slow set, which .ci/run runs as well.
EXAMPLES = [pytest.param(10, id="quick"), pytest.param(150, id="deep", marks=pytest.mark.slow)]


@pytest.mark.parametrize("examples", EXAMPLES)
@pytest.mark.parametrize("msg,version", CASES, ids=[f"{m.class_name}-v{v}" for m, v in CASES])
def test_round_trip_and_implementations_agree(msg, version, examples):
    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def round_trip(data):
        tree = data.draw(S.message_tree(msg, version))
        encoded, reprs = [], []
        for impl in IMPLS:
            codec = codec_module(impl)
            obj = S.build(codec, msg, tree)
            raw = _encode(obj, msg, version)
            cls = getattr(codec, msg.class_name)
            back = _decode(cls, msg, raw, version)
            assert back == obj
            encoded.append(raw)
            reprs.append(repr(back))
        assert all(raw == encoded[0] for raw in encoded), "implementations wrote different bytes"
        assert all(r == reprs[0] for r in reprs), "implementations print the same message differently"
        # Each implementation reads the other's bytes to the same message.
        for impl in IMPLS:
            codec = codec_module(impl)
            cls = getattr(codec, msg.class_name)
            assert _decode(cls, msg, encoded[0], version) == S.build(codec, msg, tree)

    round_trip()


@pytest.mark.parametrize("msg,version", CASES, ids=[f"{m.class_name}-v{v}" for m, v in CASES])
def test_default_message_round_trips(codec, msg, version):
    cls = getattr(codec, msg.class_name)
    obj = cls()
    assert _decode(cls, msg, _encode(obj, msg, version), version) == obj


@pytest.mark.parametrize("buffer_type", [bytes, bytearray, memoryview, lambda b: memoryview(bytearray(b))])
def test_decode_accepts_any_buffer(codec, buffer_type):
    import array

    msg = codec.JoinGroupRequest(group_id="g", protocols=[codec.JoinGroupRequestProtocol(name="range", metadata=b"m")])
    raw = msg.encode(7)
    assert codec.JoinGroupRequest.decode(buffer_type(raw), 7) == msg
    assert codec.JoinGroupRequest.decode(array.array("B", raw), 7) == msg


def test_decode_rejects_non_buffers(codec):
    with pytest.raises(TypeError):
        codec.HeartbeatRequest.decode("not bytes", 0)
