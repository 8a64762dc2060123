"""Property round-trips of every message the codec knows, at every version.

For each (message, version): `decode(encode(m)) == m` for generated messages `m`, and the bytes are
canonical: `encode(decode(b)) == b`. Requests, responses, both headers and the other schemas
(ConsumerProtocolSubscription, snapshot records, ...) are all covered; values span each field's full
range, strings any unicode, nullable fields are sometimes null, tagged fields sometimes set, and
flexible versions carry unknown tagged fields that must survive in tag order.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.codec import decode_body, encoder_for
from odradek.protocol.schema import Message

from .schema_strategies import ALL_CASES, case_id, message_strategy

#: ~750 cases: a handful of examples each keeps this file well under a minute. Set
#: ODRADEK_PROPERTY_EXAMPLES=500 for a deep run.
EXAMPLES_PER_VERSION = int(os.environ.get("ODRADEK_PROPERTY_EXAMPLES", "6"))


@pytest.mark.parametrize(("cls", "version"), ALL_CASES, ids=[case_id(c) for c in ALL_CASES])
@settings(
    max_examples=EXAMPLES_PER_VERSION,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_round_trip(cls: type[Message], version: int, data: Any) -> None:
    message = data.draw(message_strategy(cls, version), label="message")
    encoded = message.encode(version)
    decoded = cls.decode(encoded, version)
    assert decoded == message
    assert decoded.encode(version) == encoded


@pytest.mark.parametrize(("cls", "version"), ALL_CASES, ids=[case_id(c) for c in ALL_CASES])
def test_defaults_round_trip(cls: type[Message], version: int) -> None:
    """A message built with no arguments encodes, and decodes back to itself."""
    message = cls()
    encoded = encoder_for(cls, version)(message)
    assert decode_body(cls, encoded, version) == message
