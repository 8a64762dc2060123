"""Settings odradek cannot honour yet are refused, naming the setting; deprecated ones Kafka 3.x accepts
without effect are accepted the same way."""

from __future__ import annotations

import re

import pytest

from odradek.config import BROKER_CONFIGS, TOPIC_CONFIGS, BrokerConfig, parse_topic_configs
from odradek.config.broker_checks import refuse_unsupported_broker_configs
from odradek.config.types import ConfigError
from odradek.protocol.error_codes import ErrorCode, KafkaError


def _startup_error(settings: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig(settings)
    return caught.value


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("principal.builder.class", "com.example.Builder"),
        ("zookeeper.max.in.flight.requests", "20"),
        ("log.initial.task.delay.ms", "0"),
        ("create.topic.policy.class.name", "com.example.Policy"),
        ("remote.log.storage.system.enable", "true"),
    ],
)
def test_setting_not_built_yet_refuses_to_start_naming_it(name: str, value: str) -> None:
    error = _startup_error({name: value})
    assert error.name == name
    message = str(error)
    assert "\n" not in message
    assert message.startswith(f"odradek cannot honour {name}: ")
    assert "s3cret" not in message


def test_setting_not_built_yet_is_accepted_at_its_default() -> None:
    config = BrokerConfig(
        {
            "authorizer.class.name": "",
            "security.inter.broker.protocol": "PLAINTEXT",
            "compression.type": "producer",
        }
    )
    assert config.authorizer_class_name == ""


def test_listener_scoped_setting_not_built_yet_refuses_to_start() -> None:
    name = "listener.name.ssl.principal.builder.class"
    error = _startup_error({name: "com.example.Builder"})
    assert error.name == name
    assert str(error).startswith(f"odradek cannot honour {name}: odradek builds principals itself")


def test_alter_configs_of_setting_not_built_yet_is_invalid_config() -> None:
    for configs in (
        {"listener.name.ssl.principal.builder.class": "com.example.Builder"},
        {"log.cleaner.io.max.bytes.per.second": "1000000"},
        {"log.cleaner.io.buffer.size": "1048576"},
    ):
        with pytest.raises(KafkaError) as caught:
            refuse_unsupported_broker_configs(configs)
        assert caught.value.error_code is ErrorCode.INVALID_CONFIG
        (name,) = configs
        assert caught.value.error_message is not None
        assert caught.value.error_message.startswith(f"odradek cannot honour {name}: ")
    refuse_unsupported_broker_configs({"compression.type": "producer", "log.retention.ms": "1000"})


def test_alter_configs_of_listener_scoped_tls_setting_read_at_start_up_is_refused() -> None:
    # read at start-up only: accepting it would store a change without effect
    name = "listener.name.ssl.ssl.client.auth"
    with pytest.raises(KafkaError) as caught:
        refuse_unsupported_broker_configs({name: "required"})
    assert caught.value.error_code is ErrorCode.INVALID_CONFIG
    assert caught.value.error_message == f"Cannot update these configs dynamically: Set({name})"
    refuse_unsupported_broker_configs({"listener.name.ssl.ssl.keystore.location": "/etc/kafka/new.pem"})


def test_alter_configs_of_unknown_broker_config_is_invalid_config() -> None:
    with pytest.raises(KafkaError) as caught:
        refuse_unsupported_broker_configs({"no.such.config": "1"})
    assert caught.value.error_code is ErrorCode.INVALID_CONFIG
    assert caught.value.error_message == "Unknown broker config: no.such.config"
    with pytest.raises(KafkaError, match=re.escape("listener.name.plaintext.no.such")):
        refuse_unsupported_broker_configs({"listener.name.plaintext.no.such": "1"})


