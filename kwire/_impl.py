"""The one switch between the compiled modules and their pure-Python twins.

Every accelerated module ``kwire/<package>/_X_c.pyx`` has a twin
``kwire/<package>/_X_py.py`` with the same names.  Both import whatever
implementation-neutral pieces they share from a third module; neither imports
the other.

Which twin loads: ``KWIRE_NO_EXTENSIONS`` at run time decides when it is set
(``1`` the pure twins, ``0`` the compiled ones).  When it is not set, an
install that was built without extensions (``KWIRE_NO_EXTENSIONS=1 pip
install``; setup.py records that in ``kwire/_build_config.py``) runs the pure
twins, and every other install requires the compiled modules: a missing one
is an error rather than a silent fall-back, since a wheel that lost its
extensions should fail loudly.
"""

import importlib
import os

from kwire import _compiled


def _no_extensions(env_value, built_with_extensions):
    """The switch: ``env_value`` is ``$KWIRE_NO_EXTENSIONS`` (None when unset)."""
    value = (env_value or "").strip().lower()
    if value:
        return value not in ("0", "false", "no")
    return not built_with_extensions


try:
    from kwire._build_config import EXTENSIONS as _BUILT_WITH_EXTENSIONS
except ImportError:  # a source tree no build has run in: the compiled modules are expected
    _BUILT_WITH_EXTENSIONS = True

NO_EXTENSIONS = _no_extensions(os.environ.get("KWIRE_NO_EXTENSIONS"), _BUILT_WITH_EXTENSIONS)

IMPLEMENTATION = "python" if NO_EXTENSIONS else "cython"

# The pure-Python modules the build also compiles from their own source (kwire/_compiled.py) follow the same
# switch.  Every part of kwire imports this module before any of those, so the finder is in place first.
_compiled.install(not NO_EXTENSIONS)


#: Each module :func:`load` has imported, by name: the leader's whole path
#: loads kernels several times per call, and ``import_module``'s lookup cost
#: small groups tens of microseconds a call.  Only fully imported modules go in.
_LOADED = {}


def load(name, implementation, package):
    """Import ``<package>._<name>_c`` or ``<package>._<name>_py`` per the switch.

    ``implementation`` ("cython" or "python"; None for the switch) overrides it, which is
    how tests reach both twins in one process."""
    implementation = implementation or IMPLEMENTATION
    if implementation not in ("python", "cython"):
        from kwire.errors import ArgumentValueError

        raise ArgumentValueError(f"implementation must be 'python' or 'cython', not {implementation!r}")
    suffix = "py" if implementation == "python" else "c"
    modname = f"{package}._{name}_{suffix}"
    module = _LOADED.get(modname)
    if module is not None:
        return module
    try:
        module = _LOADED[modname] = importlib.import_module(modname)
        return module
    except ImportError as exc:
        if suffix == "c":
            from kwire.errors import ExtensionMissingError

            raise ExtensionMissingError(
                f"kwire's compiled module {modname} is missing ({exc}). Reinstall kwire with a "
                "working C compiler, or set KWIRE_NO_EXTENSIONS=1 to use the pure-Python implementation."
            ) from exc
        raise
