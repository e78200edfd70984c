"""An install built without extensions runs the pure twins without the variable set again."""

import os
import subprocess
import sys

import pytest

from kwire import _impl


@pytest.mark.parametrize("env_value, built_with_extensions, expected", [
    (None, True, False),      # a normal install: compiled modules required
    (None, False, True),      # KWIRE_NO_EXTENSIONS=1 pip install, run without the variable
    ("", False, True),        # an empty variable counts as unset
    ("1", True, True),        # the variable wins over the build...
    ("0", False, False),      # ...both ways
    ("false", True, False),
    ("yes", True, True),
])
def test_switch(env_value, built_with_extensions, expected):
    assert _impl._no_extensions(env_value, built_with_extensions) is expected


def test_a_build_without_extensions_is_remembered(tmp_path):
    """A copy of the package whose build config says "no extensions" loads the pure twins with the
    variable unset, although the compiled modules are not there."""
    src = os.path.dirname(os.path.dirname(os.path.abspath(_impl.__file__)))
    pkg = tmp_path / "kwire"
    # Only .py files: the copy has no compiled module at all, as after a no-extensions install.
    for root, _dirs, files in os.walk(os.path.join(src, "kwire")):
        rel = os.path.relpath(root, src)
        for f in files:
            if f.endswith(".py") and f != "_build_config.py":
                (tmp_path / rel).mkdir(parents=True, exist_ok=True)
                with open(os.path.join(root, f), "rb") as fin:
                    (tmp_path / rel / f).write_bytes(fin.read())
    (pkg / "_build_config.py").write_text("EXTENSIONS = False\n")
    env = {k: v for k, v in os.environ.items() if k != "KWIRE_NO_EXTENSIONS"}
    env["PYTHONPATH"] = str(tmp_path)
    code = ("import kwire; assert kwire.__file__.startswith(%r), kwire.__file__; "
            "f = kwire.encode_request(kwire.HeartbeatRequest(group_id='g', member_id='m'), 4, 1); "
            "print(kwire.IMPLEMENTATION, kwire.decode_request(f)[1].group_id)") % str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["python", "g"]
    # And the same copy without the record refuses to run without its compiled modules.
    (pkg / "_build_config.py").unlink()
    out = subprocess.run([sys.executable, "-c", "import kwire"], env=env, capture_output=True, text=True,
                         timeout=120, cwd=str(tmp_path))
    assert out.returncode != 0 and "compiled module" in out.stderr
