"""What a request costs against its client's quotas, and the throttle time its response carries.

Called by the connection around each request, only while some client quota is configured
(`ClientQuotas.active`). As Kafka's KafkaApis: a Produce records the request's size on the producer
quota, a consumer's Fetch its response's record bytes on the consumer quota (and asks for no more than
one quota window may carry), every request its handling time on the request quota; the longest of the
throttle times is the answer's throttle_time_ms and how long the connection stays muted.

A consumer's Fetch is checked by the handler once it has read (`ConsumerFetchQuota`, as Kafka's
handleFetchRequest): over either quota, it is answered with no records and its bytes are taken back
off the rate, since the client did not get them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final

from odradek.partition.purgatory import delayed_seconds
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages.fetch import FetchRequest, FetchResponse
from odradek.security.client_quotas import ClientQuotas, now_ms

#: Requests between brokers (Kafka's ClusterAction APIs) and the SASL exchange: never throttled.
EXEMPT: Final = frozenset(
    {
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.WRITE_TXN_MARKERS,
        ApiKey.ALTER_PARTITION,
        ApiKey.ALLOCATE_PRODUCER_IDS,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
    }
)
#: Kafka's NanosToPercentagePerSecond: one second of handling is 100 %.
_PERCENT_PER_SECOND: Final = 100.0


@dataclass(slots=True)
class ConsumerFetchQuota:
    """The quota check of one consumer Fetch, called by its handler with the record bytes it read."""

    quotas: ClientQuotas
    user: str
    client_id: str
    #: When handling began (time.perf_counter()), for the request quota.
    started: float
    #: The throttle time the check gave; None until the handler has called it.
    throttle_ms: int | None = None

    def __call__(self, record_bytes: int) -> int:
        quotas, user, client_id = self.quotas, self.user, self.client_id
        now = now_ms()
        throttle = 0
        if quotas.request.enabled:
            handling = time.perf_counter() - self.started - delayed_seconds.get()
            percent = max(handling, 0.0) * _PERCENT_PER_SECOND
            throttle = quotas.request.record_and_throttle_ms(user, client_id, percent, now)
        if quotas.fetch.enabled:
            throttle = max(throttle, quotas.fetch.record_and_throttle_ms(user, client_id, record_bytes, now))
            if throttle > 0:  # answered empty (by either quota): the bytes were not taken
                quotas.fetch.unrecord(user, client_id, record_bytes, now)
        self.throttle_ms = throttle
        return throttle


def before_handling(
    quotas: ClientQuotas, api_key: int, version: int, request: Any, user: str, client_id: str
) -> ConsumerFetchQuota | None:
    """For a consumer's fetch: cap it at what one quota window allows (KafkaApis.handleFetchRequest)
    and return the check its handler makes once it has read."""
    if api_key != ApiKey.FETCH or not isinstance(request, FetchRequest) or _from_follower(request, version):
        return None
    if quotas.fetch.enabled:
        most = quotas.fetch.max_value_in_window(user, client_id)
        if most is not None:
            request.max_bytes = min(request.max_bytes, max(int(most), 1))
    return ConsumerFetchQuota(quotas, user, client_id, time.perf_counter())


def throttle_time_ms(
    quotas: ClientQuotas,
    api_key: int,
    version: int,
    request: Any,
    response: Any,
    request_size: int,
    handling_seconds: float,
    user: str,
    client_id: str,
    fetch_quota: ConsumerFetchQuota | None = None,
) -> int:
    """Record this request on its client's quotas; the throttle time (0: none) is also written into the
    response's throttle_time_ms."""
    if api_key in EXEMPT or (api_key == ApiKey.FETCH and _from_follower(request, version)):
        return 0
    if fetch_quota is not None and fetch_quota.throttle_ms is not None:
        return fetch_quota.throttle_ms  # recorded, and put in the answer, by the fetch handler
    now = now_ms()
    throttle = 0
    if api_key == ApiKey.PRODUCE and quotas.produce.enabled:
        throttle = quotas.produce.record_and_throttle_ms(user, client_id, request_size, now)
    elif api_key == ApiKey.FETCH and quotas.fetch.enabled and isinstance(response, FetchResponse):
        throttle = quotas.fetch.record_and_throttle_ms(user, client_id, _record_bytes(response), now)
    acks_zero = api_key == ApiKey.PRODUCE and response is None
    if quotas.request.enabled and not acks_zero:  # Kafka exempts acks=0 from the request quota
        percent = max(handling_seconds, 0.0) * _PERCENT_PER_SECOND
        throttle = max(throttle, quotas.request.record_and_throttle_ms(user, client_id, percent, now))
    if throttle > 0 and response is not None and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle)
    return throttle


def _from_follower(request: Any, version: int) -> bool:
    if not isinstance(request, FetchRequest):
        return False
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    return bool(replica_id >= 0)


def _record_bytes(response: FetchResponse) -> int:
    total = 0
    for topic in response.responses:
        for partition in topic.partitions:
            records = partition.records
            if records is not None:
                total += len(records)
    return total
