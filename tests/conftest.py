"""Shared fixtures: every codec test runs against both implementations (``tests/_twins.py`` says which)."""

import os

import pytest

from tests._twins import IMPLS, codec_module

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(params=IMPLS)
def codec(request):
    """The codec module of one implementation (same class names in both)."""
    return codec_module(request.param)


@pytest.fixture(scope="session")
def both_codecs():
    """All available implementations, for tests that compare them."""
    return [codec_module(i) for i in IMPLS]
