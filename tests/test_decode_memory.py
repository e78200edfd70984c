"""Memory a decode builds, against the size of its input, with default arguments.

The adversarial input for each message at its newest version is its arrays full of minimal elements (2000 of
of them; 10 in each nested array) whose integers fall outside CPython's cache of small ints, so that every
element is an object of its own.  The bound is stated here per twin and must hold for every message: peak traced
allocation <= RATIO x input bytes + SLACK (a decoded object's fixed cost, which dominates inputs of a few bytes).

Where the ratios come from: one object per element, and what that object holds.
- Compiled: an integer field is a C value inside the object (kwire/codec/_codegen_classes.py, ``class_def``) and a
  decoded empty array a shared marker until it is read, so an element costs its object and its slot in the list.
  ApiVersionsResponse's ApiVersion (7 bytes: three int16 and an empty tag section) is a 40-byte object (~7x);
  the worst is OffsetFetch's topic of an empty name and no partitions: 3 bytes, one object of three slots that
  the cyclic GC tracks (~22x).  Boxed integers and a list per empty array made these ~22x and ~39x.
- Pure: every field is a slot holding an object, every integer outside the small-int cache an object of its
  own and every empty array a list (the twin keeps plain slots: a property per field would slow every read).
  ApiVersion is an object of four slots plus three int objects (~24x); OffsetFetch's topic an object with an
  empty list (~40x, the worst).

Why ~22x and ~40x are where the floor lies, not a debt: a wire element of 3 bytes (an empty name, an empty array,
an empty tag section) becomes one object, and no eager decoder builds less.  CPython's own ``json.loads`` builds
21-24x its input for ``[[],[],...]`` and ``[{},{},...]``, whose elements are 3 bytes too, and kafka-python ~44-48x
for the same OffsetFetch bytes.  The two tests at the end hold kwire to those references, measured in the same
process, so the bound says what it is measured against (docs/RELIABILITY.md, "Memory a decode builds")."""

import json
import sys
import tracemalloc

import pytest

from kwire import _impl
from kwire.codec import _schema

from tests._filled import filled
from tests._twins import IMPLS, codec_module

RATIO = {"cython": 23, "python": 41}
# Unknown tagged fields are kept as a dict per struct that carries them, so a struct whose tag section holds one
# empty unknown field (3 bytes instead of 1) costs its object plus a one-entry dict: the worst shape of all,
# ApiVersionsResponse's api keys each carrying one, builds ~30x (compiled) and ~44x (pure) its input.
UNKNOWN_TAGS_RATIO = {"cython": 32, "python": 46}

# CreatePartitionsRequest v2+ has the densest elements the wire allows: an assignment of no broker ids is 2 bytes
# (an empty compact array and an empty tag section) and still a struct and a list.  docs/RELIABILITY.md states it.
DENSEST_RATIO = {"cython": 28, "python": 53}
SLACK = 4096
ELEMENTS = 2000
NESTED = 10


def _adversarial(codec, msg):
    """``(value, its bytes, a call decoding them)`` of ``msg``'s adversarial input at its newest version."""
    cls = getattr(codec, msg.class_name)
    version = msg.valid.hi
    value = filled(codec, msg, version, ELEMENTS, NESTED)
    if msg.version_prefixed:
        data = value.encode()
        return value, data, lambda: cls.decode(data)
    data = value.encode(version)
    return value, data, lambda: cls.decode(data, version)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("msg", _schema.API_MESSAGES + _schema.DATA_MESSAGES, ids=lambda m: m.class_name)
def test_decode_stays_within_a_small_multiple_of_its_input(impl, msg):
    codec = codec_module(impl)
    value, data, decode = _adversarial(codec, msg)
    tracemalloc.start()
    try:
        decoded = decode()
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoded == value
    ratio = DENSEST_RATIO[impl] if msg is _schema.CREATE_PARTITIONS_REQUEST else RATIO[impl]
    assert peak <= ratio * len(data) + SLACK, f"{peak} bytes built from {len(data)} ({peak / len(data):.1f}x)"


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


