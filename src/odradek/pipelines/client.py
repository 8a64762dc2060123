"""confluent-kafka configs for the pipeline's own clients (the generator's producer, the topic admin)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from odradek.spark.security import is_secured, librdkafka_security, raise_on_authentication_error


def client_config(
    bootstrap: str, client_settings: Mapping[str, str] | None, defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """bootstrap.servers, the defaults, then the person's settings (Java security names translated)."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, **defaults}
    config.update(librdkafka_security(dict(client_settings or {})))
    if is_secured(config):
        config.setdefault("error_cb", raise_on_authentication_error)
    return config
