"""The lock file of Kafka 3.9.2's broker class path (kafka-3.9.2.lock, beside this module): one jar a
line, in class-path order, as `group:artifact:version size sha1 sha256`.

tools/write_kafka_lock.py writes it from Maven's own resolution. The file ships with odradek, but its
names become paths in the user's cache and in a repository's URL, so each part is held to what Maven
Central's coordinates use: a name that could climb out of a directory (`..`, `/`, a leading dot) or a
digest of the wrong form stops the reader, naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import PurePosixPath

KAFKA_VERSION = "3.9.2"
LOCK_FILE = f"kafka-{KAFKA_VERSION}.lock"

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # never "", ".", ".." or a leading dot
_SHA1 = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: The largest jar the lock may pin (kafka_2.13's is ~6 MB, scala-library's ~6 MB).
MAX_JAR_BYTES = 64 * 1024 * 1024


class LockFileError(Exception):
    """The lock file is malformed; the message names the line."""


@dataclass(frozen=True, slots=True)
class Artifact:
    """One jar of the class path, with what its bytes must be."""

    group: str
    artifact: str
    version: str
    size: int
    sha1: str
    sha256: str

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def repository_path(self) -> PurePosixPath:
        """Where a Maven repository keeps it (org/apache/kafka/kafka_2.13/3.9.2/kafka_2.13-3.9.2.jar)."""
        return PurePosixPath(
            *self.group.split("."), self.artifact, self.version, f"{self.artifact}-{self.version}.jar"
        )

    @property
    def file_name(self) -> str:
        """Its name in the cache: group, artifact and version, as two artifacts of different groups may
        share an artifact id (Yammer's and Dropwizard's metrics-core); joined by a character no part
        may hold, so no two coordinates share a name."""
        return f"{self.group}+{self.artifact}+{self.version}.jar"


def read_lock(text: str) -> tuple[Artifact, ...]:
    """The artifacts of a lock file's `text`, in order; raises LockFileError naming a bad line."""
    artifacts: list[Artifact] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        artifact = _parse_line(line, number)
        if artifact.file_name in seen:
            raise LockFileError(f"{LOCK_FILE} line {number}: {artifact.coordinates} is listed twice")
        seen.add(artifact.file_name)
        artifacts.append(artifact)
    if not artifacts:
        raise LockFileError(f"{LOCK_FILE}: no artifacts")
    return tuple(artifacts)


def kafka_broker_artifacts() -> tuple[Artifact, ...]:
    """The artifacts of the lock file shipped with odradek."""
    return read_lock(resources.files(__package__).joinpath(LOCK_FILE).read_text("utf-8"))


def _parse_line(line: str, number: int) -> Artifact:
    fields = line.split()
    where = f"{LOCK_FILE} line {number}"
    if len(fields) != 4:
        raise LockFileError(f"{where}: expected 'group:artifact:version size sha1 sha256'")
    coordinates, size, sha1, sha256 = fields
    parts = coordinates.split(":")
    if len(parts) != 3:
        raise LockFileError(f"{where}: {coordinates!r} is not group:artifact:version")
    group, artifact, version = parts
    if not all(_NAME.fullmatch(segment) for segment in (*group.split("."), artifact, version)):
        raise LockFileError(f"{where}: {coordinates!r} has a name Maven coordinates do not use")
    if not size.isdigit() or not 0 < int(size) <= MAX_JAR_BYTES:
        raise LockFileError(f"{where}: size {size!r} is not 1 to {MAX_JAR_BYTES} bytes")
    if not _SHA1.fullmatch(sha1) or not _SHA256.fullmatch(sha256):
        raise LockFileError(f"{where}: digests must be lower-case hex SHA-1 and SHA-256")
    return Artifact(group, artifact, version, int(size), sha1, sha256)
