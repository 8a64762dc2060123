"""The client instances of KIP-714 and what they push (Kafka's ClientMetricsManager); the subscriptions
and what an instance matches of them are `subscription_set.py`'s, an instance's own rules `instance.py`'s.

A client asks for its subscription (GetTelemetrySubscriptions) with the zero instance id and is given
one; the broker keeps an instance per id with the union of the metrics of every subscription it matches
and their shortest interval, under a subscription id (a CRC32C of both, XORed with the instance id's
hash, as Kafka's). A subscription change is given at the client's next request, whatever its interval.
Pushes (PushTelemetry) are checked in Kafka's order: a terminated instance, too early, an outdated
subscription id, an unknown codec, too large; then decoded and kept as the instance's latest points.
A client asks for its subscription at most once an interval (THROTTLING_QUOTA_EXCEEDED), except
right after a push refused UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE (as Kafka 4.4).

Bounds, so a hostile client cannot make the broker hold more: at most `max_instances` instances (the
least recently seen dropped first, Kafka's 16384), each dropped once it has not been heard from for
three push intervals or a minute, whichever is longer (as Kafka); at most `max_points_per_instance`
points of one push kept, and `max_points` over every instance (the points of the instance that pushed
least recently are dropped to make room), and as many bytes (`max_instance_bytes` for the instances'
client ids and the like, `max_point_bytes` for the points); a push inflated past `max_inflated_bytes`
is refused.
An instance is also forgotten when the connection it was made on closes (as Kafka 4.4's disconnect
listener): a client that pushed its terminating metrics and closed leaves nothing behind.
"""

from __future__ import annotations

import base64
import uuid
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.telemetry.instance import NO_CONNECTION, ClientInstance, point_size
from odradek.telemetry.otlp import MetricPoint, TelemetryDecodeError, decode
from odradek.telemetry.subscription_set import SubscriptionSet
from odradek.telemetry.subscriptions import ClientAttributes

#: The codecs a client may push in, in Kafka's order of preference: zstd, lz4, gzip, snappy.
ACCEPTED_COMPRESSION_TYPES: Final = (4, 3, 1, 2)
MAX_INSTANCES: Final = 16384
MAX_POINTS: Final = 100_000
MAX_POINTS_PER_INSTANCE: Final = 2_000
MAX_INFLATED_BYTES: Final = 16 * 1024 * 1024
#: What the instances' attributes (a client id may be 32 KiB) and the kept points may hold in all.
MAX_INSTANCE_BYTES: Final = 64 * 1024 * 1024
MAX_POINT_BYTES: Final = 64 * 1024 * 1024
_ZERO: Final = uuid.UUID(int=0)
#: After these answers to its push a client asks for its subscription again at once (Kafka 4.4).
_ASK_AGAIN_AT_ONCE: Final = frozenset(
    {ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE}
)
#: Kafka's reserved ids (Uuid.RESERVED): the zero id and the metadata topic's.
_RESERVED: Final = frozenset({_ZERO, uuid.UUID(int=1)})


@dataclass(frozen=True, slots=True)
class Push:
    client_instance_id: uuid.UUID
    subscription_id: int
    terminating: bool
    compression_type: int
    metrics: bytes


@dataclass(frozen=True, slots=True)
class SubscriptionAnswer:
    client_instance_id: uuid.UUID
    subscription_id: int
    requested_metrics: list[str]
    push_interval_ms: int
    telemetry_max_bytes: int
    accepted_compression_types: list[int]


