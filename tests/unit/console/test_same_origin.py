"""Changes are accepted from the console's own pages only (cross-site request forgery)."""

from __future__ import annotations

from odradek.console.same_origin import same_origin


def test_the_console_s_own_pages_may_change() -> None:
    assert same_origin("127.0.0.1:8080", "http://127.0.0.1:8080")
    assert same_origin("127.0.0.1:8080", "http://127.0.0.1:8080/topics/orders")
    assert same_origin("Console.Example:443", "https://console.example:443/x")


def test_other_sites_may_not() -> None:
    assert not same_origin("127.0.0.1:8080", "https://evil.example")
    assert not same_origin("127.0.0.1:8080", "http://127.0.0.1:9999/")
    assert not same_origin("127.0.0.1:8080", "null")


def test_requests_without_origin_or_referer_are_not_from_a_browser_page() -> None:
    assert same_origin("127.0.0.1:8080", None)
