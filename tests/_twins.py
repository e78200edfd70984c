"""Both codec twins side by side, for tests that must see the same outcome from each."""

import kwire
from kwire import _impl

IMPLS = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]
CODECS = [_impl.load("codec", impl, package="kwire.codec") for impl in IMPLS]


def outcome(call):
    try:
        return ("ok", call())
    except kwire.KwireError as e:
        return ("err", type(e).__name__, str(e))


def same_in_both(make):
    """``make(codec)`` -> a thunk; the outcome, identical across the twins (and typed when it is an error)."""
    results = [outcome(make(codec)) for codec in CODECS]
    for r in results[1:]:
        assert r == results[0]
    return results[0]
