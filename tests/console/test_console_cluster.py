"""Acceptance (issue 20): the console keeps working when a broker of a real cluster goes down.

A real ZooKeeper and three broker processes in cluster mode (127.0.0.2-4, as the cluster acceptance tests
run them); a topic with partitions led by every broker and a group with committed offsets. One broker is
SIGKILLed: the overview lists it down and the others up, the partitions it led are offline (no leader),
the other pages still render; once it is restarted the overview shows it up again. Twice: a broker that is
not the console's bootstrap server, and the bootstrap server itself when the console is given all three.

Every page answers within the console's request timeout (5 s here, plus rendering) throughout. Before,
a page could take the HTTP client's whole 30 s after the restart, or the console died: librdkafka's
ListOffsets for a partition without a leader waited past the timeout, and when the leader's broker came
back librdkafka 2.16 aborted the process (an assertion in rd_kafka_enq_once). A group whose coordinator
is down is shown as such, naming the broker, instead of "got no answer" from the bootstrap server.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from odradek.coordinator.partitioning import partition_for
from tests.console.support import http_status, running_console, screenshot, text_of, wait_for
from tests.integration.cluster.test_three_brokers import BROKER_IDS, Cluster, _all_known
from tests.support.interop import wait_until
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the session's ZooKeeper, re-exported as a fixture

TOPIC = "spread"
PARTITIONS = 6  # two led by each broker
GROUP = "readers"
OFFSETS_PARTITIONS = 6  # offsets.topic.num.partitions of the cluster tests' brokers
REQUEST_TIMEOUT = 5  # the console's --request-timeout in these tests
PAGE_BOUND = REQUEST_TIMEOUT + 3.0  # seconds a page may take: the timeout, plus rendering on a loaded machine


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_module("kafka")
    require_module("confluent_kafka")
    connect = f"{zookeeper_server.connect_string}/odradek-console-{uuid.uuid4().hex[:8]}"
    made = Cluster(tmp_path_factory.mktemp("console-cluster"), connect)
    try:
        for broker in made.brokers.values():
            broker.start()
        wait_until(lambda: _all_known(made), 20, "three brokers in Metadata", interval=0.1)
        made.create(TOPIC, 1, asked=1, partitions=PARTITIONS)
        _commit_offsets(made)
        yield made
    finally:
        for broker in made.brokers.values():
            broker.stop()


def _commit_offsets(cluster: Cluster) -> None:
    """A message in every partition and the group `readers` with an offset committed on each."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    for partition in range(PARTITIONS):
        producer.produce(TOPIC, f"m-{partition}".encode(), partition=partition)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap(), "group.id": GROUP, "enable.auto.commit": False}
    )
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, p, 1) for p in range(PARTITIONS)], asynchronous=False)
    finally:
        consumer.close()


def _overview(browser: Any, url: str) -> dict[str, str]:
    """Broker id -> its state badge's text, as the overview shows it now."""
    browser.get(url + "/")
    rows = browser.find_elements(By.CSS_SELECTOR, "#brokers tr[data-broker]")
    return {
        row.get_attribute("data-broker"): row.find_element(By.CSS_SELECTOR, ".badge.up, .badge.down").text
        for row in rows
    }


