"""/config/<type>/<name> and the /config/changes notifications, as Kafka 3.9 writes them
(ConfigEntityZNode and ConfigEntityChangeNotificationSequenceZNode in kafka/zk/ZkData.scala).

```
/config/topics/T, /config/brokers/1, /config/brokers/<default>: {"version":1,"config":{"k":"v"}}
/config/changes/config_change_0000000007: {"version":2,"entity_path":"topics/T"}
```
Config values are always strings. Version 1 notifications (`entity_type` + `entity_name`), from
Kafka before 1.1, are still read, as Kafka reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.cluster.zookeeper.znode_json import (
    MalformedZnodeError,
    as_str,
    decode_object,
    encode,
    int_field,
    naming,
    shown,
    str_field,
)

log = logging.getLogger(__name__)

ENTITY_CONFIG_VERSION = 1
CONFIG_CHANGE_VERSION = 2


@dataclass(frozen=True, slots=True)
class EntityConfigZnode:
    """The dynamic config overrides of one entity (topic, broker, client, user, ip)."""

    config: Mapping[str, str] = field(default_factory=dict)

    def serialize(self) -> bytes:
        return encode({"version": ENTITY_CONFIG_VERSION, "config": dict(self.config)})

    @classmethod
    def parse(cls, data: bytes | None, path: str) -> EntityConfigZnode:
        """As Kafka's ConfigEntityZNode.decode: no data (an intermediate znode's), data that is not a
        JSON object, or a `config` that is not one, is no overrides (logged without the data: these
        znodes may hold credentials); a value that is not a string is refused, as Kafka throws there."""
        if not data:
            return cls()
        try:
            config_json = decode_object(data, path).get("config")
            readable = config_json is None or isinstance(config_json, dict)
        except MalformedZnodeError:
            config_json, readable = None, False
        if not readable:
            log.warning("%s holds no JSON object with a config object: read as no overrides, as Kafka", path)
        if not isinstance(config_json, dict):
            return cls()
        return cls({name: as_str(value, naming(path, "config", name)) for name, value in config_json.items()})


@dataclass(frozen=True, slots=True)
class ConfigChangeNotification:
    """A notification that an entity's config changed: `entity_path` is `<type>/<name>`
    (`topics/T`, `brokers/<default>`, `users/U/clients/C`)."""

    entity_path: str

    @property
    def entity_type(self) -> str:
        return self.entity_path.partition("/")[0]

    @property
    def entity_name(self) -> str:
        return self.entity_path.partition("/")[2]

    def serialize(self) -> bytes:
        return encode({"version": CONFIG_CHANGE_VERSION, "entity_path": self.entity_path})

    @classmethod
    def parse(cls, data: bytes | None, path: str) -> ConfigChangeNotification:
        obj = decode_object(data, path)
        version = int_field(obj, "version", path)
        if version == 1:
            return cls(f"{str_field(obj, 'entity_type', path)}/{str_field(obj, 'entity_name', path)}")
        if version == CONFIG_CHANGE_VERSION:
            entity_path = str_field(obj, "entity_path", path)
            if "/" not in entity_path:
                named = shown(entity_path, path)
                raise MalformedZnodeError(f"{path} has entity_path {named}, not <type>/<name>")
            return cls(entity_path)
        raise MalformedZnodeError(f"{path} has unsupported notification version {version} (1 and 2 are)")
