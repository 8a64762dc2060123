"""The Clients page's data: the metrics clients push, read from the brokers' metrics endpoints; an
endpoint that cannot be read is reported by URL and the others still shown."""

from __future__ import annotations

import socket

from odradek.console.data.client_telemetry import read_client_telemetry


def test_an_endpoint_that_refuses_is_reported_not_raised() -> None:
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/metrics"
    telemetry = read_client_telemetry((url, "file:///etc/passwd"), timeout=2)
    assert telemetry.clients == []
    assert set(telemetry.errors) == {url, "file:///etc/passwd"}
    assert "not an http(s) URL" in telemetry.errors["file:///etc/passwd"]
