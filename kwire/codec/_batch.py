"""The switch between the two batch decoders, for the packages that decode captures.

Loading goes through here rather than through ``kwire._impl`` from outside the
codec, so which modules make up the batch decoder stays this package's
business.  Nothing is imported until asked: the decoders need NumPy and
PyArrow, which the codec alone does not.
"""

from kwire import _impl


def batch_decoder(implementation=None):
    """The batch decoder module: ``decode_batch`` and ``FRAMES_SCHEMA``.

    ``implementation`` ("cython" or "python"; None for kwire's switch) picks
    the twin, as everywhere else in kwire."""
    return _impl.load("batch", implementation, package="kwire.codec")
