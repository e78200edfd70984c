"""The pipeline on the user's Spark: ``spark-submit --master M`` of
``kwire/pipeline/__main__.py``, on ``local-cluster[2,1,1024]`` and on a
standalone master and worker started here on 127.0.0.1.

kwire is not installed in the test environment (it is found through
PYTHONPATH), and the executors are given a PYTHONPATH without it, so the
job only runs if kwire ships itself to them.  Each run is bounded in time;
the standalone daemons are stopped by pid.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from kwire.pipeline._synth import synth  # noqa: E402

#: The checkout whose kwire the child processes (the standalone cluster and its jobs) import.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = [pytest.mark.spark, pytest.mark.slow]

RUN_TIMEOUT = 420


def _spark_home():
    import pyspark

    return os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)


def _env(**extra):
    env = dict(os.environ)
    env.update(SPARK_HOME=_spark_home(), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=REPO)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cluster") / "capture.parquet")
    synth(path, groups=3, seed=2, duration_s=60.0, corrupt_rate=0.01)
    return path


def _submit(master, capture, out, tmp_path):
    script = subprocess.run([sys.executable, "-c", "import kwire.pipeline.__main__ as m; print(m.__file__)"],
                            env=_env(), capture_output=True, text=True, check=True).stdout.strip()
    cmd = [os.path.join(_spark_home(), "bin", "spark-submit"), "--master", master,
           # The executors' Python must not find the source tree.
           "--conf", "spark.executorEnv.PYTHONPATH=" + str(tmp_path / "nothing-here"),
           "--conf", "spark.ui.enabled=false", "--driver-memory", "1g", "--executor-memory", "1g",
           script, capture, "--out", out]
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-2000:]
    return proc


def _check_report(out_dir, master):
    with open(os.path.join(out_dir, "report.json")) as fh:
        doc = json.load(fh)
    assert doc["spark"]["master"] == master
    assert doc["spark"]["app_id"].startswith("app-")  # a cluster application, not local-...
    assert doc["stages"]["decode"]["frames"] == doc["frames"] > 600
    assert doc["groups"] == 3
    assert doc["bad_frames"] > 0
    assert os.path.exists(os.path.join(out_dir, "report.md"))


def test_spark_submit_on_local_cluster(capture, tmp_path):
    out = tmp_path / "out"
    proc = _submit("local-cluster[2,1,1024]", capture, f"file://{out}", tmp_path)
    _check_report(str(out), "local-cluster[2,1,1024]")
    assert "on local-cluster[2,1,1024]" in proc.stdout


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port, proc, deadline):
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.5)
    return False


@pytest.fixture
def standalone(tmp_path):
    """A master and one worker (1 core, 1 GB) on 127.0.0.1, stopped by pid."""
    spark_class = os.path.join(_spark_home(), "bin", "spark-class")
    port = _free_port()
    # The daemons' environment has no PYTHONPATH: executors they start lack kwire.
    env = _env(SPARK_WORKER_DIR=str(tmp_path / "work"))
    env.pop("PYTHONPATH")
    logs = []
    procs = []
    try:
        log = open(tmp_path / "master.log", "w")
        logs.append(log)
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(_free_port())], env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True))
        assert _wait_for_port(port, procs[0], time.monotonic() + 90), open(tmp_path / "master.log").read()[-3000:]
        log = open(tmp_path / "worker.log", "w")
        logs.append(log)
        url = f"spark://127.0.0.1:{port}"
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
             "--memory", "1g", "--webui-port", str(_free_port()), "--work-dir", str(tmp_path / "work")],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 90
        while "Successfully registered with master" not in open(tmp_path / "worker.log").read():
            assert time.monotonic() < deadline and procs[1].poll() is None, open(tmp_path / "worker.log").read()
            time.sleep(0.5)
        yield url
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        for log in logs:
            log.close()


def test_spark_submit_on_a_standalone_cluster(capture, standalone, tmp_path):
    out = tmp_path / "out"
    _submit(standalone, capture, f"file://{out}", tmp_path)
    _check_report(str(out), standalone)
    # The executor unpacked the driver's kwire: that is where its workers imported it from.
    shipped = [d for root, dirs, _ in os.walk(tmp_path / "work") for d in dirs if d.startswith("kwire-")]
    assert shipped, "kwire was not shipped to the executor"
    shutil.rmtree(tmp_path / "work", ignore_errors=True)
