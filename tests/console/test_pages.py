"""Acceptance: a real headless Chromium opens every page of `odradek console` against a running broker
with topics, messages and a lagging consumer group, and checks what it shows against the admin API.
Screenshots go to docs/console/ (the README shows them)."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.console import admin_api
from tests.console.conftest import (
    BILLING_CONSUMED_PER_PARTITION,
    ORDERS_PARTITIONS,
)
from tests.console.seed import consuming, produce_orders, producing
from tests.console.support import ConsoleProcess, http_status, load_seconds, screenshot, text_of, wait_for
from tests.support.broker_process import BrokerProcess


def test_overview_shows_the_cluster_as_the_admin_api_does(
    console: ConsoleProcess, browser: Any, admin: Any
) -> None:
    browser.get(console.url + "/")
    print(f"\noverview rendered in {load_seconds(browser):.3f} s")
    assert text_of(browser, "#cluster-id") == admin_api.cluster_id(admin)
    assert text_of(browser, "#topic-count") == str(len(admin_api.topic_names(admin)))
    assert text_of(browser, "#brokers-up") == "1 / 1"
    row = browser.find_element(By.CSS_SELECTOR, "#brokers tr[data-broker='1']")
    assert "controller" in row.text and "up" in row.text
    assert f"127.0.0.1:{console.bootstrap.rsplit(':', 1)[1]}" in row.text
    assert text_of(browser, "#offline-count") == "0"
    assert text_of(browser, "#under-replicated-count") == "0"
    assert text_of(browser, "#under-min-isr-count") == "0"


def test_throughput_refreshes_without_reloading_the_page(
    console: ConsoleProcess, browser: Any, seeded: BrokerProcess
) -> None:
    browser.get(console.url + "/")
    browser.execute_script("window.notReloaded = true;")
    with producing(seeded.bootstrap), consuming(seeded.bootstrap, "reporting", "orders"):
        wait_for(lambda: text_of(browser, "#messages-in") not in ("0/s", "\u2013"), what="messages in/s > 0")
        wait_for(lambda: text_of(browser, "#bytes-in") not in ("0 B/s", "\u2013"), what="bytes in/s > 0")
        wait_for(lambda: text_of(browser, "#bytes-out") not in ("0 B/s", "\u2013"), what="bytes out/s > 0")
    assert browser.execute_script("return window.notReloaded === true;"), "the page was reloaded"
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".sparkline canvas"), what="sparklines drawn")
    screenshot(browser, "overview")


def test_topic_list_shows_partitions_replication_size_and_retention(
    console: ConsoleProcess, browser: Any, admin: Any, seeded: BrokerProcess
) -> None:
    browser.get(console.url + "/topics")
    print(f"\ntopic list rendered in {load_seconds(browser):.3f} s")
    row = browser.find_element(By.CSS_SELECTOR, "#topics tr[data-topic='orders']")
    assert row.find_element(By.CSS_SELECTOR, ".partitions").text == str(ORDERS_PARTITIONS)
    assert row.find_element(By.CSS_SELECTOR, ".replication").text == "1"
    assert row.find_element(By.CSS_SELECTOR, ".retention").text == "7 d"
    shown_size = int(row.find_element(By.CSS_SELECTOR, ".size").get_attribute("data-bytes"))
    # the page and this check ask DescribeLogDirs at different moments; nothing is produced in between
    assert shown_size == admin_api.topic_size(seeded.bootstrap, "orders")
    assert shown_size > 0
    assert not browser.find_elements(By.CSS_SELECTOR, "#topics tr[data-topic='__consumer_offsets']")

    def rate_shown() -> bool:  # the first rate needs two samples of the console's sampler
        browser.get(console.url + "/topics")
        return str(text_of(browser, "#topics tr[data-topic='orders'] .rate")).endswith("/s")

    wait_for(rate_shown, what="a messages/s figure")
    screenshot(browser, "topics")


def test_topic_page_shows_partitions_offsets_and_configs(
    console: ConsoleProcess, browser: Any, admin: Any
) -> None:
    browser.get(console.url + "/topics/orders")
    starts = admin_api.log_offsets(admin, "orders", "earliest")
    ends = admin_api.log_offsets(admin, "orders", "latest")
    metadata = admin_api.partitions(admin, "orders")
    for partition in range(ORDERS_PARTITIONS):
        row = browser.find_element(By.CSS_SELECTOR, f"#partitions tr[data-partition='{partition}']")
        assert row.find_element(By.CSS_SELECTOR, ".leader").text == str(metadata[partition].leader)
        assert row.find_element(By.CSS_SELECTOR, ".replicas").text == ", ".join(
            map(str, metadata[partition].replicas)
        )
        assert row.find_element(By.CSS_SELECTOR, ".isr").text == ", ".join(map(str, metadata[partition].isrs))
        assert row.find_element(By.CSS_SELECTOR, ".log-start").text == str(starts[partition])
        assert row.find_element(By.CSS_SELECTOR, ".log-end").text == str(ends[partition])
    value, source = admin_api.topic_config(admin, "orders", "retention.ms")
    config = browser.find_element(By.CSS_SELECTOR, "#configs tr[data-config='retention.ms']")
    assert config.find_element(By.CSS_SELECTOR, ".value").text == value
    assert source in config.find_element(By.CSS_SELECTOR, ".source").text
    screenshot(browser, "topic")


def test_message_browser_by_partition_and_offset_shows_json_headers_and_timestamps(
    console: ConsoleProcess, browser: Any
) -> None:
    browser.get(console.url + "/topics/orders/messages")
    Select(browser.find_element(By.NAME, "partition")).select_by_value("1")
    Select(browser.find_element(By.NAME, "start")).select_by_value("offset")
    browser.find_element(By.NAME, "value").send_keys("3")
    browser.find_element(By.NAME, "limit").clear()
    browser.find_element(By.NAME, "limit").send_keys("4")
    browser.find_element(By.CSS_SELECTOR, "#browse button").click()
    wait_for(lambda: "start=offset" in browser.current_url, what="the browse form submitted")
    rows = browser.find_elements(By.CSS_SELECTOR, "#messages tr[data-offset]")
    assert [(r.get_attribute("data-partition"), r.get_attribute("data-offset")) for r in rows] == [
        ("1", "3"),
        ("1", "4"),
        ("1", "5"),
        ("1", "6"),
    ]
    first = rows[0]
    assert first.find_element(By.CSS_SELECTOR, ".key").text.startswith("customer-3")
    value = first.find_element(By.CSS_SELECTOR, ".value pre").text
    assert value == '{\n  "order": 3,\n  "partition": 1,\n  "item": "book"\n}'
    assert "source: shop" in first.find_element(By.CSS_SELECTOR, ".headers").text
    assert "trace: t-3" in first.find_element(By.CSS_SELECTOR, ".headers").text
    assert "CreateTime" in first.find_element(By.CSS_SELECTOR, ".timestamp").text
    screenshot(browser, "messages")


def test_message_browser_shows_text_binary_as_hex_and_a_forced_hex_view(
    console: ConsoleProcess, browser: Any
) -> None:
    browser.get(console.url + "/topics/events/messages?start=oldest")
    values = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#messages .value pre")]
    assert values[0] == "plain text event"
    assert values[1].startswith("00000000  00 01 02 ff fe 6f 64 72")
    assert values[2].startswith('{\n  "nested"')
    assert browser.find_elements(By.CSS_SELECTOR, "#messages .key pre")[1].text == "null"
    browser.get(console.url + "/topics/events/messages?start=oldest&display=hex")
    first = browser.find_element(By.CSS_SELECTOR, "#messages .value pre").text
    assert first.startswith("00000000  70 6c 61 69 6e")


def test_message_browser_from_a_timestamp(
    console: ConsoleProcess, browser: Any, seeded: BrokerProcess
) -> None:
    import time

    time.sleep(0.05)
    after = int(time.time() * 1000)
    produce_orders(seeded.bootstrap, 1, first=5000)
    browser.get(console.url + f"/topics/orders/messages?start=timestamp&value={after}&partition=all")
    keys = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#messages .key pre")]
    assert keys == ["customer-5000"] * ORDERS_PARTITIONS


def test_live_tail_shows_new_messages_without_reloading(
    console: ConsoleProcess, browser: Any, seeded: BrokerProcess
) -> None:
    browser.get(console.url + "/topics/orders/messages?live=1&limit=5")
    browser.execute_script("window.notReloaded = true;")
    produce_orders(seeded.bootstrap, 1, first=7777)
    wait_for(
        lambda: "customer-7777" in text_of(browser, "#messages"), what="the new message in the live tail"
    )
    assert browser.execute_script("return window.notReloaded === true;")


def test_group_page_shows_lag_as_the_admin_api_and_charts_it(
    console: ConsoleProcess, browser: Any, admin: Any, seeded: BrokerProcess
) -> None:
    browser.get(console.url + "/groups")
    row = browser.find_element(By.CSS_SELECTOR, "#groups tr[data-group='billing']")
    ends = admin_api.log_offsets(admin, "orders", "latest")
    offsets = admin_api.committed(admin, "billing")
    expected = sum(ends[p] - offsets[("orders", p)] for p in range(ORDERS_PARTITIONS))
    assert row.find_element(By.CSS_SELECTOR, ".lag").text == f"{expected:,}"
    assert "Empty" in row.text
    screenshot(browser, "groups")

    browser.get(console.url + "/groups/billing")
    browser.execute_script("window.notReloaded = true;")
    for partition in range(ORDERS_PARTITIONS):
        cells = browser.find_element(By.CSS_SELECTOR, f"#group-offsets tr[data-partition='{partition}']")
        assert cells.find_element(By.CSS_SELECTOR, ".committed").text == str(BILLING_CONSUMED_PER_PARTITION)
        assert cells.find_element(By.CSS_SELECTOR, ".log-end").text == f"{ends[partition]:,}"
        lag = ends[partition] - BILLING_CONSUMED_PER_PARTITION
        assert cells.find_element(By.CSS_SELECTOR, ".lag").text == f"{lag:,}"
    assert text_of(browser, "#total-lag") == f"{expected:,}"
    produce_orders(seeded.bootstrap, 10, first=9000)
    grown = f"{expected + 10 * ORDERS_PARTITIONS:,}"
    wait_for(lambda: text_of(browser, "#total-lag") == grown, what="the total lag to grow on the page")
    assert browser.execute_script("return window.notReloaded === true;"), "the page was reloaded"
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#lag-chart canvas"), what="the lag chart")
    wait_for(
        lambda: len(browser.execute_script("return document.getElementById('lag-chart').chart.data[0]")) >= 3,
        what="three lag samples in the chart",
    )
    screenshot(browser, "group")


def test_reset_offsets_to_earliest_with_a_preview_then_apply(
    console: ConsoleProcess, browser: Any, admin: Any
) -> None:
    browser.get(console.url + "/groups/billing")
    Select(browser.find_element(By.NAME, "target")).select_by_value("earliest")
    browser.find_element(By.CSS_SELECTOR, "#reset-offsets button").click()
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#reset-plan"), what="the reset preview")
    starts = admin_api.log_offsets(admin, "orders", "earliest")
    for partition in range(ORDERS_PARTITIONS):
        row = browser.find_element(By.CSS_SELECTOR, f"#reset-plan tr[data-partition='{partition}']")
        assert row.find_element(By.CSS_SELECTOR, ".new-offset").text == str(starts[partition])
    # nothing is committed by the preview
    assert set(admin_api.committed(admin, "billing").values()) == {BILLING_CONSUMED_PER_PARTITION}
    screenshot(browser, "group-reset-preview")
    browser.find_element(By.CSS_SELECTOR, "#apply-reset button").click()
    wait_for(lambda: browser.find_elements(By.ID, "notice"), what="the reset notice")
    assert "Committed new offsets for 3 partitions" in text_of(browser, "#notice")
    assert admin_api.committed(admin, "billing") == {
        ("orders", p): starts[p] for p in range(ORDERS_PARTITIONS)
    }


def test_brokers_page_and_a_broker_s_configs_and_log_dirs(
    console: ConsoleProcess, browser: Any, admin: Any, seeded: BrokerProcess
) -> None:
    browser.get(console.url + "/brokers")
    row = browser.find_element(By.CSS_SELECTOR, "#brokers tr[data-broker='1']")
    assert "up" in row.text and "controller" in row.text
    screenshot(browser, "brokers")
    browser.get(console.url + "/brokers/1")
    from confluent_kafka.admin._config import ConfigResource
    from confluent_kafka.admin._resource import ResourceType

    resource = ConfigResource(ResourceType.BROKER, "1")
    entries = admin.describe_configs([resource])[resource].result(30)
    shown = browser.find_element(By.CSS_SELECTOR, "#configs tr[data-config='log.dirs'] .value").text
    assert shown == entries["log.dirs"].value
    log_dirs = text_of(browser, "#log-dirs")
    assert str(seeded.data_dir) in log_dirs
    screenshot(browser, "broker")


def test_an_active_group_shows_its_members_and_assignments(
    console: ConsoleProcess, browser: Any, admin: Any, active_group: str
) -> None:
    description = admin.describe_consumer_groups([active_group])[active_group].result(30)
    [member] = description.members
    browser.get(console.url + f"/groups/{active_group}")
    assert text_of(browser, "#group-state") == "Stable"
    assert text_of(browser, "#group-protocol") == description.partition_assignor
    assert text_of(browser, "#member-count") == "1"
    members = text_of(browser, "#members")
    assert member.member_id in members
    assert f"{active_group}-consumer" in members
    assert "events-0" in members
    row = browser.find_element(By.CSS_SELECTOR, "#group-offsets tr[data-topic='events'][data-partition='0']")
    assert f"{active_group}-consumer" in row.text
    # Kafka refuses resetting the offsets of a group with members: the console says so, not a stack trace
    browser.find_element(By.CSS_SELECTOR, "#reset-offsets button").click()
    wait_for(lambda: browser.find_elements(By.ID, "apply-reset"), what="the reset preview")
    browser.find_element(By.CSS_SELECTOR, "#apply-reset button").click()
    message = wait_for(lambda: text_of(browser, "#message"), what="the refusal")
    assert "no active members" in message


def test_a_group_id_with_slashes_and_url_characters_opens_and_resets(
    console: ConsoleProcess, browser: Any, admin: Any
) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    group = "team/a b#1?x%"
    offsets = [TopicPartition("events", 0, 1)]
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, offsets)])[group].result(30)
    browser.get(console.url + "/groups")
    browser.find_element(By.LINK_TEXT, group).click()
    wait_for(lambda: text_of(browser, "h1") == f"Consumer group {group}", what="the group's page")
    assert text_of(browser, "#total-lag") == "2"  # events holds 3 messages, 1 is committed
    Select(browser.find_element(By.NAME, "target")).select_by_value("latest")
    browser.find_element(By.CSS_SELECTOR, "#reset-offsets button").click()
    wait_for(lambda: browser.find_elements(By.ID, "apply-reset"), what="the reset preview")
    browser.find_element(By.CSS_SELECTOR, "#apply-reset button").click()
    wait_for(lambda: browser.find_elements(By.ID, "notice"), what="the reset notice")
    assert text_of(browser, "#total-lag") == "0"
    assert admin_api.committed(admin, group) == {("events", 0): 3}


def test_the_topic_list_filters_by_name(console: ConsoleProcess, browser: Any) -> None:
    browser.get(console.url + "/topics")
    search = browser.find_element(By.CSS_SELECTOR, "#topic-search input[name='q']")
    search.send_keys("EVE\n")
    wait_for(lambda: "q=EVE" in browser.current_url, what="the filtered list")
    shown = [
        row.get_attribute("data-topic")
        for row in browser.find_elements(By.CSS_SELECTOR, "#topics tr[data-topic]")
    ]
    assert shown == ["events"]


def test_a_bad_offset_or_timestamp_is_said_on_the_page(console: ConsoleProcess) -> None:
    status, body = http_status(console.url + "/topics/orders/messages?start=timestamp&value=yesterday")
    assert status == 200 and 'id="browse-error"' in body and "ISO-8601" in body
    status, body = http_status(console.url + "/topics/orders/messages?start=offset&value=-4")
    assert status == 200 and "an offset is a whole number" in body
    status, body = http_status(console.url + "/topics/orders/messages?partition=9")
    assert status == 200 and "has no partition 9" in body
    status, body = http_status(console.url + "/groups/billing/reset", b"target=timestamp&timestamp=soon")
    assert status == 400 and "ISO-8601" in body
    status, body = http_status(console.url + "/topics/nope")
    assert status == 404 and "topic &#39;nope&#39; does not exist" in body
