"""The ``kafka.*`` options of a source or sink: the Kafka client settings they give (in librdkafka's
names), refused with the wording of Spark's connector where it refuses them, and a delegation token's
login (``tokenauth=true``), which goes through odradek's own client."""

from __future__ import annotations

from collections.abc import Mapping

from odradek.client.security import (
    SETTINGS,
    ClientSecurity,
    ClientSecurityError,
    client_security,
)
from odradek.spark.security import (
    librdkafka_security,
    take_token_login,
)

_AUTO_OFFSET_RESET_MESSAGE = (
    "Kafka option 'auto.offset.reset' is not supported.\n"
    "Instead set the source option 'startingoffsets' to 'earliest' or 'latest' to specify where to start. "
    "Structured Streaming manages which offsets are consumed internally, rather than relying on the "
    "kafkaConsumer to do it. This will ensure that no data is missed when new topics/partitions are "
    "dynamically subscribed. Note that 'startingoffsets' only applies when a new Streaming query is "
    "started, and that resuming will always pick up from where the query left off."
)


def kafka_client_settings(params: Mapping[str, str], *, for_producer: bool) -> tuple[dict[str, str], bool]:
    """The Kafka client settings in librdkafka's names, and whether the login is a delegation token's."""
    kafka = {key[len("kafka.") :]: value for key, value in params.items() if key.startswith("kafka.")}
    if for_producer:
        for name, what in (("key.serializer", "keys"), ("value.serializer", "values")):
            if name in kafka:
                raise ValueError(
                    f"Kafka option '{name}' is not supported as {what} are serialized with "
                    "ByteArraySerializer."
                )
    else:
        if "auto.offset.reset" in kafka:
            raise ValueError(_AUTO_OFFSET_RESET_MESSAGE)
        for name, what in (("key.deserializer", "keys"), ("value.deserializer", "values")):
            if name in kafka:
                raise ValueError(
                    f"Kafka option '{name}' is not supported as {what} are deserialized as byte arrays with "
                    f"ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the {what}."
                )
        for name in ("enable.auto.commit", "interceptor.classes"):
            if name in kafka:
                raise ValueError(f"Kafka option '{name}' is not supported")
    if "bootstrap.servers" not in kafka:
        role = "producer" if for_producer else "consumer"
        raise ValueError(f"Option 'kafka.bootstrap.servers' must be specified for configuring Kafka {role}")
    token_login = take_token_login(kafka)
    config = librdkafka_security(kafka)
    if token_login:
        _check_token_settings(config)
    return config, token_login


def _check_token_settings(config: Mapping[str, str]) -> None:
    """A token's login connects through odradek's own client only, which reads the connection's
    security settings and nothing else: any other Kafka option would be ignored, so it is refused."""
    unsupported = sorted(k for k in config if k not in SETTINGS and k != "bootstrap.servers")
    if unsupported:
        raise ValueError(
            f"Kafka option(s) {', '.join(unsupported)} not supported with a delegation token login "
            "(tokenauth=true): its connections go through odradek's own client, which reads "
            "bootstrap.servers, security.protocol, the TLS key and trust settings, "
            "ssl.endpoint.identification.algorithm, ssl.cipher.suites and sasl.mechanism"
        )
    try:
        client_security(config, token=True)
    except ClientSecurityError as error:
        raise ValueError(f"Delegation token login (tokenauth=true): {error}") from None


def token_security(params: Mapping[str, str]) -> ClientSecurity:
    """The connections' TLS and a token's SASL login for odradek's client (made where used: an SSL
    context does not travel to the executors)."""
    return client_security(params, token=True)
