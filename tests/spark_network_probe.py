"""Run by tests in a fresh Python (a new driver JVM): start the harness's Spark session on the master in
argv[1], hold a task running in a Python worker, and print as JSON what the session exposes meanwhile: the
sockets its processes listen on, its network settings and whether the UI's jobs page offers a kill link."""

import json
import os
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from harness.engines import spark
from tests.conftest import listening_sockets

folder = Path(tempfile.mkdtemp(prefix="harness-probe-"))
started = folder / "task-started"
sc = spark.start_session(sys.argv[1], folder / "spark.log")


def hold(_, started=str(started)):  # runs until cancelled, so that a Python worker is up meanwhile
    import pathlib
    import time

    pathlib.Path(started).touch()
    time.sleep(600)
    return []


def run_job():
    try:
        sc.parallelize([0], 1).mapPartitions(hold).collect()
    except Exception:  # cancelled below
        pass


threading.Thread(target=run_job, daemon=True).start()
while not started.exists():
    time.sleep(0.05)
jobs_page = urllib.request.urlopen(f"{sc.uiWebUrl}/jobs/", timeout=60).read().decode() if sc.uiWebUrl else ""
conf = sc.getConf()
print(json.dumps({"listening": [[ip, port, command] for (ip, port), (_, command) in listening_sockets([os.getpid()]).items()],
                  "settings": {key: conf.get(key, None) for key in ("spark.ui.killEnabled", "spark.driver.bindAddress",
                                                                    "spark.driver.host", "spark.ui.enabled")},
                  "ui": sc.uiWebUrl, "kill_link": "/jobs/job/kill" in jobs_page}))
sys.stdout.flush()
sc.cancelAllJobs()
spark.stop_session(sc)
