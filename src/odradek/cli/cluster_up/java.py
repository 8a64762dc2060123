"""Where the Java that runs ZooKeeper and Kafka's brokers is ($JAVA_HOME/bin/java, else `java` on PATH),
and which version it is: `cluster up --kafka` asks for 17 or newer, what its Kafka is tested with, so
that an old Java is named at once rather than found in a broker's log after a download."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

#: `java -version`'s banner: `openjdk version "17.0.15" ...`, or `java version "1.8.0_392"` before 9.
_VERSION = re.compile(rb'version "(\d+)(?:\.(\d+))?')


def find_java(environ: Mapping[str, str] = os.environ) -> str | None:
    java_home = environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home) / "bin" / "java"
        return str(java) if os.access(java, os.X_OK) else None
    return shutil.which("java", path=environ.get("PATH"))


def java_major_version(java: str) -> int | None:
    """The feature version `java` reports (8 for 1.8), or None if it reports none."""
    try:
        result = subprocess.run(
            [java, "-version"], capture_output=True, stdin=subprocess.DEVNULL, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION.search(result.stderr + result.stdout)
    if match is None:
        return None
    major = int(match[1])
    return int(match[2]) if major == 1 and match[2] else major