def _peak(call):
    call()  # a first call warms caches that are no part of the decode (interned names, type slots)
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# The messages whose elements are the smallest on the wire, the worst case of the bound above.
_DENSEST = [_schema.OFFSET_FETCH_RESPONSE, _schema.OFFSET_FETCH_REQUEST, _schema.CREATE_PARTITIONS_REQUEST]


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="KWIRE_NO_EXTENSIONS=1: the compiled twin is not built")
def test_compiled_decodes_build_no_more_per_input_byte_than_json_does_for_empty_objects():
    """Every message's adversarial input, compiled, against ``json.loads`` of ``[{},{},...]``: elements of three
    bytes each, one object each.  JSON's per-byte cost is the reference because it is CPython's own eager decoder
    and its floor is the same: an object per element."""
    text = "[" + ",".join(["{}"] * ELEMENTS * NESTED) + "]"
    json_ratio = _peak(lambda: json.loads(text)) / len(text)
    # json's elements are 3 bytes; CreatePartitionsRequest's are 2, held to json's cost per element instead.
    element_ratio = {_schema.CREATE_PARTITIONS_REQUEST.class_name: 1.5}
    codec = _impl.load("codec", "cython", package="kwire.codec")
    worst = (0.0, None)
    for msg in _schema.API_MESSAGES + _schema.DATA_MESSAGES:
        _value, data, decode = _adversarial(codec, msg)
        peak = _peak(decode)
        bound = json_ratio * element_ratio.get(msg.class_name, 1.0)
        assert peak <= bound * len(data) + SLACK, (msg.class_name, peak / len(data), bound)
        if len(data) > SLACK:
            worst = max(worst, (peak / len(data), msg.class_name))
    assert worst[1] in {m.class_name for m in _DENSEST}, worst  # what the docs name as the worst is the worst


@pytest.mark.parametrize("msg", _DENSEST, ids=lambda m: m.class_name)
def test_the_pure_twin_builds_no_more_than_kafka_pythons_decoder_from_the_same_bytes(msg):
    """The pure twin's worst case against kafka-python's decoder (also pure Python) of the very same frame body."""
    from kafka.protocol import admin, consumer

    _value, data, decode = _adversarial(_impl.load("codec", "python", package="kwire.codec"), msg)
    version = msg.valid.hi
    peer = getattr(consumer, msg.class_name, None) or getattr(admin, msg.class_name)
    assert peer.decode(data, version=version) is not None
    ours = _peak(decode)
    theirs = _peak(lambda: peer.decode(data, version=version))
    assert ours <= theirs, f"{ours / len(data):.1f}x against kafka-python's {theirs / len(data):.1f}x"


def _with_unknown_tags(codec, tag, raw):
    """ApiVersionsResponse v3 whose ELEMENTS * NESTED api keys each carry the unknown tagged field ``tag`` = ``raw``
    (ApiVersion has no tagged field of its own, so every tag is unknown to it)."""
    keys = [codec.ApiVersion(api_key=1000 + i, min_version=1000, max_version=1000, unknown_tagged_fields={tag: raw})
            for i in range(ELEMENTS * NESTED)]
    data = codec.ApiVersionsResponse(error_code=0, api_keys=keys).encode(3)
    return data, lambda: codec.ApiVersionsResponse.decode(data, 3)


@pytest.mark.parametrize("impl", IMPLS)
def test_unknown_tagged_fields_stay_within_their_own_bound_whose_worst_shape_is_named(impl):
    """The bound with unknown tagged fields (docs/RELIABILITY.md, "Memory a decode builds"): the named worst
    shape, one empty unknown field per element, holds to UNKNOWN_TAGS_RATIO with any tag (0, or one past the
    small-int cache), and a field with data of one or two bytes builds less per input byte."""
    codec = codec_module(impl)
    ratios = {}
    for tag, raw in [(0, b""), (0, b"x"), (300, b""), (300, b"x"), (5, b"xy")]:
        data, decode = _with_unknown_tags(codec, tag, raw)
        assert decode().api_keys[0].unknown_tagged_fields == {tag: raw}
        ratios[(tag, raw)] = _peak(decode) / len(data)
    empty = max(ratio for (_tag, raw), ratio in ratios.items() if not raw)
    assert all(ratio < empty for (_tag, raw), ratio in ratios.items() if raw), ratios
    assert empty <= UNKNOWN_TAGS_RATIO[impl], ratios
    assert empty > RATIO[impl], ratios  # the reason it has a bound of its own
