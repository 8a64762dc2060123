"""One topic: its partitions (leader, replicas, ISR, log start and end), configs with their sources, and
the changes with a confirmation step: altering configs (a preview of old and new values) and deleting
(typing the topic's name)."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from odradek.cli.config_rows import ConfigRow
from odradek.console import sampler
from odradek.console.data.cluster import TopicState, cluster_state
from odradek.console.data.log_dirs import describe_log_dirs
from odradek.console.data.offsets import log_ranges
from odradek.console.data.session import ClusterError
from odradek.console.data.topics import (
    alter_topic_configs,
    delete_topic,
    topic_configs,
    validate_topic_configs,
)
from odradek.console.pages.common import cluster, console, form_text, page, refuse_if_read_only
from odradek.console.pages.topics import parse_config_lines


async def topic(request: Request) -> Response:
    name = request.path_params["name"]
    state = await _topic_state(request, name)
    partitions = [(name, p.partition) for p in state.partitions]
    ranges = await cluster(request, lambda admin: log_ranges(admin, partitions))
    configs = await cluster(request, lambda admin: topic_configs(admin, name))
    shared = console(request)
    brokers = await cluster(request, lambda admin: cluster_state(admin, shared.memory, False).brokers)
    log_dirs = await cluster(request, lambda admin: describe_log_dirs(admin, brokers))
    sizes = log_dirs.partition_sizes()
    return page(
        request,
        "topic.html",
        {
            "topic": state,
            "ranges": ranges,
            "sizes": sizes,
            "size_errors": log_dirs.errors,
            "configs": configs,
            "messages_total": sum(r.messages for r in ranges.values()),
            "messages_in": shared.history.points(sampler.topic_messages_in(name)),
            "notice": request.query_params.get("notice"),
        },
    )


async def alter_preview(request: Request) -> Response:
    """The configs that would change, old and new values side by side, and a button to apply them."""
    refuse_if_read_only(request)
    name = request.path_params["name"]
    form = await request.form()
    current = {row.name: row for row in await cluster(request, lambda admin: topic_configs(admin, name))}
    try:
        to_set = parse_config_lines(form_text(form, "set"))
        to_delete = [
            key.strip() for key in form_text(form, "delete").replace(",", "\n").split() if key.strip()
        ]
        if not to_set and not to_delete:
            raise ValueError("nothing to change: give configs to set or to reset to their defaults")
        await cluster(request, lambda admin: validate_topic_configs(admin, name, to_set, to_delete))
    except ValueError as error:
        return _topic_error(request, name, str(error))
    except ClusterError as error:
        if error.unreachable:
            raise
        return _topic_error(request, name, f"the broker refuses this change: {error.message}")
    changes = [(key, _shown(current.get(key)), value) for key, value in sorted(to_set.items())]
    changes += [(key, _shown(current.get(key)), "(default)") for key in sorted(to_delete)]
    return page(
        request,
        "topic_alter_confirm.html",
        {
            "name": name,
            "changes": changes,
            "set_lines": form_text(form, "set"),
            "delete": " ".join(to_delete),
        },
    )


async def alter_apply(request: Request) -> Response:
    refuse_if_read_only(request)
    name = request.path_params["name"]
    form = await request.form()
    try:
        to_set = parse_config_lines(form_text(form, "set"))
    except ValueError as error:
        return _topic_error(request, name, str(error))
    to_delete = form_text(form, "delete").split()
    console(request).topic_configs.forget(name)
    try:
        await cluster(request, lambda admin: alter_topic_configs(admin, name, to_set, to_delete))
    except ClusterError as error:
        return _topic_error(request, name, error.message)
    url = request.url_for("topic", name=name).include_query_params(notice="Configs updated.")
    return RedirectResponse(url, status_code=303)


async def delete_confirm(request: Request) -> Response:
    refuse_if_read_only(request)
    name = request.path_params["name"]
    await _topic_state(request, name)
    return page(request, "topic_delete_confirm.html", {"name": name, "error": None})


async def delete_apply(request: Request) -> Response:
    refuse_if_read_only(request)
    name = request.path_params["name"]
    form = await request.form()
    if form_text(form, "confirm_name") != name:
        error = "the name typed does not match: nothing was deleted"
        return page(request, "topic_delete_confirm.html", {"name": name, "error": error}, status_code=400)
    await cluster(request, lambda admin: delete_topic(admin, name))
    console(request).topic_configs.forget(name)
    url = request.url_for("topics").include_query_params(notice=f"Deleted topic {name}.")
    return RedirectResponse(url, status_code=303)


async def _topic_state(request: Request, name: str) -> TopicState:
    shared = console(request)
    state = await cluster(request, lambda admin: cluster_state(admin, shared.memory))
    found = state.topics.get(name)
    if found is None:
        raise HTTPException(404, f"topic '{name}' does not exist")
    return found


def _topic_error(request: Request, name: str, message: str) -> Response:
    return page(request, "message.html", {"title": f"Topic {name}", "message": message}, status_code=400)


def _shown(row: ConfigRow | None) -> str:
    if row is None:
        return "(not set)"
    if row.sensitive:
        return "(sensitive)"
    return row.value if row.value is not None else "null"


routes = [
    Route("/topics/{name}", topic, name="topic"),
    Route("/topics/{name}/configs", alter_preview, methods=["POST"], name="topic_alter_preview"),
    Route("/topics/{name}/configs/apply", alter_apply, methods=["POST"], name="topic_alter_apply"),
    Route("/topics/{name}/delete", delete_confirm, methods=["GET"], name="topic_delete_confirm"),
    Route("/topics/{name}/delete", delete_apply, methods=["POST"], name="topic_delete"),
]
