"""What the two codec twins share that does not depend on which one runs.

``_codec_py`` (pure) and ``_codec_c`` (compiled, through ``_wire.pxi`` and
``_framing_c.pxi``) both import this module and neither imports the other,
so a piece written here once behaves the same in both by construction.
Only plain Python lives here: nothing on a hot path.
"""

from kwire.errors import FieldDeletionError, UnsupportedVersionError


def rebuild(cls, state):
    """Unpickle a message: the twins' ``__reduce__`` name this function.

    Each twin also binds it as ``_rebuild``, the name pickles made before it
    moved here refer to, so those still load."""
    version = state.pop("version", None)  # consumer data's decoded version: not a constructor argument
    obj = cls(**state)
    if version is not None:
        obj.version = version
    return obj


def check_response_key(api_key, response_classes):
    """A response frame does not carry its api key: the caller's must name a
    response this codec has (``response_classes`` is keyed by api key)."""
    if not isinstance(api_key, int) or isinstance(api_key, bool) or api_key not in response_classes:
        raise UnsupportedVersionError(f"api key {api_key} (response) is not supported by kwire")


def refuse_deletion(obj, name):
    """Both twins' ``del obj.name``: refused, since a message always has every
    field (the compiled classes could only have set the field to None, and
    the pure ones would have left it unreadable)."""
    raise FieldDeletionError(f"{type(obj).__name__}.{name} cannot be deleted: a message always has every field "
                             "(assign None or a value instead)")
