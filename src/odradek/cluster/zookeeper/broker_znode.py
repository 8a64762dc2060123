"""/brokers/ids/<id>: a broker's registration, as Kafka 3.9 writes it (BrokerIdZNode, version 5).

```
{"version":5,"host":"127.0.0.1","port":9092,"jmx_port":-1,"timestamp":"1700000000000",
 "endpoints":["PLAINTEXT://127.0.0.1:9092"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
 "rack":"r1","features":{}}
```
`host`/`port` are the first PLAINTEXT endpoint's, for old clients (null and -1 when there is none);
`rack` is left out when the broker has none. The znode is ephemeral and its czxid is the broker epoch.
Older versions are read too: 1 (host and port only), 2-3 (endpoints named after their protocol).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.znode_json import (
    JsonObject,
    MalformedZnodeError,
    as_int,
    as_long_string,
    as_object,
    as_str,
    as_str_list,
    decode_object,
    encode,
    int_field,
    naming,
    optional_str_field,
    required,
    shown,
    str_field,
)

BROKER_REGISTRATION_VERSION = 5
PLAINTEXT = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class ListenerEndpoint:
    """One advertised listener: `NAME://host:port` plus its security protocol."""

    listener_name: str
    host: str
    port: int
    security_protocol: str

    @property
    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host  # IPv6, as Kafka's formatAddress
        return f"{self.listener_name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class FeatureRange:
    """A supported feature's version range (`{"min_version":1,"max_version":3}`)."""

    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    endpoints: tuple[ListenerEndpoint, ...]
    timestamp_ms: int
    rack: str | None = None
    jmx_port: int = -1
    features: Mapping[str, FeatureRange] = field(default_factory=dict)

    def serialize(self) -> bytes:
        plaintext = next((e for e in self.endpoints if e.security_protocol == PLAINTEXT), None)
        registration: JsonObject = {
            "version": BROKER_REGISTRATION_VERSION,
            "host": plaintext.host if plaintext else None,
            "port": plaintext.port if plaintext else -1,
            "jmx_port": self.jmx_port,
            "timestamp": str(self.timestamp_ms),
            "endpoints": [endpoint.connection_string for endpoint in self.endpoints],
            "listener_security_protocol_map": {e.listener_name: e.security_protocol for e in self.endpoints},
            "features": {
                name: {"min_version": r.min_version, "max_version": r.max_version}
                for name, r in self.features.items()
            },
        }
        if self.rack is not None:
            registration["rack"] = self.rack
        return encode(registration)

    @classmethod
    def parse(cls, broker_id: int, data: bytes | None, path: str | None = None) -> BrokerRegistration:
        path = path or paths.broker(broker_id)
        obj = decode_object(data, path)
        version = int_field(obj, "version", path)
        if version < 1:
            raise MalformedZnodeError(f"{path} has unsupported registration version {version}")
        if version == 1:
            host, port = str_field(obj, "host", path), int_field(obj, "port", path)
            endpoints: tuple[ListenerEndpoint, ...] = (ListenerEndpoint(PLAINTEXT, host, port, PLAINTEXT),)
        else:
            endpoints = _parse_endpoints(obj, path)
        timestamp = obj.get("timestamp")
        return cls(
            broker_id=broker_id,
            endpoints=endpoints,
            timestamp_ms=-1 if timestamp is None else as_long_string(timestamp, f"{path} field 'timestamp'"),
            rack=optional_str_field(obj, "rack", path),
            jmx_port=int_field(obj, "jmx_port", path),
            features=_parse_features(obj.get("features"), path),
        )


def _parse_endpoints(obj: JsonObject, path: str) -> tuple[ListenerEndpoint, ...]:
    what = f"{path} field 'listener_security_protocol_map'"
    protocol_map_json = obj.get("listener_security_protocol_map")
    protocol_map = (
        None
        if protocol_map_json is None
        else {
            name: as_str(protocol, naming(path, "listener_security_protocol_map", name))
            for name, protocol in as_object(protocol_map_json, what).items()
        }
    )
    endpoints = []
    for text in as_str_list(required(obj, "endpoints", path), f"{path} field 'endpoints'"):
        listener_name, host, port = _parse_connection_string(text, path)
        # Before version 4 there was no map: a listener was named after its security protocol
        protocol = listener_name if protocol_map is None else protocol_map.get(listener_name)
        if protocol is None:
            endpoint = shown(text, path)
            raise MalformedZnodeError(f"{path}: endpoint {endpoint} has no security protocol in the map")
        endpoints.append(ListenerEndpoint(listener_name, host, port, protocol))
    return tuple(endpoints)


def _parse_connection_string(text: str, path: str) -> tuple[str, str, int]:
    listener_name, separator, address = text.partition("://")
    host, colon, port = address.rpartition(":")
    if not separator or not listener_name or not colon or not port.isdigit():
        raise MalformedZnodeError(f"{path}: endpoint {shown(text, path)} is not NAME://host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return listener_name, host, int(port)


def _parse_features(value: object, path: str) -> dict[str, FeatureRange]:
    if value is None:
        return {}
    features = {}
    for name, range_json in as_object(value, f"{path} field 'features'").items():
        what = naming(path, "feature", name)
        version_range = as_object(range_json, what)
        features[name] = FeatureRange(
            min_version=as_int(required(version_range, "min_version", what), f"{what} min_version"),
            max_version=as_int(required(version_range, "max_version", what), f"{what} max_version"),
        )
    return features
