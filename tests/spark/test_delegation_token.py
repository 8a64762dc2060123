"""The `odradek` source and sink logging in with a delegation token (KIP-48): the token's id and HMAC
in `kafka.sasl.jaas.config` with `tokenauth="true"` (ScramLoginModule), as Spark's Kafka connector takes
them. librdkafka's SCRAM sends no extensions, so every connection of a token login goes through
odradek's own client (SCRAM with `tokenauth=true`): offsets, batch and streaming reads, the sink at
least once and exactly once. The token's owner's ACLs apply; an expired token is refused at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from odradek.client.two_phase_commit import open_transactions
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.expire_delegation_token import ExpireDelegationTokenRequest
from odradek.security.acl import AclOperation, AclPermissionType, ResourceType
from odradek.spark import raw_read
from odradek.spark.options import parse_sink_options, parse_source_options
from odradek.spark.ranges import OffsetRange
from tests.spark.kafka_helpers import consume_all, produce
from tests.support.acls import grant
from tests.support.delegation_tokens import create_token, scram_login, token_password
from tests.support.raw_client import RawClient
from tests.support.security import SCRAM_USERS, SecureBroker, start_secure_broker
from tests.support.txn_reader import read_committed_values

TOKEN_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="{}" password="{}" tokenauth="true";'
)
OWNER = next(iter(SCRAM_USERS))
SECRET_TOPIC = "tok-secret"


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """ACLs on: the PLAINTEXT listener (anonymous) is a super user for the test's own checks; the token's
    owner may do anything but read or describe SECRET_TOPIC (a topic with no ACL is open to all)."""
    extra = {
        "num.partitions": "3",
        "delegation.token.secret.key": "odradek-spark-token-secret",
        "transaction.two.phase.commit.enable": "true",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        "super.users": "User:ANONYMOUS",
    }
    broker = start_secure_broker(tmp_path_factory.mktemp("spark-odradek-token"), extra)
    try:
        with RawClient(broker.ports["PLAINTEXT"]) as admin:
            grant(
                admin,
                f"User:{OWNER}",
                ResourceType.TOPIC,
                SECRET_TOPIC,
                AclOperation.READ,
                AclOperation.DESCRIBE,
                permission=AclPermissionType.DENY,
            )
        yield broker
    finally:
        broker.process.stop()


def _new_token(broker: SecureBroker) -> Any:
    user, password = OWNER, SCRAM_USERS[OWNER]
    with RawClient(broker.ports["SASL_PLAINTEXT"]) as client:
        assert scram_login(client, "SCRAM-SHA-512", user, password).error_code == 0
        created: Any = create_token(client)
    assert created.error_code == ErrorCode.NONE, created
    return created


def _options(broker: SecureBroker, token: Any, listener: str = "SASL_PLAINTEXT") -> dict[str, str]:
    options = {
        "kafka.bootstrap.servers": broker.bootstrap(listener),
        "kafka.security.protocol": listener,
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": TOKEN_JAAS.format(token.token_id, token_password(token.hmac)),
    }
    if listener == "SASL_SSL":
        options["kafka.ssl.truststore.type"] = "PEM"
        options["kafka.ssl.truststore.location"] = str(broker.certificates.ca_file)
    return options


@pytest.fixture(scope="module")
def token(secure_broker: SecureBroker) -> Any:
    return _new_token(secure_broker)


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_the_odradek_source_reads_batch_and_streaming_with_a_token(
    spark: Any, secure_broker: SecureBroker, token: Any, listener: str, checkpoint: str
) -> None:
    topic = f"tok-read-{listener.lower()}"
    plaintext = secure_broker.bootstrap("PLAINTEXT")
    produce(plaintext, topic, 90)
    options = _options(secure_broker, token, listener)
    frame = spark.read.format("odradek").options(**options).option("subscribe", topic).load()
    assert sorted(r.value.decode() for r in frame.select("value").collect()) == sorted(
        f"v{i}" for i in range(90)
    )
    query = (
        spark.readStream.format("odradek")
        .options(**options)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(f"token_stream_{listener.lower()}")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert query.exception() is None, query.exception()
    streamed = spark.sql(f"SELECT value FROM token_stream_{listener.lower()}").collect()
    assert sorted(r.value for r in streamed) == sorted(f"v{i}" for i in range(90))


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_the_odradek_sink_writes_at_least_once_and_exactly_once_with_a_token(
    spark: Any, secure_broker: SecureBroker, token: Any, listener: str
) -> None:
    plaintext = secure_broker.bootstrap("PLAINTEXT")
    options = _options(secure_broker, token, listener)
    once_topic, exactly_topic = f"tok-write-{listener.lower()}", f"tok-eos-{listener.lower()}"
    frame = spark.range(120).selectExpr("concat('k', id) AS key", "concat('w', id) AS value").repartition(3)
    frame.write.format("odradek").options(**options).option("topic", once_topic).mode("append").save()
    landed = consume_all(plaintext, once_topic)
    assert sorted((m.value or b"").decode() for m in landed) == sorted(f"w{i}" for i in range(120))

    prefix = f"tok-eos-query-{listener.lower()}"
    (
        frame.write.format("odradek")
        .options(**options)
        .option("topic", exactly_topic)
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", prefix)
        .option("batchId", "0")
        .mode("append")
        .save()
    )
    values = read_committed_values(plaintext, exactly_topic, 3)
    assert sorted(v for part in values.values() for v in part) == sorted(f"w{i}".encode() for i in range(120))
    assert not [t for t in open_transactions(plaintext) if t.startswith(prefix)]


def test_the_token_owners_acls_apply_to_the_source(
    spark: Any, secure_broker: SecureBroker, token: Any
) -> None:
    produce(secure_broker.bootstrap("PLAINTEXT"), SECRET_TOPIC, 3)
    options = _options(secure_broker, token)
    for strategy, value in (("subscribe", SECRET_TOPIC), ("assign", f'{{"{SECRET_TOPIC}": [0]}}')):
        with pytest.raises(Exception, match="TOPIC_AUTHORIZATION_FAILED"):
            spark.read.format("odradek").options(**options).option(strategy, value).load().collect()


def test_the_token_owners_acls_apply_to_the_sink(spark: Any, secure_broker: SecureBroker, token: Any) -> None:
    options = _options(secure_broker, token)
    frame = spark.range(3).selectExpr("concat('x', id) AS value")
    with RawClient(secure_broker.ports["PLAINTEXT"]) as admin:
        grant(
            admin,
            f"User:{OWNER}",
            ResourceType.TOPIC,
            "tok-no-write",
            AclOperation.WRITE,
            permission=AclPermissionType.DENY,
        )
    with pytest.raises(Exception, match="TOPIC_AUTHORIZATION_FAILED"):
        frame.write.format("odradek").options(**options).option("topic", "tok-no-write").mode("append").save()


def test_an_expired_token_is_refused_at_once_naming_the_token_login(
    spark: Any, secure_broker: SecureBroker
) -> None:
    expired = _new_token(secure_broker)
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as owner:
        assert scram_login(owner, "SCRAM-SHA-512", OWNER, SCRAM_USERS[OWNER]).error_code == 0
        answer: Any = owner.request(
            ExpireDelegationTokenRequest(hmac=expired.hmac, expiry_time_period_ms=-1), 2
        )
    assert answer.error_code == ErrorCode.NONE, answer
    produce(secure_broker.bootstrap("PLAINTEXT"), "tok-expired", 3)
    options = _options(secure_broker, expired)
    login = f"login with delegation token {expired.token_id} refused"
    started = time.monotonic()
    with pytest.raises(Exception, match=login):
        spark.read.format("odradek").options(**options).option("subscribe", "tok-expired").load().collect()
    frame = spark.range(3).selectExpr("concat('x', id) AS value")
    with pytest.raises(Exception, match=login):
        frame.write.format("odradek").options(**options).option("topic", "tok-expired").mode("append").save()
    with pytest.raises(Exception, match=login):
        (
            frame.write.format("odradek")
            .options(**options)
            .option("topic", "tok-expired")
            .option("exactlyOnce", "true")
            .option("transactionalIdPrefix", "tok-expired-query")
            .mode("append")
            .save()
        )
    assert time.monotonic() - started < 60, "a refused token must not be retried until a timeout"


TOKEN_OPTIONS = {
    "kafka.bootstrap.servers": "127.0.0.1:9",
    "kafka.security.protocol": "SASL_PLAINTEXT",
    "kafka.sasl.mechanism": "SCRAM-SHA-256",
    "kafka.sasl.jaas.config": TOKEN_JAAS.format("tok1", "aG1hYw=="),
}


def test_a_token_login_is_read_into_odradeks_clients_credentials() -> None:
    options = parse_source_options({**TOKEN_OPTIONS, "subscribe": "t"}, streaming=False)
    assert options.token_login
    assert options.kafka_params["sasl.username"] == "tok1"
    assert "sasl.jaas.config" not in options.kafka_params
    assert parse_sink_options({**TOKEN_OPTIONS, "topic": "t"}).token_login
    scram_user = {**TOKEN_OPTIONS, "kafka.sasl.jaas.config": TOKEN_JAAS.replace("true", "false")}
    assert not parse_sink_options({**scram_user, "topic": "t"}).token_login


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"kafka.fetch.max.bytes": "1000"}, "fetch.max.bytes not supported with a delegation token"),
        ({"kafka.ssl.crl.location": "/x"}, "ssl.crl.location not supported with a delegation token"),
        ({"reader": "consumer"}, "reader=consumer"),
        ({"kafka.sasl.mechanism": "PLAIN"}, "does not serve sasl.mechanism PLAIN"),
        ({"kafka.security.protocol": "SSL"}, "a delegation token logs in with SASL"),
    ],
)
def test_a_token_login_refuses_what_odradeks_client_would_not_honour(
    extra: dict[str, str], message: str
) -> None:
    """With a token every connection is odradek's client's: a setting only librdkafka reads would be
    ignored, so it is refused when the query starts."""
    with pytest.raises(ValueError, match=message):
        parse_source_options({**TOKEN_OPTIONS, "subscribe": "t", **extra}, streaming=False)


def test_a_token_login_with_acks_refused_for_the_sink() -> None:
    with pytest.raises(ValueError, match="acks not supported with a delegation token"):
        parse_sink_options({**TOKEN_OPTIONS, "topic": "t", "kafka.acks": "1"})


def test_a_tokens_read_that_waited_out_its_poll_timeout_is_not_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TimeoutError is an OSError: the token's read took it for a dropped connection and waited out
    kafkaConsumer.pollTimeoutMs ten times over before failing."""
    calls: list[int] = []

    def never_arrives(*args: object) -> Iterator[tuple[object, int]]:
        calls.append(1)
        raise TimeoutError("Cannot fetch record for offset 0 in 1 milliseconds")
        yield  # a generator, as the real one

    monkeypatch.setattr(raw_read, "_fetch_range", never_arrives)
    options = parse_source_options({**TOKEN_OPTIONS, "subscribe": "t"}, streaming=False)
    with pytest.raises(TimeoutError, match="Cannot fetch record"):
        list(raw_read.read_range_raw(OffsetRange("t", 0, 0, 5), options))
    assert len(calls) == 1
