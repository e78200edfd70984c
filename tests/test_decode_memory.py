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

IMPLS = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]
RATIO = 45
SLACK = 4096
ELEMENTS = 2000
NESTED = 10


def _adversarial(codec, msg, version):
    def fill(fields, depth):
        values = {}
        for f in fields:
            if version not in f.versions or f.tag is not None:
                continue
            if f.is_array and depth < 2:
                count = ELEMENTS if depth == 0 else NESTED
                if f.is_struct:
                    sub = getattr(codec, msg.struct_class_names.get(f.struct_name, f.struct_name))
                    values[f.attr] = [sub(**fill(f.fields, depth + 1)) for _ in range(count)]
                elif f.element_type in ("int16", "int32", "int64"):
                    values[f.attr] = [1000 + i for i in range(count)]
                elif f.element_type == "string":
                    values[f.attr] = [""] * count
            elif f.is_struct and not f.is_array:
                sub = getattr(codec, msg.struct_class_names.get(f.struct_name, f.struct_name))
                values[f.attr] = sub(**fill(f.fields, depth + 1))
            elif not f.is_array and f.type in ("int16", "int32", "int64"):
                values[f.attr] = 1000
        return values
    return getattr(codec, msg.class_name)(**fill(msg.fields, 0))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("msg", _schema.API_MESSAGES + _schema.DATA_MESSAGES, ids=lambda m: m.class_name)
def test_decode_stays_within_a_small_multiple_of_its_input(impl, msg):
    codec = _impl.load("codec", impl, package="kwire.codec")
    cls = getattr(codec, msg.class_name)
    version = msg.valid.hi
    value = _adversarial(codec, msg, version)
    data = value.encode() if msg.version_prefixed else value.encode(version)
    tracemalloc.start()
    try:
        decoded = cls.decode(data) if msg.version_prefixed else cls.decode(data, version)
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoded == value
    assert peak <= RATIO * len(data) + SLACK, f"{peak} bytes built from {len(data)} ({peak / len(data):.1f}x)"
