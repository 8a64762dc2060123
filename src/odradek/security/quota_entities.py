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
IP entities (connection_creation_rate) and controller_mutation_rate are refused: not built.
"""

from __future__ import annotations

import enum
import math
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
#: The quota keys odradek enforces and whether Kafka types each as a whole number (LONG) or a DOUBLE.
QUOTA_KEYS: Final = {PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True, REQUEST_PERCENTAGE: False}
#: Kafka's other client quota keys, refused with the reason.
REFUSED_KEYS: Final = {
    "controller_mutation_rate": "controller mutation quotas (KIP-599) are not built in odradek",
    "connection_creation_rate": "connection_creation_rate is an IP quota, and IP quotas are not built",
}


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
    """A user, a client id, or both; None means the part is absent."""

    user: Name | None = None
    client_id: Name | None = None

    def parts(self) -> list[tuple[str, str | None]]:
        """The entity as the wire names it: (entity type, name or None for the default)."""
        named = []
        if self.user is not None:
            named.append((USER, wire_name(self.user)))
        if self.client_id is not None:
            named.append((CLIENT_ID, wire_name(self.client_id)))
        return named

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
        raise QuotaRequestError(REFUSED_KEYS["connection_creation_rate"])
    return QuotaEntity(found.get(USER), found.get(CLIENT_ID))


def checked_value(key: str, value: float) -> float:
    """A quota value to store, checked as Kafka checks it (whole numbers for the byte rates); zero or
    negative quotas are refused (a rate bound of zero has no meaning to throttle against)."""
    if key in REFUSED_KEYS:
        raise QuotaRequestError(f"Invalid configuration key {key}: {REFUSED_KEYS[key]}")
    whole = QUOTA_KEYS.get(key)
    if whole is None:
        raise QuotaRequestError(f"Invalid configuration key {key}")
    if math.isnan(value) or math.isinf(value) or value <= 0:
        raise QuotaRequestError(f"Configuration {key} must be a positive value, not {value}")
    if whole:
        epsilon = 1e-6
        rounded = int(value + epsilon)
        if abs(rounded - value) > epsilon:
            raise QuotaRequestError(f"Configuration {key} must be a LONG value")
        return float(rounded)
    return value


def config_string(key: str, value: float) -> str:
    """A quota value as Kafka writes it in ZooKeeper: LONG keys as integers, DOUBLE ones as Java does."""
    return str(int(value)) if QUOTA_KEYS.get(key) else repr(float(value))


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
    """(config type, entity name) of the entity's znode: users/<u>, users/<u>/clients/<c>, clients/<c>."""
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
    return None


def quota_values(config: Mapping[str, str], where: str) -> dict[str, float]:
    """The quota keys of an entity's config (SCRAM credentials and other keys are not ours)."""
    values = {}
    for key in QUOTA_KEYS:
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

    def set(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Replace the entity's quotas with `values` (empty: the entity has none left)."""
        if values:
            self.by_entity[entity] = dict(values)
        else:
            self.by_entity.pop(entity, None)
        for key, entities in self._by_key.items():
            if key in values:
                entities[entity] = values[key]
            else:
                entities.pop(entity, None)

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
