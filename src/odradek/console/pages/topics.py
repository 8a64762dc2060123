"""The topic list (partitions, replication, size, retention, messages/s) and creating a topic."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from odradek.console import sampler
from odradek.console.data.cluster import cluster_state
from odradek.console.data.log_dirs import describe_log_dirs
from odradek.console.data.session import ClusterError
from odradek.console.data.topics import create_topic
from odradek.console.filters import recent
from odradek.console.pages.common import cluster, console, form_text, page, refuse_if_read_only


async def topic_list(request: Request) -> Response:
    shared = console(request)
    show_internal = request.query_params.get("internal") == "1"
    search = request.query_params.get("q", "").strip()
    state = await cluster(request, lambda admin: cluster_state(admin, shared.memory))
    names = [
        name
        for name, topic in state.topics.items()
        if (show_internal or not topic.internal) and search.lower() in name.lower()
    ]
    configs = await cluster(request, lambda admin: shared.topic_configs.get(admin, names))
    log_dirs = await cluster(request, lambda admin: describe_log_dirs(admin, state.brokers))
    sizes = log_dirs.topic_sizes()
    rows = [
        {
            "topic": state.topics[name],
            "size": sizes.get(name),
            "retention_ms": configs.get(name, {}).get("retention.ms"),
            "retention_bytes": configs.get(name, {}).get("retention.bytes"),
            "messages_per_second": recent(shared.history.points(sampler.topic_messages_in(name))),
        }
        for name in names
    ]
    return page(
        request,
        "topics.html",
        {
            "rows": rows,
            "show_internal": show_internal,
            "search": search,
            "hidden": sum(1 for topic in state.topics.values() if topic.internal),
            "size_errors": log_dirs.errors,
        },
    )


async def new_topic_form(request: Request) -> Response:
    refuse_if_read_only(request)
    return page(request, "topic_new.html", {"error": None, "form": {}})


async def new_topic(request: Request) -> Response:
    refuse_if_read_only(request)
    form = await request.form()
    values = {key: form_text(form, key) for key in ("name", "partitions", "replication_factor", "configs")}
    try:
        name = values["name"]
        if not name:
            raise ValueError("the topic needs a name")
        partitions = _optional_int(values["partitions"], "partitions")
        replication = _optional_int(values["replication_factor"], "replication factor")
        configs = parse_config_lines(values["configs"])
        await cluster(request, lambda admin: create_topic(admin, name, partitions, replication, configs))
    except (ValueError, ClusterError) as error:
        message = error.message if isinstance(error, ClusterError) else str(error)
        return page(request, "topic_new.html", {"error": message, "form": values}, status_code=400)
    return RedirectResponse(request.url_for("topic", name=name), status_code=303)


def parse_config_lines(text: str) -> dict[str, str]:
    """`key=value` a line; blank lines and lines starting with # are skipped."""
    configs: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, separator, value = line.partition("=")
        if not separator or not key.strip():
            raise ValueError(f"config line {number} is not key=value: {line!r}")
        configs[key.strip()] = value.strip()
    return configs


def _optional_int(text: str, what: str) -> int | None:
    if not text:
        return None
    if not text.isdigit() or int(text) <= 0:
        raise ValueError(f"the {what} must be a whole number above 0, not {text!r}")
    return int(text)


routes = [
    Route("/topics", topic_list, name="topics"),
    Route("/topics/new", new_topic_form, methods=["GET"], name="new_topic_form"),
    Route("/topics/new", new_topic, methods=["POST"], name="new_topic"),
]
