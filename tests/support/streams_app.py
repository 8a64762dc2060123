"""The Kafka Streams application of tests/compat/streams (`WindowedCount`), built, and run as JVMs.

The Maven project there is compiled into its `target/` on first use (or when a source is newer than the
build), with its dependencies in the repository's `.cache/maven`, under the Java suite's lock (several
pytest workers may ask at once). Each `Instance` is one JVM running the application, its output in a
log file of its own; the test kills it with SIGKILL and starts it again on the same state directory,
as a crashed and restarted instance of an application is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import java_suite
from tests.support.broker_process import REPO
from tests.support.jvm_process import JvmProcess
from tests.support.requirements import require_executable

PROJECT = REPO / "tests" / "compat" / "streams"
MAIN_CLASS = "odradek.streams.WindowedCount"
#: Streams' own threads compute little here (a count): the client JIT and a small heap are enough.
JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def build() -> str:
    """The class path to run the application with, building it first if a source is newer."""
    mvn = require_executable("mvn")
    require_executable("java")
    out = PROJECT / "target"
    stamp = out / "classpath.txt"
    java_suite.MAVEN_REPOSITORY.mkdir(parents=True, exist_ok=True)
    with java_suite.locked(java_suite.MAVEN_REPOSITORY.parent / "java-compat.lock"):
        if not stamp.exists() or stamp.stat().st_mtime < _newest_input():
            shutil.rmtree(out, ignore_errors=True)
            command = [
                mvn,
                "-q",
                "-B",
                f"-Dmaven.repo.local={java_suite.MAVEN_REPOSITORY}",
                "compile",
                "dependency:build-classpath",
                f"-Dmdep.outputFile={stamp}",
            ]
            built = subprocess.run(
                command,
                cwd=PROJECT,
                capture_output=True,
                text=True,
                timeout=java_suite.BUILD_TIMEOUT_S,
                check=False,
            )
            if built.returncode != 0 or not stamp.exists():
                shutil.rmtree(out, ignore_errors=True)
                pytest.fail(
                    f"the Streams application did not build ({' '.join(command)}):\n"
                    f"{built.stdout[-8000:]}{built.stderr[-8000:]}",
                    pytrace=False,
                )
        return os.pathsep.join([str(out / "classes"), stamp.read_text().strip()])


def _newest_input() -> float:
    inputs = [PROJECT / "pom.xml", *(p for p in (PROJECT / "src").rglob("*") if p.is_file())]
    return max(p.stat().st_mtime for p in inputs)


class Instance(JvmProcess):
    """One instance of the application: a JVM on its own state directory, started, killed, restarted."""

    def __init__(
        self,
        name: str,
        classpath: str,
        bootstrap: str,
        application_id: str,
        work: Path,
        topics: tuple[str, str],
        window_ms: int,
    ) -> None:
        self.state_dir = work / f"state-{name}"
        self.log_path = work / f"streams-{name}.log"
        input_topic, output_topic = topics
        command = [
            require_executable("java"),
            *JVM_OPTIONS,
            "-cp",
            classpath,
            MAIN_CLASS,
            bootstrap,
            application_id,
            str(self.state_dir),
            input_topic,
            output_topic,
            str(window_ms),
        ]
        super().__init__(name, command, self.log_path)

    def log_text(self, limit: int = 12000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""
