"""Byte parity with kafka-python 3.0.12, an independent implementation, at every shared (api, version).

For each (message, version) both codecs define, generated messages go both ways:

- ours -> bytes -> kafka-python decodes -> kafka-python re-encodes: identical bytes, same values;
- kafka-python -> bytes -> ours decodes -> ours re-encodes: identical bytes, same values.

What kafka-python lacks or does differently, and how this module treats it:

- APIs it does not define at all (controller/KRaft and ZooKeeper inter-broker APIs, delegation
  tokens, share groups, streams groups, the new consumer-group protocol, telemetry, Envelope,
  FetchSnapshot, ...): not compared; `test_known_gaps_in_kafka_python` pins the list, so a
  kafka-python upgrade that adds one fails loudly and can be folded in.
- Versions below the `validVersions` of its (Kafka 4.x) JSON files, e.g. Produce v0-2, Fetch v0-3,
  OffsetCommit v0-1: its files no longer carry the fields only those versions had, so it cannot
  encode them. Only its declared versions are compared.
- Unknown tagged fields: kafka-python keeps them when decoding but drops them when encoding, so the
  generated messages carry none here (our own round-trip test covers them).
- ApiVersionsResponse with a non-zero error code: kafka-python deliberately decodes such a body as v0
  (what a broker sends when it does not support the requested version), so the error code is pinned to
  0 here; the v0 fallback itself belongs to the client, not to the codec.
- Representations (zero UUID as None, authorized operations as a set of bits, an unset tagged struct as
  None) are mapped by `kafka_python_oracle`, not skipped.

Two kafka-python bugs are worked around, not skipped (no byte difference comes from them): a decoded
message cannot be re-encoded (it is built without `__init__`, and `encode()` reads the missing
`_header` slot), and `encode(version=...)` on a response that has a header fails (it sets
`request_api_version` on the response header). No (api, version) is skipped for a codec difference:
at every shared version the bytes agree.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.messages.api_versions import ApiVersionsResponse
from odradek.protocol.messages.request_header import RequestHeader
from odradek.protocol.messages.response_header import ResponseHeader
from odradek.protocol.schema import Message

from .kafka_python_oracle import (
    decode_header_with_kafka_python,
    decode_with_kafka_python,
    encode_header_with_kafka_python,
    encode_with_kafka_python,
    from_kafka_python,
    missing_from_kafka_python,
    shared_cases,
    to_kafka_python,
)
from .schema_strategies import case_id, message_strategy

CASES = shared_cases()
EXAMPLES_PER_VERSION = int(os.environ.get("ODRADEK_PROPERTY_EXAMPLES", "5"))

#: APIs kafka-python 3.0.12 does not define (requests and responses alike).
KAFKA_PYTHON_LACKS = {
    "AddRaftVoter",
    "AllocateProducerIds",
    "AlterPartition",
    "AlterShareGroupOffsets",
    "AssignReplicasToDirs",
    "BeginQuorumEpoch",
    "BrokerHeartbeat",
    "BrokerRegistration",
    "ConsumerGroupDescribe",
    "ConsumerGroupHeartbeat",
    "ControlledShutdown",
    "ControllerRegistration",
    "CreateDelegationToken",
    "DeleteShareGroupOffsets",
    "DeleteShareGroupState",
    "DescribeDelegationToken",
    "DescribeShareGroupOffsets",
    "EndQuorumEpoch",
    "Envelope",
    "ExpireDelegationToken",
    "FetchSnapshot",
    "GetTelemetrySubscriptions",
    "InitializeShareGroupState",
    "LeaderAndIsr",
    "PushTelemetry",
    "ReadShareGroupState",
    "ReadShareGroupStateSummary",
    "RemoveRaftVoter",
    "RenewDelegationToken",
    "ShareAcknowledge",
    "ShareFetch",
    "ShareGroupDescribe",
    "ShareGroupHeartbeat",
    "StopReplica",
    "StreamsGroupDescribe",
    "StreamsGroupHeartbeat",
    "UnregisterBroker",
    "UpdateMetadata",
    "UpdateRaftVoter",
    "Vote",
    "WriteShareGroupState",
}


def _comparable(message: Any) -> Any:
    """Pin what kafka-python reads differently on purpose (see the module docstring)."""
    if isinstance(message, ApiVersionsResponse):
        message.error_code = 0
    return message


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[case_id(c) for c in CASES])
@settings(
    max_examples=EXAMPLES_PER_VERSION,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_parity(cls: type[Message], version: int, data: Any) -> None:
    message = _comparable(data.draw(message_strategy(cls, version, unknown_tags=False), label="message"))

    # ours -> kafka-python -> bytes
    ours_bytes = message.encode(version)
    theirs = decode_with_kafka_python(cls, ours_bytes, version)
    assert from_kafka_python(cls, theirs, version) == message
    assert encode_with_kafka_python(cls, theirs, version) == ours_bytes

    # kafka-python -> ours -> bytes
    their_bytes = encode_with_kafka_python(cls, to_kafka_python(message, version), version)
    decoded = cls.decode(their_bytes, version)
    assert decoded == message
    assert decoded.encode(version) == their_bytes


def test_parity_covers_enough() -> None:
    """The shared ground is large (every classic client API), so a broken oracle cannot pass quietly."""
    assert len(CASES) > 400
    assert {cls.__name__ for cls, _ in CASES} >= {"ProduceRequest", "FetchResponse", "MetadataResponse"}


def test_known_gaps_in_kafka_python() -> None:
    lacking = {name.removesuffix("Request").removesuffix("Response") for name in missing_from_kafka_python()}
    assert lacking == KAFKA_PYTHON_LACKS


@pytest.mark.parametrize("flexible", [False, True])
@settings(max_examples=25, deadline=None, database=None)
@given(
    api_key=st.integers(-(2**15), 2**15 - 1),
    api_version=st.integers(-(2**15), 2**15 - 1),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    client_id=st.none() | st.text(max_size=20),
)
def test_request_header_parity(
    flexible: bool, api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> None:
    version = 2 if flexible else 1
    values = {
        "request_api_key": api_key,
        "request_api_version": api_version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    ours = RequestHeader(**values).encode(version)
    assert encode_header_with_kafka_python("request", values, flexible) == ours
    theirs = decode_header_with_kafka_python("request", ours, flexible)
    assert {name: getattr(theirs, name) for name in values} == values
    assert RequestHeader.decode(ours, version) == RequestHeader(**values)


@pytest.mark.parametrize("flexible", [False, True])
@settings(max_examples=25, deadline=None, database=None)
@given(correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_response_header_parity(flexible: bool, correlation_id: int) -> None:
    version = 1 if flexible else 0
    ours = ResponseHeader(correlation_id=correlation_id).encode(version)
    assert encode_header_with_kafka_python("response", {"correlation_id": correlation_id}, flexible) == ours
    assert decode_header_with_kafka_python("response", ours, flexible).correlation_id == correlation_id
