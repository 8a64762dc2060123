"""A mixed cluster's secured side (issue #27): beside each broker's PLAINTEXT listener a SASL_PLAINTEXT
listener with SCRAM-SHA-256 and SCRAM-SHA-512, Kafka's ACL authorizer on every broker of both kinds, and
the PLAINTEXT principal (User:ANONYMOUS, also the brokers' own: they talk over PLAINTEXT) a super user;
and a raw client that logs in with SCRAM on one chosen broker, so that every answer is that broker's.
"""

from __future__ import annotations

from collections.abc import Mapping

from odradek.client.security import authenticate, client_security
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.schema import Request
from tests.support.ports import free_port
from tests.support.raw_client import RawClient

SASL_LISTENER = "SASL_PLAINTEXT"
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
#: The versions the raw client speaks: SaslHandshake v1 (then SaslAuthenticate frames), SaslAuthenticate v2.
_SASL_VERSIONS = {17: 1, 36: 2}


class SaslListeners:
    """The SASL_PLAINTEXT port of each broker (node -> (host, port)), chosen before any broker starts."""

    def __init__(self, hosts: Mapping[int, str]) -> None:
        self.addresses = {node: (host, free_port()) for node, host in hosts.items()}

    def settings(self, node: int, plaintext_port: int) -> dict[str, str]:
        """Broker `node`'s listeners and security settings, the same for both kinds."""
        host, sasl_port = self.addresses[node]
        listeners = f"PLAINTEXT://{host}:{plaintext_port},{SASL_LISTENER}://{host}:{sasl_port}"
        login = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        return {
            "listeners": listeners,
            "advertised.listeners": listeners,
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": ",".join(MECHANISMS),
            **{
                f"listener.name.{SASL_LISTENER.lower()}.{mechanism.lower()}.sasl.jaas.config": login
                for mechanism in MECHANISMS
            },
            "authorizer.class.name": AUTHORIZER,
            "super.users": "User:ANONYMOUS",
        }


def scram_client(
    address: tuple[str, int],
    user: str,
    password: str,
    mechanism: str = "SCRAM-SHA-512",
    client_id: str | None = None,
) -> RawClient:
    """A raw client logged in as `user` on the SASL listener at `address`; raises
    odradek.client.security.ClientSecurityError (with Kafka's error code) when the broker refuses."""
    host, port = address
    client = RawClient(port, timeout=15, client_id=client_id or f"{user}-client", host=host)
    security = client_security(
        {
            "security.protocol": SASL_LISTENER,
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
        }
    )

    def exchange(request: Request) -> object:
        return client.request(request, _SASL_VERSIONS[request.API_KEY])

    try:
        authenticate(exchange, security)
    except BaseException:
        client.close()
        raise
    return client


def produce(client: RawClient, topic: str, partition: int, batch: bytes) -> tuple[int, int]:
    """One Produce v9 (acks=1) of `batch`: the partition's error code and the throttle time asked."""
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=10_000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)]
            )
        ],
    )
    response = client.request(request, 9)
    answer = response.responses[0].partition_responses[0]
    return answer.error_code, response.throttle_time_ms
