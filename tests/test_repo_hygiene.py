"""The repository's scripts and metadata: things no other test imports, so they could break silently.

The scripts in scripts/, fuzz/ and benches/ are run by hand or by CI jobs
that do not run on every change; a module move broke fuzz/make_corpus.py once
and nothing noticed.  These tests import each of them, and run the corpus
writer into a temporary folder.  They also hold the repository to standing on
its own (no file names a path outside it) and the ``kwire`` console script
to its entry point.
"""

import importlib
import os
import re
import subprocess
import sys
import tomllib

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


# -- a clone that stands on its own ----------------------------------------------------------------------------

# Spelled in pieces so this file does not name them itself.
_OUTSIDE_PATHS = re.compile(rb"\.\./" + rb"shared|(?<![\w.~-])/" + rb"work/")
# Folders a checkout or a build adds that are not the repository's own files.
_NOT_OURS = {".git", "build", "dist", ".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".hypothesis"}


def _repository_files():
    """The tracked files (the tree's files, less build outputs, where there is no git checkout: an sdist)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60).stdout
        files = [f for f in out.decode().split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.SubprocessError):
        pass
    files = []
    for folder, dirs, names in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in _NOT_OURS and not d.endswith(".egg-info")]
        for name in names:
            if not name.endswith((".so", ".pyd", ".c", ".o")):
                files.append(os.path.relpath(os.path.join(folder, name), REPO))
    return files


def test_no_file_outside_ci_names_a_path_outside_the_repository():
    # .ci/ may point the spec check at the specs beside a CI clone; nothing else may depend on what lies
    # outside the repository or on one machine's layout.
    found = []
    for rel in _repository_files():
        if rel.split("/")[0] == ".ci" or not os.path.isfile(os.path.join(REPO, rel)):
            continue
        with open(os.path.join(REPO, rel), "rb") as fh:
            for number, line in enumerate(fh, 1):
                if _OUTSIDE_PATHS.search(line):
                    found.append(f"{rel}:{number}: {line.strip()[:120]!r}")
    assert not found, "paths outside the repository:\n" + "\n".join(found)


def test_the_outside_path_rule_catches_what_it_claims():
    for text in (b"see ../" b"shared/specs", b'SPEC = "/' b'work/main/x"', b"open('/" b"work/')"):
        assert _OUTSIDE_PATHS.search(text), text
    for text in (b"the network/ folder", b"./work/x", b"~/work/x", b"fuzz/corpus"):
        assert not _OUTSIDE_PATHS.search(text), text


def test_the_console_script_is_kwire_main():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as fh:
        project = tomllib.load(fh)["project"]
    entry = project["scripts"]["kwire"]
    assert entry == "kwire.__main__:main"
    module, _, attr = entry.partition(":")
    target = importlib.import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    assert callable(target)
