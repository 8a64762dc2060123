"""`odradek produce` then `odradek consume` against a real broker: keys, headers, every output format
(checked byte for byte), starting points, stopping conditions and their error messages."""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from odradek.protocol.api_keys import ApiKey
from tests.compat.cli.cli_support import REPO, cli_environment, odradek, requires_api
from tests.support.broker_process import BrokerProcess

LINES = "k1:v1\nk2:v2\n:v3\n"
SUMMARY = re.compile(r"Produced (?P<count>[\d,]+) messages? \((?P<size>[^)]+)\) to topic (?P<topic>\S+) in ")


def produce(bootstrap: str, topic: str, data: bytes | str, *options: str) -> str:
    run = odradek("produce", "--topic", topic, *options, bootstrap=bootstrap, stdin=data)
    assert run.code == 0, run.stderr
    return run.stderr


def consume(bootstrap: str, topic: str, *options: str) -> bytes:
    run = odradek("consume", "--topic", topic, *options, bootstrap=bootstrap)
    assert run.code == 0, run.stderr
    return run.raw_stdout


def test_keys_and_headers_round_trip_in_every_format(cli_broker: BrokerProcess) -> None:
    bootstrap, topic = cli_broker.bootstrap, "cli-formats"
    summary = produce(
        bootstrap, topic, LINES, "--key-separator", ":", "--header", "source=test", "--header", "n=1"
    )
    match = SUMMARY.match(summary)
    assert match is not None, summary
    assert (match["count"], match["size"], match["topic"]) == ("3", "10 B", topic)

    records = [
        json.loads(line)
        for line in consume(bootstrap, topic, "--from-beginning", "--max-messages", "3", "--format", "json")
        .decode()
        .splitlines()
    ]
    headers = [{"key": "source", "value": "test"}, {"key": "n", "value": "1"}]
    assert [(r["offset"], r["key"], r["value"], r["headers"]) for r in records] == [
        (0, "k1", "v1", headers),
        (1, "k2", "v2", headers),
        (2, "", "v3", headers),
    ]
    assert {(r["topic"], r["partition"], r["timestamp_type"]) for r in records} == {(topic, 0, "CreateTime")}
    stamps = [r["timestamp"] for r in records]
    assert all(abs(stamp - time.time() * 1000) < 60_000 for stamp in stamps)

    assert consume(bootstrap, topic, "--from-beginning", "--max-messages", "3") == b"v1\nv2\nv3\n"
    everything = consume(
        bootstrap, topic, "--from-beginning", "--max-messages", "3",
        "--print-timestamp", "--print-partition", "--print-offset", "--print-headers", "--print-key",
    )  # fmt: skip
    assert everything.decode().splitlines() == [
        f"CreateTime:{stamps[0]}\tPartition:0\tOffset:0\tsource:test,n:1\tk1\tv1",
        f"CreateTime:{stamps[1]}\tPartition:0\tOffset:1\tsource:test,n:1\tk2\tv2",
        f"CreateTime:{stamps[2]}\tPartition:0\tOffset:2\tsource:test,n:1\t\tv3",
    ]
    raw = consume(
        bootstrap, topic, "--from-beginning", "--max-messages", "2", "--format", "raw",
        "--print-key", "--print-offset", "--key-separator", " => ",
    )  # fmt: skip
    assert raw == b"Offset:0 => k1 => v1\nOffset:1 => k2 => v2\n"


def test_bytes_that_are_not_text_keep_their_value_in_each_format(cli_broker: BrokerProcess) -> None:
    bootstrap, topic = cli_broker.bootstrap, "cli-binary"
    produce(bootstrap, topic, b"\xff\xfeA\nplain\n")
    assert consume(bootstrap, topic, "--from-beginning", "--max-messages", "2", "--format", "raw") == (
        b"\xff\xfeA\nplain\n"
    )
    assert consume(bootstrap, topic, "--from-beginning", "--max-messages", "2", "--print-key") == (
        b"null\t\\xff\\xfeA\nnull\tplain\n"
    )
    first, second = consume(
        bootstrap, topic, "--from-beginning", "--max-messages", "2", "--format", "json"
    ).splitlines()
    record = json.loads(first)
    assert record["key"] is None and record["headers"] == []
    assert (record["value_encoding"], base64.b64decode(record["value"])) == ("base64", b"\xff\xfeA")
    assert "value_encoding" not in json.loads(second) and json.loads(second)["value"] == "plain"


