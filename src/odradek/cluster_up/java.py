"""Where the Java that runs ZooKeeper and Kafka's brokers is: $JAVA_HOME/bin/java, else `java` on PATH."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path


def find_java(environ: Mapping[str, str] = os.environ) -> str | None:
    java_home = environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home) / "bin" / "java"
        return str(java) if os.access(java, os.X_OK) else None
    return shutil.which("java", path=environ.get("PATH"))
