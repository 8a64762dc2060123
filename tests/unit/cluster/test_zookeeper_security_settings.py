"""Issue #25 item 15: zookeeper.set.acl, the SASL login to ZooKeeper and zookeeper.ssl.* are read as
Kafka 3.9 reads them, and what cannot be honoured stops the start naming it. (The brokers on secured
ZooKeeper servers: tests/integration/cluster/test_zookeeper_security.py.)"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509 import load_pem_x509_certificate
from kazoo.security import ACL, Id, Permissions

from odradek.cluster.zookeeper.znode_acls import default_acls
from odradek.cluster.zookeeper_security import zookeeper_security
from odradek.config import BrokerConfig
from odradek.config.system_properties import system_properties
from odradek.config.types import ConfigError

CREATOR_ALL = ACL(Permissions.ALL, Id("auth", ""))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
WORLD_ALL = ACL(Permissions.ALL, Id("world", "anyone"))
DIGEST = "org.apache.zookeeper.server.auth.DigestLoginModule"


def _config(**settings: str) -> BrokerConfig:
    return BrokerConfig({"zookeeper.connect": "127.0.0.1:2181", **settings})


def _jaas(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "jaas.conf"
    path.write_text(text)
    return {"java.security.auth.login.config": str(path)}


CLIENT = f'Client {{\n  {DIGEST} required\n  username="kafka"\n  password="kafka-secret";\n}};\n'


@pytest.mark.parametrize(
    ("path", "acls"),
    [
        ("/brokers/ids/1", [CREATOR_ALL, WORLD_READ]),
        ("/brokers/topics/orders/partitions/0/state", [CREATOR_ALL, WORLD_READ]),
        ("/controller", [CREATOR_ALL, WORLD_READ]),
        ("/kafka-acl/Topic/orders", [CREATOR_ALL, WORLD_READ]),  # world-readable in Kafka too
        ("/config/topics/orders", [CREATOR_ALL, WORLD_READ]),
        ("/config/users", [CREATOR_ALL]),
        ("/config/users/alice", [CREATOR_ALL]),  # SCRAM credentials
        ("/config/brokers/<default>", [CREATOR_ALL]),  # broker configs may hold passwords
        ("/delegation_token/tokens/t1", [CREATOR_ALL]),
        ("/consumers", [WORLD_ALL]),  # the old consumers wrote under it: open in Kafka
    ],
)
def test_with_set_acl_znodes_get_kafkas_default_acls(path: str, acls: list[ACL]) -> None:
    assert default_acls(path, secure=True) == acls


def test_without_set_acl_every_znode_is_open_as_in_kafka() -> None:
    assert default_acls("/config/users/alice", secure=False) == [WORLD_ALL]


def test_set_acl_without_a_zookeeper_identity_refuses_to_start_naming_it() -> None:
    """Kafka's createZkClient throws a SecurityException: nobody would own the znodes."""
    with pytest.raises(ConfigError) as caught:
        zookeeper_security(_config(**{"zookeeper.set.acl": "true"}), {})
    assert caught.value.name == "zookeeper.set.acl" and "\n" not in str(caught.value)


def test_the_jaas_files_client_section_is_the_zookeeper_login(tmp_path: Path) -> None:
    jaas = "KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required;\n};\n" + CLIENT
    security = zookeeper_security(_config(**{"zookeeper.set.acl": "true"}), _jaas(tmp_path, jaas))
    assert security.sasl is not None and security.secure_acls and security.tls is None
    assert (security.sasl.username, security.sasl.password) == ("kafka", "kafka-secret")
    assert "kafka-secret" not in repr(security)


def test_a_jaas_file_without_the_client_section_means_no_sasl_as_in_kafka(tmp_path: Path) -> None:
    security = zookeeper_security(_config(), _jaas(tmp_path, CLIENT.replace("Client", "KafkaServer")))
    assert security.sasl is None


def test_zookeeper_sasl_clientconfig_names_another_section(tmp_path: Path) -> None:
    properties = _jaas(tmp_path, CLIENT.replace("Client", "ZkLogin"))
    properties["zookeeper.sasl.clientconfig"] = "ZkLogin"
    assert zookeeper_security(_config(), properties).sasl is not None


