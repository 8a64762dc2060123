"""Optional HTTP basic auth (`--basic-auth-file`): one `user:password` a line, `#` comments.

The file holds the passwords themselves, as Kafka UI's and AKHQ's basic-auth settings do; keep it
readable by the console's user only. Passwords are compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from pathlib import Path

from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class AuthFileError(Exception):
    pass


def load_users(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise AuthFileError(f"cannot read --basic-auth-file {path}: {error.strerror}") from None
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, separator, password = line.partition(":")
        if not separator or not user or not password:
            raise AuthFileError(f"--basic-auth-file {path} line {number}: expected user:password")
        users[user] = password
    if not users:
        raise AuthFileError(f"--basic-auth-file {path} names no user")
    return users


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
