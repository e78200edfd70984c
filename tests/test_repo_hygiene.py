"""The repository's scripts and metadata: things no other test imports, so they could break silently.

The scripts in scripts/, fuzz/ and benches/ are run by hand or by CI jobs
that do not run on every change; a module move broke fuzz/make_corpus.py once
and nothing noticed.  These tests import each of them, and run the corpus
writer into a temporary folder.
"""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

SCRIPT_DIRS = ("scripts", "fuzz", "benches")
# Third-party modules a script may need that the test extra does not install:
# a script failing only for want of one of these is not broken.
OPTIONAL_DEPENDENCIES = {
    "atheris": "fuzz/fuzz_codec.py: the coverage-guided harness, installed only for campaigns",
}


def _scripts(folder):
    base = os.path.join(REPO, folder)
    return sorted(n[:-3] for n in os.listdir(base) if n.endswith(".py") and n != "__init__.py")


@pytest.mark.parametrize("folder", SCRIPT_DIRS)
def test_every_script_imports(folder):
    # One fresh interpreter per folder: the scripts put their own folder on
    # sys.path and some instrument imports, which must not leak into this process.
    # Each import is tried on its own so one failure does not hide the next.
    code = (
        "import importlib, sys, traceback\n"
        f"sys.path[:0] = [{os.path.join(REPO, folder)!r}, {REPO!r}]\n"
        f"optional = {sorted(OPTIONAL_DEPENDENCIES)!r}\n"
        "bad = []\n"
        f"for name in {_scripts(folder)!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError as e:\n"
        "        if e.name not in optional:\n"
        "            bad.append(name + ': ' + traceback.format_exc(limit=-2))\n"
        "    except Exception:\n"
        "        bad.append(name + ': ' + traceback.format_exc(limit=-2))\n"
        "print('\\n'.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"scripts in {folder}/ that do not import:\n{proc.stdout}\n{proc.stderr[-3000:]}"


def test_make_corpus_writes_every_family(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(REPO, "fuzz"))
    import differential
    import make_corpus

    make_corpus.main(str(tmp_path))
    written = {family: os.listdir(tmp_path / family) for family in os.listdir(tmp_path)}
    assert set(differential.FAMILIES) <= set(written)
    assert all(written.values()), written
