"""Differential oracle for kwire's decoders: the compiled codec against its pure twin.

Every decoder kwire exposes to bytes from the network is a *target*.  An
input is one selector byte (which target, within a family) followed by the
bytes handed to that decoder.  ``check(family, data)`` runs the input
through both implementations and raises ``Finding`` when they disagree,
when a decoder fails with anything but kwire's typed errors, or when a
successful decode does not re-encode to the input's canonical form.

Re-encoding is not always byte-identical to the input, and every accepted
difference must be one of these, which the canonicaliser in this module
detects independently of both codecs (it walks the schema tables itself)
and names in ``why``:

* ``varint``    -- a varint not in its shortest form (``0x81 0x00`` for 1);
* ``bool``      -- a bool byte other than 0 or 1 (Kafka reads any non-zero as true);
* ``tag-default`` -- a known tagged field sent with its default value, which
  writers omit;
* ``newer``     -- consumer-protocol data from a version newer than kwire
  knows, read with the newest known layout; the fields after it are dropped.

The canonicaliser also counts the array elements and tagged-field entries
of the input, which pins ``max_elements`` exactly: a decode with that many
must succeed and one with fewer must raise ``LimitExceededError`` in both
implementations, at the same offset and path.
"""

import os
import struct

import kwire
import kwire.codec._codec_py as codec_py
from kwire import codec as framing
from kwire.codec import _schema
from kwire.assignors import _userdata as userdata
from kwire.errors import DecodeError, EncodeError, FrameTooLargeError, UnsupportedVersionError

from finding import Finding  # re-exported: callers catch differential.Finding

try:
    import kwire.codec._codec_c as codec_c
except ImportError:  # a pure install: the oracle still checks the twin alone
    codec_c = None

# "batch" (the capture batch decoder, fuzz/batch_oracle.py) joins these when
# pyarrow is installed; see the end of this module.
FAMILIES = ("api", "headers", "frames", "consumer", "records", "cluster")


# Open bugs the oracle recognises, each pinned by a strict-xfail regression
# test; they are counted in ``stats`` instead of stopping a campaign, unless
# KWIRE_FUZZ_STRICT=1.  Remove an entry when its test starts passing.
KNOWN_BUGS = {}
STRICT = os.environ.get("KWIRE_FUZZ_STRICT", "") not in ("", "0")


def _known(stats, name):
    if STRICT:
        raise Finding(f"known bug {name}: {KNOWN_BUGS[name]}")
    if stats is not None:
        stats[f"known:{name}"] = stats.get(f"known:{name}", 0) + 1


# ---------------------------------------------------------------------------
# Comparable outcomes
# ---------------------------------------------------------------------------

def plain(v):
    """A decoded value as nested builtins, so compiled and pure objects compare."""
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, tuple):
        return tuple(plain(x) for x in v)
    if hasattr(v, "unknown_tagged_fields") and hasattr(v, "__reduce__"):
        _fn, (cls, state) = v.__reduce__()
        state = dict(state)
        unknown = state.pop("unknown_tagged_fields") or None
        return (cls.__name__, {k: plain(x) for k, x in state.items()}, unknown)
    return v


def outcome(fn, *args, allowed=(DecodeError,), **kwargs):
    """``("ok", value)`` or ``("err", type, reason, offset, path)``; anything not allowed is a Finding."""
    try:
        return ("ok", fn(*args, **kwargs))
    except allowed as e:
        if isinstance(e, DecodeError):
            return ("err", type(e).__name__, e.reason, e.offset, e.path)
        return ("err", type(e).__name__, str(e))
    except RecursionError as e:  # pragma: no cover - a finding, reported below
        raise Finding(f"{fn!r}: RecursionError {e}") from e
    except MemoryError as e:  # pragma: no cover
        raise Finding(f"{fn!r}: MemoryError") from e
    except Exception as e:
        raise Finding(f"{getattr(fn, '__qualname__', fn)!r} raised untyped {type(e).__name__}: {e}") from e


def _same(label, a, b):
    pa = ("ok", plain(a[1])) if a[0] == "ok" else a
    pb = ("ok", plain(b[1])) if b[0] == "ok" else b
    if pa != pb:
        raise Finding(f"{label}: compiled and pure differ\n  compiled: {pa!r}\n  pure:     {pb!r}")


# ---------------------------------------------------------------------------
# The canonicaliser: an independent schema walk over bytes already known good
# ---------------------------------------------------------------------------

_FIXED_SIZES = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "float64": 8, "uuid": 16}


