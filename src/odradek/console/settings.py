"""What `odradek console` was told: where the cluster is, how to reach it, and how to serve the pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ConsoleSettings:
    bootstrap_server: str
    host: str = "127.0.0.1"
    #: Host names (or addresses) requests may name besides loopback ones and `host` (AllowedHosts).
    allowed_hosts: tuple[str, ...] = ()
    port: int = 8080
    read_only: bool = False
    command_config: str | None = None
    client_properties: list[tuple[str, str]] = field(default_factory=list)
    #: Shorter than the CLI's 30 s: a page that waits longer than this for the cluster says so instead.
    request_timeout: float = 10.0
    basic_auth_file: Path | None = None
    #: How often the in-memory history (throughput, lag) takes a sample.
    sample_interval: float = 5.0
    #: Samples kept per series: an hour at the default interval.
    history_length: int = 720
    #: The brokers' Prometheus endpoints, read for the metrics clients push (the Clients page).
    metrics_urls: tuple[str, ...] = ()
