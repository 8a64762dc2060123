"""The README's quick start with Kafka's own tools, the commands docs/cli.md gives (there against
localhost:9092), on one broker."""

from __future__ import annotations

from tests.support.tool_scenarios.metadata import wait_topic
from tests.support.tool_scenarios.session import Session, scenario

B = "--bootstrap-server"


def _this_group(text: str) -> str:
    """--list names every group of the broker (other scenarios' too): only the quick start's is shown."""
    return "\n".join(line for line in text.splitlines() if line == "quickstart")


@scenario(targets=("single-node",))
def quick_start(session: Session) -> None:
    session.run("kafka-topics", B, "{bootstrap}", "--create", "--topic", "events", "--partitions", "3")
    wait_topic(session, "events", 3)
    keyed = ("--property", "parse.key=true", "--property", "key.separator=:")
    session.run(
        "kafka-console-producer", B, "{bootstrap}", "--topic", "events", *keyed, stdin="k1:hello\nk2:world\n"
    )
    session.run(
        "kafka-console-consumer",
        B,
        "{bootstrap}",
        "--topic",
        "events",
        "--from-beginning",
        "--property",
        "print.key=true",
        "--max-messages",
        "2",
        "--group",
        "quickstart",
        sort=True,
    )  # fmt: skip  (two partitions, in either order)
    session.run("kafka-consumer-groups", B, "{bootstrap}", "--list", shown=_this_group)
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", "events")
