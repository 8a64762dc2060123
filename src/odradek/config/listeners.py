"""Listener endpoints (``listeners``, ``advertised.listeners``) and ``listener.security.protocol.map``.

An endpoint is written ``NAME://host:port``; an empty host means every interface, and an IPv6 host
is written in brackets. Listener names are case-insensitive and kept upper-case, as Kafka does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"


@dataclass(frozen=True, slots=True)
class Endpoint:
    listener_name: str
    host: str
    port: int
    security_protocol: str

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


def parse_protocol_map(text: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` into {NAME: PROTOCOL}; raises ValueError on a malformed entry."""
    mapping: dict[str, str] = {}
    for item in _items(text):
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip() or protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"'{item}' is not LISTENER_NAME:SECURITY_PROTOCOL")
        mapping[name.strip().upper()] = protocol
    return mapping


def parse_endpoints(text: str, protocol_map: dict[str, str]) -> list[Endpoint]:
    """Parse a listener list; every name must appear in the protocol map, and names may not repeat."""
    endpoints: list[Endpoint] = []
    for item in _items(text):
        match = _ENDPOINT.fullmatch(item)
        if match is None:
            raise ValueError(f"'{item}' is not of the form LISTENER_NAME://host:port")
        name = match.group("name").upper()
        port = int(match.group("port"))
        if not 0 <= port <= 65535:
            raise ValueError(f"port {port} of '{item}' is outside 0..65535")
        if name not in protocol_map:
            raise ValueError(f"listener {name} has no entry in listener.security.protocol.map")
        if any(endpoint.listener_name == name for endpoint in endpoints):
            raise ValueError(f"listener {name} is given more than once")
        endpoints.append(Endpoint(name, _host(match), port, protocol_map[name]))
    return endpoints


def is_endpoint_list(text: object) -> bool:
    """Syntax only (names are checked against the protocol map once the whole config is known)."""
    if not isinstance(text, str):
        return False
    return all(_ENDPOINT.fullmatch(item) for item in _items(text))


def is_protocol_map(text: object) -> bool:
    if not isinstance(text, str):
        return False
    try:
        parse_protocol_map(text)
    except ValueError:
        return False
    return True


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


_ENDPOINT = re.compile(
    r"(?P<name>[A-Za-z0-9_\-]+)://(\[(?P<v6>[0-9A-Fa-f:.%]+)\]|(?P<host>[^:/\[\]]*)):(?P<port>\d+)"
)


def _host(match: re.Match[str]) -> str:
    return match.group("v6") or match.group("host") or ""
