"""Building records and batches, and encoding them: the compiled twin's shortcuts for a producer's usual calls
(``Record(key, value, headers, offset=..., timestamp=...)``, ``RecordBatch(records, compression=...)``, header
pairs made Headers in C, fields read once into C, a small batch written straight into its result) give what the
pure twin gives for every call shape, and the same bytes for every shape of record."""

import pytest

from kwire import _impl
from kwire.errors import ArgumentValueError, EncodeError

from tests._lying import LyingList
from tests._twins import IMPLS

RECORDS = {impl: _impl.load("records", impl, package="kwire.codec") for impl in IMPLS}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
both_twins = pytest.mark.skipif(len(RECORDS) < 2, reason="the compiled twin is not built")


def _outcome(fn):
    """What ``fn()`` gives, in a form both twins can be compared by: the object's fields, or the error's type."""
    try:
        out = fn()
    except (TypeError, ValueError, AttributeError, ArgumentValueError, EncodeError) as exc:
        return type(exc).__name__
    if hasattr(out, "headers"):
        return (type(out).__name__, out.offset, out.timestamp, out.key, out.value,
                [(h.key, h.value) for h in out.headers], out.attributes)
    return (type(out).__name__, out.base_offset, out.attributes, out.last_offset_delta, out.base_timestamp,
            out.max_timestamp, out.producer_id, out.producer_epoch, out.base_sequence, out.magic, out.crc,
            len(out.records))


class _Lying(list):
    def __len__(self):
        return 1 << 62


RECORD_CALLS = [
    ((), {}), ((b"k",), {}), ((b"k", b"v"), {}), ((None, None, None), {}),
    ((b"k", b"v", [("a", b"1"), ("b", None)]), {"offset": 3, "timestamp": -4}),
    ((b"k", b"v", (("a", b"1"),)), {"attributes": 2}), ((b"k", b"v", []), {"timestamp": 2**63 - 1}),
    ((b"k", b"v", [["a", b"1"]]), {}), ((b"k", b"v", [("a",)]), {}), ((b"k", b"v", [("a", b"1", b"2")]), {}),
    ((b"k", b"v", [5]), {}), ((b"k", b"v", 5), {}), ((b"k", b"v", "ab"), {}),
    (lambda: (b"k", b"v", iter([("a", b"1")])), {}),
    ((b"k", b"v", _Lying([("a", b"1")])), {}), ((b"k", b"v", (), 5), {}), ((), {"key": b"k", "headers": [("a", b"")]}),
    ((b"k",), {"value": b"v", "offset": 1}), ((b"k",), {"key": b"x"}), ((b"k",), {"bogus": 1}),
    ((b"k",), {"off" + "set": 7}),  # a name made at run time: not the interned str
]


@both_twins
@pytest.mark.parametrize("args,kwargs", RECORD_CALLS)
def test_a_record_made_any_way_is_the_same_in_both_twins(args, kwargs):
    fresh = args if callable(args) else lambda: args  # an iterator is made for each call
    got = {impl: _outcome(lambda: R.Record(*fresh(), **kwargs)) for impl, R in RECORDS.items()}
    assert got["cython"] == got["python"]
    sub = {impl: _outcome(lambda: type("Sub", (R.Record,), {})(*fresh(), **kwargs)) for impl, R in RECORDS.items()}
    assert sub["cython"] == sub["python"]


@both_twins
def test_headers_given_as_headers_pairs_or_both_are_the_same_headers():
    C, P = RECORDS["cython"], RECORDS["python"]
    for R in (C, P):
        h = R.Header("x", b"y")
        rec = R.Record(b"k", b"v", [h, ("a", b"1")])
        assert rec.headers[0] is h and type(rec.headers) is tuple
        assert [tuple(x) for x in rec.headers] == [("x", b"y"), ("a", b"1")]


