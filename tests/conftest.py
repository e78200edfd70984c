"""Shared fixtures: every codec test runs against both implementations.

The compiled codec is mandatory unless ``KWIRE_NO_EXTENSIONS=1``: if it
failed to build, the ``cython`` parametrization errors instead of skipping,
so a broken wheel cannot pass the suite.
"""

import importlib
import os

import pytest

from kwire import _impl

IMPLEMENTATIONS = ["python"] if _impl.NO_EXTENSIONS else ["cython", "python"]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def codec_module(impl):
    return importlib.import_module("kwire.codec._codec_c" if impl == "cython" else "kwire.codec._codec_py")


@pytest.fixture(params=IMPLEMENTATIONS)
def codec(request):
    """The codec module of one implementation (same class names in both)."""
    return codec_module(request.param)


@pytest.fixture(scope="session")
def both_codecs():
    """All available implementations, for tests that compare them."""
    return [codec_module(i) for i in IMPLEMENTATIONS]


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