def _uvarint_bytes(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


class Canon:
    """Re-writes a valid encoding in the form kwire's writers produce."""

    def __init__(self, buf, pos=0, end=None):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.out = bytearray()
        self.why = set()
        self.elements = 0

    def take(self, n):
        if n < 0 or self.pos + n > self.end:
            raise Finding(f"canonicaliser ran past the end at {self.pos}: the codecs accepted a truncated input")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)

    def uvarint(self):
        start = self.pos
        value = shift = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if bytes(self.buf[start:self.pos]) != _uvarint_bytes(value):
            self.why.add("varint")
        return value

    def length(self, compact, wide):
        if compact:
            u = self.uvarint()
            self.out += _uvarint_bytes(u)
            return u - 1
        raw = self.take(4 if wide else 2)
        self.out += raw
        return struct.unpack(">i" if wide else ">h", raw)[0]

    def struct(self, fields, version, flexible):
        for f in fields:
            if version in f.versions and not (flexible and version in f.tagged):
                self.value(f, version, flexible)
        if flexible:
            self.tags(fields, version, flexible)

    def value(self, f, version, flexible):
        if f.is_array:
            n = self.length(_schema.is_compact(f, version, flexible), True)
            if n > 0:
                self.elements += n
            for _ in range(max(n, 0)):
                self.element(f, f.element_type, version, flexible)
        else:
            self.element(f, f.type, version, flexible)

    def element(self, f, t, version, flexible):
        if f.is_struct:
            self.struct(f.fields, version, flexible)
        elif t in ("string", "bytes", "records"):
            n = self.length(_schema.is_compact(f, version, flexible), t != "string")
            if n > 0:
                self.out += self.take(n)
        elif t == "bool":
            b = self.take(1)[0]
            if b not in (0, 1):
                self.why.add("bool")
            self.out.append(1 if b else 0)
        else:
            self.out += self.take(_FIXED_SIZES[t])

    def tags(self, fields, version, flexible):
        count = self.uvarint()
        self.elements += count
        known = {f.tag: f for f in fields if f.tag is not None and version in f.versions and version in f.tagged}
        entries = []
        for _ in range(count):
            tag = self.uvarint()
            size = self.uvarint()
            f = known.get(tag)
            if f is None:
                entries.append((tag, self.take(size)))
                continue
            sub = Canon(self.buf, self.pos, self.pos + size)
            sub.value(f, version, flexible)
            if sub.pos != sub.end:
                raise Finding(f"tagged field {tag}: codecs accepted {sub.end - sub.pos} left-over bytes")
            self.pos = sub.end
            self.elements += sub.elements
            self.why |= sub.why
            # The pure twin reads the canonical value; only "is it the default"
            # is asked of it, which is what its writer asks too.
            if codec_py.decodes_to_default(f, version, flexible, bytes(sub.out)):
                self.why.add("tag-default")
                continue
            entries.append((tag, bytes(sub.out)))
        self.out += _uvarint_bytes(len(entries))
        for tag, raw in entries:
            self.out += _uvarint_bytes(tag) + _uvarint_bytes(len(raw)) + raw


def canonical(msg, version, data, start=0, stop_early=False):
    """``(canonical bytes, why, elements, end)`` of a body of ``msg`` at ``version``."""
    c = Canon(data, start)
    c.struct(msg.fields, version, version in msg.flexible)
    if c.pos != c.end and not stop_early:
        raise Finding(f"{msg.name} v{version}: codecs accepted {c.end - c.pos} trailing bytes")
    return bytes(c.out), c.why, c.elements, c.pos


def canonical_prefixed(msg, data):
    """The same for version-prefixed consumer-protocol data; the version it re-encodes at."""
    (version,) = struct.unpack_from(">h", data, 0)
    hi = msg.valid.hi
    if version > hi:
        body, why, elements, _end = canonical(msg, hi, data, 2, stop_early=True)
        return struct.pack(">h", hi) + body, why | {"newer"}, elements, hi
    body, why, elements, _end = canonical(msg, version, data, 2)
    return data[:2] + body, why, elements, version


# ---------------------------------------------------------------------------
# Targets
# ---------------------------------------------------------------------------

IMPLS = [m for m in (codec_c, codec_py) if m is not None]
FRAMINGS = [framing.Framing(m) for m in IMPLS]


def _msg_targets(messages):
    out = []
    for msg in messages:
        if msg.version_prefixed:
            out.append((msg, None))
        else:
            out += [(msg, v) for v in range(msg.valid.lo, msg.valid.hi + 1)]
    return out


