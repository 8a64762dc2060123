"""Clients: the client instances that push their metrics (KIP-714), and one instance's metrics, read
from the brokers' metrics endpoints (`--metrics-url`)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from odradek.console.data.client_telemetry import ClientTelemetry, read_client_telemetry
from odradek.console.pages.common import console, page


async def _telemetry(request: Request) -> ClientTelemetry:
    settings = console(request).settings
    return await run_in_threadpool(read_client_telemetry, settings.metrics_urls, settings.request_timeout)


async def client_list(request: Request) -> Response:
    telemetry = await _telemetry(request)
    urls = console(request).settings.metrics_urls
    return page(request, "clients.html", {"telemetry": telemetry, "metrics_urls": urls})


async def client(request: Request) -> Response:
    instance_id = request.path_params["instance_id"]
    telemetry = await _telemetry(request)
    found = next((c for c in telemetry.clients if c.instance_id == instance_id), None)
    if found is None:
        raise HTTPException(404, f"no client instance {instance_id} has pushed metrics (or it expired)")
    return page(request, "client.html", {"client": found})


routes = [
    Route("/clients", client_list, name="clients"),
    Route("/clients/{instance_id}", client, name="client"),
]
