"""The Host header check (DNS rebinding) and what counts as serving beyond this machine."""

from __future__ import annotations

import pytest

from odradek.config.hosts import host_header_name, is_loopback
from odradek.console.allowed_hosts import AllowedHosts


async def _app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("not reached")


def test_the_host_header_is_read_without_its_port() -> None:
    assert host_header_name("localhost:8080") == "localhost"
    assert host_header_name("evil.example") == "evil.example"
    assert host_header_name("[::1]:8080") == "::1"
    assert host_header_name("[::1]") == "::1"
    assert host_header_name("") == ""


def test_loopback_is_served_and_other_names_only_when_listed() -> None:
    hosts = AllowedHosts(_app, ["0.0.0.0", "Console.Example.", "10.0.0.5"])
    for served in (
        "127.0.0.1",
        "127.8.9.10",
        "::1",
        "localhost",
        "LOCALHOST.",
        "console.example",
        "10.0.0.5",
    ):
        assert hosts.allowed(served), served
    for refused in (
        "",
        "evil.example",
        "0.0.0.0",
        "10.0.0.6",
        "console.example.evil.example",
        "localhost.evil",
    ):
        assert not hosts.allowed(refused), refused


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_binds_are_this_machine_only(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["", "0.0.0.0", "::", "10.0.0.5", "console.example", "my-laptop"])
def test_every_interface_other_addresses_and_names_serve_beyond_this_machine(host: str) -> None:
    assert not is_loopback(host)
