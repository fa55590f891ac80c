"""Apache Kafka's own code, for `conform`: which versions the project resolves, where their jars are, and the
JVM that runs them in this process.

The jars are resolved by `make kafka` (one version) or `make kafka-all` (kafka/versions.txt) into
.kafka/<version>/lib, and conform's adapter (kafka/adapter) is compiled against them into
.kafka/<version>/adapter.jar; nothing is downloaded at run time. The JVM is started in-process through JPype
(docs/ARCHITECTURE.md, "Kafka's own code"): one JVM per process, with one version's classpath, since a JVM
cannot unload the classes of one Kafka version to load another's.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from harness.errors import BadInput

ROOT = Path(__file__).resolve().parents[2]
VERSIONS_FILE = ROOT / "kafka" / "versions.txt"
JARS_ROOT = ROOT / ".kafka"


def listed_versions() -> list[str]:
    """The versions kafka/versions.txt lists, newest (the default) first."""
    lines = VERSIONS_FILE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def resolved_versions() -> list[str]:
    return [v for v in listed_versions() if (JARS_ROOT / v / ".resolved").is_file()]


def default_version() -> str:
    """The newest version the project resolves (the first resolved line of kafka/versions.txt)."""
    resolved = resolved_versions()
    if not resolved:
        raise BadInput("no Kafka version is resolved: run `make kafka` (Maven copies Kafka's jars into .kafka/)")
    return resolved[0]


def classpath(version: str) -> list[str]:
    """The jars of one resolved version; an unknown or unresolved version is one line, exit 2."""
    listed = listed_versions()
    if version not in listed:
        raise BadInput(f"unknown Kafka version {version!r}: kafka/versions.txt lists {', '.join(listed)}")
    lib = JARS_ROOT / version / "lib"
    if not (JARS_ROOT / version / ".resolved").is_file() or not lib.is_dir():
        raise BadInput(f"Kafka {version} is not resolved here: run `make kafka KAFKA={version}`")
    jars = sorted(str(p) for p in lib.glob("*.jar"))
    if not jars:
        raise BadInput(f"Kafka {version}'s folder {lib} holds no jars: run `make kafka KAFKA={version}` again")
    adapter = JARS_ROOT / version / "adapter.jar"  # conform's adapter, compiled by `make kafka` (harness/conform)
    return jars + [str(adapter)] if adapter.is_file() else jars


def has_adapter(version: str) -> bool:
    return (JARS_ROOT / version / "adapter.jar").is_file()


_started: str | None = None


def start_jvm(version: str) -> None:
    """Start this process's JVM on one Kafka version's jars (again for the same version: nothing to do)."""
    global _started
    jars = classpath(version)
    if _started == version:
        return
    if _started is not None:
        raise BadInput(f"this process already runs Kafka {_started}; one version per process")
    import jpype
    try:
        jvm_path = jpype.getDefaultJVMPath()
    except jpype.JVMNotFoundException:
        raise BadInput("no Java runtime found (JAVA_HOME or java on PATH): conform needs Java 17") from None
    if not os.path.exists(jvm_path) and not shutil.which("java"):
        raise BadInput("no Java runtime found (JAVA_HOME or java on PATH): conform needs Java 17")
    java_home = os.environ.get("JAVA_HOME")
    if java_home and not Path(jvm_path).resolve().is_relative_to(Path(java_home).resolve()):
        # JPype falls back to the system's JVM when JAVA_HOME names none: a user who set it meant that one
        raise BadInput(f"JAVA_HOME={java_home} holds no Java runtime (libjvm): conform needs Java 17")
    # convertStrings=False: Java strings stay Java objects until asked for, as JPype recommends.
    # -Xrs and interrupt=False: the JVM leaves SIGINT and SIGTERM to Python's handlers (harness/interrupt.py), which
    # it would otherwise replace, so that Ctrl-C still stops a run with 130 (in-process JVM: it ends with the process).
    jpype.startJVM(jvm_path, "-Xss4m", "-Xrs", classpath=jars, convertStrings=False, interrupt=False)
    _started = version
