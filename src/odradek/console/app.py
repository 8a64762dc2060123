"""The console's Starlette application: routes of every page, the Host check, basic auth, the error pages,
and the sampler that feeds the charts (started and stopped with the app)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from odradek.console.allowed_hosts import AllowedHosts
from odradek.console.auth import BasicAuth, load_users
from odradek.console.data.cluster import BrokerMemory
from odradek.console.data.config_cache import SummaryConfigCache
from odradek.console.data.session import ClusterError, Session
from odradek.console.history import History
from odradek.console.pages import brokers, clients, groups, messages, overview, topic, topics
from odradek.console.pages.common import Console, ReadOnly, page
from odradek.console.same_origin import SameOriginChanges
from odradek.console.sampler import Sampler
from odradek.console.settings import ConsoleSettings

STATIC = Path(__file__).resolve().parent / "static"


def create_app(settings: ConsoleSettings) -> Starlette:
    shared = Console(
        settings,
        Session(settings),
        History(settings.history_length),
        BrokerMemory(),
        SummaryConfigCache(),
    )
    sampling = Sampler(shared.session, shared.history, shared.memory, shared.topic_configs)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # One sample before serving: the first page then finds every topic's configs cached (seconds
        # saved on a cluster of thousands of topics). A cluster that does not answer only delays this.
        with contextlib.suppress(ClusterError, TimeoutError):
            await asyncio.wait_for(asyncio.to_thread(sampling.sample), settings.request_timeout)
        task = asyncio.create_task(sampling.run(settings.sample_interval))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # The Host check first: a request meant for another site (DNS rebinding) gets nothing further.
    middleware = [
        Middleware(AllowedHosts, served=(settings.host, *settings.allowed_hosts)),
        Middleware(SameOriginChanges),
    ]
    if settings.basic_auth_file is not None:
        middleware.append(Middleware(BasicAuth, users=load_users(settings.basic_auth_file)))
    routes = [
        *overview.routes,
        *topics.routes,
        *messages.routes,
        *topic.routes,
        *groups.routes,
        *brokers.routes,
        *clients.routes,
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            ClusterError: cluster_error,
            ReadOnly: read_only,
            HTTPException: http_error,
            Exception: internal_error,
        },
    )
    app.state.console = shared
    return app


async def cluster_error(request: Request, error: Exception) -> Response:
    """The cluster could not be reached (503) or refused (502): said plainly, with the address asked."""
    assert isinstance(error, ClusterError)
    status = 503 if error.unreachable else 502
    context = {"title": "Cluster unavailable" if error.unreachable else "The cluster refused", "error": error}
    return page(request, "cluster_error.html", context, status_code=status)


async def read_only(request: Request, error: Exception) -> Response:
    message = "This console was started with --read-only: it shows the cluster and changes nothing."
    return page(request, "message.html", {"title": "Read-only", "message": message}, status_code=403)


async def http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    title = "Not found" if error.status_code == 404 else "Request refused"
    return page(
        request, "message.html", {"title": title, "message": error.detail}, status_code=error.status_code
    )


async def internal_error(request: Request, error: Exception) -> Response:
    """Anything unexpected: never shown on the page; Starlette re-raises it after this answer, so uvicorn
    logs its traceback on the console's stderr."""
    message = f"The console failed to answer ({type(error).__name__}); its log says more."
    return page(request, "message.html", {"title": "Console error", "message": message}, status_code=500)
