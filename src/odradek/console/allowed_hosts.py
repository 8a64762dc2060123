"""Only requests naming a host the console serves (the Host header) are answered: loopback names and
addresses, the address it was told to serve on, and the names given with --allowed-host.

This is what defeats DNS rebinding. A page at attacker.example whose name is later made to resolve to
the console's address is, to the browser, still attacker.example: its requests carry that Origin and
that Host, so the same-origin check of changes (same_origin.py) passes, and the browser lets the page
read the answers. Only the Host header tells that the request was meant for another site. An IP
address cannot be rebound, so a loopback one is always served.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from odradek.config.hosts import host_header_name, ip_address, is_loopback

#: Addresses that mean "every interface": not a name a request can carry.
WILDCARDS = frozenset({"", "0.0.0.0", "::"})


class AllowedHosts:
    def __init__(self, app: ASGIApp, served: Iterable[str]) -> None:
        self.app = app
        self.served = frozenset(_normal(name) for name in served if name not in WILDCARDS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = host_header_name(Headers(scope=scope).get("host", ""))
            if not self.allowed(host):
                shown = host or "(none)"
                response = PlainTextResponse(
                    f"This console does not serve the host name {shown}. If that name is yours, start "
                    f"the console with --allowed-host {shown}.",
                    421,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def allowed(self, host: str) -> bool:
        return bool(host) and (is_loopback(host) or _normal(host) in self.served)


def _normal(name: str) -> str:
    address = ip_address(name)
    return str(address) if address is not None else name.lower().removesuffix(".")
