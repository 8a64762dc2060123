"""Kafka Connect's distributed worker (tests/compat/connect), resolved, and run as JVMs.

The Maven project there has no sources: it resolves `connect-runtime` and `connect-file` (the FileStream
connectors that ship with Kafka) into the repository's `.cache/maven` on first use, under the Java
suite's lock, and writes their class path to its `target/classpath.txt`. Each `Worker` is one JVM
running `org.apache.kafka.connect.cli.ConnectDistributed` on a properties file of its own, with its REST
API on a free loopback port; the test SIGKILLs it and starts it again, as a crashed worker is.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support import java_suite
from tests.support.broker_process import REPO
from tests.support.jvm_process import JvmProcess
from tests.support.ports import free_port
from tests.support.requirements import require_executable

PROJECT = REPO / "tests" / "compat" / "connect"
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"
#: The worker moves a few lines a second: the client JIT and a small heap are enough.
JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
#: slf4j-simple's levels: the worker's own INFO (rebalances, task starts) says what happened when.
LOG_OPTIONS = (
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.connect.runtime=info",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
)
REQUEST_TIMEOUT_S = 10.0


def build() -> str:
    """The worker's class path, resolving it first if the pom is newer than the last resolution."""
    mvn = require_executable("mvn")
    require_executable("java")
    out = PROJECT / "target"
    stamp = out / "classpath.txt"
    pom = PROJECT / "pom.xml"
    java_suite.MAVEN_REPOSITORY.mkdir(parents=True, exist_ok=True)
    with java_suite.locked(java_suite.MAVEN_REPOSITORY.parent / "java-compat.lock"):
        if not stamp.exists() or stamp.stat().st_mtime < pom.stat().st_mtime:
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            command = [
                mvn,
                "-q",
                "-B",
                f"-Dmaven.repo.local={java_suite.MAVEN_REPOSITORY}",
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
                    f"Kafka Connect did not resolve ({' '.join(command)}):\n"
                    f"{built.stdout[-8000:]}{built.stderr[-8000:]}",
                    pytrace=False,
                )
        return stamp.read_text().strip()


class RestError(Exception):
    """The worker's REST API answered with an error status (or not at all)."""


class Worker(JvmProcess):
    """One distributed worker: a JVM on its own properties file, started, killed, restarted."""

    def __init__(self, name: str, classpath: str, work: Path, settings: Mapping[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = work / f"worker-{name}.log"
        config = work / f"worker-{name}.properties"
        config.write_text(
            "".join(
                f"{key}={value}\n"
                for key, value in {
                    **settings,
                    "listeners": self.url,
                    "rest.advertised.host.name": "127.0.0.1",
                    "rest.advertised.port": str(self.port),
                }.items()
            )
        )
        command = [
            require_executable("java"),
            *JVM_OPTIONS,
            *LOG_OPTIONS,
            "-cp",
            classpath,
            MAIN_CLASS,
            str(config),
        ]
        super().__init__(name, command, self.log_path)

    @property
    def worker_id(self) -> str:
        """How Connect names this worker in a status (its advertised REST host and port)."""
        return f"127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """A REST call; its JSON answer. RestError for an error status or no answer (a worker starting,
        or one whose group is rebalancing, answers 409 or 503 for a while)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as answer:
                text = answer.read()
        except urllib.error.HTTPError as error:
            raise RestError(f"{method} {path}: {error.code} {error.read()[:500]!r}") from error
        except (OSError, TimeoutError) as error:
            raise RestError(f"{method} {path}: {error}") from error
        return json.loads(text) if text else None

    def log_text(self, limit: int = 12000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""
