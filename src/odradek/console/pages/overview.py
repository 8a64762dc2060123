"""The overview: cluster id, brokers up and down, topic count, partitions in trouble, throughput."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from odradek.console import sampler
from odradek.console.data.cluster import ClusterState, PartitionState, cluster_state
from odradek.console.pages.common import cluster, console, page


async def overview(request: Request) -> Response:
    shared = console(request)
    state = await cluster(request, lambda admin: cluster_state(admin, shared.memory))
    configs = await cluster(request, lambda admin: shared.topic_configs.get(admin, list(state.topics)))
    history = shared.history
    return page(
        request,
        "overview.html",
        {
            "state": state,
            "offline": [p for p in state.partitions if p.offline],
            "under_replicated": [p for p in state.partitions if p.under_replicated],
            "under_min_isr": under_min_isr(state, configs),
            "bytes_in": history.points(sampler.BYTES_IN),
            "bytes_out": history.points(sampler.BYTES_OUT),
            "messages_in": history.points(sampler.MESSAGES_IN),
        },
    )


def under_min_isr(state: ClusterState, configs: dict[str, dict[str, str]]) -> list[PartitionState]:
    """Partitions with fewer in-sync replicas than their topic's min.insync.replicas (acks=all fails)."""
    found = []
    for partition in state.partitions:
        wanted = configs.get(partition.topic, {}).get("min.insync.replicas")
        if wanted is not None and wanted.isdigit() and len(partition.isr) < int(wanted):
            found.append(partition)
    return found


routes = [Route("/", overview, name="overview")]
