"""Each client library's settings for one way of connecting (security protocol, SASL mechanism, user,
client certificate), as its users write them; and a produce-then-consume round trip with each."""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import dataclass
from typing import Any

from tests.support.security import SecureBroker


@dataclass(frozen=True)
class Access:
    listener: str
    protocol: str
    mechanism: str | None = None
    user: str | None = None
    password: str | None = None
    client_certificate: bool = False
    trust_ca: bool = True

    def __str__(self) -> str:
        return "-".join(str(part) for part in (self.listener, self.mechanism, self.user) if part)


def kafka_python_settings(broker: SecureBroker, access: Access) -> dict[str, Any]:
    certs = broker.certificates
    settings: dict[str, Any] = {"bootstrap_servers": broker.bootstrap(access.listener)}
    settings["security_protocol"] = access.protocol
    if "SSL" in access.protocol:
        settings["ssl_cafile"] = str(certs.ca_file) if access.trust_ca else None
        settings["ssl_check_hostname"] = True
    if access.client_certificate:
        settings["ssl_certfile"], settings["ssl_keyfile"] = str(certs.client_cert), str(certs.client_key)
    if access.mechanism:
        settings["sasl_mechanism"] = access.mechanism
        settings["sasl_plain_username"], settings["sasl_plain_password"] = access.user, access.password
    return settings


def librdkafka_settings(broker: SecureBroker, access: Access) -> dict[str, str]:
    """confluent-kafka's and kcat's (-X) settings."""
    certs = broker.certificates
    settings = {"bootstrap.servers": broker.bootstrap(access.listener), "security.protocol": access.protocol}
    if "SSL" in access.protocol and access.trust_ca:
        settings["ssl.ca.location"] = str(certs.ca_file)
    if access.client_certificate:
        settings["ssl.certificate.location"] = str(certs.client_cert)
        settings["ssl.key.location"] = str(certs.client_key)
    if access.mechanism:
        settings["sasl.mechanism"] = access.mechanism
        settings["sasl.username"], settings["sasl.password"] = str(access.user), str(access.password)
    return settings


def aiokafka_settings(broker: SecureBroker, access: Access) -> dict[str, Any]:
    from aiokafka.helpers import create_ssl_context

    certs = broker.certificates
    settings: dict[str, Any] = {
        "bootstrap_servers": broker.bootstrap(access.listener),
        "security_protocol": access.protocol,
    }
    if "SSL" in access.protocol:
        settings["ssl_context"] = create_ssl_context(
            cafile=str(certs.ca_file) if access.trust_ca else None,
            certfile=str(certs.client_cert) if access.client_certificate else None,
            keyfile=str(certs.client_key) if access.client_certificate else None,
        )
    if access.mechanism:
        settings["sasl_mechanism"] = access.mechanism
        settings["sasl_plain_username"], settings["sasl_plain_password"] = access.user, access.password
    return settings


# ----- round trips: produce `values` to `topic`, then read them back from the beginning -------------


def kafka_python_round_trip(
    broker: SecureBroker, access: Access, topic: str, values: list[bytes]
) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    settings = kafka_python_settings(broker, access)
    producer = KafkaProducer(**settings)
    for value in values:
        producer.send(topic, value)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        topic, auto_offset_reset="earliest", consumer_timeout_ms=3000, fetch_max_wait_ms=50, **settings
    )
    try:
        return [message.value for message in consumer][: len(values)]
    finally:
        consumer.close()


def confluent_round_trip(
    broker: SecureBroker, access: Access, topic: str, values: list[bytes]
) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    settings = librdkafka_settings(broker, access)
    producer = Producer(settings)
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(15) == 0
    consumer = Consumer({**settings, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    received: list[bytes] = []
    try:
        for _ in range(200):
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                received.append(message.value())
            if len(received) == len(values):
                break
    finally:
        consumer.close()
    return received


def aiokafka_round_trip(broker: SecureBroker, access: Access, topic: str, values: list[bytes]) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**aiokafka_settings(broker, access))
        await producer.start()
        try:
            for value in values:
                await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **aiokafka_settings(broker, access))
        await consumer.start()
        received: list[bytes] = []
        try:
            while len(received) < len(values):
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=200), 15)
                received += [record.value for records in batch.values() for record in records if record.value]
        finally:
            await consumer.stop()
        return received

    return asyncio.run(run())


def kcat(
    broker: SecureBroker, access: Access, *args: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    settings = librdkafka_settings(broker, access)
    command = ["kcat", "-b", settings.pop("bootstrap.servers")]
    for name, value in settings.items():
        command += ["-X", f"{name}={value}"]
    return subprocess.run([*command, *args], input=stdin, capture_output=True, timeout=30, check=False)


def kcat_round_trip(broker: SecureBroker, access: Access, topic: str, values: list[bytes]) -> list[bytes]:
    produced = kcat(broker, access, "-P", "-t", topic, stdin=b"\n".join(values) + b"\n")
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = kcat(broker, access, "-C", "-t", topic, "-o", "beginning", "-e", "-X", "fetch.wait.max.ms=20")
    assert consumed.returncode == 0, consumed.stderr.decode()
    return consumed.stdout.splitlines()
