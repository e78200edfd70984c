"""The leader's Subscription reader (``subscription_columns`` in kwire/assignors/
_leader_c.pyx and its pure twin) is a second reader of the
ConsumerProtocolSubscription layout beside the codec's; these tests hold it
to the codec's schema and to ``kwire.codec.Subscription.decode``: the same
fields for random subscriptions at every version (newer versions included),
and the codec's very error for truncated, corrupted and garbage bytes."""

import itertools
import random
import struct

import numpy as np
import pytest

from kwire import codec
from kwire.assignors._arrays import load_kernels
from kwire.codec._schema import CONSUMER_PROTOCOL_SUBSCRIPTION
from kwire.errors import DecodeError, KwireError
from tests._twins import assignor_implementations

IMPLEMENTATIONS = assignor_implementations()
NAMES = ["a", "orders", "t" * 40, "\u00e9t\u00e9", "\U0001f600", "\uffee", "", "x" * 300, "b", "c.d_e-f"]
INT32 = [0, 1, 7, 255, 256, -1, -2, 2**31 - 1, -(2**31)]


def test_schema_is_the_layout_the_reader_reads():
    msg = CONSUMER_PROTOCOL_SUBSCRIPTION
    assert msg.version_prefixed and (msg.valid.lo, msg.valid.hi) == (0, 3) and msg.flexible.empty
    want = {
        "Topics": ("[]string", "0+", False),
        "UserData": ("bytes", "0+", True),
        "OwnedPartitions": ("[]TopicPartition", "1+", False),
        "GenerationId": ("int32", "2+", False),
        "RackId": ("string", "3+", True),
    }
    for v in range(4):
        fields = [(f.name, f.type, v in f.nullable, f.tag) for f in msg.fields if v in f.versions]
        assert fields == [(n, t, nullable, None) for n, (t, since, nullable) in want.items() if v >= int(since[0])]
        owned = next(f for f in msg.fields if f.name == "OwnedPartitions")
        inner = [(f.name, f.type, v in f.nullable) for f in owned.fields if v in f.versions]
        assert inner == ([("Topic", "string", False), ("Partitions", "[]int32", False)] if v >= 1 else [])


def random_subscription(rng, topics=None):
    if topics is None:
        topics = [rng.choice(NAMES) for _ in range(rng.choice([0, 1, 2, 5]))]
    owned = [
        codec.SubscriptionTopicPartition(topic=rng.choice(NAMES),
                                         partitions=[rng.choice(INT32 + [rng.randrange(-2**31, 2**31)])
                                                     for _ in range(rng.choice([0, 1, 3, 9]))])
        for _ in range(rng.choice([0, 0, 1, 2, 4]))
    ]
    return codec.Subscription(
        topics=topics, owned_partitions=owned,
        user_data=rng.choice([None, b"", b"\x00\x00\x00\x05", bytes(rng.randrange(256) for _ in range(9))]),
        generation_id=rng.choice(INT32), rack_id=rng.choice([None, "", "rack-1", "\u00e9"]),
    )


def random_bytes(rng, sub):
    version = rng.choice([0, 1, 2, 3, 3, 4])
    if version <= 3:
        return sub.encode(version)
    # A newer writer: the v3 layout under a newer version, maybe with fields kwire does not know after it.
    raw = sub.encode(3)
    return struct.pack(">h", rng.choice([4, 5, 0x7FFF])) + raw[2:] + rng.choice([b"", b"\x00", b"new fields"])


def random_rows(rng):
    """Distinct-looking metadata as a JoinGroupResponse carries it: runs of
    members subscribed alike (the reader's topics-array reuse), and others."""
    rows, shared = [], [rng.choice(NAMES) for _ in range(rng.randint(0, 6))]
    for _ in range(rng.randint(0, 8)):
        topics = shared if rng.random() < 0.6 else None
        rows.append(random_bytes(rng, random_subscription(rng, topics)))
    return rows


def columns_of(implementation, rows):
    return load_kernels("leader", implementation).subscription_columns(rows)