# One selector byte picks a target, so the apis that carry records and make topics are a family of their own.
API_TARGETS = _msg_targets([m for m in _schema.API_MESSAGES if m not in _schema.RECORD_API_MESSAGES])
CLUSTER_TARGETS = _msg_targets(_schema.RECORD_API_MESSAGES)
HEADER_TARGETS = _msg_targets(_schema.HEADERS)
CONSUMER_TARGETS = _msg_targets(_schema.DATA_MESSAGES) + [("userdata-sticky", None), ("userdata-cooperative", None)]
RESPONSE_TARGETS = [(m.api_key, v) for m in _schema.API_MESSAGES if m.kind == "response"
                    for v in range(m.valid.lo, m.valid.hi + 1)]
FRAME_TARGETS = ([("request", None)] + [("response", kv) for kv in RESPONSE_TARGETS]
                 + [("split", None), ("splitter", None)])

TARGETS = {"api": API_TARGETS, "headers": HEADER_TARGETS, "consumer": CONSUMER_TARGETS, "frames": FRAME_TARGETS,
           "cluster": CLUSTER_TARGETS}


def target_name(family, index):
    t = TARGETS[family][index % len(TARGETS[family])]
    if family in ("api", "headers", "cluster") or (family == "consumer" and not isinstance(t[0], str)):
        msg, v = t
        return msg.class_name + ("" if v is None else f"-v{v}")
    if family == "frames" and t[0] == "response":
        return f"response-k{t[1][0]}-v{t[1][1]}"
    return t[0]


def _limit_of(data):
    # A second, input-derived limit exercises LimitExceededError on inputs
    # that also fail in other ways: the two checks' order must match too.
    return data[-1] % 8 if data else 0


def check_message(msg, version, data, stats=None):
    """Differential + round-trip + limit checks of one message decoder."""
    name = msg.class_name
    classes = [getattr(m, name) for m in IMPLS]
    if version is None:
        results = [outcome(cls.decode, data) for cls in classes]
    else:
        results = [outcome(cls.decode, data, version) for cls in classes]
    label = f"{name}" + ("" if version is None else f" v{version}")
    if len(results) == 2:
        _same(label, *results)
    lim = _limit_of(data)
    limited = [outcome(cls.decode, data, *(() if version is None else (version,)), max_elements=lim)
               for cls in classes]
    if len(limited) == 2:
        _same(f"{label} max_elements={lim}", *limited)
    if results[0][0] != "ok":
        if stats is not None:
            stats["errors"] = stats.get("errors", 0) + 1
        if limited[0][0] == "ok":
            raise Finding(f"{label}: fails without a limit but decodes with max_elements={lim}")
        return
    if version is None:
        expect, why, elements, enc_version = canonical_prefixed(msg, data)
    else:
        expect, why, elements, _end = canonical(msg, version, data)
        enc_version = version
    if not why and expect != bytes(data):
        raise Finding(f"{label}: canonicaliser changed the input without naming why")
    for (_, value), m in zip(results, IMPLS):
        try:
            again = value.encode(enc_version)
        except EncodeError as e:
            raise Finding(f"{label}: {m.__name__} cannot re-encode what it decoded: {e}") from e
        if again != expect:
            raise Finding(f"{label}: {m.__name__} re-encodes {again.hex()} but the canonical form is {expect.hex()}"
                          f" (input {bytes(data).hex()}, why {sorted(why)})")
    # max_elements is exact: the input's own count passes, one fewer fails.
    args = () if version is None else (version,)
    for cls in classes:
        ok = outcome(cls.decode, data, *args, max_elements=elements)
        if ok[0] != "ok" or plain(ok[1]) != plain(results[0][1]):
            raise Finding(f"{label}: max_elements={elements} (the input's count) refused: {ok!r}")
    if elements:
        short = [outcome(cls.decode, data, *args, max_elements=elements - 1) for cls in classes]
        if short[0][:2] != ("err", "LimitExceededError"):
            raise Finding(f"{label}: max_elements={elements - 1} accepted {elements} elements: {short[0]!r}")
        if len(short) == 2:
            _same(f"{label} max_elements={elements - 1}", *short)
    if stats is not None:
        stats["decoded"] = stats.get("decoded", 0) + 1
        for w in why:
            stats[f"why:{w}"] = stats.get(f"why:{w}", 0) + 1


def _flat(previous_assignment):
    return [(ta.topic, p) for ta in previous_assignment for p in ta.partitions]


