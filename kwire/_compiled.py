"""Pure-Python modules that also run compiled: the build compiles each with Cython from its own source.

Both protocols' group state machines, the small assignor paths they call and the migration what-if's replay
spend their time in Python function calls and attribute reads, which Cython's compiled form of the very same source runs in about two
thirds of the time.  Unlike the twins (``_X_c.pyx`` beside ``_X_py.py``, chosen by :mod:`kwire._impl`), there is
no second source: setup.py compiles the ``.py`` file named in :data:`COMPILED` itself, and the module is imported
under its own name, compiled or not, so a class has one identity whichever form runs.

Which form runs is decided when the module is imported, by :class:`CompiledFinder` (installed by
:mod:`kwire._impl`, which every part of kwire imports first):

* ``KWIRE_NO_EXTENSIONS=1`` (or an install built without extensions): the ``.py`` source, as Python imports it;
* otherwise the compiled file built from the source as it is now: its name carries a digest of the source's
  bytes (``_consumer_member.<digest>.cpython-311-x86_64-linux-gnu.so``), so a source edited since the last
  build finds no compiled file of its digest and runs as Python.  A compiled file never runs for a source it
  was not built from; ``python setup.py build_ext --inplace`` builds the new one (:func:`compiled_status` says
  which modules run compiled, and tests/test_compiled.py fails while one does not).

The compiled file's name is not one Python's own finder reads (the digest adds a dot to the module name), so
nothing but this finder loads it.  setup.py reads :data:`COMPILED` and :func:`compiled_name` from this file.
"""

import hashlib
import importlib.machinery
import importlib.util
import os
import sys

#: The modules setup.py compiles from their own ``.py`` source (dotted names).
COMPILED = (
    "kwire.group._classic_group",
    "kwire.group._classic_rebalance",
    "kwire.group._coordinator",
    "kwire.group._member",
    "kwire.group._registry",
    "kwire.group._consumer_coordinator",
    "kwire.group._consumer_dispatch",
    "kwire.group._consumer_group",
    "kwire.group._consumer_member",
    "kwire.group._consumer_target",
    "kwire.group._consumer_views",
    "kwire.group._reconcile",
    "kwire.group._timers",
    "kwire.assignors._server",
    "kwire.assignors._server_lists",
    "kwire.assignors._sticky_small",
    "kwire.assignors._sticky_order",
    "kwire.assignors._javaorder",
    "kwire.assignors._api",
    "kwire.assignors._range",
    "kwire.pipeline._migrate_classic",
    "kwire.pipeline._migrate_consumer",
    "kwire.pipeline._migrate_ledger",
    "kwire.pipeline._migrate_loop",
)

#: Hex digits of the source's SHA-256 in the compiled file's name.
DIGEST_CHARS = 16


#: The folder that holds the ``kwire`` package (a checkout's root, or site-packages).
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def declaration_files():
    """The ``.pxd`` files beside :data:`COMPILED` modules' sources, as (dotted name, path), in name order.

    Cython reads a module's ``X.pxd`` when it compiles ``X.py`` (C types for its classes, attributes and
    locals), and one ``.pxd`` may ``cimport`` another's classes, whose C layout then is built into both
    modules.  So every compiled module's digest covers all of them: a changed declaration anywhere makes every
    compiled file stale, never one built against another module's old layout."""
    found = []
    for name in COMPILED:
        path = os.path.join(_ROOT, *name.split(".")) + ".pxd"
        if os.path.isfile(path):
            found.append((name, path))
    return found


def source_digest(source_path):
    """The digest that names the compiled file of the source at ``source_path``: its bytes, and every
    declaration file's (see :func:`declaration_files`) with the source it declares.

    The declared module's source counts too: a module that cimports its classes is built against its compiled
    layout, and an edited source of the declared module runs as Python until the next build, a class whose
    instances have another layout (importing a module built against the compiled one then fails, or reads the
    wrong fields where the sizes happen to agree)."""
    digest = hashlib.sha256()
    with open(source_path, "rb") as fh:
        digest.update(fh.read())
    for name, path in declaration_files():
        for part in (path, path[:-len(".pxd")] + ".py"):
            if not os.path.isfile(part):
                continue
            with open(part, "rb") as fh:
                declared = fh.read()
            digest.update(b"\0%s\0%s\0%d\0" % (name.encode(), part[-3:].encode(), len(declared)))
            digest.update(declared)
    return digest.hexdigest()[:DIGEST_CHARS]


def compiled_name(module_name, digest, suffix):
    """The compiled file's name (no folder) for ``module_name`` built from a source of ``digest``; ``suffix``
    is one of ``importlib.machinery.EXTENSION_SUFFIXES`` (setup.py passes the one it builds with)."""
    return f"{module_name.rpartition('.')[2]}.{digest}{suffix}"


def compiled_path(module_name, source_path):
    """The compiled file built from ``source_path`` as it is now, or None when there is none."""
    try:
        digest = source_digest(source_path)
    except OSError:
        return None
    folder = os.path.dirname(source_path)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, compiled_name(module_name, digest, suffix))
        if os.path.isfile(path):
            return path
    return None


class CompiledFinder:
    """A meta-path finder for the :data:`COMPILED` modules: the compiled file of the current source when
    extensions are on and it exists, otherwise nothing (Python's own finder then imports the ``.py``)."""

    def __init__(self, use_extensions):
        self.use_extensions = use_extensions
        self.names = frozenset(COMPILED)
        #: module name -> the compiled file it was loaded from, or None (it runs as Python)
        self.status = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.names:
            return None
        found = None
        if self.use_extensions and path:
            source = os.path.join(list(path)[0], fullname.rpartition(".")[2] + ".py")
            found = compiled_path(fullname, source)
        self.status[fullname] = found
        if found is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, found, loader=importlib.machinery.ExtensionFileLoader(fullname, found))


_FINDER = None


def install(use_extensions):
    """Put the finder first on ``sys.meta_path`` (once)."""
    global _FINDER
    if _FINDER is None:
        _FINDER = CompiledFinder(use_extensions)
        sys.meta_path.insert(0, _FINDER)
    return _FINDER


def compiled_status():
    """``{module name: the compiled file it runs from, or None}`` for each :data:`COMPILED` module imported so
    far in this process."""
    return dict(_FINDER.status) if _FINDER is not None else {}
