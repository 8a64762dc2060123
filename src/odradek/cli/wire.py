"""What librdkafka cannot ask for, sent with odradek's own codec: the cluster-wide broker default, one
broker's log directories (librdkafka has no DescribeLogDirs; the console shows sizes with it), one
broker's groups (the console's ListGroups: librdkafka's fan-out waits on a broker that is down, and has
aborted the process when that broker came back), the transaction admin APIs (librdkafka has no
ListTransactions, DescribeTransactions, DescribeProducers nor WriteTxnMarkers: `odradek transactions`
sends them with `call`), and the client quota APIs (`odradek quotas`: librdkafka has no
DescribeClientQuotas nor AlterClientQuotas).

Kafka names the default of all brokers as the BROKER resource with an empty name; librdkafka refuses
an empty resource name (`ConfigResource(BROKER, "")` is "invalid"), so `configs --entity-default`
sends DescribeConfigs / IncrementalAlterConfigs itself, over a plain connection, at the highest
version both sides know (from ApiVersions). TLS and SASL follow the client settings
(wire_security.py).
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from odradek.cli.client import ClientConfig, split_host_port
from odradek.cli.config_rows import ConfigRow
from odradek.cli.errors import CliError
from odradek.cli.wire_security import authenticate, security_protocol, wrap_tls
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.frames import decode_response, encode_request
from odradek.protocol.messages import REQUESTS
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResult
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.list_groups import ListedGroup, ListGroupsRequest

BROKER_RESOURCE = 4
SET, DELETE = 0, 1
#: Kafka's ConfigSource ids as DescribeConfigs v1+ carries them.
SOURCES = {
    0: "UNKNOWN_CONFIG",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}
_SIZE = struct.Struct(">i")


def describe_broker_default(config: ClientConfig, timeout: float) -> list[ConfigRow]:
    with _Connection(config, timeout) as connection:
        request = DescribeConfigsRequest(
            resources=[
                DescribeConfigsResource(
                    resource_type=BROKER_RESOURCE, resource_name="", configuration_keys=None
                )
            ]
        )
        response = connection.call(request)
    [result] = response.results
    _check(result.error_code, result.error_message, "DescribeConfigs")
    return [
        ConfigRow(
            name=entry.name,
            value=entry.value,
            source=SOURCES.get(entry.config_source, "UNKNOWN_CONFIG"),
            read_only=entry.read_only,
            sensitive=entry.is_sensitive,
            is_default=entry.config_source == 5 or (entry.config_source < 0 and entry.is_default),
        )
        for entry in sorted(result.configs, key=lambda entry: entry.name)
    ]


def alter_broker_default(
    config: ClientConfig, timeout: float, to_set: dict[str, str], to_delete: list[str]
) -> None:
    operations = [AlterableConfig(name=k, config_operation=SET, value=v) for k, v in to_set.items()]
    operations += [AlterableConfig(name=k, config_operation=DELETE, value=None) for k in to_delete]
    resource = AlterConfigsResource(resource_type=BROKER_RESOURCE, resource_name="", configs=operations)
    with _Connection(config, timeout) as connection:
        response = connection.call(IncrementalAlterConfigsRequest(resources=[resource], validate_only=False))
    [result] = response.responses
    _check(result.error_code, result.error_message, "IncrementalAlterConfigs")


def describe_log_dirs(config: ClientConfig, broker: str, timeout: float) -> list[DescribeLogDirsResult]:
    """Every log directory of the broker at `broker` (host:port) with its partitions' sizes.

    DescribeLogDirs answers for the broker it is sent to, so this connects to that broker, not to the
    bootstrap servers; topics=None asks for every partition.
    """
    with _Connection({**config, "bootstrap.servers": broker}, timeout) as connection:
        response = connection.call(DescribeLogDirsRequest(topics=None))
    _check(getattr(response, "error_code", 0), None, "DescribeLogDirs")
    results: list[DescribeLogDirsResult] = response.results
    return results


def list_groups(config: ClientConfig, broker: str, timeout: float) -> list[ListedGroup]:
    """The groups the broker at `broker` (host:port) coordinates: ListGroups answers for its own."""
    what = "ListGroups is sent to each broker without librdkafka"
    with _Connection({**config, "bootstrap.servers": broker}, timeout, what) as connection:
        response = connection.call(ListGroupsRequest())
    _check(response.error_code, None, "ListGroups")
    groups: list[ListedGroup] = response.groups
    return groups


def call(config: ClientConfig, timeout: float, request: Any, what: str) -> Any:
    """One request to the first bootstrap server that answers, at the highest version both know."""
    with _Connection(config, timeout, what) as connection:
        return connection.call(request)


class _Connection:
    """One blocking connection to the first bootstrap server that answers."""

    def __init__(
        self,
        config: ClientConfig,
        timeout: float,
        what: str = "--entity-default is sent without librdkafka (which cannot name the broker default)",
    ) -> None:
        self.config = config
        self.protocol = security_protocol(config, what)
        self.bootstrap = str(config["bootstrap.servers"])
        self.timeout = timeout
        self.correlation_id = 0
        self.versions: dict[int, tuple[int, int]] = {}
        self.sock: socket.socket | None = None

    def __enter__(self) -> _Connection:
        last_error: OSError | None = None
        for server in self.bootstrap.split(","):
            host, port = split_host_port(server.strip())
            try:
                self.sock = socket.create_connection((host, port), timeout=self.timeout)
                break
            except OSError as error:
                last_error = error
        if self.sock is None:
            raise CliError(f"cannot reach broker at {self.bootstrap} ({last_error})")
        if self.protocol in ("ssl", "sasl_ssl"):
            self.sock = wrap_tls(self.sock, self.config, host)
        answer = self._exchange(ApiVersionsRequest(), 0)
        self.versions = {api.api_key: (api.min_version, api.max_version) for api in answer.api_keys}
        if self.protocol.startswith("sasl"):
            authenticate(self.call, self.config)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.sock is not None:
            self.sock.close()

    def call(self, request: Any) -> Any:
        api = ApiKey(request.API_KEY)
        ours = REQUESTS[api].VERSIONS
        theirs = self.versions.get(api)
        if theirs is None or max(ours.low, theirs[0]) > min(ours.high, theirs[1]):
            name = "".join(part.title() for part in api.name.split("_"))
            raise CliError(f"the broker at {self.bootstrap} does not support {name}")
        return self._exchange(request, min(ours.high, theirs[1]))

    def _exchange(self, request: Any, version: int) -> Any:
        assert self.sock is not None
        self.correlation_id += 1
        try:
            self.sock.sendall(encode_request(request, version, self.correlation_id, "odradek-cli"))
            (size,) = _SIZE.unpack(self._read(4))
            frame = self._read(size)
        except OSError as error:
            raise CliError(f"lost the connection to the broker at {self.bootstrap} ({error})") from None
        _, body = decode_response(frame, request.API_KEY, version)
        return body

    def _read(self, count: int) -> bytes:
        assert self.sock is not None
        chunks = bytearray()
        while len(chunks) < count:
            chunk = self.sock.recv(count - len(chunks))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            chunks += chunk
        return bytes(chunks)


def _check(code: int, message: str | None, api: str) -> None:
    if code:
        error = ErrorCode.for_code(code)
        detail = message or error.message.rstrip(".")
        raise CliError(f"{api} failed: {detail} ({error.name})", kafka_code=code)