BATCH_CALLS = [
    ((), {}), (([],), {}), (("R",), {}), (("R",), {"compression": "zstd"}), (("R",), {"compression": 4}),
    (("R",), {"compression": "ZSTD"}), (("R",), {"compression": 9}), (("R",), {"compression": True}),
    (("R",), {"base_offset": 3, "compression": "gzip"}), (("R",), {"base_offset": "3"}),
    (("R",), {"base_offset": 2**64}), (("R",), {"producer_id": 5}), (("R",), {"bogus": 1}), (("R", 1), {}),
    ((), {"records": "R"}), (("T",), {}), (("M",), {}), (("X",), {}),
]


@both_twins
@pytest.mark.parametrize("args,kwargs", BATCH_CALLS)
def test_a_batch_made_any_way_is_the_same_in_both_twins(args, kwargs):
    def records(R, tag):
        recs = [R.Record(b"k", b"v", offset=5, timestamp=7), R.Record(b"k", offset=6, timestamp=2**70)]
        return {"R": recs, "T": tuple(recs), "M": [*recs, 5], "X": [R.Record(offset=None)]}.get(tag, tag)

    for cls in (lambda R: R.RecordBatch, lambda R: type("Sub", (R.RecordBatch,), {})):
        got = {impl: _outcome(lambda: cls(R)(*[records(R, a) for a in args],
                                             **{k: records(R, v) for k, v in kwargs.items()}))
               for impl, R in RECORDS.items()}
        assert got["cython"] == got["python"]


def _shapes(R, n, first_size, size):
    """``n`` records whose first has a ``first_size``-byte value and the others ``size``-byte values (the compiled
    encoder guesses a batch's size from its first record), with every kind of field."""
    out = []
    for i in range(n):
        headers = [("h%d" % j, None if j % 3 == 0 else b"v" * j) for j in range(i % 20)]  # up to 19 headers
        if i % 9 == 4:
            headers.append(("s\udcff", b"lone surrogate"))
        if i % 11 == 5:
            headers = [R.Header("é", bytearray(b"x"))]  # a bytearray value: the checked path
        value = None if i % 6 == 1 else b"x" * (first_size if i == 0 else size)
        out.append(R.Record(None if i % 4 == 0 else b"k" * (i % 50), value, headers, offset=7 + i, timestamp=[0, -1, 2**63 - 1, -2**63, 1_700_000_000_000 + i][i % 5],
                            attributes=i % 3))
    return out


@both_twins
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("n,first_size,size", [(1, 10, 10), (2, 0, 70_000), (50, 2000, 0), (300, 5, 300),
                                               (3, 60_000, 10)])
def test_every_shape_of_record_encodes_to_the_same_bytes_in_both_twins(codec, n, first_size, size):
    C, P = RECORDS["cython"], RECORDS["python"]
    kwargs = dict(base_offset=7, compression=codec, producer_id=9, producer_epoch=1, base_sequence=3)
    assert (C.RecordBatch(_shapes(C, n, first_size, size), **kwargs).encode()
            == P.RecordBatch(_shapes(P, n, first_size, size), **kwargs).encode())
    for R in (C, P):  # a record the encoder cannot write, after records it wrote: the same error
        with pytest.raises(EncodeError):
            R.RecordBatch(_shapes(R, n, first_size, size) + [R.Record("text", offset=7 + n)], **kwargs).encode()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("says", [1 << 62, -1, 0, 7])
def test_a_records_list_whose_len_lies_is_built_and_written_by_what_it_holds(impl, says):
    # list() would size its first allocation by __len__ (a MemoryError for 2**62, a ValueError for -1), and the
    # count field would say what __len__ says: both read what the list holds instead.
    R = RECORDS[impl]
    records = [R.Record(b"k%d" % i, b"v", offset=i, timestamp=10 + i) for i in range(3)]
    expected = R.RecordBatch(list(records)).encode()
    assert R.RecordBatch(LyingList(records, says)).encode() == expected
    batch = R.RecordBatch(list(records))
    batch.records = LyingList(records, says)
    assert batch.encode() == expected
    assert [r.key for r in R.decode_record_batches(expected)[0].records] == [b"k0", b"k1", b"k2"]
