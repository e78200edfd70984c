"""Memory a decode builds, against the size of its input, with default arguments (issue 15).

The adversarial input for each message at its newest version is its arrays full of minimal elements (2000 of
of them; 10 in each nested array) whose integers fall outside CPython's cache of small ints, so that every element
and every integer is an object of its own.  The bound is stated here and must hold for every message in both
twins: peak traced allocation <= RATIO x input bytes + SLACK (a decoded object's fixed cost, which dominates
inputs of a few bytes).

Where the ratio comes from: one object per element.  ApiVersionsResponse's ApiVersion element is 7 bytes on the
wire (three int16 and an empty tag section) and an object of four slots plus three int objects in memory (~22x);
OffsetFetch's topic of an empty name and no partitions is 3 bytes and an object with an empty list (~40x, the
worst).  Issue 15 asks for less; it needs lighter objects per element, so this bound guards against worse."""

import tracemalloc

import pytest

from kwire import _impl
from kwire.codec import _schema

from tests._filled import filled

IMPLS = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]
RATIO = 45
SLACK = 4096
ELEMENTS = 2000
NESTED = 10


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("msg", _schema.API_MESSAGES + _schema.DATA_MESSAGES, ids=lambda m: m.class_name)
def test_decode_stays_within_a_small_multiple_of_its_input(impl, msg):
    codec = _impl.load("codec", impl, package="kwire.codec")
    cls = getattr(codec, msg.class_name)
    version = msg.valid.hi
    value = filled(codec, msg, version, ELEMENTS, NESTED)
    data = value.encode() if msg.version_prefixed else value.encode(version)
    tracemalloc.start()
    try:
        decoded = cls.decode(data) if msg.version_prefixed else cls.decode(data, version)
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoded == value
    assert peak <= RATIO * len(data) + SLACK, f"{peak} bytes built from {len(data)} ({peak / len(data):.1f}x)"
