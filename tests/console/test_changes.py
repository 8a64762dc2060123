"""Acceptance: the changes the console makes, each behind a confirmation step, checked with the admin API;
read-only mode hides and refuses them; basic auth keeps out who is not listed."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By

from tests.console import admin_api
from tests.console.support import ConsoleProcess, http_status, running_console, screenshot, text_of, wait_for
from tests.support.broker_process import BrokerProcess


def test_create_a_topic_alter_its_configs_after_a_preview_and_delete_it_after_typing_its_name(
    console: ConsoleProcess, browser: Any, admin: Any
) -> None:
    browser.get(console.url + "/topics")
    browser.find_element(By.ID, "create-topic").click()
    browser.find_element(By.NAME, "name").send_keys("payments")
    browser.find_element(By.NAME, "partitions").send_keys("4")
    browser.find_element(By.NAME, "configs").send_keys("cleanup.policy=compact")
    browser.find_element(By.CSS_SELECTOR, "#new-topic button").click()
    wait_for(lambda: browser.current_url.endswith("/topics/payments"), what="the new topic's page")
    assert len(admin_api.partitions(admin, "payments")) == 4
    assert admin_api.topic_config(admin, "payments", "cleanup.policy")[0] == "compact"

    browser.find_element(By.CSS_SELECTOR, "#alter-configs textarea[name='set']").send_keys(
        "retention.ms=3600000"
    )
    browser.find_element(By.CSS_SELECTOR, "#alter-configs textarea[name='delete']").send_keys(
        "cleanup.policy"
    )
    browser.find_element(By.CSS_SELECTOR, "#alter-configs button").click()
    changes = wait_for(lambda: text_of(browser, "#config-changes"), what="the config preview")
    assert "retention.ms" in changes and "3600000" in changes
    assert "cleanup.policy compact (default)" in changes
    assert admin_api.topic_config(admin, "payments", "retention.ms")[1] != "DYNAMIC_TOPIC_CONFIG"
    screenshot(browser, "topic-alter-preview")
    browser.find_element(By.CSS_SELECTOR, "#confirm-alter button").click()
    wait_for(lambda: browser.find_elements(By.ID, "notice"), what="the configs-updated notice")
    assert admin_api.topic_config(admin, "payments", "retention.ms") == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert admin_api.topic_config(admin, "payments", "cleanup.policy")[1] != "DYNAMIC_TOPIC_CONFIG"

    browser.find_element(By.ID, "delete-topic").click()
    browser.find_element(By.NAME, "confirm_name").send_keys("paymentz")
    browser.find_element(By.CSS_SELECTOR, "#confirm-delete button").click()
    assert "does not match" in wait_for(lambda: text_of(browser, "#form-error"), what="the mismatch error")
    assert "payments" in admin_api.topic_names(admin)
    browser.find_element(By.NAME, "confirm_name").send_keys("payments")
    browser.find_element(By.CSS_SELECTOR, "#confirm-delete button").click()
    wait_for(lambda: browser.find_elements(By.ID, "notice"), what="the deleted notice")
    wait_for(lambda: "payments" not in admin_api.topic_names(admin), what="the topic to be gone")


def test_creating_a_topic_that_exists_says_so_on_the_form(console: ConsoleProcess, browser: Any) -> None:
    browser.get(console.url + "/topics/new")
    browser.find_element(By.NAME, "name").send_keys("orders")
    browser.find_element(By.CSS_SELECTOR, "#new-topic button").click()
    error = wait_for(lambda: text_of(browser, "#form-error"), what="the form's error")
    assert error == "topic 'orders' already exists"


def test_read_only_console_hides_and_refuses_every_change(
    seeded: BrokerProcess, browser: Any, admin: Any, log_dir: Path
) -> None:
    with running_console(seeded.bootstrap, "--read-only", log_dir=log_dir) as console:
        browser.get(console.url + "/topics")
        assert not browser.find_elements(By.ID, "create-topic")
        assert text_of(browser, "#read-only-mode") == "read-only"
        browser.get(console.url + "/topics/orders")
        assert not browser.find_elements(By.ID, "delete-topic")
        assert not browser.find_elements(By.ID, "alter-configs")
        browser.get(console.url + "/groups/billing")
        assert not browser.find_elements(By.ID, "reset-offsets")
        refused = [
            http_status(console.url + "/topics/new", b"name=sneaky"),
            http_status(console.url + "/topics/orders/delete", b"confirm_name=orders"),
            http_status(console.url + "/topics/orders/configs/apply", b"set=retention.ms%3D1"),
            http_status(console.url + "/groups/billing/reset/apply", b"offset%3Aorders%3A0=0"),
        ]
        assert [status for status, _ in refused] == [403] * 4
        assert all("--read-only" in body for _, body in refused)
    assert "sneaky" not in admin_api.topic_names(admin)
    assert "orders" in admin_api.topic_names(admin)


def test_basic_auth_lets_in_only_listed_users(seeded: BrokerProcess, log_dir: Path) -> None:
    users = log_dir / "users.txt"
    users.write_text("# console users\nadmin:correct horse\n")
    with running_console(seeded.bootstrap, "--basic-auth-file", str(users), log_dir=log_dir) as console:
        status, _ = http_status(console.url + "/topics")
        assert status == 401
        wrong = base64.b64encode(b"admin:wrong").decode()
        assert http_status(console.url + "/topics", headers={"Authorization": f"Basic {wrong}"})[0] == 401
        right = base64.b64encode(b"admin:correct horse").decode()
        status, body = http_status(console.url + "/topics", headers={"Authorization": f"Basic {right}"})
        assert status == 200 and 'data-topic="orders"' in body


def test_a_change_posted_from_another_site_is_refused(console: ConsoleProcess, admin: Any) -> None:
    status, body = http_status(
        console.url + "/topics/orders/delete",
        b"confirm_name=orders",
        headers={"Origin": "https://evil.example"},
    )
    assert status == 403 and "own pages" in body
    assert "orders" in admin_api.topic_names(admin)


def test_a_config_change_the_broker_would_refuse_is_said_before_confirming(
    console: ConsoleProcess, browser: Any, admin: Any
) -> None:
    browser.get(console.url + "/topics/orders")
    browser.find_element(By.CSS_SELECTOR, "#alter-configs textarea[name='set']").send_keys(
        "retention.ms=banana"
    )
    browser.find_element(By.CSS_SELECTOR, "#alter-configs button").click()
    message = wait_for(lambda: text_of(browser, "#message"), what="the refusal")
    assert message.startswith("the broker refuses this change:")
    assert not browser.find_elements(By.ID, "confirm-alter")
    assert admin_api.topic_config(admin, "orders", "retention.ms")[0] == "604800000"
