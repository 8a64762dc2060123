"""Acceptance: a cluster that cannot be reached gets a clear error page, never a stack trace; a broker
that goes down and comes back is shown so, and the console carries on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.console.support import http_status, running_console, screenshot, text_of, wait_for
from tests.support.broker_process import BrokerProcess, free_port


@pytest.mark.parametrize("path", ["/", "/topics", "/topics/orders", "/groups", "/groups/billing", "/brokers"])
def test_an_unreachable_cluster_gets_the_error_page_on_every_page(path: str, log_dir: Path) -> None:
    closed = f"127.0.0.1:{free_port()}"
    with running_console(closed, log_dir=log_dir) as console:
        status, body = http_status(console.url + path)
    assert status == 503
    assert "Cluster unavailable" in body
    assert f"cannot reach broker at {closed}" in body
    assert "Traceback" not in body and 'File "' not in body


def test_the_error_page_in_a_browser(browser: Any, log_dir: Path) -> None:
    closed = f"127.0.0.1:{free_port()}"
    with running_console(closed, log_dir=log_dir) as console:
        browser.get(console.url + "/")
        assert text_of(browser, "h1") == "Cluster unavailable"
        assert f"cannot reach broker at {closed}" in text_of(browser, "#cluster-error")
        screenshot(browser, "cluster-unavailable")


def test_the_console_shows_the_broker_gone_then_recovers_when_it_is_back(
    tmp_path: Path, browser: Any, log_dir: Path
) -> None:
    # odradek runs single-node clusters today: the broker going down is the whole cluster going away
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with running_console(broker.bootstrap, "--request-timeout", "3", log_dir=log_dir) as console:
            browser.get(console.url + "/")
            assert text_of(browser, "#brokers-up") == "1 / 1"
            broker.stop()
            # the open page's next refresh fails: it says so, and keeps what it showed
            banner = browser.find_element(By.ID, "refresh-failed")
            wait_for(banner.is_displayed, timeout=30, what="the refresh-failed banner")
            assert text_of(browser, "#brokers-up") == "1 / 1"
            browser.get(console.url + "/topics")
            assert text_of(browser, "h1") == "Cluster unavailable"
            broker.start()
            # the error page re-asks by itself every 5 s
            wait_for(lambda: text_of(browser, "h1") == "Topics", timeout=60, what="the console to recover")
            browser.find_element(By.LINK_TEXT, "Overview").click()
            assert text_of(browser, "#brokers-up") == "1 / 1"
    finally:
        broker.stop()
