"""Property round-trips of every message the codec knows, at every version.

For each (message, version): `decode(encode(m)) == m` for generated messages `m`, and the bytes are
canonical: `encode(decode(b)) == b`. Requests, responses, both headers and the other schemas
(ConsumerProtocolSubscription, snapshot records, ...) are all covered; values span each field's full
range, strings any unicode, nullable fields are sometimes null, tagged fields sometimes set, and
flexible versions carry unknown tagged fields that must survive in tag order.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.codec import decode_body, encoder_for
from odradek.protocol.messages.fetch import FetchRequest, ReplicaState
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


def test_tagged_fields_are_written_in_tag_order() -> None:
    """Known (0: cluster_id, 1: replica_state) and unknown (2, 7) tagged fields interleave by tag."""
    message = FetchRequest(cluster_id="c", replica_state=ReplicaState(replica_id=3, replica_epoch=4))
    message.unknown_tagged_fields = {7: b"\x07", 2: b"\x02\x02"}
    replica_state = struct.pack(">iq", 3, 4) + b"\x00"
    section = bytes([4, 0, 2, 2]) + b"c" + bytes([1, len(replica_state)]) + replica_state
    section += bytes([2, 2, 2, 2, 7, 1, 7])
    encoded = message.encode(15)
    assert encoded.endswith(section)
    assert FetchRequest.decode(encoded, 15) == message


def test_unknown_tagged_fields_read_out_of_order_are_written_in_order() -> None:
    plain = FetchRequest().encode(15)
    assert plain.endswith(b"\x00")  # no tagged fields
    wire = plain[:-1] + bytes([2, 9, 1, 0xAA, 3, 0])  # tag 9 before tag 3
    decoded = FetchRequest.decode(wire, 15)
    assert decoded.unknown_tagged_fields == {9: b"\xaa", 3: b""}
    assert decoded.encode(15) == plain[:-1] + bytes([2, 3, 0, 9, 1, 0xAA])