class ClientMetricsManager:
    def __init__(
        self,
        telemetry_max_bytes: int,
        *,
        max_instances: int = MAX_INSTANCES,
        max_points: int = MAX_POINTS,
        max_points_per_instance: int = MAX_POINTS_PER_INSTANCE,
        max_inflated_bytes: int = MAX_INFLATED_BYTES,
        max_instance_bytes: int = MAX_INSTANCE_BYTES,
        max_point_bytes: int = MAX_POINT_BYTES,
    ) -> None:
        self.telemetry_max_bytes = telemetry_max_bytes
        self._max_instances = max_instances
        self._max_points = max_points
        self._max_points_per_instance = max_points_per_instance
        self._max_inflated_bytes = max_inflated_bytes
        self._max_instance_bytes = max_instance_bytes
        self._max_point_bytes = max_point_bytes
        self._subscriptions = SubscriptionSet()
        #: least recently seen first
        self._instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        #: the instances made on each open connection
        self._by_connection: dict[int, set[uuid.UUID]] = {}
        #: requests refused, by error (Kafka's throttle and unknown-subscription sensors, and more)
        self.refusals: Counter[ErrorCode] = Counter()
        self.point_count = 0
        self.point_bytes = 0
        self.instance_bytes = 0

    # ----- subscriptions (CLIENT_METRICS config resources) ------------------------------------------

    def update_subscription(self, name: str, configs: Mapping[str, str]) -> None:
        """Set a subscription (validated as Kafka's; KafkaError if not valid); no configs removes it."""
        self._subscriptions.update(name, configs)

    def subscription_names(self) -> list[str]:
        return self._subscriptions.names()

    def subscription_configs(self, name: str) -> dict[str, str]:
        """What a subscription was set with (empty for one that does not exist)."""
        return self._subscriptions.configs(name)

    # ----- the two requests ------------------------------------------------------------------------

    def get_subscriptions(
        self,
        client_instance_id: uuid.UUID,
        client: ClientAttributes,
        now_ms: int,
        *,
        connection_id: int = NO_CONNECTION,
    ) -> SubscriptionAnswer:
        if client_instance_id == _ZERO:
            client_instance_id = self._new_instance_id()
        instance = self._instance(client_instance_id, client, now_ms, connection_id)
        if not instance.take_get(now_ms) and instance.last_error not in _ASK_AGAIN_AT_ONCE:
            self.refusals[ErrorCode.THROTTLING_QUOTA_EXCEEDED] += 1
            raise KafkaError(
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"Request from the client [{client_instance_id}] arrived before the next push interval time",
            )
        instance.last_error = ErrorCode.NONE
        return SubscriptionAnswer(
            client_instance_id=client_instance_id,
            subscription_id=instance.subscription_id,
            requested_metrics=list(instance.metrics),
            push_interval_ms=instance.push_interval_ms,
            telemetry_max_bytes=self.telemetry_max_bytes,
            accepted_compression_types=list(ACCEPTED_COMPRESSION_TYPES),
        )

    def push(
        self, push: Push, client: ClientAttributes, now_ms: int, *, connection_id: int = NO_CONNECTION
    ) -> None:
        """Check a push as Kafka does and keep its points; KafkaError with Kafka's code otherwise."""
        self.accept(push, client, now_ms, connection_id=connection_id)
        if push.metrics:
            try:
                points = self.decode(push)
            except KafkaError as error:
                self.refused(push.client_instance_id, error)
                raise
            self.keep(push.client_instance_id, points)

    def accept(
        self, push: Push, client: ClientAttributes, now_ms: int, *, connection_id: int = NO_CONNECTION
    ) -> None:
        """Kafka's checks of a push, in its order (KafkaError with its code); the payload is not read."""
        instance_id = push.client_instance_id
        if instance_id in _RESERVED:
            self.refusals[ErrorCode.INVALID_REQUEST] += 1
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid request from the client [{instance_id}], invalid client instance id",
            )
        instance = self._instance(instance_id, client, now_ms, connection_id)
        try:
            self._check(push, instance, now_ms)
        except KafkaError as error:
            instance.last_error = error.error_code
            self.refusals[ErrorCode(error.error_code)] += 1
            raise
        finally:
            instance.terminating = instance.terminating or push.terminating
        instance.last_error = ErrorCode.NONE

    def decode(self, push: Push) -> tuple[MetricPoint, ...]:
        """The points of an accepted push (KafkaError INVALID_RECORD if unreadable, as Kafka answers a
        receiver plugin's failure). Touches no state: the broker runs it in a worker thread."""
        try:
            points = decode(
                push.metrics, push.compression_type, self._max_inflated_bytes, self._max_points_per_instance
            )
        except TelemetryDecodeError as error:
            raise KafkaError(ErrorCode.INVALID_RECORD, str(error)) from None
        return tuple(points)

    def refused(self, client_instance_id: uuid.UUID, error: KafkaError) -> None:
        """An accepted push whose payload could not be read (INVALID_RECORD), as Kafka records it."""
        self.refusals[ErrorCode(error.error_code)] += 1
        instance = self._instances.get(client_instance_id)
        if instance is not None:
            instance.last_error = error.error_code

    def keep(self, client_instance_id: uuid.UUID, points: tuple[MetricPoint, ...]) -> None:
        """Make `points` the instance's latest (nothing if it has gone meanwhile)."""
        instance = self._instances.get(client_instance_id)
        if instance is not None:
            self._keep(instance, points)

    # ----- what the metrics endpoint and the console read ---------------------------------------------

    def instance(self, client_instance_id: uuid.UUID) -> ClientInstance | None:
        return self._instances.get(client_instance_id)

    def instances(self) -> list[ClientInstance]:
        return list(self._instances.values())

    def connection_closed(self, connection_id: int) -> None:
        """Forget the instances made on a connection that has closed (Kafka's disconnect listener)."""
        for instance_id in self._by_connection.pop(connection_id, set()):
            self._drop(instance_id)

    def connections(self) -> int:
        """How many open connections have instances here."""
        return len(self._by_connection)

    def expire(self, now_ms: int) -> None:
        """Forget the instances not heard from for three push intervals or a minute."""
        for instance in [i for i in self._instances.values() if now_ms >= i.expires_at_ms]:
            self._drop(instance.client_instance_id)

    # ----- helpers ---------------------------------------------------------------------------------

    def _check(self, push: Push, instance: ClientInstance, now_ms: int) -> None:
        if instance.terminating:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Client [{push.client_instance_id}] sent the previous request with state terminating to "
                "TRUE, can not accept any requests after that",
            )
        if not instance.take_push(now_ms) and not push.terminating:
            raise KafkaError(
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"Request from the client [{push.client_instance_id}] arrived before the next push "
                "interval time",
            )
        if push.subscription_id != instance.subscription_id:
            raise KafkaError(
                ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
                f"Unknown client subscription id for the client [{push.client_instance_id}]",
            )
        if not 0 <= push.compression_type <= 4:
            raise KafkaError(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                f"Unknown compression type [{push.compression_type}] is received in telemetry request "
                f"from [{push.client_instance_id}]",
            )
        if len(push.metrics) > self.telemetry_max_bytes:
            raise KafkaError(
                ErrorCode.TELEMETRY_TOO_LARGE,
                f"Telemetry request from [{push.client_instance_id}] is larger than the maximum allowed "
                f"size [{self.telemetry_max_bytes}]",
            )

    def _instance(
        self, instance_id: uuid.UUID, client: ClientAttributes, now_ms: int, connection_id: int
    ) -> ClientInstance:
        """The cached instance, evaluated again if the subscriptions changed since; a new one if none.
        A new or re-evaluated instance belongs to the connection it came on (as Kafka's)."""
        instance = self._instances.get(instance_id)
        if instance is None or instance.version != self._subscriptions.version:
            evaluated = self._evaluate(instance_id, client if instance is None else instance.client)
            if instance is not None:
                self.instance_bytes -= instance.size
                evaluated.points = instance.points  # kept until its next push
                self._forget_connection(instance)
            evaluated.connection_id = connection_id
            if connection_id != NO_CONNECTION:
                self._by_connection.setdefault(connection_id, set()).add(instance_id)
            instance = evaluated
            self._instances[instance_id] = instance
            self.instance_bytes += instance.size
        self._instances.move_to_end(instance_id)
        instance.last_seen_ms = now_ms
        while len(self._instances) > 1 and (
            len(self._instances) > self._max_instances or self.instance_bytes > self._max_instance_bytes
        ):
            self._drop(next(iter(self._instances)))  # the least recently seen, never this one
        return instance

    def _evaluate(self, instance_id: uuid.UUID, client: ClientAttributes) -> ClientInstance:
        matched = self._subscriptions.match(instance_id, client)
        return ClientInstance(
            client_instance_id=instance_id,
            client=matched.client,
            subscription_id=matched.subscription_id,
            version=self._subscriptions.version,
            metrics=matched.metrics,
            push_interval_ms=matched.push_interval_ms,
        )

    def _keep(self, instance: ClientInstance, points: tuple[MetricPoint, ...]) -> None:
        kept, size = [], 0
        for point in points:  # a push bigger than the whole bound keeps what fits
            size += point_size(point)
            if size > self._max_point_bytes:
                break
            kept.append(point)
        self._forget_points(instance)
        instance.points = tuple(kept)
        self.point_count += len(kept)
        self.point_bytes += size if len(kept) == len(points) else sum(map(point_size, kept))
        # the least recently seen instances give up their points first; never the one just pushed
        for other in list(self._instances.values()):
            if self.point_count <= self._max_points and self.point_bytes <= self._max_point_bytes:
                break
            if other is not instance:
                self._forget_points(other)

    def _forget_points(self, instance: ClientInstance) -> None:
        self.point_count -= len(instance.points)
        self.point_bytes -= sum(map(point_size, instance.points))
        instance.points = ()

    def _drop(self, instance_id: uuid.UUID) -> None:
        instance = self._instances.pop(instance_id, None)
        if instance is not None:
            self._forget_points(instance)
            self._forget_connection(instance)
            self.instance_bytes -= instance.size

    def _forget_connection(self, instance: ClientInstance) -> None:
        made_there = self._by_connection.get(instance.connection_id)
        if made_there is not None:
            made_there.discard(instance.client_instance_id)
            if not made_there:
                del self._by_connection[instance.connection_id]

    def _new_instance_id(self) -> uuid.UUID:
        while True:
            candidate = uuid.uuid4()
            # as Kafka's Uuid.randomUuid: never reserved, never one whose base64 form starts with '-'
            text = base64.urlsafe_b64encode(candidate.bytes)
            if candidate not in _RESERVED and candidate not in self._instances and not text.startswith(b"-"):
                return candidate
