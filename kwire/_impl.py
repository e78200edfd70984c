"""The one switch between the compiled modules and their pure-Python twins.

Every accelerated module ``kwire/<package>/_X_c.pyx`` has a twin
``kwire/<package>/_X_py.py`` with the same names.  Both import whatever
implementation-neutral pieces they share from a third module; neither imports
the other.  ``KWIRE_NO_EXTENSIONS=1`` selects the twins; otherwise
the compiled modules must load, and a missing one is an error rather than a
silent fall-back -- a wheel that lost its extensions should fail loudly.
"""

import importlib
import os

NO_EXTENSIONS = os.environ.get("KWIRE_NO_EXTENSIONS", "").strip().lower() not in ("", "0", "false", "no")

IMPLEMENTATION = "python" if NO_EXTENSIONS else "cython"


def load(name, implementation, package):
    """Import ``<package>._<name>_c`` or ``<package>._<name>_py`` per the switch.

    ``implementation`` ("cython" or "python"; None for the switch) overrides it, which is
    how tests reach both twins in one process."""
    implementation = implementation or IMPLEMENTATION
    if implementation not in ("python", "cython"):
        from kwire.errors import KwireError

        raise KwireError(f"implementation must be 'python' or 'cython', not {implementation!r}")
    suffix = "py" if implementation == "python" else "c"
    modname = f"{package}._{name}_{suffix}"
    try:
        return importlib.import_module(modname)
    except ImportError as exc:
        if suffix == "c":
            raise ImportError(
                f"kwire's compiled module {modname} is missing ({exc}). Reinstall kwire with a "
                "working C compiler, or set KWIRE_NO_EXTENSIONS=1 to use the pure-Python implementation."
            ) from exc
        raise
