"""kwire's type information, as a user's mypy --strict sees it.

Run from the source tree, mypy reads the stubs beside the sources; run from a copy of tests/ outside it
(.ci/wheel-check, cibuildwheel), it reads the installed wheel, so a wheel that lost py.typed or a stub fails.
"""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# The directory holding the ``tests`` package: mypy resolves ``kwire`` from there first, then site-packages.
ROOT = os.path.dirname(HERE)

# Each line must draw exactly the error code given: proof that the stubs are read and precise, not Any.
BAD_USAGE = {
    "kwire.JoinGroupRequest(group_id=1)": "arg-type",
    "kwire.HeartbeatRequest(group='g')": "call-arg",
    "kwire.decode_response(b'', kwire.HeartbeatRequest.api_key, 4)[1].members": "attr-defined",
    "kwire.Subscription.decode(b'', 3)": "call-arg",
    "kwire.assign('range', [], {'t': '4'})": "dict-item",
    "kwire.DecodeError('x').offset + 1": "operator",
    "kwire.encode_request(kwire.HeartbeatResponse(), 4, 1)": "arg-type",
    "kwire.FrameSplitter().feed('text')": "arg-type",
}


def _mypy_output(tmp_path, *files):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it comes with the [test] extra)")
    cmd = [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
           "--show-error-codes", "--cache-dir", str(tmp_path / "cache"), *files]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode in (0, 1), out.stdout + out.stderr  # 2 would be a crash or a bad invocation
    return out.stdout


def test_sample_passes_strict_and_errors_are_caught(tmp_path):
    bad = tmp_path / "bad_usage.py"
    lines = ["import kwire", ""] + list(BAD_USAGE)
    bad.write_text("\n".join(lines) + "\n")
    sample = os.path.join(HERE, "typing_sample.py")
    stdout = _mypy_output(tmp_path, sample, str(bad))

    sample_errors = [ln for ln in stdout.splitlines() if ln.startswith(sample) or "typing_sample" in ln]
    assert sample_errors == [], "\n".join(sample_errors)

    found = {}
    for ln in stdout.splitlines():
        m = re.match(r".*bad_usage\.py:(\d+): error: .*\[([a-z-]+)\]$", ln)
        if m:
            found.setdefault(int(m.group(1)), set()).add(m.group(2))
    for lineno, (code, want) in enumerate(BAD_USAGE.items(), start=3):
        assert want in found.get(lineno, set()), f"line {lineno} `{code}`: wanted [{want}], mypy said:\n{stdout}"


def test_sample_runs():
    # The sample is real code: it must also do what its types claim, on whichever implementation is loaded.
    from tests import typing_sample

    typing_sample.main()


def test_package_is_marked_typed():
    import kwire

    pkg = os.path.dirname(kwire.__file__)
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
    assert os.path.isfile(os.path.join(pkg, "__init__.pyi"))