def test_compression_acks_and_a_file_as_input(cli_broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = cli_broker.bootstrap
    source = tmp_path / "lines.txt"
    source.write_bytes(b"".join(b"line %d\r\n" % i for i in range(200)))
    for compression, acks in (("gzip", "1"), ("zstd", "all"), ("lz4", "0")):
        topic = f"cli-{compression}"
        summary = produce(
            bootstrap, topic, b"", "--file", str(source), "--compression", compression, "--acks", acks
        )
        assert summary.startswith("Produced 200 messages (1.5 KiB) to topic ")
        assert consume(bootstrap, topic, "--from-beginning", "--max-messages", "200") == b"".join(
            b"line %d\n" % i for i in range(200)
        )


def test_progress_on_request_and_a_summary_for_a_large_input(
    cli_broker: BrokerProcess, tmp_path: Path
) -> None:
    source = tmp_path / "big.txt"
    source.write_text("".join(f"{i}\n" for i in range(50_000)))
    run = odradek(
        "produce",
        "--topic",
        "cli-progress",
        "--file",
        str(source),
        "--progress",
        bootstrap=cli_broker.bootstrap,
    )
    assert run.code == 0, run.stderr
    *progress, summary = run.stderr.splitlines()
    assert progress and progress[-1].startswith("50,000 messages  233.3 KiB  ")
    assert progress[-1].endswith("[####################] 100%")
    assert summary.startswith("Produced 50,000 messages (233.3 KiB) to topic cli-progress in ")
    assert re.search(r"\(([\d,]+) msg/s, [\d.]+ [KM]?i?B/s\)\.$", summary), summary
    quiet = odradek(
        "produce", "--topic", "cli-progress", "--quiet", bootstrap=cli_broker.bootstrap, stdin="x\n"
    )
    assert (quiet.code, quiet.stderr) == (0, "")


def test_produce_errors_name_the_line_or_the_partition(cli_broker: BrokerProcess) -> None:
    bootstrap = cli_broker.bootstrap
    bad = odradek(
        "produce", "--topic", "cli-bad-line", "--key-separator", ":", bootstrap=bootstrap, stdin="a:1\nb2\n"
    )
    assert bad.code == 1
    assert bad.stderr.splitlines()[-1] == "odradek produce: line 2 has no key separator ':'"
    assert bad.stderr.startswith("Produced 1 message (2 B) to topic cli-bad-line")
    assert (
        consume(bootstrap, "cli-bad-line", "--from-beginning", "--max-messages", "1", "--print-key")
        == b"a\t1\n"
    )
    wrong = odradek(
        "produce", "--topic", "cli-bad-line", "--partition", "3", bootstrap=bootstrap, stdin="x\n"
    )
    assert (wrong.code, wrong.stderr) == (
        1,
        "odradek produce: topic 'cli-bad-line' has no partition 3 (it has 1)\n",
    )
    missing = odradek("produce", "--topic", "t", "--file", "/nonexistent/input", bootstrap=bootstrap)
    assert (missing.code, missing.stderr) == (
        1,
        "odradek produce: cannot read /nonexistent/input: No such file or directory\n",
    )


def test_consume_from_a_timestamp_in_milliseconds_or_iso_8601(cli_broker: BrokerProcess) -> None:
    bootstrap, topic = cli_broker.bootstrap, "cli-timestamps"
    produce(bootstrap, topic, "old-1\nold-2\n")
    time.sleep(0.05)
    boundary = int(time.time() * 1000)
    time.sleep(0.05)
    produce(bootstrap, topic, "new-1\nnew-2\n")
    iso = datetime.fromtimestamp(boundary / 1000, UTC).isoformat(timespec="milliseconds")
    for start in (str(boundary), iso, iso.replace("+00:00", "Z")):
        assert (
            consume(bootstrap, topic, "--from-timestamp", start, "--max-messages", "2") == b"new-1\nnew-2\n"
        )
    later = consume(bootstrap, topic, "--from-timestamp", str(boundary + 3_600_000), "--timeout-ms", "500")
    assert later == b""
    bad = odradek("consume", "--topic", topic, "--from-timestamp", "yesterday", bootstrap=bootstrap)
    assert bad.code == 2 and "expected milliseconds since the epoch or ISO-8601" in bad.stderr


def test_consume_a_partition_from_an_offset(cli_broker: BrokerProcess) -> None:
    bootstrap, topic = cli_broker.bootstrap, "cli-offsets"
    requires_api(bootstrap, ApiKey.CREATE_TOPICS)
    assert odradek("topics", "create", "--topic", topic, "--partitions", "2", bootstrap=bootstrap).code == 0
    produce(bootstrap, topic, "a\nb\nc\n", "--partition", "1")
    produce(bootstrap, topic, "x\n", "--partition", "0")
    assert consume(bootstrap, topic, "--partition", "1", "--offset", "1", "--max-messages", "2") == b"b\nc\n"
    assert (
        consume(bootstrap, topic, "--partition", "1", "--offset", "earliest", "--max-messages", "1") == b"a\n"
    )
    both = consume(bootstrap, topic, "--from-beginning", "--max-messages", "4", "--print-partition")
    assert sorted(both.splitlines()) == [
        b"Partition:0\tx",
        b"Partition:1\ta",
        b"Partition:1\tb",
        b"Partition:1\tc",
    ]
    vague = odradek("consume", "--topic", topic, "--offset", "1", bootstrap=bootstrap)
    assert (
        vague.code == 2 and f"--offset 1 needs --partition: topic '{topic}' has more than one" in vague.stderr
    )
    absent = odradek("consume", "--topic", topic, "--partition", "2", bootstrap=bootstrap)
    assert absent.code == 1 and f"topic '{topic}' has no partition 2 (it has 2)" in absent.stderr


def test_consume_stops_after_a_quiet_timeout_and_on_ctrl_c_with_a_summary(cli_broker: BrokerProcess) -> None:
    bootstrap, topic = cli_broker.bootstrap, "cli-stopping"
    produce(bootstrap, topic, "one\ntwo\n")
    quiet = odradek("consume", "--topic", topic, "--timeout-ms", "300", bootstrap=bootstrap)
    assert (quiet.code, quiet.stdout, quiet.stderr) == (0, "", "Processed a total of 0 messages\n")

    command = [sys.executable, "-m", "odradek.cli.main", "consume", "--topic", topic, "--from-beginning"]
    child = subprocess.Popen(
        [*command, "--bootstrap-server", bootstrap],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_environment(),
        cwd=REPO,
    )
    assert child.stdout is not None
    assert [child.stdout.readline(), child.stdout.readline()] == [b"one\n", b"two\n"]
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert (child.returncode, out, err) == (0, b"", b"Processed a total of 2 messages\n")


def test_consume_an_unknown_topic_is_an_error(cli_broker: BrokerProcess) -> None:
    run = odradek(
        "consume", "--topic", "cli-never-written", "--timeout-ms", "500", bootstrap=cli_broker.bootstrap
    )
    assert (run.code, run.stderr) == (1, "odradek consume: topic 'cli-never-written' does not exist\n")


def test_consume_with_a_group_commits_what_it_printed(cli_broker: BrokerProcess) -> None:
    bootstrap, topic = cli_broker.bootstrap, "cli-group-consume"
    requires_api(
        bootstrap, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.OFFSET_COMMIT
    )
    produce(bootstrap, topic, "".join(f"m{i}\n" for i in range(5)))
    group = ("--group", "cli-console-group")
    assert consume(bootstrap, topic, *group, "--from-beginning", "--max-messages", "2") == b"m0\nm1\n"
    assert consume(bootstrap, topic, *group, "--max-messages", "3") == b"m2\nm3\nm4\n"
    again = consume(bootstrap, topic, *group, "--offset", "earliest", "--max-messages", "1")
    assert again == b"m0\n"
