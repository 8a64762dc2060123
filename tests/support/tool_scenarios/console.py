"""kafka-console-producer and kafka-console-consumer: keys, headers, the formatter's properties, a
partition and an offset, a codec, a consumer's group, a pattern of topics."""

from __future__ import annotations

from tests.support.tool_scenarios.session import Session, scenario
from tests.support.tool_scenarios.topics import create

B = "--bootstrap-server"
TOPIC = "tools-console"
#: One partition: records without a key go to any partition (the sticky partitioner picks at random).
PLAIN = "tools-console-plain"
#: murmur2 sends keys f, a and b to partitions 0, 1 and 2 of three.
WITH_HEADERS = 'source:shop,trace:7\ta:{"item":"book"}\nsource:shop\tf:{"item":"pen"}\nsource:\tb:ink\n'
PRINT_ALL = (
    "--property", "print.key=true", "--property", "print.partition=true", "--property", "print.offset=true",
    "--property", "print.headers=true", "--property", "print.timestamp=true",
)  # fmt: skip


@scenario()
def console(session: Session) -> None:
    create(session, TOPIC, 3, record=False)
    create(session, PLAIN, 1, record=False)
    session.run("kafka-console-producer", B, "{bootstrap}", "--topic", PLAIN, stdin="plain-1\nplain-2\n")
    session.run(
        "kafka-console-consumer",
        B,
        "{bootstrap}",
        "--topic",
        PLAIN,
        "--from-beginning",
        "--max-messages",
        "2",
    )

    producer = ("kafka-console-producer", B, "{bootstrap}", "--topic", TOPIC)
    keyed = ("--property", "parse.key=true", "--property", "key.separator=:")
    session.run(
        *producer,
        *keyed,
        "--property",
        "parse.headers=true",
        "--compression-codec",
        "gzip",
        stdin=WITH_HEADERS,
    )
    nulls = ("--property", "parse.key=true", "--property", "null.marker=<null>")
    session.run(*producer, *nulls, "--request-required-acks", "-1", "--sync", stdin="a\t<null>\nf\tlast\n")

    consumer = ("kafka-console-consumer", B, "{bootstrap}", "--topic", TOPIC)
    for partition, count in (("0", "2"), ("1", "2"), ("2", "1")):  # what each partition holds
        session.run(
            *consumer, "--partition", partition, "--offset", "earliest", "--max-messages", count,
            "--timeout-ms", "20000", *PRINT_ALL,
        )  # fmt: skip
    session.run(
        *consumer, "--partition", "1", "--offset", "1", "--max-messages", "1",
        "--property", "print.key=true", "--property", "key.separator= | ",
        "--property", "print.value=false", "--property", "null.literal=NULL",
    )  # fmt: skip
    session.run(*consumer, "--partition", "0", "--offset", "latest", "--timeout-ms", "2000")
    group = ("--group", "tools-console-group")
    session.run(*consumer, "--from-beginning", "--max-messages", "5", *group, sort=True)
    session.run(*consumer, "--max-messages", "1", *group, "--timeout-ms", "3000")
    everything = ("--include", "tools-console.*", "--from-beginning", "--max-messages", "7")
    session.run("kafka-console-consumer", B, "{bootstrap}", *everything, sort=True)
    session.run(*consumer, "--partition", "9", "--offset", "earliest", "--timeout-ms", "2000")
