"""The console's users file (`--basic-auth-file`, a broker's `console.basic.auth.file`): one
`user:password` a line, `#` comments.

The file holds the passwords themselves, as Kafka UI's and AKHQ's basic-auth settings do; keep it
readable by the console's user only. A setting's file format, so in config/ (a leaf): the broker
checks the file at start-up (server/console_process.py) without importing the console, an application,
or its packages; the console reads it here too.
"""

from __future__ import annotations

from pathlib import Path


class AuthFileError(Exception):
    pass


def load_users(path: Path, what: str = "--basic-auth-file") -> dict[str, str]:
    """{user: password} of the file; `what` names the setting that gave it, for the error."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise AuthFileError(f"cannot read {what} {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise AuthFileError(f"{what} {path} is not UTF-8 text") from None
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, separator, password = line.partition(":")
        if not separator or not user or not password:
            raise AuthFileError(f"{what} {path} line {number}: expected user:password")
        users[user] = password
    if not users:
        raise AuthFileError(f"{what} {path} names no user")
    return users
