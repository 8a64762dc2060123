"""Brokers: the list (id, address, rack, controller, up or down, log dirs' size) and one broker's configs
with their sources and its log directories."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from odradek.console.data.cluster import cluster_state
from odradek.console.data.log_dirs import describe_log_dirs
from odradek.console.data.topics import broker_configs
from odradek.console.pages.common import cluster, console, page


async def broker_list(request: Request) -> Response:
    shared = console(request)
    state = await cluster(request, lambda admin: cluster_state(admin, shared.memory))
    log_dirs = await cluster(request, lambda admin: describe_log_dirs(admin, state.brokers))
    sizes = {b.id: sum(d.size for d in log_dirs.dirs if d.broker_id == b.id) for b in state.brokers}
    leaders = {b.id: sum(1 for p in state.partitions if p.leader == b.id) for b in state.brokers}
    return page(
        request,
        "brokers.html",
        {"state": state, "sizes": sizes, "leaders": leaders, "size_errors": log_dirs.errors},
    )


async def broker(request: Request) -> Response:
    shared = console(request)
    text = request.path_params["broker_id"]
    state = await cluster(request, lambda admin: cluster_state(admin, shared.memory, False))
    found = next((b for b in state.brokers if str(b.id) == text), None)
    if found is None:
        raise HTTPException(404, f"broker {text} is not part of the cluster")
    if not found.up:
        return page(request, "broker.html", {"broker": found, "configs": [], "log_dirs": None})
    configs = await cluster(request, lambda admin: broker_configs(admin, found.id))
    log_dirs = await cluster(request, lambda admin: describe_log_dirs(admin, [found]))
    return page(request, "broker.html", {"broker": found, "configs": configs, "log_dirs": log_dirs})


routes = [
    Route("/brokers", broker_list, name="brokers"),
    Route("/brokers/{broker_id}", broker, name="broker"),
]