def check_userdata(kind, data, stats=None):
    """kwire.assignors._userdata never raises, and agrees with the codec wherever the codec reads the bytes."""
    if kind == "userdata-sticky":
        try:
            parts, gen = userdata.decode_sticky_userdata(data)
        except Exception as e:
            raise Finding(f"decode_sticky_userdata raised {type(e).__name__}: {e}") from e
        if data:
            for version, expect_gen in ((1, None), (0, None)):
                got = outcome(kwire.StickyAssignorUserData.decode, data, version)
                if got[0] == "ok":
                    want = (_flat(got[1].previous_assignment), got[1].generation if version == 1 else None)
                    if (parts, gen) != want:
                        raise Finding(f"sticky userData {bytes(data).hex()}: userdata.py gives {(parts, gen)!r}, "
                                      f"the codec's v{version} gives {want!r}")
                    break
    else:
        try:
            gen = userdata.decode_cooperative_userdata(data)
        except Exception as e:
            raise Finding(f"decode_cooperative_userdata raised {type(e).__name__}: {e}") from e
        got = outcome(kwire.CooperativeStickyUserData.decode, data, 0)
        if got[0] == "ok" and got[1].generation != gen:
            raise Finding(f"cooperative userData {bytes(data).hex()}: {gen!r} vs the codec's {got[1].generation!r}")


_FRAME_ERRORS = (DecodeError, UnsupportedVersionError)


def _count(stats, result):
    if stats is not None:
        key = "decoded" if result == "ok" else "errors"
        stats[key] = stats.get(key, 0) + 1


def _frame_parts_roundtrip(label, header_msg, header_version, msg_schema, version, payload, header, msg, end,
                           stats):
    h_expect, h_why, h_elems, h_end = canonical(header_msg, header_version, payload, 0, stop_early=True)
    if h_end != end:
        raise Finding(f"{label}: header ends at {end}, the canonicaliser says {h_end}")
    b_expect, b_why, b_elems, _ = canonical(msg_schema, version, bytes(payload[end:]))
    if not (h_why or b_why) and h_expect + b_expect != bytes(payload):
        raise Finding(f"{label}: canonicaliser changed the frame without naming why")
    try:
        again = header.encode(header_version) + msg.encode(version)
    except EncodeError as e:
        raise Finding(f"{label}: cannot re-encode what was decoded: {e}") from e
    if again != h_expect + b_expect:
        raise Finding(f"{label}: frame re-encodes to {again.hex()}, canonical {(h_expect + b_expect).hex()}")
    return h_elems + b_elems


def _frame_limit_exact(label, decode, elems, expect):
    """The frame's ``max_elements`` covers header and body together, exactly."""
    results = [outcome(decode(f), max_elements=elems, allowed=_FRAME_ERRORS) for f in FRAMINGS]
    for r in results:
        if r[0] != "ok" or plain(r[1]) != plain(expect):
            raise Finding(f"{label}: max_elements={elems} (the frame's count) gives {r}")
    if elems:
        results = [outcome(decode(f), max_elements=elems - 1, allowed=_FRAME_ERRORS) for f in FRAMINGS]
        if results[0][:2] != ("err", "LimitExceededError"):
            raise Finding(f"{label}: max_elements={elems - 1} gives {results[0]}")
        if len(results) == 2:
            _same(f"{label} max_elements={elems - 1}", *results)


