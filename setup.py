"""Build script: generates the Cython codec from kwire's schema tables, then
compiles every ``kwire/**/_*_c.pyx`` module.

``KWIRE_NO_EXTENSIONS=1`` at build time builds a pure-Python install.  In
every other case a compiler failure fails the build: a kwire without its
extensions must never be installed by accident.
"""

import glob
import importlib.util
import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_by_path(name, relpath):
    # kwire/__init__ imports the compiled modules, which do not exist yet at
    # build time, so the schema and the generator are loaded as plain files.
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, relpath))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def generate_sources():
    schema = _load_by_path("_kwire_build_schema", os.path.join("kwire", "codec", "_schema.py"))
    # The generator's parts (_codegen_read.py, _codegen_write.py, ...) import each other as plain modules when
    # there is no kwire package to import them from: their folder goes on the path while it runs.
    codec_dir = os.path.join(HERE, "kwire", "codec")
    sys.path.insert(0, codec_dir)
    try:
        codegen = _load_by_path("_kwire_build_codegen", os.path.join("kwire", "codec", "_codegen.py"))
        codegen.write_cython(schema, os.path.join(codec_dir, "_codec_c.pyx"))
    finally:
        sys.path.remove(codec_dir)


def write_build_config(with_extensions):
    # Read by kwire/_impl.py, so that an install built without extensions runs
    # the pure twins without KWIRE_NO_EXTENSIONS having to be set again.
    text = ("# Written by setup.py at build time; not committed.\n"
            f"EXTENSIONS = {bool(with_extensions)!r}\n")
    path = os.path.join(HERE, "kwire", "_build_config.py")
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def extensions():
    if os.environ.get("KWIRE_NO_EXTENSIONS", "").strip().lower() not in ("", "0", "false", "no"):
        write_build_config(False)
        return []
    write_build_config(True)
    from Cython.Build import cythonize
    import numpy
    from setuptools import Extension

    generate_sources()
    sanitize = os.environ.get("KWIRE_SANITIZE", "")
    compile_args = ["-O3"] if sys.platform != "win32" else ["/O2"]
    link_args = []
    if sanitize:
        compile_args = ["-O1", "-g", "-fno-omit-frame-pointer", f"-fsanitize={sanitize}"]
        link_args = [f"-fsanitize={sanitize}"]
    exts = []
    for pyx in sorted(glob.glob(os.path.join("kwire", "**", "_*_c.pyx"), recursive=True)):
        modname = os.path.splitext(pyx)[0].replace(os.sep, ".")
        exts.append(
            Extension(
                modname,
                [pyx],
                include_dirs=[numpy.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=compile_args,
                extra_link_args=link_args,
            )
        )
    compiled = cythonize(
        exts,
        nthreads=os.cpu_count() or 1,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "embedsignature": True,
            "freethreading_compatible": True,
        },
    )
    # Cython 3.3 compiles a cpdef method read as a value off a typed object (``f = obj.method``) into a call
    # through a pointer of the wrong type, with only this C warning to show for it; such a call passes the wrong
    # arguments at run time, so in the modules compiled from .py sources (whose .pxd files type such objects) it
    # stops the build instead.
    plain_args = compile_args + ([] if sys.platform == "win32" else ["-Werror=incompatible-pointer-types"])
    return compiled + cythonize(
        [Extension(name, [_source_of(name)], extra_compile_args=plain_args, extra_link_args=link_args)
         for name in _compiled_modules().COMPILED],
        nthreads=os.cpu_count() or 1,
        language_level=3,
        # Plain Python compiled as it is: annotations are not C types, and every Python rule (negative
        # indices, bounds, division, overflow) holds as in the interpreter.
        compiler_directives={"annotation_typing": False, "binding": True, "embedsignature": True},
    )


def _compiled_modules():
    """kwire/_compiled.py: which pure-Python modules are also compiled, and how their compiled files are
    named (the finder that loads them reads the same rule)."""
    return sys.modules.get("_kwire_build_compiled") or _load_by_path("_kwire_build_compiled",
                                                                     os.path.join("kwire", "_compiled.py"))


def _source_of(module_name):
    return os.path.join(*module_name.split(".")) + ".py"


