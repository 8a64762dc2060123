"""Certificates (made with trustme) and a broker with one listener of each security protocol, for the
TLS and SASL tests. The PLAINTEXT listener stays for set-up (creating SCRAM users) and health checks."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import trustme

from odradek.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialUpsertion,
)
from odradek.security.scram_credentials import MECHANISMS, salted_password
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import RawClient

PLAIN_USERS = {"alice": "alice-secret", "admin": "admin-secret"}
SCRAM_USERS = {"carol": "carol-secret"}
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    + " ".join(f'user_{name}="{password}"' for name, password in PLAIN_USERS.items())
    + ";"
)
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "MTLS")


@dataclass
class Certificates:
    """A CA, the broker's certificate for 127.0.0.1/localhost, and a client certificate, as PEM files."""

    directory: Path
    ca: trustme.CA = field(default_factory=trustme.CA)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        server = self.server = self.ca.issue_cert("127.0.0.1", "localhost")
        client = self.ca.issue_cert(
            "client@example.com", common_name="client-app", organization_name="Example"
        )
        self.ca_file = self.directory / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        self.broker_keystore = self.directory / "broker.pem"
        server.private_key_and_cert_chain_pem.write_to_path(str(self.broker_keystore))
        self.client_cert = self.directory / "client-cert.pem"
        self.client_key = self.directory / "client-key.pem"
        self.client_keystore = self.directory / "client.pem"
        client.cert_chain_pems[0].write_to_path(str(self.client_cert))
        client.private_key_pem.write_to_path(str(self.client_key))
        client.private_key_and_cert_chain_pem.write_to_path(str(self.client_keystore))
        os.chmod(self.broker_keystore, 0o600)


@dataclass
class SecureBroker:
    process: BrokerProcess
    ports: dict[str, int]
    certificates: Certificates

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


def start_secure_broker(
    directory: Path, extra: dict[str, str] | None = None, store_type: str = "PEM"
) -> SecureBroker:
    """The broker's key and trust stores are PEM files, or JKS/PKCS12 stores made with keytool."""
    certificates = Certificates(directory / "certs")
    stores = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certificates.broker_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certificates.ca_file),
    }
    if store_type != "PEM":
        from tests.support.java_stores import key_store, trust_store

        folder = certificates.directory
        stores = {
            "ssl.keystore.type": store_type,
            "ssl.keystore.location": str(
                key_store(certificates.server, folder / "broker.ks", store_type, "keystore-pw")
            ),
            "ssl.keystore.password": "keystore-pw",
            "ssl.truststore.type": store_type,
            "ssl.truststore.location": str(
                trust_store(certificates.ca, folder / "trust.ks", store_type, "truststore-pw")
            ),
            "ssl.truststore.password": "truststore-pw",
        }
    ports = {name: free_port() for name in LISTENERS}
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    settings = {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
        "SASL_SSL:SASL_SSL,MTLS:SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        "offsets.topic.num.partitions": "1",
        **stores,
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/U",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "50",
        **(extra or {}),
    }
    process = BrokerProcess(directory / "data", settings, port=ports["PLAINTEXT"]).start()
    for user, password in SCRAM_USERS.items():
        add_scram_user(ports["PLAINTEXT"], user, password)
    return SecureBroker(process, ports, certificates)


def scram_upsertions(user: str, password: str, iterations: int = 4096) -> list[ScramCredentialUpsertion]:
    """`user`'s credentials for every SCRAM mechanism, each with a fresh salt."""
    upsertions = []
    for mechanism, (wire_type, _) in MECHANISMS.items():
        salt = os.urandom(24)
        upsertions.append(
            ScramCredentialUpsertion(
                name=user,
                mechanism=wire_type,
                iterations=iterations,
                salt=salt,
                salted_password=salted_password(mechanism, password, salt, iterations),
            )
        )
    return upsertions


def add_scram_user(port: int, user: str, password: str, iterations: int = 4096) -> None:
    upsertions = scram_upsertions(user, password, iterations)
    with RawClient(port) as client:
        response = client.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=upsertions), 0)
    assert [result.error_code for result in response.results] == [0], response
