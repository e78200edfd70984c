"""The implementations the tests run, by one rule (``kwire._impl``'s reading of ``KWIRE_NO_EXTENSIONS``), and
both codec twins side by side for tests that must see the same outcome from each.

``IMPLS`` is what every parametrised test iterates; ``conftest.py``'s ``codec`` fixture is built on it.  The
compiled codec is mandatory unless ``KWIRE_NO_EXTENSIONS=1``: if it failed to build, the ``cython`` case errors
instead of skipping, so a broken wheel cannot pass the suite."""

import kwire
from kwire import _impl

#: ``["cython", "python"]``, or ``["python"]`` alone when kwire runs without its extensions.
IMPLS = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]


def codec_module(impl):
    """The codec module of implementation ``impl`` (the same class names in both)."""
    return _impl.load("codec", impl, package="kwire.codec")


CODECS = [codec_module(impl) for impl in IMPLS]


def assignor_implementations():
    """Implementations the assignor tests run: both, unless KWIRE_NO_EXTENSIONS=1
    and the compiled kernels were not built (then the pure one alone).

    Without the switch a missing compiled kernel is not skipped: its tests fail."""
    if not _impl.NO_EXTENSIONS:
        return ["python", "cython"]
    from kwire.assignors._arrays import load_kernels

    try:
        load_kernels("rangerr", "cython")
    except ImportError:
        return ["python"]
    return ["python", "cython"]


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
