"""The lock file of Kafka 3.9.2's broker jars (src/odradek/cli/cluster_up/kafka-3.9.2.lock): what `cluster up
--kafka N` downloads. Its names become paths in the user's cache and in a repository URL, so the reader
refuses any that could climb out of a directory, even though the file is ours."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from odradek.cli.cluster_up.kafka_lock import LockFileError, kafka_broker_artifacts, read_lock

SHA1 = "a" * 40
SHA256 = "b" * 64


def test_the_shipped_lock_pins_kafka_2_13_3_9_2_and_its_runtime_class_path() -> None:
    artifacts = kafka_broker_artifacts()
    coordinates = [a.coordinates for a in artifacts]
    assert coordinates[0] == "org.apache.kafka:kafka_2.13:3.9.2"
    for needed in (
        "org.apache.kafka:kafka-clients:3.9.2",
        "org.scala-lang:scala-library:2.13.15",
        "org.apache.zookeeper:zookeeper:3.8.4",
        "org.slf4j:slf4j-reload4j:1.7.36",  # the logging binding Kafka's distribution ships
    ):
        assert needed in coordinates
    assert 40_000_000 < sum(a.size for a in artifacts) < 60_000_000  # what docs/cli.md says: 48 MB


def test_two_artifacts_of_one_name_in_different_groups_get_different_cache_files() -> None:
    names = [a.file_name for a in kafka_broker_artifacts() if a.artifact == "metrics-core"]
    assert names == [
        "com.yammer.metrics+metrics-core+2.2.0.jar",
        "io.dropwizard.metrics+metrics-core+4.1.12.1.jar",
    ]


def test_coordinates_that_would_join_into_one_name_get_different_cache_files() -> None:
    # "a_b" + "c" and "a" + "b_c" made one file name, "a_b_c-1.jar", when joined by "_"
    one, other = read_lock(f"a_b:c:1 10 {SHA1} {SHA256}\na:b_c:1 10 {SHA1} {SHA256}\n")
    assert one.file_name != other.file_name


def test_an_artifacts_repository_path_is_maven_layout() -> None:
    (artifact,) = read_lock(f"org.apache.kafka:kafka_2.13:3.9.2 10 {SHA1} {SHA256}\n")
    assert artifact.repository_path == PurePosixPath("org/apache/kafka/kafka_2.13/3.9.2/kafka_2.13-3.9.2.jar")
    assert (artifact.size, artifact.sha1, artifact.sha256) == (10, SHA1, SHA256)


@pytest.mark.parametrize(
    "line",
    [
        f"..:evil:1 10 {SHA1} {SHA256}",  # a group that climbs
        f"org..x:evil:1 10 {SHA1} {SHA256}",  # an empty group segment
        f"org:..:1 10 {SHA1} {SHA256}",
        f"org:evil:../../../etc 10 {SHA1} {SHA256}",
        f"org/evil:a:1 10 {SHA1} {SHA256}",
        f"org:a/b:1 10 {SHA1} {SHA256}",
        f"org:.hidden:1 10 {SHA1} {SHA256}",
        f"org:a:1:jar 10 {SHA1} {SHA256}",
        f"org:a:1 0 {SHA1} {SHA256}",  # an empty jar
        f"org:a:1 -5 {SHA1} {SHA256}",
        f"org:a:1 999999999999 {SHA1} {SHA256}",  # more than any jar of the class path
        f"org:a:1 10 {SHA1.upper()} {SHA256}",
        f"org:a:1 10 {SHA1} {SHA256[:-1]}",
        f"org:a:1 10 {SHA256} {SHA1}",  # swapped
        f"org:a:1 10 {SHA1}",
        f"org:a:1 10 {SHA1} {SHA256} extra",
    ],
)
def test_a_lock_line_that_is_not_strict_maven_coordinates_and_digests_is_refused_naming_its_line(
    line: str,
) -> None:
    with pytest.raises(LockFileError, match="line 2"):
        read_lock(f"# header\n{line}\n")


def test_an_artifact_listed_twice_is_refused() -> None:
    line = f"org:a:1 10 {SHA1} {SHA256}\n"
    with pytest.raises(LockFileError, match="listed twice"):
        read_lock(line + line)


def test_a_lock_without_artifacts_is_refused() -> None:
    with pytest.raises(LockFileError, match="no artifacts"):
        read_lock("# only a comment\n")
