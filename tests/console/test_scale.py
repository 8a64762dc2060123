"""Pages of a cluster with 1,000 topics and a topic with 1,000 partitions render; the time each took in
the browser (request to load event) is printed, not asserted: it depends on the machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.console.support import ConsoleProcess, answer_seconds, load_seconds, running_console
from tests.support.broker_process import BrokerProcess

MANY_TOPICS = 1000
WIDE_PARTITIONS = 1000


@pytest.fixture(scope="module")
def large_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    from confluent_kafka.admin import AdminClient, NewTopic

    settings = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}
    broker = BrokerProcess(tmp_path_factory.mktemp("large") / "data", settings).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        names = [f"topic-{number:04d}" for number in range(MANY_TOPICS)]
        for start in range(0, MANY_TOPICS, 100):
            futures = admin.create_topics([NewTopic(name, 1, 1) for name in names[start : start + 100]])
            for future in futures.values():
                future.result(120)
        admin.create_topics([NewTopic("wide", WIDE_PARTITIONS, 1)])["wide"].result(120)
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def large_console(
    large_cluster: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConsoleProcess]:
    log_dir: Path = tmp_path_factory.mktemp("large-console")
    with running_console(large_cluster.bootstrap, "--request-timeout", "60", log_dir=log_dir) as console:
        yield console


@pytest.mark.parametrize(
    ("path", "rows", "expected"),
    [
        ("/topics", "#topics tr[data-topic]", MANY_TOPICS + 1),
        ("/", "#brokers tr[data-broker]", 1),
        ("/topics/wide", "#partitions tr[data-partition]", WIDE_PARTITIONS),
        ("/brokers", "#brokers tr[data-broker]", 1),
    ],
)
def test_large_pages_render(
    large_console: ConsoleProcess, browser: Any, path: str, rows: str, expected: int
) -> None:
    browser.set_page_load_timeout(120)
    browser.get(large_console.url + path)
    first = load_seconds(browser)
    browser.get(large_console.url + path)  # again, as a person coming back sees it
    seconds, answer = load_seconds(browser), answer_seconds(browser)
    assert len(browser.find_elements(By.CSS_SELECTOR, rows)) == expected
    if path == "/":
        assert browser.find_element(By.ID, "topic-count").text == str(
            MANY_TOPICS + 3
        )  # + wide, offsets, txn state
        assert browser.find_element(By.ID, "partition-count").text == str(MANY_TOPICS + WIDE_PARTITIONS + 2)
    print(
        f"\n{path}: {expected} rows rendered in {first:.3f} s the first time, {seconds:.3f} s the next "
        f"(request to load event, headless Chromium; the console answered in {answer:.3f} s of it)"
    )
