"""The Kafka Connect scenario (tests/support/connect_scenario.py) against Apache Kafka 3.9 itself, three
brokers in ZooKeeper mode: the check of the scenario, not of odradek. What the test asserts of odradek
must hold here first.

    .venv/bin/python -m tests.support.connect_reference [--keep DIR]

The brokers are tests/support/kafka_reference.py's (kafka_2.13 3.9.2 from .cache/maven, Debian's
ZooKeeper, 127.0.0.2-4, the settings odradek's cluster gets). Exits 0 when the scenario passed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import connect_scenario
from tests.support.kafka_reference import KafkaBrokers
from tests.support.zookeeper import ZooKeeperServer

BROKERS = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, help="keep the brokers' data and logs and the workers' here")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="connect-reference-"))
    work.mkdir(parents=True, exist_ok=True)
    zookeeper = ZooKeeperServer(work).start()
    brokers = KafkaBrokers(BROKERS, work, zookeeper)
    try:
        brokers.start()
        print(f"Apache Kafka 3.9, {BROKERS} brokers at {brokers.bootstrap}", flush=True)
        connect_scenario.run(brokers.bootstrap, work / "connect")
        print("the Connect scenario passed against Apache Kafka", flush=True)
        return 0
    except (AssertionError, RuntimeError, pytest.fail.Exception, pytest.skip.Exception) as failure:
        print(f"the Connect scenario failed against Apache Kafka: {failure}", file=sys.stderr)
        return 1
    finally:
        brokers.stop()
        zookeeper.stop()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