def test_only_tiered_storage_is_still_refused_among_topic_settings() -> None:
    """compression.type, compression.*.level and message.downconversion.enable were refused; every
    topic setting is real now but tiered storage, which Kafka also refuses while the broker has it off."""
    assert {key.name for key in TOPIC_CONFIGS.values() if key.refused} == {"remote.storage.enable"}
    with pytest.raises(KafkaError) as caught:
        parse_topic_configs({"remote.storage.enable": "true"})
    assert caught.value.error_code is ErrorCode.INVALID_CONFIG
    assert parse_topic_configs({"remote.storage.enable": "false"})


def test_message_format_version_is_accepted_without_effect_as_kafka_3() -> None:
    assert parse_topic_configs({"message.format.version": "0.10.0"}) == {"message.format.version": "0.10.0"}
    assert parse_topic_configs({"message.format.version": "2.8-IV1"})
    assert parse_topic_configs({"message.format.version": "0.10.0.0"})  # as librdkafka's test 0092 sets it
    config = BrokerConfig({"log.message.format.version": "2.1"})
    assert config.log_message_format_version == "2.1"
    for bad in ("banana", "0.8", "4"):
        with pytest.raises(KafkaError) as caught:
            parse_topic_configs({"message.format.version": bad})
        assert caught.value.error_code is ErrorCode.INVALID_CONFIG
    for key in (TOPIC_CONFIGS["message.format.version"], BROKER_CONFIGS["log.message.format.version"]):
        assert key.default == "3.0-IV1"
        assert "ignored from 3.0 on" in key.documentation


def test_documentation_served_says_what_odradek_does_not_do() -> None:
    assert "TLS 1.3 suites cannot be narrowed" in BROKER_CONFIGS["ssl.cipher.suites"].documentation
    assert "JKS, PKCS12 or PEM" in BROKER_CONFIGS["ssl.keystore.type"].documentation
    assert "one asyncio loop" in BROKER_CONFIGS["num.io.threads"].documentation
    for key in BROKER_CONFIGS.values():
        assert "odradek's ACL authorizer" not in key.documentation


def test_listeners_cannot_be_updated_dynamically() -> None:
    for name in ("listeners", "advertised.listeners", "listener.security.protocol.map"):
        assert BROKER_CONFIGS[name].read_only, name


def test_replica_selector_class_takes_kafkas_two_selectors_and_refuses_any_other_in_one_line() -> None:
    for name in (
        "org.apache.kafka.common.replica.LeaderSelector",
        "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    ):
        assert BrokerConfig({"replica.selector.class": name}).replica_selector_class == name
    assert BrokerConfig({}).replica_selector_class is None
    error = _startup_error({"replica.selector.class": "com.example.NearestSelector"})
    assert "replica.selector.class" in str(error)
    assert "\n" not in str(error)


@pytest.mark.parametrize("name", ["zookeeper.ssl.crl.enable", "zookeeper.ssl.ocsp.enable"])
def test_revocation_checks_to_zookeeper_refuse_to_start_naming_them(name: str) -> None:
    """TLS to ZooKeeper is built (issue #25), but not revocation: asked for, it must not be skipped."""
    error = _startup_error({name: "true", "zookeeper.ssl.client.enable": "true"})
    assert error.name == name
    assert str(error).startswith(f"odradek cannot honour {name}: ") and "revocation" in str(error)


def test_tls_to_zookeeper_left_at_its_defaults_is_accepted() -> None:
    config = BrokerConfig({"zookeeper.ssl.client.enable": "false", "zookeeper.ssl.protocol": "TLSv1.2"})
    assert config.zookeeper_ssl_client_enable is False and not config.unknown


@pytest.mark.parametrize(
    ("name", "value"),
    [("process.roles", "broker,controller"), ("zookeeper.metadata.migration.enable", "true")],
)
def test_kraft_settings_refuse_to_start_naming_them_instead_of_running_another_mode(
    name: str, value: str
) -> None:
    """Unknown names before, logged and ignored: a KRaft server.properties ran as a single node."""
    error = _startup_error({name: value})
    assert error.name == name and "KRaft" in str(error)


def test_kraft_settings_left_empty_are_accepted() -> None:
    assert (
        BrokerConfig({"process.roles": "", "zookeeper.metadata.migration.enable": "false"}).process_roles
        == []
    )


def test_a_cluster_member_s_broker_id_above_reserved_broker_max_id_refuses_to_start_as_in_kafka() -> None:
    cluster = {"zookeeper.connect": "127.0.0.1:2181"}
    error = _startup_error({**cluster, "broker.id": "1001"})
    assert error.name == "broker.id" and "reserved.broker.max.id (1000)" in str(error)
    assert BrokerConfig({**cluster, "broker.id": "1001", "reserved.broker.max.id": "2000"}).broker_id == 1001
    assert (
        BrokerConfig({**cluster, "broker.id": "1001", "broker.id.generation.enable": "false"}).broker_id
        == 1001
    )
    assert BrokerConfig({"broker.id": "1001"}).broker_id == 1001  # a single node: no ids are reserved


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("unstable.api.versions.enable", "true", "released API versions only"),
    ],
)
def test_kafka_settings_that_were_unknown_names_refuse_to_start_naming_them(
    name: str, value: str, why: str
) -> None:
    """Logged and ignored before: a broker asked to advertise unreleased API versions ran without
    doing so."""
    error = _startup_error({name: value})
    assert error.name == name and why in str(error) and "s3cret" not in str(error)