def _kill_and_restart(cluster: Cluster, browser: Any, url: str, victim: int, shot: str) -> None:
    SLOW.clear()
    led = sorted(p for p, leader in cluster.leaders(TOPIC, asked=1).items() if leader == victim)
    assert len(led) == PARTITIONS // len(BROKER_IDS), led
    all_up = {str(n): "up" for n in BROKER_IDS}
    wait_for(lambda: _overview(browser, url) == all_up, timeout=60, what="three brokers up")
    assert text_of(browser, "#offline-count") == "0"

    offsets_leaders = cluster.leaders("__consumer_offsets", asked=1)
    coordinator = offsets_leaders[partition_for(GROUP, OFFSETS_PARTITIONS)]
    # a group the victim coordinates (none need exist: its coordinator is looked up all the same)
    orphan = next(
        name
        for name in (f"orphans-{n}" for n in range(1000))
        if offsets_leaders[partition_for(name, OFFSETS_PARTITIONS)] == victim
    )
    print(f"\nkilling broker {victim}; the coordinator of {GROUP} is broker {coordinator}")
    cluster.brokers[victim].kill()
    down = {**all_up, str(victim): "down"}
    # the controller notices when the broker's ZooKeeper session expires (3 s), then every cache learns it
    wait_for(lambda: _overview(browser, url) == down, timeout=60, what=f"broker {victim} shown down")
    assert text_of(browser, "#brokers-up") == "2 / 3"
    row = browser.find_element(By.CSS_SELECTOR, f"#brokers tr[data-broker='{victim}']")
    assert cluster.brokers[victim].bootstrap in row.text  # remembered: its address is still shown
    wait_for(
        lambda: _offline_rows(browser, url) >= {(TOPIC, str(p)) for p in led},
        timeout=60,
        what=f"the partitions broker {victim} led shown offline",
    )
    assert int(text_of(browser, "#offline-count")) >= len(led)
    screenshot(browser, shot)

    # the topic page: the partitions it led have no leader, the others keep theirs
    browser.get(f"{url}/topics/{TOPIC}")
    assert text_of(browser, "h1") == f"Topic {TOPIC}"
    for partition in range(PARTITIONS):
        leader = text_of(browser, f"#partitions tr[data-partition='{partition}'] .leader")
        log_end = text_of(browser, f"#partitions tr[data-partition='{partition}'] .log-end")
        if partition in led:  # its log end cannot be asked: shown unknown, the page is not failed
            assert (leader, log_end) == ("none", "\u2013"), partition
        else:
            assert leader in {str(n) for n in BROKER_IDS if n != victim}, (partition, leader)
            assert log_end == "1", (partition, log_end)
    # the other pages still render, without a stack trace
    browser.get(url + "/topics")
    assert text_of(browser, "h1") == "Topics"
    assert browser.find_elements(By.CSS_SELECTOR, f"#topics tr[data-topic='{TOPIC}']")
    browser.get(url + "/groups")
    assert text_of(browser, "h1") == "Consumer groups"
    for path in ("/", "/topics", f"/topics/{TOPIC}", "/groups", "/brokers"):
        status, body = _page(url + path)
        assert status == 200, (path, status, body[-2000:])
        assert "Traceback" not in body
    status, body = _page(f"{url}/topics/{TOPIC}/messages")
    assert status == 200 and "Traceback" not in body
    status, body = _page(f"{url}/brokers/{victim}")
    assert status == 200 and '<span class="badge down">down</span>' in body, body[-2000:]
    # the group's page needs its coordinator: the broker leading its __consumer_offsets partition (one
    # replica here). While that is the broker killed the page says so, naming it; otherwise it renders.
    status, body = _page(f"{url}/groups/{GROUP}")
    assert "Traceback" not in body
    if coordinator == victim:
        assert status == 503 and "Cluster unavailable" in body, (status, body[-2000:])
    else:
        assert status == 200 and f"Consumer group {GROUP}" in body, (status, body[-2000:])
    # a group the victim coordinates: the page names it as the broker that does not answer, at once
    status, body = _page(f"{url}/groups/{orphan}")
    assert status == 503 and "Cluster unavailable" in body, (status, body[-2000:])
    assert f"group &#39;{orphan}&#39; has no coordinator" in body, body[-2000:]
    assert f'<span id="silent-brokers">{victim} ({cluster.brokers[victim].bootstrap})</span>' in body
    assert "got no answer" not in body

    cluster.brokers[victim].start()
    # every page keeps answering in time while the broker comes back, and all render once it is back
    wait_for(lambda: 'id="offline-count">0<' in _page(url + "/")[1], timeout=60, what="no partition offline")
    paths = ("/", "/topics", f"/topics/{TOPIC}", f"/topics/{TOPIC}/messages", "/groups", "/brokers")
    failing: list[tuple[str, int, str]] = []

    def all_render() -> bool:
        failing[:] = [
            (path, status, _error_text(body))
            for path in (*paths, f"/groups/{GROUP}")
            for status, body in [_page(url + path)]
            if status != 200
        ]
        return not failing

    try:
        wait_for(all_render, timeout=60, what="every page rendered")
    except AssertionError:
        raise AssertionError(f"pages still failing: {failing}") from None
    wait_for(lambda: _overview(browser, url) == all_up, timeout=60, what=f"broker {victim} shown up again")
    assert text_of(browser, "#brokers-up") == "3 / 3"
    assert not SLOW, SLOW


SLOW: list[str] = []  # pages that took longer than PAGE_BOUND (also those loaded inside wait_for)


def _page(url: str) -> tuple[int, str]:
    """The page over HTTP, failing the test if it took longer than the console's request timeout allows."""
    started = time.monotonic()
    status, body = http_status(url)
    took = time.monotonic() - started
    if took >= PAGE_BOUND:
        SLOW.append(f"{url} took {took:.1f} s")
    assert not SLOW, SLOW
    return status, body


def _error_text(body: str) -> str:
    """The error page's message (its first <strong> or the message paragraph), for assertion messages."""
    found = re.search(r"<strong>(.*?)</strong>|<p[^>]*>(.*?)</p>", body, re.S)
    return (found.group(1) or found.group(2) or "").strip() if found else body[-300:]


def _offline_rows(browser: Any, url: str) -> set[tuple[str, str]]:
    browser.get(url + "/")
    found = set()
    for row in browser.find_elements(By.CSS_SELECTOR, "#troubled tr"):
        cells = [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        if cells and cells[-1] == "offline":
            found.add((cells[0], cells[1]))
    return found


def test_a_broker_that_is_not_the_bootstrap_goes_down_and_comes_back(
    cluster: Cluster, browser: Any, log_dir: Path
) -> None:
    timeout = str(REQUEST_TIMEOUT)
    with running_console(cluster.bootstrap(1), "--request-timeout", timeout, log_dir=log_dir) as console:
        _kill_and_restart(cluster, browser, console.url, victim=3, shot="cluster-broker-down")


def test_the_bootstrap_broker_goes_down_and_comes_back(cluster: Cluster, browser: Any, log_dir: Path) -> None:
    # the controller, first of the three addresses the console is given: killing it also moves the controller
    victim = cluster.controller(asked=2)
    order = [victim, *(n for n in BROKER_IDS if n != victim)]
    timeout = str(REQUEST_TIMEOUT)
    with running_console(cluster.bootstrap(*order), "--request-timeout", timeout, log_dir=log_dir) as console:
        _kill_and_restart(cluster, browser, console.url, victim=victim, shot="cluster-bootstrap-down")
        assert cluster.controller(asked=order[1]) != victim  # it did move
