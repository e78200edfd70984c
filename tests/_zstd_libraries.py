"""The zstd decompression back-ends of the record codec, forced one at a time: python-zstandard with kept
contexts where it is installed, cramjam otherwise (``kwire.codec._records_common.ZSTD_CONTEXTS``).  A test that
takes the ``zstd_library`` fixture runs once with each."""

import pytest

from kwire.codec._records_common import ZSTD_CONTEXTS

ZSTD_LIBRARIES = ["zstandard", "cramjam"]


@pytest.fixture(params=ZSTD_LIBRARIES)
def zstd_library(request):
    """Both twins decompress zstd with ``request.param`` during the test; the choice made at import after it."""
    if request.param == "zstandard":
        pytest.importorskip("zstandard")
    before = ZSTD_CONTEXTS.library
    ZSTD_CONTEXTS.use(request.param)
    try:
        yield request.param
    finally:
        ZSTD_CONTEXTS.use(before)