def rows_of(cols):
    """Per row, the fields as the codec decodes them, read back from the columns."""
    names = cols.names
    out = []
    for k in range(len(cols.version)):
        lst = cols.topic_list[k]
        topics = [names[t] for t in cols.list_topic[cols.list_ptr[lst]:cols.list_ptr[lst + 1]]]
        entries = cols.entry_topic[cols.entry_ptr[k]:cols.entry_ptr[k + 1]].tolist()
        a, b = cols.owned_ptr[k], cols.owned_ptr[k + 1]
        owned_t, owned_p = cols.owned_topic[a:b].tolist(), cols.owned_partition[a:b].tolist()
        out.append((int(cols.version[k]), topics, [names[t] for t in entries], [names[t] for t in owned_t],
                    owned_p, int(cols.generation[k]), cols.rack[k], cols.user_data[k]))
    return out


def codec_rows(rows):
    out = []
    for raw in rows:
        s = codec.Subscription.decode(raw)
        out.append((s.version, s.topics, [e.topic for e in s.owned_partitions],
                    [e.topic for e in s.owned_partitions for _ in e.partitions],
                    [p for e in s.owned_partitions for p in e.partitions], s.generation_id, s.rack_id, s.user_data))
    return out


def check_interning(cols, rows):
    """Topic ids are one per name, numbered in first appearance; a row shares
    the previous row's topic list exactly when its topics are the same."""
    assert len(set(cols.names)) == len(cols.names)
    order = []
    for k in range(len(rows)):
        lst = cols.topic_list[k]
        order += cols.list_topic[cols.list_ptr[lst]:cols.list_ptr[lst + 1]].tolist()
        order += cols.entry_topic[cols.entry_ptr[k]:cols.entry_ptr[k + 1]].tolist()
    assert list(dict.fromkeys(order)) == list(range(len(cols.names)))
    decoded = [codec.Subscription.decode(raw).topics for raw in rows]
    for k in range(len(rows)):
        if k and decoded[k] == decoded[k - 1]:
            assert cols.topic_list[k] == cols.topic_list[k - 1]
        else:
            assert cols.topic_list[k] == (cols.topic_list[k - 1] + 1 if k else 0)
    assert len(cols.list_ptr) == (int(cols.topic_list[-1]) + 2 if rows else 1)
    for name, dtype in (("version", np.int32), ("topic_list", np.int32), ("list_ptr", np.int64),
                        ("list_topic", np.int32), ("entry_ptr", np.int64), ("entry_topic", np.int32),
                        ("owned_ptr", np.int64), ("owned_topic", np.int32), ("owned_partition", np.int32),
                        ("generation", np.int32)):
        assert getattr(cols, name).dtype == dtype, name


def same_columns(a, b):
    assert a.names == b.names and a.rack == b.rack and a.user_data == b.user_data
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_reader_gives_the_codecs_fields(implementation):
    rng = random.Random(12)
    for _ in range(600):
        rows = random_rows(rng)
        cols = columns_of(implementation, rows)
        assert rows_of(cols) == codec_rows(rows)
        check_interning(cols, rows)


def test_twins_give_identical_columns():
    if len(IMPLEMENTATIONS) < 2:
        pytest.skip("one implementation built")
    rng = random.Random(13)
    for _ in range(300):
        rows = random_rows(rng)
        same_columns(columns_of("python", rows), columns_of("cython", rows))


