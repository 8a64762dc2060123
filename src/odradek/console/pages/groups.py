"""Consumer groups: the list with state and total lag; a group's members, assignments, committed offsets
and lag per partition, charted over time; resetting its offsets with a preview, then apply."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from odradek.cli.arguments import timestamp_ms
from odradek.cli.client import Admin
from odradek.cli.group_offsets import Partition
from odradek.console import sampler
from odradek.console.data.coordinator import coordinator_trouble
from odradek.console.data.groups import (
    RESET_TARGETS,
    GroupDetail,
    PartitionLag,
    apply_offset_reset,
    describe_group,
    group_lag,
    list_groups,
    plan_offset_reset,
)
from odradek.console.data.session import ClusterError
from odradek.console.filters import path_part
from odradek.console.pages.common import cluster, console, form_text, page, refuse_if_read_only


async def group_list(request: Request) -> Response:
    listings = await cluster(request, list_groups)
    lags = await asyncio.gather(*(cluster(request, _lag_of(listing.group_id)) for listing in listings))
    rows = [
        {"group": listing, "lag": sum(p.lag or 0 for p in lag), "partitions": len(lag)}
        for listing, lag in zip(listings, lags, strict=True)
    ]
    return page(request, "groups.html", {"rows": rows})


async def group(request: Request) -> Response:
    group_id = request.path_params["group"]
    detail = await _detail(request, group_id)
    history = console(request).history
    partition_series = {
        (p.topic, p.partition): history.points(sampler.group_partition_lag(group_id, p.topic, p.partition))
        for p in detail.partitions
    }
    return page(
        request,
        "group.html",
        {
            "group": detail,
            "total_lag_points": history.points(sampler.group_total_lag(group_id)),
            "partition_series": partition_series,
            "topics": sorted({p.topic for p in detail.partitions}),
            "targets": RESET_TARGETS,
            "notice": request.query_params.get("notice"),
        },
    )


async def reset_preview(request: Request) -> Response:
    refuse_if_read_only(request)
    group_id = request.path_params["group"]
    form = await request.form()
    target = form_text(form, "target")
    topics = [value for value in form.getlist("topic") if isinstance(value, str) and value]
    try:
        when = timestamp_ms(form_text(form, "timestamp")) if target == "timestamp" else None
    except argparse.ArgumentTypeError as error:  # the CLI's parser: its message is the sentence to show
        return _group_error(request, group_id, str(error))
    try:
        plan = await cluster(request, lambda admin: plan_offset_reset(admin, group_id, topics, target, when))
        detail = await _detail(request, group_id)
    except ClusterError as error:
        if error.unreachable:
            raise
        return _group_error(request, group_id, error.message)
    rows = [(topic, partition, old, new) for (topic, partition), (old, new) in sorted(plan.items())]
    return page(
        request,
        "group_reset_preview.html",
        {"group": detail, "rows": rows, "target": target, "timestamp": form_text(form, "timestamp")},
    )


async def reset_apply(request: Request) -> Response:
    """Commit exactly the offsets the preview showed (sent back as offset:<topic>:<partition> fields)."""
    refuse_if_read_only(request)
    group_id = request.path_params["group"]
    form = await request.form()
    try:
        offsets = posted_offsets(form.multi_items())
    except ValueError as error:
        return _group_error(request, group_id, str(error))
    if not offsets:
        return _group_error(request, group_id, "no offsets to commit")
    try:
        await cluster(request, lambda admin: apply_offset_reset(admin, group_id, offsets))
    except ClusterError as error:
        if error.unreachable:
            raise
        return _group_error(request, group_id, error.message)
    notice = f"Committed new offsets for {len(offsets)} partitions."
    url = request.url_for("group", group=path_part(group_id)).include_query_params(notice=notice)
    return RedirectResponse(url, status_code=303)


def posted_offsets(items: list[tuple[str, Any]]) -> dict[Partition, int]:
    """The `offset:<topic>:<partition>=<offset>` fields of the apply form (topic names hold no ':')."""
    offsets: dict[Partition, int] = {}
    for key, value in items:
        if not key.startswith("offset:") or not isinstance(value, str):
            continue
        topic, _, partition = key[len("offset:") :].rpartition(":")
        if not topic or not partition.isdigit() or not value.lstrip("-").isdigit():
            raise ValueError(f"not an offset to commit: {key}={value}")
        offsets[(topic, int(partition))] = int(value)
    return offsets


def _lag_of(group_id: str) -> Callable[[Admin], list[PartitionLag]]:
    return lambda admin: group_lag(admin, group_id)


async def _detail(request: Request, group_id: str) -> GroupDetail:
    # The coordinator is checked first: when its broker is down DescribeGroups would only time out.
    memory = console(request).memory
    trouble = await cluster(request, lambda admin: coordinator_trouble(admin, group_id, memory))
    if trouble is not None:
        raise ClusterError(trouble.message, unreachable=True, brokers=trouble.brokers)
    detail = await cluster(request, lambda admin: describe_group(admin, group_id))
    if detail is None:
        raise HTTPException(404, f"consumer group '{group_id}' does not exist")
    return detail


def _group_error(request: Request, group_id: str, message: str) -> Response:
    return page(request, "message.html", {"title": f"Group {group_id}", "message": message}, status_code=400)


# Group ids may hold '/', so they are matched as paths; the longer routes come first.
routes = [
    Route("/groups", group_list, name="groups"),
    Route("/groups/{group:path}/reset/apply", reset_apply, methods=["POST"], name="group_reset_apply"),
    Route("/groups/{group:path}/reset", reset_preview, methods=["POST"], name="group_reset_preview"),
    Route("/groups/{group:path}", group, name="group"),
]
