"""`odradek cluster up --kafka N`: N Apache Kafka 3.9.2 brokers after odradek's, with the same settings,
their jars fetched into the user's cache. What stops it before anything starts, each in one line: too
many brokers, no Java, a repository that is not a URL, a download that fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.cli.cluster import write_broker_configs
from odradek.cli.main import main
from odradek.config.properties import load_properties

CONNECT = "127.0.0.1:2181/odradek"


@pytest.fixture(autouse=True)
def no_maven_central(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that got past its check would download from here, never from Maven Central."""
    monkeypatch.setenv("ODRADEK_MAVEN_REPOSITORY", (tmp_path / "no-repository").as_uri())


def test_kafkas_brokers_come_after_odradeks_with_the_same_settings(tmp_path: Path) -> None:
    paths = write_broker_configs(tmp_path, 1, 9092, CONNECT, ["num.partitions=3"], kafka=2)
    written = [load_properties(path) for path in paths]
    assert [w["broker.id"] for w in written] == ["1", "2", "3"]
    assert [w["listeners"] for w in written] == [f"PLAINTEXT://127.0.0.{n}:9092" for n in (2, 3, 4)]
    assert [Path(w["log.dirs"]) for w in written] == [tmp_path / f"broker-{n}" / "data" for n in (1, 2, 3)]
    per_broker = {"broker.id", "listeners", "advertised.listeners", "log.dirs"}
    shared = [{k: v for k, v in w.items() if k not in per_broker} for w in written]
    assert shared[0] == shared[1] == shared[2]
    assert shared[0]["zookeeper.connect"] == CONNECT
    assert shared[0]["num.partitions"] == "3"
    assert shared[0]["inter.broker.protocol.version"] == "3.9"
    # three brokers in all, whatever their kind: internal topics at RF 3
    assert shared[0]["offsets.topic.replication.factor"] == "3"
    assert shared[0]["transaction.state.log.replication.factor"] == "3"


@pytest.mark.parametrize(("brokers", "kafka"), [(8, 1), (3, 6), (1, -1), (0, 2)])
def test_more_brokers_in_all_than_loopback_addresses_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], brokers: int, kafka: int
) -> None:
    args = ["cluster", "up", "--brokers", str(brokers), "--kafka", str(kafka), "--dir", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--kafka" in err, err
    assert list(tmp_path.iterdir()) == []


def test_cluster_up_kafka_without_java_says_java_17_is_needed_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["cluster", "up", "--brokers", "1", "--kafka", "1", "--dir", str(tmp_path / "c")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Java 17" in err and "java is not on PATH" in err, err
    assert not (tmp_path / "c" / "zookeeper").exists()
    assert not (tmp_path / "cache").exists()  # nothing downloaded


def test_a_refused_override_stops_cluster_up_kafka_before_anything_is_downloaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    args = ["cluster", "up", "--brokers", "1", "--kafka", "1", "--dir", str(tmp_path / "c")]
    assert main([*args, "--override", "no.such.config=1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no.such.config" in err, err
    assert not (tmp_path / "cache").exists()


def test_a_download_that_fails_stops_cluster_up_naming_the_artifact_and_url_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "mirror").mkdir()
    mirror = (tmp_path / "mirror").as_uri()
    args = ["cluster", "up", "--brokers", "1", "--kafka", "1", "--dir", str(tmp_path / "c")]
    assert main([*args, "--maven-repository", mirror]) == 1
    first, failure = capsys.readouterr().err.splitlines()
    assert first.startswith("odradek cluster up: downloading Apache Kafka 3.9.2's broker (57 jars, 48 MB)")
    url = f"{mirror}/org/apache/kafka/kafka_2.13/3.9.2/kafka_2.13-3.9.2.jar.sha1"
    assert failure.startswith(
        f"odradek cluster up: org.apache.kafka:kafka_2.13:3.9.2: downloading {url} failed"
    )
    assert not (tmp_path / "c" / "zookeeper").exists()
    assert [p.name for p in (tmp_path / "cache" / "odradek" / "kafka-3.9.2").iterdir()] == [".lock"]


@pytest.mark.parametrize("url", ["repo.example.com/maven2", "ftp://repo.example.com/maven2"])
def test_a_maven_repository_that_is_not_a_url_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    args = ["cluster", "up", "--brokers", "1", "--kafka", "1", "--dir", str(tmp_path)]
    assert main([*args, "--maven-repository", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and url in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("banner", "found"),
    [('openjdk version "11.0.2" 2019-01-15', "11"), ('java version "1.8.0_392"', "8")],
)
def test_cluster_up_kafka_with_a_java_older_than_17_says_so_and_starts_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    banner: str,
    found: str,
) -> None:
    # an old Java on PATH went on to download 48 MB and start ZooKeeper; the broker then died in its
    # log with an UnsupportedClassVersionError and the command said only "did not start"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho '{banner}' >&2\n")
    java.chmod(0o755)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mirror = ["--maven-repository", (tmp_path / "no-mirror").as_uri()]  # never Maven Central
    assert (
        main(["cluster", "up", "--brokers", "1", "--kafka", "1", "--dir", str(tmp_path / "c"), *mirror]) == 1
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Java 17" in err and f"{java} is Java {found}" in err, err
    assert not (tmp_path / "c" / "zookeeper").exists()
    assert not (tmp_path / "cache").exists()
