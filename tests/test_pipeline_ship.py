"""The archive kwire ships to executors that lack it (no Spark: the cluster
runs are tests/test_pipeline_cluster.py)."""

import os
import subprocess
import sys
import zipfile

import pytest

from kwire import _impl
from kwire.pipeline._ship import kwire_archive, kwire_for_workers, needs_shipping, remote


def test_the_archive_holds_the_package_and_this_platform_s_extensions(tmp_path):
    import sysconfig

    path = kwire_archive(str(tmp_path))
    assert kwire_archive(str(tmp_path)) == path  # named by its content: built once
    names = zipfile.ZipFile(path).namelist()
    assert {"kwire/__init__.py", "kwire/pipeline/_ship.py", "kwire/codec/_batch_py.py"} <= set(names)
    assert not [n for n in names if n.endswith((".c", ".pyx", ".pyc"))]
    if not _impl.NO_EXTENSIONS:
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        assert "kwire/codec/_batch_c" + suffix in names and "kwire/codec/_codec_c" + suffix in names


def test_the_unpacked_archive_imports_with_its_compiled_modules(tmp_path):
    if _impl.NO_EXTENSIONS:
        pytest.skip("no compiled modules in this build")
    with zipfile.ZipFile(kwire_archive(str(tmp_path))) as zf:
        zf.extractall(tmp_path / "unpacked")
    code = ("import kwire.codec._batch_c as m, kwire.pipeline._ship as s; "
            "print(m.__file__); print(s.__file__)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path / "unpacked")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=str(tmp_path)).stdout.split()
    assert all(p.startswith(str(tmp_path / "unpacked")) for p in out)


def test_needs_shipping():
    assert not needs_shipping("local") and not needs_shipping("local[2]") and not needs_shipping("local[*]")
    assert needs_shipping("local-cluster[2,1,1024]") and needs_shipping("spark://127.0.0.1:7077")
    assert needs_shipping("yarn")


def test_remote_without_an_archive_is_the_function():
    assert remote("os.path", "join")("a", "b") == os.path.join("a", "b")


def test_remote_with_a_folder_imports_from_it_first(tmp_path, monkeypatch):
    # A local master's workers import the driver's kwire, not the one of their working directory.
    (tmp_path / "kwire_ship_probe.py").write_text("def where():\n    return __file__\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "kwire_ship_probe", raising=False)
    assert remote("kwire_ship_probe", "where", str(tmp_path))() == str(tmp_path / "kwire_ship_probe.py")
    assert sys.path[0] == str(tmp_path)
    remote("kwire_ship_probe", "where", str(tmp_path))()
    assert sys.path.count(str(tmp_path)) == 1
    sys.modules.pop("kwire_ship_probe", None)


def test_a_local_master_s_workers_are_given_the_driver_s_kwire():
    import kwire

    class Context:
        master = "local[2]"

    folder = kwire_for_workers(Context())
    assert os.path.isabs(folder) and os.path.join(folder, "kwire", "__init__.py") == os.path.abspath(kwire.__file__)
