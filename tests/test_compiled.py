"""The pure-Python modules the build also compiles from their own source (kwire/_compiled.py): which form runs,
that a compiled file never runs for a source it was not built from, and that both forms give the same answers."""

import importlib
import importlib.machinery
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from kwire import _impl
from kwire._compiled import COMPILED, CompiledFinder, compiled_name, compiled_path, compiled_status, source_digest

ROOT = Path(__file__).resolve().parent.parent


def _import(name):
    if name.startswith("kwire.pipeline."):
        pytest.importorskip("pyarrow")   # the pipeline's extra; a wheel's tests run without it
    return importlib.import_module(name)


def _source(module):
    return os.path.join(os.path.dirname(module.__file__), module.__name__.rpartition(".")[2] + ".py")


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="the pure-Python implementation is selected")
@pytest.mark.parametrize("name", COMPILED)
def test_each_listed_module_runs_compiled_from_its_source_as_it_is_now(name):
    module = _import(name)
    source = _source(module)
    assert compiled_status()[name] == module.__file__, (
        f"{name} runs as Python: its source changed since the last build (or it was never built). "
        f"Rebuild with `python setup.py build_ext --inplace`.")
    suffix = next(s for s in importlib.machinery.EXTENSION_SUFFIXES if module.__file__.endswith(s))
    assert os.path.basename(module.__file__) == compiled_name(name, source_digest(source), suffix)


@pytest.mark.skipif(not _impl.NO_EXTENSIONS, reason="the compiled implementation is selected")
@pytest.mark.parametrize("name", COMPILED)
def test_without_extensions_each_listed_module_runs_its_source(name):
    module = _import(name)
    assert module.__file__.endswith(".py") and compiled_status()[name] is None


def test_a_compiled_file_is_found_only_for_the_source_it_was_built_from(tmp_path):
    source = tmp_path / "_m.py"
    source.write_text("X = 1\n", encoding="utf-8")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    built = tmp_path / compiled_name("pkg._m", source_digest(source), suffix)
    other = tmp_path / compiled_name("pkg._m", "0" * len(source_digest(source)), suffix)
    other.write_bytes(b"")
    assert compiled_path("pkg._m", str(source)) is None   # only a file of another source
    built.write_bytes(b"")
    assert compiled_path("pkg._m", str(source)) == str(built)
    source.write_text("X = 2\n", encoding="utf-8")       # edited, not rebuilt: nothing compiled is found
    assert compiled_path("pkg._m", str(source)) is None
    assert compiled_path("pkg._m", str(tmp_path / "_gone.py")) is None


def test_a_changed_declaration_file_makes_every_compiled_file_stale(tmp_path, monkeypatch):
    # A .pxd gives C types to the module it sits beside and may be cimported by another's, so a compiled file
    # built against an older declaration of any module must never load.
    from kwire import _compiled

    source = tmp_path / "_m.py"
    source.write_text("X = 1\n", encoding="utf-8")
    declared = tmp_path / "_other.pxd"
    monkeypatch.setattr(_compiled, "declaration_files", lambda: [("pkg._other", str(declared))])
    declared.write_text("cdef class A:\n    cdef public int x\n", encoding="utf-8")
    before = source_digest(source)
    declared.write_text("cdef class A:\n    cdef public long x\n", encoding="utf-8")
    assert source_digest(source) != before
    monkeypatch.setattr(_compiled, "declaration_files", lambda: [])
    assert source_digest(source) not in (before, "")


def test_an_edited_source_of_a_declared_module_makes_every_compiled_file_stale(tmp_path, monkeypatch):
    # Another module may cimport the declared module's classes and is built against their compiled layout: once
    # that module's edited source runs as Python, no compiled file built against the old one may load.
    from kwire import _compiled

    source = tmp_path / "_m.py"
    source.write_text("X = 1\n", encoding="utf-8")
    declared = tmp_path / "_other.pxd"
    declared.write_text("cdef class A:\n    cdef public object x\n", encoding="utf-8")
    other = tmp_path / "_other.py"
    other.write_text("class A:\n    __slots__ = ('x',)\n", encoding="utf-8")
    monkeypatch.setattr(_compiled, "declaration_files", lambda: [("pkg._other", str(declared))])
    before = source_digest(source)
    other.write_text("class A:\n    __slots__ = ('x', 'y')\n", encoding="utf-8")
    assert source_digest(source) != before


def test_declaration_files_are_found_beside_listed_sources_only():
    from kwire import _compiled

    for name, path in _compiled.declaration_files():
        assert name in COMPILED and path.endswith(os.path.join(*name.split(".")) + ".pxd")
        assert os.path.isfile(path)


def test_the_finder_answers_only_for_listed_modules_and_only_with_extensions(tmp_path):
    name = COMPILED[0]
    module = importlib.import_module(name)
    folder = [os.path.dirname(module.__file__)]
    unlisted = "kwire.group._offsets"
    assert unlisted not in COMPILED
    assert CompiledFinder(True).find_spec(unlisted, folder) is None
    assert CompiledFinder(False).find_spec(name, folder) is None
    spec = CompiledFinder(True).find_spec(name, folder)
    if _impl.NO_EXTENSIONS or compiled_status().get(name) is None:
        return
    assert spec.origin == module.__file__ and spec.has_location


def test_a_class_has_one_identity_whichever_form_runs():
    import kwire.group
    from kwire.group import _consumer_coordinator, _consumer_member

    assert kwire.group.ConsumerProtocolMember is _consumer_member.ConsumerProtocolMember
    assert kwire.group.ConsumerGroupCoordinator is _consumer_coordinator.ConsumerGroupCoordinator
    event = pickle.loads(pickle.dumps(_consumer_coordinator.MemberFenced("g", "m", "leave")))
    assert type(event) is kwire.group.MemberFenced and isinstance(event, tuple)


_REPLAY = """
import json, sys
sys.path.insert(0, sys.argv[1])
from tests.test_migrate import two_then_three
from kwire.pipeline._migrate_consumer import simulate_consumer
from kwire._compiled import compiled_status
r = simulate_consumer(two_then_three(101000 * 1000))
print(json.dumps([r.unowned_ps.tolist(), r.stable_us.tolist(), r.member_events.tolist(),
                  sorted(k for k, v in compiled_status().items() if v)]))
"""


def test_the_compiled_and_the_python_forms_replay_alike():
    """The replay of one history in both forms, each in its own process: the same numbers."""
    pytest.importorskip("pyarrow")
    runs = {}
    for no_ext in ("0", "1"):
        env = dict(os.environ, KWIRE_NO_EXTENSIONS=no_ext)
        out = subprocess.run([sys.executable, "-c", _REPLAY, str(ROOT)], env=env, cwd=str(ROOT),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        runs[no_ext] = json.loads(out.stdout.splitlines()[-1])
    assert runs["1"][3] == []
    assert runs["0"][:3] == runs["1"][:3]
    assert runs["0"][2] and sum(runs["0"][2]) > 0
