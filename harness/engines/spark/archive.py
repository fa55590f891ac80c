"""The driver JVM's class-data-sharing archive: where it lives (`class_archive`) and how it is built once
per environment (`make_class_archive`, which `make` calls), by a session that runs what a search runs and
writes the classes it loaded when its JVM exits. A JVM that maps it starts Spark in about half the time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import checkpoint as ck
from harness.engines.spark.session import JVM_OPTIONS, _slots, start_session


def class_archive() -> Path:
    """Where the driver JVM's class-data-sharing archive lives: in the Python environment that holds
    pyspark (and goes with it), named after pyspark's version, the java Spark starts and the JVM options.
    A JVM that finds the archive does not match its classes ignores it (-Xshare:auto, the default)."""
    import pyspark  # its __version__: a pyspark run from a Spark distribution has no package metadata

    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    java = os.path.realpath(java or "java")
    stamp = os.stat(java).st_mtime_ns if os.path.exists(java) else 0
    key = hashlib.sha256(f"{pyspark.__version__}\0{java}\0{stamp}\0{JVM_OPTIONS}".encode()).hexdigest()[:16]
    return Path(sys.prefix) / "spark-class-archive" / f"driver-{key}.jsa"


def make_class_archive() -> Path | None:
    """Build the class archive once per environment (`make` does): a fresh Python starts a session whose
    JVM runs a barrier job and, when it exits, writes the classes it loaded; the file is renamed into
    place whole. A JVM that maps it starts Spark in about half the time (docs/PERFORMANCE.md). None if
    it could not be built (the sessions then start as before)."""
    from harness.files import temporary_name

    target = class_archive()
    if target.is_file():
        return target
    tmp = target.with_name(temporary_name(target.name))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="harness-spark-") as folder:
            done = subprocess.run([sys.executable, "-c", "import sys; from harness.engines.spark.archive import _load_classes; "
                                   "sys.exit(_load_classes(sys.argv[1], sys.argv[2]))", str(tmp), folder],
                                  capture_output=True, timeout=600)
        if done.returncode != 0 or not tmp.is_file():
            return None
        os.replace(tmp, target)
        for stale in target.parent.glob("driver-*.jsa"):  # archives of an earlier pyspark, java or options
            if stale != target and re.fullmatch(r"driver-[0-9a-f]{16}\.jsa", stale.name):
                stale.unlink(missing_ok=True)
        return target
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        tmp.unlink(missing_ok=True)


def _load_classes(archive: str, folder: str) -> int:
    """In a fresh Python: what a search does with Spark (a session, a barrier job, the slot count, the
    status tracker), then a clean stop so that the JVM exits normally and writes `archive`."""
    sc = start_session("local[2]", Path(folder) / ck.LOG, dump_classes=Path(archive))
    rdd = sc.parallelize(range(2), 2).barrier().mapPartitions(lambda part: [json.dumps(sum(part))])
    rdd.collect()
    _slots(sc)
    sc.statusTracker().getActiveStageIds()
    proc = sc._gateway.proc
    sc.stop()
    sc._gateway.shutdown()
    proc.stdin.close()  # the gateway JVM exits when its standard input closes
    return proc.wait(300)