def broken(rng, raw):
    """Bad bytes of many kinds (and, by chance, some that still decode)."""
    kind = rng.randrange(7)
    if kind == 0:
        return raw[:rng.randrange(len(raw))]
    if kind == 1:
        b = bytearray(raw)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 2:
        return raw + bytes(rng.randrange(256) for _ in range(rng.randint(1, 5)))
    if kind == 3:  # a name that is not UTF-8: lone continuation, surrogate, overlong, past U+10FFFF
        bad = rng.choice([b"\x80", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xff"])
        for good in (b"orders", "\u00e9t\u00e9".encode(), b"rack-1"):
            at = raw.find(good)
            if at >= 0:
                return raw[:at] + bad + good[len(bad):] if len(bad) <= len(good) else raw
        return raw[:2] + b"\x00\x00\x00\x01\x00\x01\xff" + raw[6:]
    if kind == 4:  # a length or count of -1 or less where the codec refuses it
        b = bytearray(raw)
        at = rng.randrange(2, max(3, len(b) - 3))
        b[at:at + 4] = struct.pack(">i", rng.choice([-1, -2, -(2**31), 2**31 - 1]))
        return bytes(b)
    if kind == 5:
        return struct.pack(">h", rng.choice([-1, -32768])) + raw[2:]
    return bytes(rng.randrange(256) for _ in range(rng.randrange(12)))


def codec_error(raw):
    try:
        codec.Subscription.decode(raw)
    except KwireError as exc:
        return exc
    return None


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_bad_bytes_get_the_codecs_error(implementation):
    rng = random.Random(14)
    refused = 0
    for _ in range(1500):
        good = random_rows(rng) or [codec.Subscription(topics=["a"]).encode(0)]
        at = rng.randrange(len(good))
        bad = broken(rng, good[at])
        rows = good[:at] + [bad] + good[at + 1:]
        want = next((e for e in map(codec_error, rows) if e is not None), None)
        if want is None:
            assert rows_of(columns_of(implementation, rows)) == codec_rows(rows)
            continue
        refused += 1
        with pytest.raises(KwireError) as got:
            columns_of(implementation, rows)
        assert type(got.value) is type(want)
        assert (got.value.args, got.value.offset, got.value.path) == (want.args, want.offset, want.path)
    assert refused > 1000


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_every_truncation_is_refused(implementation):
    sub = random_subscription(random.Random(1), ["orders", "\u00e9t\u00e9"])
    for version in range(4):
        raw = sub.encode(version)
        for cut in range(len(raw)):
            with pytest.raises(DecodeError):
                columns_of(implementation, [raw[:cut]])


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_many_topic_names_keep_their_ids(implementation):
    """Enough names to grow the reader's name table many times over, each
    member subscribing to all of them and owning a few (the second
    generation of a big group: every member's bytes differ)."""
    names = [f"topic-{i:04d}" for i in range(1500)] + [f"\u00e9-{i}" for i in range(200)]
    rng = random.Random(16)
    rows = []
    for m in range(40):
        owned = [codec.SubscriptionTopicPartition(topic=t, partitions=[m, m + 1])
                 for t in rng.sample(names, 30) + [f"only-owned-{m}"]]
        rows.append(codec.Subscription(topics=names, owned_partitions=owned, generation_id=m).encode(3))
    cols = columns_of(implementation, rows)
    assert rows_of(cols) == codec_rows(rows)
    check_interning(cols, rows)
    assert len(cols.list_ptr) == 2 and len(cols.names) == len(names) + 40


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_names_that_differ_in_one_byte_are_told_apart(implementation):
    """The compiled reader hashes and compares names a word at a time, with
    words that overlap at the end: names of every length up to past two
    words, each also with one byte changed at every position, must keep
    distinct ids (and equal names one id)."""
    names = []
    for length in range(0, 41):
        base = "".join(chr(ord("a") + i % 26) for i in range(length))
        names.append(base)
        names += [base[:i] + "#" + base[i + 1:] for i in range(length)]
    # Many names of one length alike but for a few bytes, so that lookups
    # meet look-alikes in the table (a compare that skipped those bytes
    # would hand out a look-alike's id): the middle of short names, the
    # last word of longer ones.
    names += ["".join(p) for p in itertools.product("abcdefghij", repeat=3)]
    for length in (5, 7, 9, 12, 16, 17, 24):
        names += [("x" * length + f"{i:03d}")[-length:] for i in range(300)]
        names += [f"{i:03d}" + "y" * (length - 3) for i in range(300)]
    names = list(dict.fromkeys(names))
    rows = [codec.Subscription(topics=names[k::3],
                               owned_partitions=[codec.SubscriptionTopicPartition(topic=t, partitions=[1])
                                                 for t in names[k + 1::5]]).encode(1)
            for k in range(3)]
    cols = columns_of(implementation, rows)
    assert sorted(cols.names) == sorted(set(names))
    assert rows_of(cols) == codec_rows(rows)
    check_interning(cols, rows)
