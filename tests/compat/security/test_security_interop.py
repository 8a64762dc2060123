"""kafka-python, confluent-kafka, aiokafka and kcat connect over SSL, mutual TLS, SASL_PLAINTEXT (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512) and SASL_SSL, and produce and consume (Fetch over TLS is buffered)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.requirements import require_executable
from tests.support.security import PLAIN_USERS, SCRAM_USERS, SecureBroker
from tests.support.security_clients import (
    Access,
    aiokafka_round_trip,
    confluent_round_trip,
    kafka_python_round_trip,
    kcat_round_trip,
)

pytestmark = pytest.mark.timeout(120)

ALICE, CAROL = PLAIN_USERS["alice"], SCRAM_USERS["carol"]
ACCESSES = [
    Access("SSL", "SSL"),
    Access("MTLS", "SSL", client_certificate=True),
    Access("SASL_PLAINTEXT", "SASL_PLAINTEXT", "PLAIN", "alice", ALICE),
    Access("SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-256", "carol", CAROL),
    Access("SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-512", "carol", CAROL),
    Access("SASL_SSL", "SASL_SSL", "PLAIN", "alice", ALICE),
    Access("SASL_SSL", "SASL_SSL", "SCRAM-SHA-512", "carol", CAROL),
]
RoundTrip = Callable[[SecureBroker, Access, str, list[bytes]], list[bytes]]
CLIENTS: dict[str, RoundTrip] = {
    "kafka-python": kafka_python_round_trip,
    "confluent-kafka": confluent_round_trip,
    "aiokafka": aiokafka_round_trip,
    "kcat": kcat_round_trip,
}


@pytest.mark.parametrize("access", ACCESSES, ids=str)
@pytest.mark.parametrize("client", list(CLIENTS))
def test_produce_and_consume(secure_broker: SecureBroker, client: str, access: Access) -> None:
    if client == "kcat":
        require_executable("kcat")
    topic = f"secure-{client}-{access}".replace("_", "-").lower()
    values = [f"{client} over {access} #{i}".encode() for i in range(5)]
    assert CLIENTS[client](secure_broker, access, topic, values) == values
