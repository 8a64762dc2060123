"""Our message definitions against Kafka's own message files (../shared/kafka-specs and, for what only
the 4.4 client has, that client's jar in .cache/maven; required in CI)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from odradek.protocol import check_specs
from tests.support.requirements import require

REPO_ROOT = Path(__file__).resolve().parents[3]
KAFKA_SPECS = REPO_ROOT.parent / "shared" / "kafka-specs"
RELEASES = [KAFKA_SPECS / "3.9", KAFKA_SPECS / "4.3"]


#: The Java suite's kafka-clients 4.x (tests/compat/java/pom.xml), whose jar carries its message files.
CLIENTS_4_JAR = (
    REPO_ROOT
    / ".cache"
    / "maven"
    / "org"
    / "apache"
    / "kafka"
    / "kafka-clients"
    / "4.4.0"
    / "kafka-clients-4.4.0.jar"
)
#: Messages odradek defines at a version newer than Kafka 4.3's files have (the 4.4 client sends them).
NEWER_THAN_4_3 = (
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
)


def test_no_drift_from_kafkas_message_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require(all(p.is_dir() for p in RELEASES), f"{KAFKA_SPECS} (3.9 and 4.3) is not present")
    require(CLIENTS_4_JAR.is_file(), f"{CLIENTS_4_JAR} is not present (make java-compat fills it)")
    with zipfile.ZipFile(CLIENTS_4_JAR) as jar:
        newer = [tmp_path / f"{name}.json" for name in NEWER_THAN_4_3]
        for path in newer:
            path.write_bytes(jar.read(f"common/message/{path.name}"))
    status = check_specs.main([str(p) for p in [*RELEASES, *newer]])
    output = capsys.readouterr().out
    assert output.strip().endswith(": 0 difference(s)"), output
    assert status == 0
    checked = int(output.rsplit("checked ", 1)[1].split(" ", 1)[0])
    assert checked > 700  # both releases were really read
