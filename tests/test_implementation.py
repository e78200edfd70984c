"""The compiled modules must really be what ``import kwire`` loaded."""

import importlib
import os

import pytest

import kwire
from kwire import _impl


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="KWIRE_NO_EXTENSIONS=1 selects the pure-Python path")
@pytest.mark.parametrize("name", ["kwire.codec._codec_c", "kwire.assignors._rangerr_c", "kwire.assignors._sticky_c"])
def test_compiled_module_is_an_extension(name):
    mod = importlib.import_module(name)
    # A compiled module is a shared object, never a .py file that happens to share the name.
    assert os.path.splitext(mod.__file__)[1] in (".so", ".pyd"), mod.__file__


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="KWIRE_NO_EXTENSIONS=1 selects the pure-Python path")
def test_public_classes_come_from_the_compiled_codec():
    assert kwire.IMPLEMENTATION == "cython"
    assert kwire.JoinGroupRequest.__module__ == "kwire.codec._codec_c"
    assert kwire.Subscription.__module__ == "kwire.codec._codec_c"


@pytest.mark.skipif(not _impl.NO_EXTENSIONS, reason="only meaningful with KWIRE_NO_EXTENSIONS=1")
def test_no_extensions_selects_python():
    assert kwire.IMPLEMENTATION == "python"
    assert kwire.JoinGroupRequest.__module__ == "kwire"


def test_both_implementations_expose_the_same_names(both_codecs):
    names = [set(n for n in dir(m) if n[:1].isupper()) for m in both_codecs]
    assert all(n == names[0] for n in names)


def _run(env_extra, code):
    import subprocess
    import sys

    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_switch_selects_pure_python_in_a_fresh_interpreter():
    out = _run({"KWIRE_NO_EXTENSIONS": "1"},
               "import kwire; print(kwire.IMPLEMENTATION, kwire.JoinGroupRequest.__module__)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["python", "kwire"]


def test_demo_runs_on_both_implementations():
    for env in ({}, {"KWIRE_NO_EXTENSIONS": "1"}):
        out = _run(env, "import sys; from kwire.__main__ import main; sys.exit(main(['demo']))")
        assert out.returncode == 0, out.stderr
        assert "consumer-3:" in out.stdout
