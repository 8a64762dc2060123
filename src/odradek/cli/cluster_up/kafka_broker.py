"""How `cluster up --kafka N` runs one of Apache Kafka 3.9.2's brokers: `kafka.Kafka server.properties`
on the jars of the lock file, as Kafka's `kafka-server-start.sh` would, with a modest heap and its log4j
output in the broker's own log file.

The JVM options differ from kafka-server-start.sh's on purpose: a 512 MB heap (Kafka's script gives
1 GB) and the serial collector, since several brokers, ZooKeeper and clients share a laptop here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

MAIN_CLASS = "kafka.Kafka"
HEAP = "-Xmx512m"
JVM_OPTIONS = (HEAP, "-XX:+UseSerialGC", "-Djava.awt.headless=true")
#: Kafka's INFO log (starts, elections, ISR changes: what a user watching the cluster wants to see),
#: without the request log and ZooKeeper client's chatter; stdout is the broker's log file.
LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.authorizer.logger=WARN
"""


def kafka_command(java: str, class_path: Sequence[Path], config: Path) -> list[str]:
    """The command line of a Kafka broker reading `config`; its log4j.properties is written beside it."""
    log4j = config.parent / "log4j.properties"
    log4j.write_text(LOG4J, "utf-8")
    return [
        java,
        *JVM_OPTIONS,
        f"-Dlog4j.configuration={log4j.as_uri()}",
        "-cp",
        os.pathsep.join(str(jar) for jar in class_path),
        MAIN_CLASS,
        str(config),
    ]
