"""Getting kwire onto executors that do not have it installed.

The decoder and the assignors run in Spark's Python workers, so every
executor needs kwire, compiled extensions included.  On a cluster whose
executors lack it, :func:`ship_kwire` zips the driver's own ``kwire``
package (Python files and the compiled modules built for this platform) and
adds it with ``SparkContext.addArchive``: Spark serves it from the driver and
unpacks it in each executor's SparkFiles directory.

A zip on ``sys.path`` cannot hold extension modules (zipimport loads only
Python), and Spark puts an unpacked archive's directory on no path, so the
functions Spark runs are wrapped by :func:`remote`: a closure that Spark's
cloudpickle sends by value (it names no kwire module), which puts the
unpacked directory first on ``sys.path`` and only then imports the kwire
function it stands for.  Executors still need kwire's dependencies (NumPy,
pyarrow, pandas) and the same Python version; docs/PIPELINE.md shows the
packed-venv way, which ships those too.

A local master's workers run on this machine but not with this interpreter's
``sys.path``: Spark starts them as ``python -m pyspark.daemon`` in the
driver's working directory, so they import the kwire of that directory or of
site-packages, which need not be the one the driver imported (a script that
put a checkout on its own path, run from elsewhere).  They would then run
other code, or a checkout whose compiled modules were never built for its
sources, as Python.  :func:`kwire_for_workers` names the driver's own kwire
for them instead, and :func:`remote` puts it first on their path.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import tempfile
import zipfile

#: Files of the package a worker needs: sources and this platform's extensions.
_SHIPPED_SUFFIXES = (".py", ".typed")


def _package_files(root):
    ext_suffix = _extension_suffix()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(_SHIPPED_SUFFIXES) or name.endswith(ext_suffix):
                yield os.path.join(folder, name)


def _extension_suffix():
    import sysconfig

    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def kwire_archive(directory=None):
    """A zip of the driver's ``kwire`` package, named by a hash of its bytes so
    a rebuilt package is a new archive (Spark adds a path only once)."""
    import kwire

    root = os.path.dirname(os.path.abspath(kwire.__file__))
    base = os.path.dirname(root)
    files = list(_package_files(root))
    digest = hashlib.sha256()
    for path in files:
        digest.update(os.path.relpath(path, base).encode())
        with open(path, "rb") as fh:
            digest.update(fh.read())
    # One cache directory, one archive per build: reruns reuse it, and it
    # must outlive the job (Spark serves it from this path while executors start).
    directory = directory or os.path.join(tempfile.gettempdir(), f"kwire-ship-{os.getuid()}")
    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, f"kwire-{digest.hexdigest()[:16]}.zip")
    if not os.path.exists(target):
        tmp = f"{target}.{os.getpid()}.part"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in files:
                zf.write(path, os.path.relpath(path, base))
        os.replace(tmp, target)
    return target


def ship_kwire(spark_context, directory=None):
    """Add the driver's kwire to the job's archives; returns the archive's
    name, which :func:`remote` needs to find it on the workers."""
    path = kwire_archive(directory)
    spark_context.addArchive(path)
    return os.path.basename(path)


def kwire_for_workers(spark_context, directory=None):
    """What :func:`remote` takes for the workers to import the driver's kwire: the shipped archive's name
    (:func:`ship_kwire`) when the master's executors may lack it, else the absolute path of the folder the
    driver's ``kwire`` package is in."""
    if needs_shipping(spark_context.master):
        return ship_kwire(spark_context, directory)
    import kwire

    return os.path.dirname(os.path.dirname(os.path.abspath(kwire.__file__)))


def needs_shipping(master):
    """Executors of ``local[...]`` run on this machine and read its files (not
    this ``sys.path``: :func:`kwire_for_workers`); every other master's may not."""
    return not (master == "local" or master.startswith("local["))


def remote(module, name, archive=None):
    """``module.name``, callable on a worker that may not have kwire installed.

    With ``archive`` (from :func:`kwire_for_workers`: an archive's name, or an
    absolute folder) the unpacked archive, or that folder, goes first on
    ``sys.path`` before the import.  The closure refers to no kwire object,
    so cloudpickle sends it by value and the worker imports kwire only when it
    is first called, from wherever the path says."""

    def call(*args, **kwargs):
        if archive is not None:
            if os.path.isabs(archive):
                path = archive
            else:
                from pyspark import SparkFiles

                path = os.path.join(SparkFiles.getRootDirectory(), archive)
            if os.path.isdir(path) and sys.path[:1] != [path]:
                sys.path.insert(0, path)
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call
