"""What every page uses: the templates, the console's state on the app, calls to the cluster off the
event loop, and refusing changes in read-only mode."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from odradek.cli.client import Admin
from odradek.console import filters
from odradek.console.data.cluster import BrokerMemory
from odradek.console.data.config_cache import SummaryConfigCache
from odradek.console.data.session import Session
from odradek.console.history import History
from odradek.console.settings import ConsoleSettings

T = TypeVar("T")

templates = Jinja2Templates(directory=str(Path(__file__).resolve().parent.parent / "templates"))
filters.install(templates.env)


@dataclass
class Console:
    """What the pages share, kept on `app.state.console`."""

    settings: ConsoleSettings
    session: Session
    history: History
    memory: BrokerMemory
    topic_configs: SummaryConfigCache

    @property
    def read_only(self) -> bool:
        return self.settings.read_only


class ReadOnly(Exception):
    """A change asked of a console started with --read-only."""


def console(request: Request) -> Console:
    found: Console = request.app.state.console
    return found


async def cluster(request: Request, operation: Callable[[Admin], T]) -> T:
    """`operation(admin)` in a worker thread: the client blocks, the pages must not."""
    session = console(request).session
    return await run_in_threadpool(session.run, operation)


def refuse_if_read_only(request: Request) -> None:
    if console(request).read_only:
        raise ReadOnly()


def page(request: Request, template: str, context: dict[str, Any], status_code: int = 200) -> Response:
    """A page; its own context with what the layout needs (the cluster's address, read-only)."""
    shared = console(request)
    full = {"bootstrap": shared.settings.bootstrap_server, "read_only": shared.read_only, **context}
    return templates.TemplateResponse(request, template, full, status_code=status_code)


def form_text(form: Any, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""
