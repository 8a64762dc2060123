"""Client quota entities, their keys, and the precedence that picks a client's quota (KIP-55).

An entity is a user, a client id, or a (user, client id) pair; each part is a name or the default
(`<default>` in ZooKeeper, a null name on the wire). Kafka looks a request's quota up per quota type
(producer_byte_rate, consumer_byte_rate, request_percentage) in this order, the first entity that has
that key winning (ClientQuotaManager's DefaultQuotaCallback):

    1. /config/users/<user>/clients/<client-id>      5. /config/users/<user>
    2. /config/users/<user>/clients/<default>        6. /config/users/<default>
    3. /config/users/<default>/clients/<client-id>   7. /config/clients/<client-id>
    4. /config/users/<default>/clients/<default>     8. /config/clients/<default>

The level that wins also decides who shares one measured rate (Kafka's metric tags): a user-level
quota is shared by all the user's client ids, a client-id-level one by all users of that client id.
An IP entity (an address, a resolvable host name, or the default) stands alone and has one key,
connection_creation_rate (KIP-612): its own value, else the default IP's. controller_mutation_rate
is refused: not built.
"""

from __future__ import annotations

import enum
import ipaddress
import logging
import math
import socket
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONNECTION_CREATION_RATE: Final = "connection_creation_rate"
#: The quota keys of users and client ids, and whether Kafka types each as a whole number (LONG) or a
#: DOUBLE; the keys of IP entities.
QUOTA_KEYS: Final = {PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True, REQUEST_PERCENTAGE: False}
IP_QUOTA_KEYS: Final = {CONNECTION_CREATION_RATE: True}
#: Kafka's other client quota keys, refused with the reason.
REFUSED_KEYS: Final = {
    "controller_mutation_rate": "controller mutation quotas (KIP-599) are not built in odradek",
}

log = logging.getLogger("odradek.quotas")


class Default(enum.Enum):
    """The default entity name: `<default>` in ZooKeeper, a null name on the wire."""

    DEFAULT = "<default>"


DEFAULT: Final = Default.DEFAULT
ZK_DEFAULT: Final = "<default>"
Name = str | Literal[Default.DEFAULT]


class QuotaRequestError(ValueError):
    """A quota entity, filter or value the broker refuses (INVALID_REQUEST, with this message)."""


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """A user, a client id, or both; or an IP. None means the part is absent."""

    user: Name | None = None
    client_id: Name | None = None
    ip: Name | None = None

    def parts(self) -> list[tuple[str, str | None]]:
        """The entity as the wire names it: (entity type, name or None for the default)."""
        named = []
        if self.user is not None:
            named.append((USER, wire_name(self.user)))
        if self.client_id is not None:
            named.append((CLIENT_ID, wire_name(self.client_id)))
        if self.ip is not None:
            named.append((IP, wire_name(self.ip)))
        return named

    @property
    def keys(self) -> dict[str, bool]:
        """The quota keys this kind of entity has."""
        return IP_QUOTA_KEYS if self.ip is not None else QUOTA_KEYS

    def __str__(self) -> str:
        return ", ".join(f"{kind}={name if name is not None else ZK_DEFAULT}" for kind, name in self.parts())


def wire_name(name: Name) -> str | None:
    return None if name is DEFAULT else name