def _digest_named(fullname, path):
    """``path`` (a file or folder/file name of ``fullname``'s extension) renamed with its source's digest when
    ``fullname`` is compiled from a .py source; otherwise unchanged."""
    compiled = _compiled_modules()
    if fullname not in compiled.COMPILED:
        return path
    folder, base = os.path.split(path)
    last = fullname.rpartition(".")[2]
    digest = compiled.source_digest(os.path.join(HERE, _source_of(fullname)))
    return os.path.join(folder, compiled.compiled_name(fullname, digest, base[len(last):]))


# GCC stops inlining anywhere in a translation unit once the unit has grown by
# inline-unit-growth percent (40 by default).  The generated codec is one unit
# of ~450k lines of C, so that budget runs out partway and which of its inline
# readers (r_string, r_int32, ...) stay calls in which message reader then
# depends on unrelated code elsewhere in the unit: with 40, JoinGroupResponse's
# member reader lost its inlined r_string to an edit of r_string's slow path.
# Twice the default budget lets every reader that asks to be inlined be.
_GCC_CODEC_ARGS = ["--param", "inline-unit-growth=100"]


def _is_gcc(compiler):
    """Whether ``compiler`` (a distutils compiler object) runs GCC, whose inliner takes that --param."""
    command = list(getattr(compiler, "compiler_so", None) or [])
    # A compiler cache in front (CC="ccache gcc") runs the compiler named after it: ask that one.
    while command and os.path.basename(command[0]) in ("ccache", "sccache"):
        command = command[1:]
    if not command:
        return False  # MSVC
    try:
        out = subprocess.run([command[0], "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "Free Software Foundation" in out


class BuildExt(build_ext):
    """Compiles the extensions on every core, saying which one it is on, and
    replaces in-place modules instead of rewriting them.

    The C compile takes minutes (the generated codec alone is ~450k lines of
    C), so a silent build looks hung: each module prints a line as it starts
    (shown by ``pip install -v``, and always by ``setup.py build_ext``)."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    # A module compiled from its .py source (kwire/_compiled.py) is named after the digest of that source: the
    # finder loads only the file built from the source as it is now.  distutils names the built file through
    # get_ext_fullpath (with the last part of the name only) and setuptools the in-place copy through
    # get_ext_filename: both are renamed.

    def get_ext_filename(self, fullname):
        return _digest_named(fullname, super().get_ext_filename(fullname))

    def get_ext_fullpath(self, ext_name):
        return _digest_named(self.get_ext_fullname(ext_name), super().get_ext_fullpath(ext_name))

    def build_extension(self, ext):
        self._started = getattr(self, "_started", 0) + 1
        print(f"kwire: extension {self._started}/{len(self.extensions)}: {ext.name}", file=sys.stderr, flush=True)
        if ext.name == "kwire.codec._codec_c" and _is_gcc(self.compiler):
            ext.extra_compile_args = list(ext.extra_compile_args or []) + _GCC_CODEC_ARGS
        super().build_extension(ext)
        if self.get_ext_fullname(ext.name) in _compiled_modules().COMPILED:
            _remove_earlier_builds(self.get_ext_fullpath(ext.name))

    # Overwriting a loaded extension in place changes the pages a running
    # interpreter has mapped, which kills it with SIGBUS; unlinking first lets
    # running processes keep the old file while new ones load the new one.

    def copy_extensions_to_source(self):
        for ext in self.extensions:
            fullname = self.get_ext_fullname(ext.name)
            filename = self.get_ext_filename(fullname)
            modpath = fullname.split(".")
            package_dir = self.get_finalized_command("build_py").get_package_dir(".".join(modpath[:-1]))
            target = os.path.join(package_dir, os.path.basename(filename))
            if os.path.exists(target):
                os.unlink(target)
            if fullname in _compiled_modules().COMPILED:
                _remove_earlier_builds(target)
        super().copy_extensions_to_source()


def _remove_earlier_builds(path):
    """Delete the files beside ``path`` (a module's compiled file, named after its source's digest) that were
    built from earlier versions of its source: they are never loaded again, and a wheel would carry them."""
    folder, base = os.path.split(path)
    stem, digest, suffix = base.split(".", 2)
    for name in os.listdir(folder or "."):
        parts = name.split(".", 2)
        if len(parts) == 3 and parts[0] == stem and parts[2] == suffix and len(parts[1]) == len(digest) \
                and parts[1] != digest:
            os.unlink(os.path.join(folder, name))


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
