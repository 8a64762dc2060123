"""The SASL exchange on the wire, with odradek's own codec: only ApiVersions and the SASL APIs before
authentication, v0 raw tokens, Kafka's error codes, the failure delay, KIP-368 session lifetimes, and
the SCRAM administration APIs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.handlers._common.registry import REGISTRY
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.frames import encode_request
from odradek.protocol.messages import REQUESTS
from odradek.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from odradek.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import RawClient
from tests.support.security import PLAIN_USERS, SecureBroker

pytestmark = pytest.mark.timeout(60)
SASL_APIS = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
ALICE = f"\0alice\0{PLAIN_USERS['alice']}".encode()


def _topic_exists(port: int, name: str) -> bool:
    with RawClient(port) as client:
        request = MetadataRequest(topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False)
        (topic,) = client.request(request, 12).topics
    return bool(topic.error_code == ErrorCode.NONE)


def _read_until_closed(client: RawClient, timeout: float = 5.0) -> bytes:
    received = bytearray()
    client.sock.settimeout(timeout)
    try:
        while chunk := client.sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return bytes(received)


@pytest.mark.parametrize("api_key", sorted(set(range(0, 75)) - SASL_APIS))
def test_every_other_api_before_authentication_closes_the_connection_unanswered(
    secure_broker: SecureBroker, api_key: int
) -> None:
    registration = REGISTRY.get(api_key)
    version = registration.max_version if registration is not None else 0
    if api_key == ApiKey.CREATE_TOPICS:
        topic = CreatableTopic(name=f"preauth-{version}", num_partitions=1, replication_factor=1)
        frame = encode_request(CreateTopicsRequest(topics=[topic]), version, 7, "raw")
    elif api_key in REQUESTS and version in REQUESTS[api_key].VERSIONS:
        frame = encode_request(REQUESTS[api_key](), version, 7, "raw")
    else:  # not a request odradek knows: a bare header
        frame = (10).to_bytes(4, "big") + api_key.to_bytes(2, "big") + b"\0\0\0\0\0\x07\xff\xff"
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        client.send_bytes(frame)
        assert _read_until_closed(client) == b""  # closed, and nothing answered first
    if api_key == ApiKey.CREATE_TOPICS:
        assert not _topic_exists(secure_broker.ports["PLAINTEXT"], f"preauth-{version}")


def test_api_versions_is_answered_before_authentication(secure_broker: SecureBroker) -> None:
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        keys = {
            api.api_key
            for api in client.request(
                ApiVersionsRequest(client_software_name="odradek-tests", client_software_version="1.0"), 3
            ).api_keys
        }
    assert {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE} <= keys


def test_v1_handshake_then_authenticate_then_any_request(secure_broker: SecureBroker) -> None:
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        handshake = client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        assert handshake.error_code == ErrorCode.NONE
        assert handshake.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        result = client.request(SaslAuthenticateRequest(auth_bytes=ALICE), 2)
        assert (result.error_code, result.error_message, result.session_lifetime_ms) == (0, None, 0)
        (broker,) = client.request(MetadataRequest(topics=[]), 12).brokers
        # Metadata answers with the endpoint of the listener asked, as Kafka's does
        assert (broker.host, broker.port) == ("127.0.0.1", secure_broker.ports["SASL_PLAINTEXT"])


def test_frames_before_authentication_are_held_to_the_sasl_receive_size(secure_broker: SecureBroker) -> None:
    # sasl.server.max.receive.size (512 KiB): a larger declared frame closes before its body is read
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        client.send_bytes((524289).to_bytes(4, "big") + b"\0" * 64)
        assert _read_until_closed(client) == b""
    log = secure_broker.process.log_path.read_text()
    assert "declared request size 524289 (sasl.server.max.receive.size=524288)" in log


def test_v0_handshake_takes_raw_tokens(secure_broker: SecureBroker) -> None:
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        assert client.request(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == ErrorCode.NONE
        client.send_bytes(len(ALICE).to_bytes(4, "big") + ALICE)
        assert client.read_frame() == b""  # PLAIN's empty answer, as a raw frame
        assert client.request(MetadataRequest(topics=[]), 1).brokers
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        client.request(SaslHandshakeRequest(mechanism="PLAIN"), 0)
        client.send_bytes((13).to_bytes(4, "big") + b"\0alice\0wrong!")
        assert client.wait_closed()  # v0 cannot carry an error: Kafka closes


def test_failed_authentication_is_answered_after_the_delay_then_closed(secure_broker: SecureBroker) -> None:
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        started = time.monotonic()
        result = client.request(SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"), 2)
        assert time.monotonic() - started >= 0.05  # connection.failed.authentication.delay.ms=50
        assert result.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert result.error_message == "Authentication failed: Invalid username or password"
        assert client.wait_closed()


def test_sasl_state_errors(secure_broker: SecureBroker) -> None:
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        result = client.request(SaslAuthenticateRequest(auth_bytes=ALICE), 1)
        assert result.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert client.wait_closed()
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        result = client.request(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
        assert result.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert result.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert client.wait_closed()
    with RawClient(secure_broker.ports["PLAINTEXT"]) as client:  # no SASL on this listener
        assert (
            client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code
            == ErrorCode.ILLEGAL_SASL_STATE
        )
        assert (
            client.request(SaslAuthenticateRequest(auth_bytes=b""), 1).error_code
            == ErrorCode.ILLEGAL_SASL_STATE
        )
        assert client.request(MetadataRequest(topics=[]), 1).brokers


def test_scram_credentials_described_altered_and_refused_as_kafka(secure_broker: SecureBroker) -> None:
    port = secure_broker.ports["PLAINTEXT"]

    def upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> ScramCredentialUpsertion:
        return ScramCredentialUpsertion(
            name=name, mechanism=mechanism, iterations=iterations, salt=b"salt", salted_password=b"x" * 32
        )

    with RawClient(port) as client:
        request = AlterUserScramCredentialsRequest(
            deletions=[ScramCredentialDeletion(name="ghost", mechanism=1)],
            upsertions=[
                upsert("dave"),
                upsert("dave", 2, 8192),
                upsert("few", iterations=10),
                upsert("odd", 9),
            ],
        )
        results = {r.user: (r.error_code, r.error_message) for r in client.request(request, 0).results}
        assert results == {
            "ghost": (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            ),
            "dave": (ErrorCode.NONE, None),
            "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations: at least 4096"),
            "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        }
        duplicate = AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert("eve"), upsert("eve")])
        (result,) = client.request(duplicate, 0).results
        assert result.error_code == ErrorCode.DUPLICATE_RESOURCE
        asked = [UserName(name="dave"), UserName(name="nobody")]
        described = client.request(DescribeUserScramCredentialsRequest(users=asked), 0).results
        assert [(r.user, r.error_code) for r in described] == [
            ("dave", ErrorCode.NONE),
            ("nobody", ErrorCode.RESOURCE_NOT_FOUND),
        ]
        assert [(c.mechanism, c.iterations) for c in described[0].credential_infos] == [(1, 4096), (2, 8192)]
        everyone = client.request(DescribeUserScramCredentialsRequest(users=None), 0).results
        assert {"carol", "dave"} <= {r.user for r in everyone}
        removal = AlterUserScramCredentialsRequest(
            deletions=[
                ScramCredentialDeletion(name="dave", mechanism=1),
                ScramCredentialDeletion(name="dave", mechanism=2),
            ],
            upsertions=[],
        )
        assert [r.error_code for r in client.request(removal, 0).results] == [ErrorCode.NONE]


# ----- a broker of its own: a short session lifetime and a long failure delay --------------------------

SESSIONS_LOG: list[Path] = []


@pytest.fixture(scope="module")
def short_sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    """The ports of a broker whose sessions last 1.5 s; its log is at SESSIONS_LOG[0]."""
    ports = {"PLAINTEXT": free_port(), "SASL_PLAINTEXT": free_port()}
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    directory: Path = tmp_path_factory.mktemp("sessions")
    settings = {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        "offsets.topic.num.partitions": "1",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
        ),
        "connections.max.reauth.ms": "1500",
        "connection.failed.authentication.delay.ms": "1000",
    }
    process = BrokerProcess(directory / "data", settings, port=ports["PLAINTEXT"]).start()
    SESSIONS_LOG[:] = [process.log_path]
    try:
        yield ports
    finally:
        process.stop()


def _authenticate(client: RawClient, token: bytes = ALICE) -> object:
    client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    return client.request(SaslAuthenticateRequest(auth_bytes=token), 1)


def test_session_lifetime_reauthentication_and_expiry(short_sessions: dict[str, int]) -> None:
    with RawClient(short_sessions["SASL_PLAINTEXT"]) as client:
        assert _authenticate(client).session_lifetime_ms == 1500
        time.sleep(1.0)
        result = _authenticate(client)  # KIP-368: re-authenticate on the same connection
        assert (result.error_code, result.session_lifetime_ms) == (0, 1500)
        time.sleep(1.0)  # 2s since the first authentication: only the re-authentication keeps it open
        assert client.request(MetadataRequest(topics=[]), 1).brokers
        time.sleep(1.6)
        client.send(MetadataRequest(topics=[]), 1)
        assert client.wait_closed()  # the session ended: Kafka closes the connection


def test_failure_delay_holds_only_the_failing_connection(short_sessions: dict[str, int]) -> None:
    answered: list[float] = []

    def fail() -> None:
        with RawClient(short_sessions["SASL_PLAINTEXT"]) as client:
            started = time.monotonic()
            _authenticate(client, b"\0alice\0wrong")
            answered.append(time.monotonic() - started)

    failing = threading.Thread(target=fail)
    failing.start()
    time.sleep(0.1)
    with RawClient(short_sessions["SASL_PLAINTEXT"]) as other:
        started = time.monotonic()
        assert _authenticate(other).error_code == ErrorCode.NONE
        assert other.request(MetadataRequest(topics=[]), 1).brokers
        assert time.monotonic() - started < 0.5
    failing.join()
    assert answered and answered[0] >= 1.0


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_clients_reauthenticate_before_their_session_ends(
    short_sessions: dict[str, int], client: str
) -> None:
    # sessions last 1.5 s here: a producer that keeps its connection for 4 s must re-authenticate (KIP-368)
    bootstrap = f"127.0.0.1:{short_sessions['SASL_PLAINTEXT']}"
    topic = f"reauth-{client}"
    expired_before = SESSIONS_LOG[0].read_text().count("after its SASL session expired")
    if client == "kafka-python":
        from kafka import KafkaProducer

        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="alice-secret",
        )
        for second in range(4):
            producer.send(topic, f"{second}".encode()).get(timeout=10)
            time.sleep(1.0)
        producer.close()
    else:
        from confluent_kafka import Producer

        errors: list[object] = []
        confluent = Producer(
            {
                "bootstrap.servers": bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "alice",
                "sasl.password": "alice-secret",
                "error_cb": errors.append,
            }
        )
        for second in range(4):
            confluent.produce(topic, f"{second}".encode())
            assert confluent.flush(10) == 0
            time.sleep(1.0)
        assert errors == []
    with RawClient(short_sessions["PLAINTEXT"]) as raw:
        request = MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
        (described,) = raw.request(request, 12).topics
        assert described.error_code == ErrorCode.NONE
    # re-authenticated in time: the broker never had to close a connection whose session had ended
    assert SESSIONS_LOG[0].read_text().count("after its SASL session expired") == expired_before


def test_jaas_config_is_described_as_sensitive_without_its_value(short_sessions: dict[str, int]) -> None:
    from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource

    name = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    resource = DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=[name])
    with RawClient(short_sessions["PLAINTEXT"]) as client:
        (result,) = client.request(
            DescribeConfigsRequest(resources=[resource], include_synonyms=True), 3
        ).results
    (entry,) = result.configs
    assert (entry.name, entry.value, entry.is_sensitive) == (name, None, True)
    assert all(synonym.value is None for synonym in entry.synonyms)
    assert "alice-secret" not in SESSIONS_LOG[0].read_text()
