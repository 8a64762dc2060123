"""The metrics clients push (KIP-714), as the brokers' metrics endpoints serve them.

The Kafka protocol has no request that reads them back (Kafka's broker hands them to a plugin), so
the console reads them from the Prometheus endpoints it is given (`--metrics-url`, one per broker;
an odradek broker's `odradek_client_telemetry_metric`). Without one the page says so. Each endpoint
is read with a timeout and at most MAX_SCRAPE_BYTES; one that fails is reported, the others shown.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Final

from prometheus_client.parser import text_string_to_metric_families

FAMILY: Final = "odradek_client_telemetry_metric"
MAX_SCRAPE_BYTES: Final = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class PushedMetric:
    name: str
    attributes: str
    value: float


@dataclass(slots=True)
class ClientInstance:
    instance_id: str
    client_id: str
    #: the metrics endpoint it was read from (the broker it pushes to)
    source: str
    metrics: list[PushedMetric] = field(default_factory=list)


@dataclass(slots=True)
class ClientTelemetry:
    clients: list[ClientInstance]
    #: endpoint -> why it could not be read
    errors: dict[str, str]


def read_client_telemetry(urls: tuple[str, ...], timeout: float) -> ClientTelemetry:
    """Every client instance the endpoints at `urls` report, by client id then instance id."""
    found: dict[str, ClientInstance] = {}
    errors: dict[str, str] = {}
    for url in urls:
        try:
            text = _scrape(url, timeout)
        except (OSError, ValueError) as error:
            errors[url] = str(getattr(error, "reason", None) or error)
            continue
        for family in text_string_to_metric_families(text):
            if family.name != FAMILY:
                continue
            for sample in family.samples:
                labels = sample.labels
                instance_id = labels.get("client_instance_id", "")
                client = found.setdefault(
                    instance_id, ClientInstance(instance_id, labels.get("client_id", ""), url)
                )
                client.metrics.append(
                    PushedMetric(labels.get("metric", ""), labels.get("attributes", ""), sample.value)
                )
    for client in found.values():
        client.metrics.sort(key=lambda metric: (metric.name, metric.attributes))
    clients = sorted(found.values(), key=lambda client: (client.client_id, client.instance_id))
    return ClientTelemetry(clients, errors)


def _scrape(url: str, timeout: float) -> str:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"not an http(s) URL: {url}")
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: bytes = response.read(MAX_SCRAPE_BYTES + 1)
    if len(body) > MAX_SCRAPE_BYTES:
        raise ValueError(f"{url} answered more than {MAX_SCRAPE_BYTES} bytes")
    return body.decode("utf-8", "replace")
