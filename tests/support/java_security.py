"""The Java suite's secured listeners: next to each broker's PLAINTEXT listener, a SASL_SSL listener
(SCRAM-SHA-512) and an SSL listener that requires a client certificate (mutual TLS), with Kafka's ACL
authorizer on and the PLAINTEXT principal (User:ANONYMOUS, also the brokers' own) a super user, so the
tests that use PLAINTEXT see what they saw without an authorizer.

The same settings go to odradek's targets and to Apache Kafka's reference brokers
(tests/support/kafka_reference.py); the stores are PKCS12 files both brokers and the Java clients read.
The tests learn where the listeners and stores are from `system_properties` (-D, as the PLAINTEXT
bootstrap), create their SCRAM users and ACLs themselves over PLAINTEXT (SecurityTest.java).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import trustme

from tests.support.java_stores import written_key_store, written_trust_store
from tests.support.ports import free_port

#: The listeners added to every broker, by name (each name is also its security protocol).
SECURED_LISTENERS = ("SASL_SSL", "SSL")
STORE_PASSWORD = "java-suite-secret"
#: The client certificate's subject: the mutual-TLS principal is its DN, as Java writes it (RFC 2253).
CLIENT_COMMON_NAME = "java-suite-client"
CLIENT_ORGANIZATION = "odradek"
CLIENT_UNIT = "compat"
TOKEN_SECRET_KEY = "java-suite-token-secret"


class JavaSecurity:
    """Certificates, PKCS12 stores and the secured listeners' ports of brokers at `hosts` (node -> host)."""

    def __init__(self, directory: Path, hosts: Mapping[int, str]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.hosts = dict(hosts)
        ca = trustme.CA()
        # One broker certificate for every host: the clients verify the host name (Kafka's default https).
        broker = ca.issue_cert(*sorted(set(self.hosts.values())), "localhost")
        client = ca.issue_cert(
            "java-suite-client@example.com",  # trustme needs a subject alternative name
            common_name=CLIENT_COMMON_NAME,
            organization_name=CLIENT_ORGANIZATION,
            organization_unit_name=CLIENT_UNIT,
        )
        self.trust_store = written_trust_store(ca, directory / "truststore.p12", STORE_PASSWORD)
        self.broker_key_store = written_key_store(broker, directory / "broker.p12", STORE_PASSWORD)
        self.client_key_store = written_key_store(client, directory / "client.p12", STORE_PASSWORD)
        self.ports = {node: {name: free_port() for name in SECURED_LISTENERS} for node in self.hosts}

    def bootstrap(self, listener: str) -> str:
        return ",".join(f"{self.hosts[node]}:{ports[listener]}" for node, ports in self.ports.items())

    def broker_settings(self, node: int, plaintext_port: int) -> dict[str, str]:
        """Broker `node`'s listeners (PLAINTEXT on `plaintext_port` first) and security settings."""
        host = self.hosts[node]
        listeners = ",".join(
            [f"PLAINTEXT://{host}:{plaintext_port}"]
            + [f"{name}://{host}:{port}" for name, port in self.ports[node].items()]
        )
        return {
            "listeners": listeners,
            "advertised.listeners": listeners,
            "inter.broker.listener.name": "PLAINTEXT",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(self.broker_key_store),
            "ssl.keystore.password": STORE_PASSWORD,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(self.trust_store),
            "ssl.truststore.password": STORE_PASSWORD,
            "listener.name.ssl.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
            # DelegationTokenTest's tokens: the same key on every broker
            "delegation.token.secret.key": TOKEN_SECRET_KEY,
        }

    def system_properties(self) -> list[str]:
        """The -D options that tell support/Target.java where the secured listeners and stores are."""
        return [
            f"-Dodradek.sasl.ssl.bootstrap={self.bootstrap('SASL_SSL')}",
            f"-Dodradek.ssl.bootstrap={self.bootstrap('SSL')}",
            f"-Dodradek.ssl.truststore={self.trust_store}",
            f"-Dodradek.ssl.keystore={self.client_key_store}",
            f"-Dodradek.ssl.password={STORE_PASSWORD}",
        ]