def entity_from_wire(parts: list[tuple[str, str | None]]) -> QuotaEntity:
    """The entity an AlterClientQuotas entry names; raises QuotaRequestError as Kafka's ZkAdminManager."""
    if not parts:
        raise QuotaRequestError("Invalid empty client quota entity")
    found: dict[str, Name] = {}
    for entity_type, name in parts:
        if entity_type not in (USER, CLIENT_ID, IP):
            raise QuotaRequestError(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise QuotaRequestError(f"Empty {entity_type} not supported")
        if entity_type in found:
            raise QuotaRequestError(f"Duplicate {entity_type} entity in client quota entity")
        found[entity_type] = DEFAULT if name is None else name
    if IP in found:
        if len(found) > 1:
            raise QuotaRequestError(
                "Invalid quota entity combination, IP entity should not be used with user/client ID entity."
            )
        ip = found[IP]
        if ip is not DEFAULT and ip_address_of(ip) is None:
            raise QuotaRequestError(f"{ip} is not a valid IP or resolvable host.")
        return QuotaEntity(ip=ip)
    return QuotaEntity(found.get(USER), found.get(CLIENT_ID))


def ip_address_of(name: str) -> str | None:
    """The address an IP entity names (a host name is resolved, as Kafka's InetAddress.getByName)."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        pass
    try:
        return str(ipaddress.ip_address(socket.gethostbyname(name)))
    except (OSError, UnicodeError, ValueError):
        return None


def checked_value(entity: QuotaEntity, key: str, value: float) -> float:
    """A quota value to store, checked as Kafka checks it (whole numbers for the byte rates and the
    connection rate). Byte rates and request percentages must be positive (a bound of zero has no rate
    to throttle to); a connection rate may be 0 (every new connection from the IP is throttled)."""
    if key in REFUSED_KEYS:
        raise QuotaRequestError(f"Invalid configuration key {key}: {REFUSED_KEYS[key]}")
    whole = entity.keys.get(key)
    if whole is None:
        raise QuotaRequestError(f"Invalid configuration key {key}")
    least_ok = value >= 0 if key == CONNECTION_CREATION_RATE else value > 0
    if math.isnan(value) or math.isinf(value) or not least_ok:
        kind = "a non-negative" if key == CONNECTION_CREATION_RATE else "a positive"
        raise QuotaRequestError(f"Configuration {key} must be {kind} value, not {value}")
    if whole:
        epsilon = 1e-6
        rounded = int(value + epsilon)
        if abs(rounded - value) > epsilon:
            raise QuotaRequestError(f"Configuration {key} must be a LONG value")
        return float(rounded)
    return value


def config_string(key: str, value: float) -> str:
    """A quota value as Kafka writes it in ZooKeeper: LONG keys as integers, DOUBLE ones as Java does."""
    whole = QUOTA_KEYS.get(key, IP_QUOTA_KEYS.get(key))
    return str(int(value)) if whole else repr(float(value))


# ----- ZooKeeper names (Kafka's Sanitizer) --------------------------------------------------------------


def sanitize(name: Name) -> str:
    """A user or client id as a znode name: URL-encoded as Java's URLEncoder, `*` as %2A, space %20."""
    if name is DEFAULT:
        return ZK_DEFAULT
    return urllib.parse.quote(name, safe="").replace("~", "%7E")


def desanitize(znode_name: str) -> Name:
    if znode_name == ZK_DEFAULT:
        return DEFAULT
    return urllib.parse.unquote_plus(znode_name)


def zk_entity_path(entity: QuotaEntity) -> tuple[str, str]:
    """(config type, entity name) of the entity's znode: users/<u>, users/<u>/clients/<c>, clients/<c>,
    ips/<ip>."""
    if entity.ip is not None:
        return "ips", sanitize(entity.ip)
    if entity.user is not None and entity.client_id is not None:
        return "users", f"{sanitize(entity.user)}/clients/{sanitize(entity.client_id)}"
    if entity.user is not None:
        return "users", sanitize(entity.user)
    assert entity.client_id is not None
    return "clients", sanitize(entity.client_id)


def entity_from_zk_path(entity_path: str) -> QuotaEntity | None:
    """The entity a /config/changes entity_path names (None: not a user or client entity)."""
    parts = entity_path.split("/")
    if len(parts) == 2 and parts[0] == "users":
        return QuotaEntity(user=desanitize(parts[1]))
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
        return QuotaEntity(user=desanitize(parts[1]), client_id=desanitize(parts[3]))
    if len(parts) == 2 and parts[0] == "clients":
        return QuotaEntity(client_id=desanitize(parts[1]))
    if len(parts) == 2 and parts[0] == "ips":
        return QuotaEntity(ip=desanitize(parts[1]))
    return None


def quota_values(entity: QuotaEntity, config: Mapping[str, str], where: str) -> dict[str, float]:
    """The quota keys of an entity's config (SCRAM credentials and other keys are not ours)."""
    values = {}
    for key in entity.keys:
        if key in config:
            try:
                values[key] = float(config[key])
            except ValueError:
                raise QuotaRequestError(f"{where}: {key} is {config[key]!r}, not a number") from None
    return values


# ----- precedence ------------------------------------------------------------------------------------

#: The metric tags of a client's quota: (user, client id), "" where the quota is not per that part.
Tags = tuple[str, str]


class QuotaConfigs:
    """Every entity's quotas, and the lookup of a client's quota for one key."""

    def __init__(self) -> None:
        self.by_entity: dict[QuotaEntity, dict[str, float]] = {}
        #: Per key, the entities that set it (Kafka keeps one map per quota type).
        self._by_key: dict[str, dict[QuotaEntity, float]] = {key: {} for key in QUOTA_KEYS}
        #: connection_creation_rate by address (host names resolved when set), and the default IP's.
        self.ip_rates: dict[str, float] = {}
        self.default_ip_rate: float | None = None

    def set(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Replace the entity's quotas with `values` (empty: the entity has none left)."""
        if values:
            self.by_entity[entity] = dict(values)
        else:
            self.by_entity.pop(entity, None)
        if entity.ip is not None:
            self._set_ip(entity.ip, values.get(CONNECTION_CREATION_RATE))
            return
        for key, entities in self._by_key.items():
            if key in values:
                entities[entity] = values[key]
            else:
                entities.pop(entity, None)

    def _set_ip(self, ip: Name, rate: float | None) -> None:
        if ip is DEFAULT:
            self.default_ip_rate = rate
            return
        address = ip_address_of(ip)
        if address is None:
            log.error("connection_creation_rate of ip %s not applied: it does not resolve", ip)
        elif rate is None:
            self.ip_rates.pop(address, None)
        else:
            self.ip_rates[address] = rate

    def ip_rate(self, address: str) -> float | None:
        """The connection_creation_rate of a client address (None: unlimited)."""
        rate = self.ip_rates.get(address)
        return self.default_ip_rate if rate is None else rate

    def has(self, key: str) -> bool:
        return bool(self._by_key[key])

    def lookup(self, key: str, user: str, client_id: str) -> tuple[Tags, float | None]:
        """The tags sharing one rate, and the bound for them (None: unlimited)."""
        quotas = self._by_key[key]
        u, c = user, client_id
        if QuotaEntity(u, c) in quotas or QuotaEntity(u, DEFAULT) in quotas:
            tags = (u, c)
        elif QuotaEntity(u) in quotas:
            tags = (u, "")
        elif QuotaEntity(DEFAULT, c) in quotas or QuotaEntity(DEFAULT, DEFAULT) in quotas:
            tags = (u, c)
        elif QuotaEntity(DEFAULT) in quotas:
            tags = (u, "")
        else:
            tags = ("", c)
        return tags, self._limit(quotas, tags)

    @staticmethod
    def _limit(quotas: Mapping[QuotaEntity, float], tags: Tags) -> float | None:
        user, client_id = tags
        order: tuple[QuotaEntity, ...]
        if user and client_id:
            order = (
                QuotaEntity(user, client_id),
                QuotaEntity(user, DEFAULT),
                QuotaEntity(DEFAULT, client_id),
                QuotaEntity(DEFAULT, DEFAULT),
            )
        elif user:
            order = (QuotaEntity(user), QuotaEntity(DEFAULT))
        elif client_id:
            order = (QuotaEntity(client_id=client_id), QuotaEntity(client_id=DEFAULT))
        else:
            return None
        for entity in order:
            if entity in quotas:
                return quotas[entity]
        return None