@pytest.mark.parametrize(
    ("jaas", "extra", "named", "said"),
    [
        (
            CLIENT.replace(DIGEST, "com.sun.security.auth.module.Krb5LoginModule"),
            {},
            "java.security.auth.login.config",
            "Krb5LoginModule",
        ),
        (CLIENT.replace('password="kafka-secret";', ";"), {}, "java.security.auth.login.config", "password"),
        (CLIENT, {"zookeeper.sasl.client": "false"}, "zookeeper.sasl.client", "disables SASL"),
        ("Client { oops", {}, "java.security.auth.login.config", "must end with"),
    ],
)
def test_a_zookeeper_login_odradek_cannot_use_refuses_to_start_naming_it(
    tmp_path: Path, jaas: str, extra: dict[str, str], named: str, said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        zookeeper_security(_config(), {**_jaas(tmp_path, jaas), **extra})
    assert caught.value.name == named and said in str(caught.value), caught.value
    assert "kafka-secret" not in str(caught.value)


def test_an_unreadable_jaas_file_refuses_to_start_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        zookeeper_security(_config(), {"java.security.auth.login.config": str(tmp_path / "none.conf")})
    assert caught.value.name == "java.security.auth.login.config"


def test_kafka_opts_gives_the_d_properties_and_leaves_other_jvm_options() -> None:
    opts = '-Xmx1G -XX:+UseG1GC -Djava.security.auth.login.config==/etc/kafka/jaas.conf "-Dname=a b"'
    assert system_properties(opts) == {
        "java.security.auth.login.config": "=/etc/kafka/jaas.conf",
        "name": "a b",
    }


def test_a_zookeeper_system_property_odradek_does_not_read_refuses_to_start_naming_it() -> None:
    """ZooKeeper's own TLS properties (Kafka falls back to them) would otherwise be dropped silently."""
    with pytest.raises(ConfigError) as caught:
        system_properties("-Dzookeeper.client.secure=true")
    assert caught.value.name == "zookeeper.client.secure" and "zookeeper.ssl." in str(caught.value)


class Stores:
    def __init__(self, directory: Path) -> None:
        self.ca = trustme.CA()
        leaf = self.ca.issue_cert("broker@example.com", common_name="kafka-broker")
        key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
        chain = [load_pem_x509_certificate(pem.bytes()) for pem in leaf.cert_chain_pems]
        self.key_store = directory / "broker.p12"
        self.key_store.write_bytes(
            pkcs12.serialize_key_and_certificates(
                b"broker",
                key,  # type: ignore[arg-type]
                chain[0],
                chain[1:],
                serialization.BestAvailableEncryption(b"store-secret"),
            )
        )
        self.trust_pem = directory / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.trust_pem))


def _tls(tmp_path: Path, **settings: str) -> ssl.SSLContext:
    security = zookeeper_security(_config(**{"zookeeper.ssl.client.enable": "true", **settings}), {})
    assert security.tls is not None
    return security.tls


def test_tls_to_zookeeper_as_kafka_configures_it(tmp_path: Path) -> None:
    stores = Stores(tmp_path)
    context = _tls(
        tmp_path,
        **{
            # types follow the file names (.p12, .pem) when not given, as ZooKeeper's
            "zookeeper.ssl.keystore.location": str(stores.key_store),
            "zookeeper.ssl.keystore.password": "store-secret",
            "zookeeper.ssl.truststore.location": str(stores.trust_pem),
            "zookeeper.set.acl": "true",  # the certificate is the identity
        },
    )
    # Kafka's zookeeper.ssl.protocol default, enabled alone; the host name checked (HTTPS by default)
    assert (context.minimum_version, context.maximum_version) == (ssl.TLSVersion.TLSv1_2,) * 2
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert len(context.get_ca_certs()) == 1


def test_tls_to_zookeeper_protocols_and_host_name_check_follow_the_configs(tmp_path: Path) -> None:
    context = _tls(
        tmp_path,
        **{
            "zookeeper.ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
            "zookeeper.ssl.endpoint.identification.algorithm": "",
        },
    )
    assert (context.minimum_version, context.maximum_version) == (
        ssl.TLSVersion.TLSv1_2,
        ssl.TLSVersion.TLSv1_3,
    )
    assert not context.check_hostname


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"zookeeper.ssl.keystore.location": "{key_store}"}, "zookeeper.ssl.keystore.password"),
        (
            {"zookeeper.ssl.keystore.location": "{key_store}", "zookeeper.ssl.keystore.password": "wrong"},
            "zookeeper.ssl.keystore.location",
        ),
        ({"zookeeper.ssl.truststore.location": "/nowhere/trust.jks"}, "zookeeper.ssl.truststore.password"),
        ({"zookeeper.ssl.truststore.location": "{directory}/trust.bin"}, "zookeeper.ssl.truststore.type"),
        ({"zookeeper.ssl.protocol": "SSLv3"}, "zookeeper.ssl.protocol"),
        ({"zookeeper.ssl.endpoint.identification.algorithm": "LDAPS"}, None),
        ({"zookeeper.clientCnxnSocket": "com.example.Socket"}, "zookeeper.clientCnxnSocket"),
    ],
)
def test_tls_to_zookeeper_that_cannot_be_set_up_refuses_to_start_naming_the_config(
    tmp_path: Path, settings: dict[str, str], named: str | None
) -> None:
    stores = Stores(tmp_path)
    filled = {k: v.format(key_store=stores.key_store, directory=tmp_path) for k, v in settings.items()}
    with pytest.raises(ConfigError) as caught:
        _tls(tmp_path, **filled)
    assert caught.value.name == (named or "zookeeper.ssl.endpoint.identification.algorithm"), caught.value
    assert "\n" not in str(caught.value) and "store-secret" not in str(caught.value)


def test_a_tls_setting_without_zookeeper_ssl_client_enable_is_not_read_as_in_kafka(tmp_path: Path) -> None:
    security = zookeeper_security(_config(**{"zookeeper.ssl.keystore.location": "/nowhere.p12"}), {})
    assert security.tls is None
