"""Who reaches the console: only requests naming a host it serves (loopback, or --allowed-host), so a page
whose name was rebound to the console's address (DNS rebinding) is refused though its Origin matches its
Host; and nothing beyond this machine without authentication."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.console import admin_api
from tests.console.support import ConsoleProcess, chromium, http_status, running_console, wait_for
from tests.support.broker_process import REPO, BrokerProcess, free_port


def test_a_request_naming_another_host_is_refused_so_a_rebound_page_cannot_change_the_cluster(
    console: ConsoleProcess, admin: Any
) -> None:
    rebound = f"evil.example:{console.port}"
    status, body = http_status(console.url + "/topics", headers={"Host": rebound})
    assert status == 421 and "evil.example" in body and "orders" not in body
    # the rebound page's own origin: same-origin holds, the Host check does not
    status, _ = http_status(
        console.url + "/topics/new",
        b"name=rebound&partitions=1",
        headers={"Host": rebound, "Origin": f"http://{rebound}"},
    )
    assert status == 421
    assert "rebound" not in admin_api.topic_names(admin)


def test_loopback_names_and_addresses_are_served(console: ConsoleProcess) -> None:
    for host in ("127.0.0.1", "localhost", "LocalHost", "[::1]", "127.0.0.5"):
        status, body = http_status(console.url + "/topics", headers={"Host": f"{host}:{console.port}"})
        assert status == 200 and 'data-topic="orders"' in body, host


def test_a_rebound_page_in_a_browser_sees_only_the_refusal(console: ConsoleProcess, admin: Any) -> None:
    # Chromium resolves rebound.example to the console, as the attacker's DNS would after rebinding.
    driver = chromium("--host-resolver-rules=MAP rebound.example 127.0.0.1")
    try:
        driver.get(f"http://rebound.example:{console.port}/topics/new")
        assert "does not serve the host name rebound.example" in driver.page_source
        status = driver.execute_script(
            "return fetch('/topics/new', {method: 'POST', body: new URLSearchParams({name: 'rebound2'})})"
            ".then(r => r.status)"
        )
        assert status == 421
    finally:
        driver.quit()
    assert "rebound2" not in admin_api.topic_names(admin)


def test_allowed_host_names_are_served_and_others_are_not(seeded: BrokerProcess, log_dir: Path) -> None:
    allowed = ("--allowed-host", "console.example", "--allowed-host", "10.9.8.7")
    with running_console(seeded.bootstrap, *allowed, log_dir=log_dir) as console:
        for host in ("console.example", "CONSOLE.example", "10.9.8.7", "localhost"):
            assert http_status(console.url + "/", headers={"Host": f"{host}:{console.port}"})[0] == 200, host
        for host in ("other.example", "console.example.evil.example", "10.9.8.8"):
            assert http_status(console.url + "/", headers={"Host": f"{host}:{console.port}"})[0] == 421, host


def test_a_console_serving_beyond_loopback_without_authentication_refuses_to_start(
    seeded: BrokerProcess,
) -> None:
    # 192.0.2.1 (TEST-NET-1) is not this machine's: were the console to get as far as binding, it
    # would fail there, so nothing is ever served beyond loopback by this test (the rule for every
    # interface and for names: tests/unit/console/test_allowed_hosts.py).
    result = _console("--host", "192.0.2.1", "--bootstrap-server", seeded.bootstrap)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line == (
        "odradek console: --host 192.0.2.1 serves beyond this machine: give --basic-auth-file (every "
        "request then needs a listed user and password), or serve 127.0.0.1"
    )


def test_a_password_given_with_x_is_warned_about(seeded: BrokerProcess, log_dir: Path) -> None:
    with running_console(seeded.bootstrap, "-X", "sasl.password=hunter2", log_dir=log_dir) as console:
        wait_for(lambda: "warning" in console.log_text(), what="the warning")
        text = console.log_text()
    assert "hunter2" not in text
    assert (
        "odradek console: warning: -X sasl.password on the command line is visible to every user of this "
        "machine (ps, /proc); put it in a --command-config file" in text
    )


def _console(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "odradek.cli.main", "console", "--port", str(free_port()), *arguments]
    return subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )
