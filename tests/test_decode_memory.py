"""Memory a decode builds, against the size of its input, with default arguments (issue 15).

The adversarial input for each message at its newest version is its arrays full of minimal elements (2000 of
of them; 10 in each nested array) whose integers fall outside CPython's cache of small ints, so that every
element is an object of its own.  The bound is stated here per twin and must hold for every message: peak traced
allocation <= RATIO x input bytes + SLACK (a decoded object's fixed cost, which dominates inputs of a few bytes).

Where the ratios come from: one object per element, and what that object holds.
- Compiled: an integer field is a C value inside the object (kwire/codec/_codegen.py, ``class_def``) and a
  decoded empty array a shared marker until it is read, so an element costs its object and its slot in the list.
  ApiVersionsResponse's ApiVersion (7 bytes: three int16 and an empty tag section) is a 40-byte object (~7x);
  the worst is OffsetFetch's topic of an empty name and no partitions: 3 bytes, one object of three slots that
  the cyclic GC tracks (~22x).  Boxed integers and a list per empty array made these ~22x and ~39x.
- Pure: every field is a slot holding an object, every integer outside the small-int cache an object of its
  own and every empty array a list (the twin keeps plain slots: a property per field would slow every read).
  ApiVersion is an object of four slots plus three int objects (~24x); OffsetFetch's topic an object with an
  empty list (~40x, the worst)."""

import sys
import tracemalloc

import pytest

from kwire import _impl
from kwire.codec import _schema

from tests._filled import filled

IMPLS = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]
RATIO = {"cython": 23, "python": 41}
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
    assert peak <= RATIO[impl] * len(data) + SLACK, f"{peak} bytes built from {len(data)} ({peak / len(data):.1f}x)"


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="KWIRE_NO_EXTENSIONS=1: the compiled twin is not built")
def test_compiled_integers_and_empty_arrays_cost_no_object_of_their_own():
    """What the general bound cannot tell from boxing (it allows ~22x): 2000 ApiVersion elements of three int16
    each take less than their integers would as int objects (~48 bytes each against 84), and 20000 OffsetFetch
    topics of an empty name and no partitions less than 48 bytes plus an empty list each (~77 against 104)."""
    codec = _impl.load("codec", "cython", package="kwire.codec")
    for msg, elements, boxed in [(_schema.API_VERSIONS_RESPONSE, ELEMENTS, 3 * sys.getsizeof(1000)),
                                 (_schema.OFFSET_FETCH_RESPONSE, ELEMENTS * NESTED, 48 + sys.getsizeof([]))]:
        version = msg.valid.hi
        data = filled(codec, msg, version, ELEMENTS, NESTED).encode(version)
        tracemalloc.start()
        try:
            decoded = getattr(codec, msg.class_name).decode(data, version)
            _cur, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert decoded is not None
        assert peak < elements * boxed, f"{msg.class_name}: {peak} bytes for {elements} elements"
