"""The Prometheus endpoint (`metrics.port`, off by default; on `metrics.host`, loopback by default):
what the broker is doing, by topic and API.

The counters the request path bumps are `broker_metrics.py`'s (`BrokerMetrics`); what is read from the
broker's state at scrape time, `state_metrics.py`'s. The HTTP endpoint is served on the broker's own
event loop, so a scrape sees a consistent state and needs no locks.

Hooks call through `active`, the recorder of the broker running in this process (None while no
endpoint is configured, which costs the hooks one attribute lookup).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest

from odradek.config.broker import BrokerConfig
from odradek.config.hosts import host_header_name, is_loopback
from odradek.handlers._common.services import Services
from odradek.server.broker_metrics import BrokerMetrics

log = logging.getLogger("odradek.metrics")

_MAX_HTTP_REQUEST: Final = 8192
_HTTP_TIMEOUT: Final = 5.0

#: The recorder of the broker in this process whose endpoint is on; the hooks report to it.
active: BrokerMetrics | None = None


async def start_endpoint(
    config: BrokerConfig, services: Services, connection_count: Callable[[], int]
) -> MetricsEndpoint | None:
    """The endpoint on `metrics.host`:`metrics.port`, or None when no port is set.

    Loopback unless `metrics.host` says otherwise: it answers anyone without authentication. (It was
    bound to the first listener's host, often every interface.)"""
    port = config.metrics_port
    if port is None or port <= 0:
        return None
    return await MetricsEndpoint(BrokerMetrics(services, connection_count)).start(config.metrics_host, port)


def endpoint_url(config: BrokerConfig, endpoint: MetricsEndpoint | None) -> str | None:
    """Where the console reads the metrics clients push: this broker's endpoint, if it has one."""
    if endpoint is None:
        return None
    host = config.metrics_host
    host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host  # bound everywhere: reach it here
    return f"http://{f'[{host}]' if ':' in host else host}:{endpoint.port}/metrics"


class MetricsEndpoint:
    """The HTTP listener serving `GET /metrics` in Prometheus' text format, on the broker's loop."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self.metrics = metrics
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(metrics)
        self.registry.register(ProcessCollector(registry=None))
        self.server: asyncio.Server | None = None
        self.loopback_only = True

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def start(self, host: str, port: int) -> MetricsEndpoint:
        global active
        self.loopback_only = is_loopback(host)
        self.server = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        active = self.metrics
        self.metrics.services.traffic = self.metrics
        log.info("metrics endpoint listening", extra={"fields": {"host": host, "port": self.port}})
        return self

    def _serves_host(self, head: bytes) -> bool:
        """Bound to loopback, only requests naming a loopback host: a web page whose name an attacker
        rebinds to 127.0.0.1 (DNS rebinding) reads what it fetches, and only its Host header gives it
        away. Bound beyond loopback, it answers whoever reaches it, as the operator chose."""
        if not self.loopback_only:
            return True
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"host":
                return is_loopback(host_header_name(value.decode("latin-1")))
        return False

    def close(self) -> None:
        global active
        if active is self.metrics:
            active = None
        if self.metrics.services.traffic is self.metrics:
            self.metrics.services.traffic = None
        if self.server is not None:
            self.server.close()
            self.server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HTTP_TIMEOUT)
            request_line = head.split(b"\r\n", 1)[0].split()
            if not self._serves_host(head):
                _answer(writer, b"421 Misdirected Request", b"text/plain", b"not a host served here\n")
            elif len(request_line) < 2 or request_line[0] not in (b"GET", b"HEAD"):
                _answer(writer, b"405 Method Not Allowed", b"text/plain", b"GET /metrics only\n")
            elif request_line[1].split(b"?", 1)[0] not in (b"/metrics", b"/"):
                _answer(writer, b"404 Not Found", b"text/plain", b"see /metrics\n")
            else:
                body = generate_latest(self.registry)
                if request_line[0] == b"HEAD":
                    body = b""
                _answer(writer, b"200 OK", CONTENT_TYPE_LATEST.encode(), body)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


def _answer(writer: asyncio.StreamWriter, status: bytes, content_type: bytes, body: bytes) -> None:
    writer.write(
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: "
        + content_type
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\nConnection: close\r\n\r\n"
        + body
    )
