"""The handler registry: which API keys and versions the broker serves, and by which function.

Each handler module registers its functions with `@handles(ApiKey.X, min_version, max_version)`.
ApiVersions is answered from this registry, so the broker never advertises what it does not serve.
Some APIs are served only in a broker mode (the controller's LeaderAndIsr, UpdateMetadata and
StopReplica only by a ZooKeeper cluster member): `registration_for` and ApiVersions take the mode.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from odradek.cluster.metadata import BrokerMode
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
    #: The broker modes that serve this API (every mode unless the handler says otherwise).
    modes: frozenset[BrokerMode] = frozenset(BrokerMode)

    def served_in(self, mode: BrokerMode) -> bool:
        return mode in self.modes


REGISTRY: dict[int, Registration] = {}


def handles(
    api_key: ApiKey, min_version: int, max_version: int, *, modes: frozenset[BrokerMode] | None = None
) -> Callable[[H], H]:
    """Register `handler` as the server of `api_key` at versions min..max (which the codec must know),
    in the broker `modes` given (default: every mode)."""
    request = REQUESTS[api_key]
    if min_version not in request.VERSIONS or max_version not in request.VERSIONS:
        raise ValueError(
            f"{api_key.name}: the codec has versions {request.VERSIONS}, not {min_version}-{max_version}"
        )

    def register(handler: H) -> H:
        if api_key in REGISTRY:
            raise ValueError(f"{api_key.name} is registered twice")
        served = frozenset(BrokerMode) if modes is None else modes
        REGISTRY[api_key] = Registration(api_key, min_version, max_version, handler, served)
        return handler

    return register


def registration_for(
    api_key: int, api_version: int, mode: BrokerMode = BrokerMode.SINGLE_NODE
) -> Registration | None:
    """The registration serving this key at this version in `mode`, or None when we do not serve it."""
    registration = REGISTRY.get(api_key)
    if registration is None or not registration.min_version <= api_version <= registration.max_version:
        return None
    if not registration.served_in(mode):
        return None
    return registration
