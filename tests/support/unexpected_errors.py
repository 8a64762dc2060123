"""The broker's `odradek_unexpected_errors_total{api}` counts, scraped from its metrics endpoint."""

from __future__ import annotations

import asyncio
import http.client


async def unexpected_errors(metrics_port: int) -> dict[str, float]:
    """Each api label's count (the broker counts an exception no handler turned into a Kafka error)."""
    text = await asyncio.to_thread(_scrape, metrics_port)
    counts = {}
    for line in text.splitlines():
        if line.startswith("odradek_unexpected_errors_total{"):
            labels, value = line.split("} ")
            counts[labels.split('api="')[1].rstrip('"')] = float(value)
    return counts


def _scrape(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        return connection.getresponse().read().decode()
    finally:
        connection.close()
