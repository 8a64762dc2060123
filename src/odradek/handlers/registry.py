"""The handler registry: which API keys and versions the broker serves, and by which function.

Each handler module registers its functions with `@handles(ApiKey.X, min_version, max_version)`.
ApiVersions is answered from this registry, so the broker never advertises what it does not serve.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import REQUESTS

Handler = Callable[[Any, Any], Awaitable[Any]]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True, slots=True)
class Registration:
    api_key: ApiKey
    min_version: int
    max_version: int
    handler: Handler


REGISTRY: dict[int, Registration] = {}


def handles(api_key: ApiKey, min_version: int, max_version: int) -> Callable[[H], H]:
    """Register `handler` as the server of `api_key` at versions min..max (which the codec must know)."""
    request = REQUESTS[api_key]
    if min_version not in request.VERSIONS or max_version not in request.VERSIONS:
        raise ValueError(
            f"{api_key.name}: the codec has versions {request.VERSIONS}, not {min_version}-{max_version}"
        )

    def register(handler: H) -> H:
        if api_key in REGISTRY:
            raise ValueError(f"{api_key.name} is registered twice")
        REGISTRY[api_key] = Registration(api_key, min_version, max_version, handler)
        return handler

    return register


def registration_for(api_key: int, api_version: int) -> Registration | None:
    """The registration serving this key at this version, or None when we do not serve it."""
    registration = REGISTRY.get(api_key)
    if registration is None or not registration.min_version <= api_version <= registration.max_version:
        return None
    return registration
