"""The Clients page: a librdkafka producer pushing its metrics (KIP-714) under a client-metrics
subscription is listed with its client id and instance id, and its page shows the metrics it pushed,
as the broker's metrics endpoint serves them. Without --metrics-url the page says how to get them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from tests.console.support import ConsoleProcess, screenshot, text_of, wait_for
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module

confluent_kafka = require_module("confluent_kafka", allow_module_level=True)

CLIENT_ID = "checkout-service"


@pytest.fixture(scope="module")
def metered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, int]]:
    metrics_port = free_port()
    data = tmp_path_factory.mktemp("clients-console") / "data"
    process = BrokerProcess(data, {"metrics.port": str(metrics_port)}).start()
    try:
        yield process, metrics_port
    finally:
        process.stop()


@pytest.fixture(scope="module")
def pushing(metered: tuple[BrokerProcess, int]) -> Iterator[BrokerProcess]:
    """A producer that pushes every metric every half second, until the module ends."""
    broker, _ = metered
    configs = [
        AlterableConfig(name="metrics", config_operation=0, value="*"),
        AlterableConfig(name="interval.ms", config_operation=0, value="500"),
    ]
    resource = AlterConfigsResource(resource_type=16, resource_name="everything", configs=configs)
    with RawClient(broker.port) as client:
        [result] = client.request(
            IncrementalAlterConfigsRequest(resources=[resource], validate_only=False), 1
        ).responses
    assert result.error_code == ErrorCode.NONE, result.error_message
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "client.id": CLIENT_ID, "enable.metrics.push": True}
    )
    producer.produce("checkouts", b"order")
    producer.flush(10)
    yield broker
    producer.flush(10)


def test_a_pushing_client_is_listed_and_its_metrics_shown(
    metered: tuple[BrokerProcess, int],
    pushing: BrokerProcess,
    browser: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _, metrics_port = metered
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    process = ConsoleProcess(
        pushing.bootstrap, "--metrics-url", url, log_dir=tmp_path_factory.mktemp("console-log")
    ).start()
    try:

        def listed() -> Any:
            browser.get(process.url + "/clients")
            return browser.find_elements(By.CSS_SELECTOR, "#clients tr[data-instance]")

        [row] = wait_for(listed, timeout=30, what="the producer listed")
        assert row.find_element(By.CSS_SELECTOR, ".client-id").text == CLIENT_ID
        assert int(row.find_element(By.CSS_SELECTOR, ".metric-count").text) > 0
        screenshot(browser, "clients")
        row.find_element(By.CSS_SELECTOR, "a").click()
        wait_for(lambda: text_of(browser, "#client-id") == CLIENT_ID, what="the client's page")
        names = [
            e.get_attribute("data-metric")
            for e in browser.find_elements(By.CSS_SELECTOR, "#metrics tr[data-metric]")
        ]
        assert "org.apache.kafka.producer.record.queue.time.max" in names
        screenshot(browser, "client")
    finally:
        process.stop()


def test_without_a_metrics_url_the_page_says_how_to_see_clients(
    pushing: BrokerProcess, browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    process = ConsoleProcess(pushing.bootstrap, log_dir=tmp_path_factory.mktemp("console-log")).start()
    try:
        browser.get(process.url + "/clients")
        assert "--metrics-url" in text_of(browser, "#no-metrics-url")
    finally:
        process.stop()
