"""Optional HTTP basic auth (`--basic-auth-file`, read by users_file.py). Passwords are compared in
constant time."""

from __future__ import annotations

import base64
import binascii
import hmac

from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from odradek.config.console_users import AuthFileError, load_users

__all__ = ["AuthFileError", "BasicAuth", "load_users"]


class BasicAuth:
    """ASGI middleware: every HTTP request needs a known user and their password."""

    def __init__(self, app: ASGIApp, users: dict[str, str]) -> None:
        self.app = app
        self.users = users

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.allowed(HTTPConnection(scope).headers.get("authorization", "")):
            await self.app(scope, receive, send)
            return
        response = PlainTextResponse(
            "Authentication required.", 401, headers={"WWW-Authenticate": 'Basic realm="odradek console"'}
        )
        await response(scope, receive, send)

    def allowed(self, header: str) -> bool:
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        expected = self.users.get(user)
        # Compare against something even for an unknown user, so timing does not tell which users exist.
        return hmac.compare_digest(password.encode(), (expected or "\0").encode()) and expected is not None
