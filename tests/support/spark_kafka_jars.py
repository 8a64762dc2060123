"""Spark's own Kafka connector (`spark-sql-kafka-0-10_2.13` and its dependencies) for the tests and the
bench that run it beside the `odradek` format: resolved by Maven from tests/spark/kafka-connector/pom.xml
into the repository's `.cache/maven` on first use (the Java suite's local repository, under the same
lock), and handed to Spark as `spark.jars` (local paths: no Ivy when a test runs).

`make spark-kafka-jars` (this module run) resolves them by hand and prints them, comma-separated, as
`odradek pipeline --connector-jars` takes them.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path

from tests.support.broker_process import REPO
from tests.support.java_suite import MAVEN_REPOSITORY

PROJECT = REPO / "tests" / "spark" / "kafka-connector"
#: The jars' paths, one line, as Maven's dependency:build-classpath writes them; rewritten when the pom
#: is newer.
CLASSPATH = REPO / ".cache" / "spark-kafka" / "classpath.txt"
#: The Java suite's lock: both fill the one local repository.
LOCK = MAVEN_REPOSITORY.parent / "java-compat.lock"
RESOLVE_TIMEOUT_S = 600
#: The connector's data source class: on the class path when the jars are.
PROVIDER_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


class ConnectorUnavailable(RuntimeError):
    """Maven (or a JDK) is missing, or the connector did not resolve; the message says which."""


def connector_version() -> str:
    """The spark-sql-kafka-0-10 version the pom pins."""
    return _pinned("spark.kafka.version")


def kafka_clients_version() -> str:
    """The kafka-clients version the pom pins (the connector's own)."""
    return _pinned("kafka.clients.version")


def _pinned(name: str) -> str:
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ElementTree.parse(PROJECT / "pom.xml").getroot()
    version = root.findtext(f"m:properties/m:{name}", namespaces=namespace)
    if not version:
        raise ValueError(f"{PROJECT / 'pom.xml'} pins no {name}")
    return version


def connector_jars() -> list[Path]:
    """The connector's jars, resolving them first when the pom is newer than the last resolution."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConnectorUnavailable("Spark's Kafka connector needs Maven (mvn) to resolve its jars")
    MAVEN_REPOSITORY.mkdir(parents=True, exist_ok=True)
    CLASSPATH.parent.mkdir(parents=True, exist_ok=True)
    with _locked(LOCK):
        if not _fresh():
            CLASSPATH.unlink(missing_ok=True)
            command = [
                mvn,
                "-q",
                "-B",
                f"-Dmaven.repo.local={MAVEN_REPOSITORY}",
                "dependency:build-classpath",
                f"-Dmdep.outputFile={CLASSPATH}",
                "-Dmdep.includeScope=runtime",
            ]
            resolved = subprocess.run(
                command, cwd=PROJECT, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S, check=False
            )
            if resolved.returncode != 0 or not CLASSPATH.exists():
                CLASSPATH.unlink(missing_ok=True)
                raise ConnectorUnavailable(
                    f"Spark's Kafka connector did not resolve ({' '.join(command)} in {PROJECT}):\n"
                    f"{resolved.stdout[-4000:]}{resolved.stderr[-4000:]}"
                )
        jars = [Path(p) for p in CLASSPATH.read_text().strip().split(":") if p]
    missing = [str(jar) for jar in jars if not jar.is_file()]
    if missing or not jars:
        CLASSPATH.unlink(missing_ok=True)  # the cache was emptied under it: resolve again next time
        raise ConnectorUnavailable(f"Spark's Kafka connector jars are gone from the cache: {missing}")
    return jars


def spark_jars_setting() -> str:
    """`spark.jars`: the jars, comma-separated."""
    return ",".join(str(jar) for jar in connector_jars())


def _fresh() -> bool:
    return CLASSPATH.exists() and CLASSPATH.stat().st_mtime >= (PROJECT / "pom.xml").stat().st_mtime


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def main() -> int:
    try:
        print(spark_jars_setting())
    except ConnectorUnavailable as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