#: Kafka 3.9 broker security settings for what odradek does not build (Java classes and providers,
#: GSSAPI, OAUTHBEARER, the password encoder): unknown to the catalog, they were logged as unknown and
#: ignored, while docs/security.md says each such setting is refused.
KAFKA_SECURITY_SETTINGS_NOT_BUILT = [
    ("ssl.engine.factory.class", "com.example.EngineFactory"),
    ("ssl.provider", "BCJSSE"),
    ("security.providers", "com.example.ProviderCreator"),
    ("ssl.keymanager.algorithm", "PKIX"),
    ("ssl.trustmanager.algorithm", "SunX509"),
    ("ssl.secure.random.implementation", "SHA1PRNG"),
    ("sasl.server.callback.handler.class", "com.example.PlainVerifier"),
    ("sasl.client.callback.handler.class", "com.example.Client"),
    ("sasl.login.class", "com.example.Login"),
    ("sasl.login.callback.handler.class", "com.example.LoginHandler"),
    ("sasl.kerberos.service.name", "kafka"),
    ("sasl.kerberos.principal.to.local.rules", "RULE:[1:$1]"),
    ("sasl.oauthbearer.jwks.endpoint.url", "https://idp.example.com/jwks"),
    ("sasl.oauthbearer.expected.audience", "kafka"),
    ("sasl.login.refresh.window.factor", "0.9"),
    ("password.encoder.secret", "s3cret"),
]


@pytest.mark.parametrize(("name", "value"), KAFKA_SECURITY_SETTINGS_NOT_BUILT)
def test_kafka_security_setting_for_what_is_not_built_is_refused_not_ignored(name: str, value: str) -> None:
    settings = {name: value}
    if name.startswith("ssl."):
        settings["listeners"] = "SSL://127.0.0.1:9093"  # else refused as read by no listener
    error = _startup_error(settings)
    assert error.name == name
    assert str(error).startswith(f"odradek cannot honour {name}: ")
    assert "s3cret" not in str(error)


def test_kafka_security_settings_for_what_is_not_built_are_accepted_at_their_defaults() -> None:
    config = BrokerConfig(
        {
            "listeners": "SSL://127.0.0.1:9093",
            "ssl.keymanager.algorithm": "SunX509",
            "ssl.trustmanager.algorithm": "PKIX",
            "sasl.kerberos.principal.to.local.rules": "DEFAULT",
            "password.encoder.iterations": "4096",
        }
    )
    assert config.is_set("ssl.keymanager.algorithm")
