"""kafka-get-offsets, kafka-delete-records and kafka-log-dirs."""

from __future__ import annotations

import json

from tests.support.tool_scenarios.session import Session, scenario
from tests.support.tool_scenarios.topics import create

B = "--bootstrap-server"
TOPIC = "tools-offsets"
#: murmur2 keys: f, a and b go to partitions 0, 1 and 2 of three.
RECORDS = "f:1\nf:2\nf:3\na:4\na:5\nb:6\n"


@scenario()
def get_offsets(session: Session) -> None:
    create(session, TOPIC, 3, record=False)
    session.quiet(
        "kafka-console-producer", B, "{bootstrap}", "--topic", TOPIC, "--property", "parse.key=true",
        "--property", "key.separator=:", stdin=RECORDS,
    )  # fmt: skip
    offsets = ("kafka-get-offsets", B, "{bootstrap}")
    session.run(*offsets, "--topic", TOPIC)
    session.run(*offsets, "--topic", TOPIC, "--time", "-2")
    session.run(*offsets, "--topic", TOPIC, "--time", "earliest")
    session.run(*offsets, "--topic", TOPIC, "--time", "-1")
    # (--time max-timestamp is left out: which record has the newest timestamp depends on whether the
    # console producer stamped a partition's records in the same millisecond)
    session.run(*offsets, "--topic", TOPIC, "--time", "0")
    session.run(*offsets, "--topic", TOPIC, "--time", "4102444800000")  # 2100: after every record
    session.run(*offsets, "--topic", TOPIC, "--partitions", "0,2")
    session.run(*offsets, "--topic-partitions", f"{TOPIC}:1-3")
    session.run(*offsets, "--topic-partitions", f"{TOPIC}:-1,tools-offset.:2")
    session.run(*offsets, "--topic", "tools-offsets-missing")
    session.run(*offsets, "--topic", TOPIC, "--partitions", "7")
    session.run(*offsets, "--topic", TOPIC, "--time", "-4")
    session.run(*offsets, "--topic", TOPIC, "--time", "-5")

    plan = {"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "offset": 2}]}
    delete = ("kafka-delete-records", B, "{bootstrap}", "--offset-json-file")
    session.run(*delete, session.file("delete.json", json.dumps(plan)), sort=True)
    session.run(*offsets, "--topic", TOPIC, "--time", "-2")
    plan["partitions"] = [
        {"topic": TOPIC, "partition": 1, "offset": -1},
        {"topic": TOPIC, "partition": 2, "offset": 5},
    ]
    session.run(*delete, session.file("delete-more.json", json.dumps(plan)), sort=True)
    session.run(*offsets, "--topic", TOPIC, "--time", "-2")
    session.run(*delete, session.file("delete-bad.json", '{"version": 1, "partitions": []}'))
    session.run(
        "kafka-console-consumer", B, "{bootstrap}", "--topic", TOPIC, "--partition", "0", "--offset", "0",
        "--timeout-ms", "3000",
    )  # fmt: skip


@scenario()
def log_dirs(session: Session) -> None:
    create(session, "tools-log-dirs", 2, record=False)
    session.quiet(
        "kafka-console-producer",
        B,
        "{bootstrap}",
        "--topic",
        "tools-log-dirs",
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
        stdin="a:one\nd:two\nd:three\n",
    )  # fmt: skip  (murmur2: a to partition 0 of two, d to 1)
    dirs = ("kafka-log-dirs", B, "{bootstrap}", "--describe")
    session.run(*dirs, "--topic-list", "tools-log-dirs", shown=_log_dirs)
    session.run(*dirs, "--topic-list", "tools-log-dirs", "--broker-list", "1", shown=_log_dirs)
    session.run(*dirs, "--topic-list", "tools-log-dirs-missing", shown=_log_dirs)
    session.run(*dirs, "--broker-list", "7", shown=_log_dirs)


def _log_dirs(text: str) -> str:
    """The JSON line, laid out one partition a line in a fixed order, sizes kept as they are: a
    partition's size is its segments' bytes, the same batches on both brokers."""
    out = []
    for line in text.splitlines():
        if not line.startswith("{"):
            out.append(line)
            continue
        described = json.loads(line)
        out.append(f"version {described['version']}")
        for broker in sorted(described["brokers"], key=lambda b: b["broker"]):
            for log_dir in broker["logDirs"]:
                out.append(f"broker {broker['broker']} {log_dir['logDir']} error={log_dir['error']}")
                for partition in sorted(log_dir["partitions"], key=lambda p: p["partition"]):
                    out.append(f"  {json.dumps(partition, sort_keys=True)}")
    return "\n".join(out)
