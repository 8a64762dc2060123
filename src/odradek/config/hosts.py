"""Addresses odradek's HTTP endpoints bind to (``metrics.host``, ``console.host``, ``odradek console
--host``) and the host names they answer to: what a host setting may hold, what counts as this
machine only (loopback), and the name a request's Host header gives.
"""

from __future__ import annotations

import ipaddress
import re

from odradek.config.validators import Check

#: Names that always mean this machine (RFC 6761 reserves them; resolvers must answer loopback).
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})

_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def is_host(text: object) -> bool:
    """An IP address (IPv6 without brackets) or a DNS host name: no port, scheme or path."""
    if not isinstance(text, str) or not text or text != text.strip():
        return False
    if not text.startswith("[") and ip_address(text) is not None:
        return True
    labels = text.removesuffix(".").split(".")
    return len(text) <= 253 and all(_LABEL.fullmatch(label) for label in labels)


def ip_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """`text` as an IP address (an IPv6 one may be bracketed), or None for a name."""
    try:
        return ipaddress.ip_address(text.removeprefix("[").removesuffix("]"))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """Whether only this machine reaches `host`: a loopback address or the name localhost. Other names
    are not resolved (a name's addresses can change under us), so they count as beyond loopback."""
    address = ip_address(host)
    if address is not None:
        return address.is_loopback
    return host.lower().removesuffix(".") in LOOPBACK_NAMES


def host_header_name(header: str) -> str:
    """The name or address of an HTTP Host header, without its port: ``[::1]:8080`` -> ``::1``."""
    header = header.strip()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


BIND_HOST = Check(
    is_host,
    "an IP address or host name",
    "Must be an IP address or a host name, without port (0.0.0.0 or :: for every interface)",
)
HOST_NAMES = Check(
    lambda names: isinstance(names, list) and all(is_host(name) for name in names),
    "host names or IP addresses, comma-separated",
    "Must be host names or IP addresses without port, separated by commas",
)