def check_frame(kind, arg, data, stats=None):
    if kind == "request":
        results = [outcome(f.decode_request, data, allowed=_FRAME_ERRORS) for f in FRAMINGS]
        if len(results) == 2:
            _same("decode_request", *results)
        if results[0][0] == "ok":
            header, msg = results[0][1]
            payload = memoryview(data)[4:]
            hv = _schema.request_header_version(header.request_api_key, header.request_api_version)
            _h, end = type(header).decode_prefix(payload, hv)
            schema = _schema.api_message(header.request_api_key, "request")
            elems = _frame_parts_roundtrip("decode_request", _schema.REQUEST_HEADER, hv, schema,
                                           header.request_api_version, payload, header, msg, end, stats)
            _frame_limit_exact("decode_request", lambda f: lambda **kw: f.decode_request(data, **kw), elems,
                               results[0][1])
        _count(stats, results[0][0])
        return
    if kind == "response":
        api_key, version = arg
        results = [outcome(f.decode_response, data, api_key, version, allowed=_FRAME_ERRORS) for f in FRAMINGS]
        if len(results) == 2:
            _same(f"decode_response k{api_key} v{version}", *results)
        if results[0][0] == "ok":
            header, msg = results[0][1]
            payload = memoryview(data)[4:]
            hv = _schema.response_header_version(api_key, version)
            _h, end = type(header).decode_prefix(payload, hv)
            label = f"decode_response k{api_key} v{version}"
            elems = _frame_parts_roundtrip(label, _schema.RESPONSE_HEADER, hv, _schema.api_message(api_key, "response"),
                                           version, payload, header, msg, end, stats)
            _frame_limit_exact(label, lambda f: lambda **kw: f.decode_response(data, api_key, version, **kw),
                               elems, results[0][1])
        _count(stats, results[0][0])
        return
    # The splitter is one implementation (pure Python) on both sides: its
    # oracle is its own contract rather than a twin.
    data = bytes(data)
    max_size = (data[0] * 3) if data and data[0] < 0xF0 else framing.DEFAULT_MAX_FRAME_SIZE
    body = data[1:]
    try:
        whole, rest = framing.split_frames(body, max_size)
        whole_err = None
    except DecodeError as e:
        whole, rest, whole_err = e.frames, None, e
    except Exception as e:
        raise Finding(f"split_frames raised untyped {type(e).__name__}: {e}") from e
    consumed = b"".join(whole)
    if not body.startswith(consumed):
        raise Finding("split_frames returned frames that are not a prefix of the stream")
    for fr in whole:
        if struct.unpack_from(">i", fr)[0] != len(fr) - 4 or len(fr) - 4 > max_size:
            raise Finding(f"split_frames produced a frame with a wrong or oversized prefix: {fr[:4].hex()}")
    _count(stats, "ok" if whole_err is None else "err")
    if whole_err is None:
        if consumed + rest != body:
            raise Finding("split_frames lost or invented bytes")
    else:
        bad = struct.unpack_from(">i", body, len(consumed))[0]
        want = DecodeError if bad < 0 else FrameTooLargeError
        if type(whole_err) is not want or not (bad < 0 or bad > max_size):
            raise Finding(f"split_frames raised {type(whole_err).__name__} for a frame size of {bad}")
    if kind == "splitter":
        # The same stream fed in input-derived chunks gives the same frames.
        sp = framing.FrameSplitter(max_size)
        got, pos, step, err = [], 0, 0, None
        while pos < len(body):
            n = 1 + body[step % len(body)] % 23
            step += 1
            try:
                got += sp.feed(body[pos:pos + n])
            except DecodeError as e:
                got += e.frames
                err = e
                break
            except Exception as e:
                raise Finding(f"FrameSplitter.feed raised untyped {type(e).__name__}: {e}") from e
            if sp.pending > max_size + 4 + n:
                raise Finding(f"FrameSplitter holds {sp.pending} bytes with max_frame_size={max_size}")
            pos += n
        if got != whole or (err is None) != (whole_err is None):
            raise Finding(f"FrameSplitter chunked feed disagrees with split_frames on {body.hex()}")
        if err is not None:
            try:
                sp.feed(b"x")
            except type(err) as again:
                if again.frames:
                    raise Finding("FrameSplitter handed frames out twice after an error")
            else:
                raise Finding("FrameSplitter accepted data after an unrecoverable error")


def check(family, data, stats=None):
    """Run one fuzz input (selector byte + payload) of ``family``; raises Finding on a problem."""
    if not data:
        return
    targets = TARGETS[family]
    t = targets[data[0] % len(targets)]
    payload = data[1:]
    if family in ("api", "headers", "cluster"):
        return check_message(t[0], t[1], payload, stats)
    if family == "consumer":
        if isinstance(t[0], str):
            return check_userdata(t[0], payload, stats)
        return check_message(t[0], t[1], payload, stats)
    if family == "frames":
        return check_frame(t[0], t[1], payload, stats)
    if family == "batch":
        return batch_oracle.check(payload, stats)
    if family == "records":
        return records_oracle.check(payload, stats, data[0])
    raise ValueError(f"unknown family {family!r}")


def selector(family, name):
    """The selector byte of the target called ``name`` (as ``target_name`` prints it)."""
    for i in range(len(TARGETS[family])):
        if target_name(family, i) == name:
            return i
    raise KeyError(name)


import records_oracle  # noqa: E402  (the record-batch codec: see fuzz/records_oracle.py)

TARGETS["records"] = [(name, None) for name in records_oracle.TARGETS]

try:
    import batch_oracle  # noqa: E402
except ImportError:  # no pyarrow: the batch decoder is not installed either
    batch_oracle = None
else:
    FAMILIES += ("batch",)
    TARGETS["batch"] = [("batch", None)]
