"""Changes only from the console's own pages: a POST whose Origin (or, lacking one, Referer) names another
site is refused, so a page elsewhere cannot make a logged-in browser delete a topic (cross-site request
forgery). Requests with neither header (curl, scripts) are not browsers acting for someone: let through.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class SameOriginChanges:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            headers = HTTPConnection(scope).headers
            if not same_origin(headers.get("host", ""), headers.get("origin") or headers.get("referer")):
                response = PlainTextResponse("Changes are accepted from the console's own pages only.", 403)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def same_origin(host: str, origin: str | None) -> bool:
    """Whether `origin` (an Origin or Referer header) is the console at `host` (the Host header)."""
    if origin is None:
        return True
    if origin == "null":  # sandboxed frames and some redirects: no site to trust
        return False
    return urlsplit(origin).netloc.lower() == host.lower()
