"""How a broker secures its ZooKeeper sessions, from its configs and system properties, as Kafka 3.9.

- TLS: `zookeeper.ssl.client.enable` and the other zookeeper.ssl.* configs (security/zookeeper_tls.py).
- SASL: the JAAS file named by the system property `java.security.auth.login.config` (KAFKA_OPTS,
  config/system_properties.py); its section `Client` (or `zookeeper.sasl.clientconfig`) is the login,
  ZooKeeper's DigestLoginModule with `username` and `password` (DIGEST-MD5). A file without that
  section means no SASL, as in Kafka; `zookeeper.sasl.client=false` with the section is an error, as
  in Kafka's JaasUtils.
- `zookeeper.set.acl`: the znodes the broker creates get Kafka's ACLs (cluster/zookeeper/znode_acls.py).
  As Kafka's KafkaZkClient.createZkClient, it needs an identity: a SASL login or a client certificate.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from odradek.cluster.zookeeper.session import SaslLogin, ZooKeeperSecurity
from odradek.config.broker import BrokerConfig
from odradek.config.system_properties import LOGIN_CONFIG, ZOOKEEPER_SASL_CLIENT, ZOOKEEPER_SASL_CLIENT_CONFIG
from odradek.config.types import ConfigError
from odradek.security.jaas import JaasConfigError, parse_jaas_file
from odradek.security.zookeeper_tls import zookeeper_tls

DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
DEFAULT_LOGIN_SECTION = "Client"


def zookeeper_security(config: BrokerConfig, properties: Mapping[str, str]) -> ZooKeeperSecurity:
    """The security of the broker's ZooKeeper sessions; raises ConfigError naming what is wrong."""
    tls = zookeeper_tls(config) if config.zookeeper_ssl_client_enable else None
    sasl = zookeeper_login(properties)
    certificate = tls is not None and bool(config.zookeeper_ssl_keystore_location)
    if config.zookeeper_set_acl and sasl is None and not certificate:
        raise ConfigError(
            "zookeeper.set.acl is true, but the broker has no identity in ZooKeeper to own its znodes: "
            f"give it a SASL login (a JAAS file's {DEFAULT_LOGIN_SECTION} section, named by "
            f"-D{LOGIN_CONFIG} in KAFKA_OPTS) or a client certificate (zookeeper.ssl.client.enable "
            "with zookeeper.ssl.keystore.location)",
            "zookeeper.set.acl",
        )
    return ZooKeeperSecurity(tls=tls, sasl=sasl, secure_acls=config.zookeeper_set_acl)


def zookeeper_login(properties: Mapping[str, str]) -> SaslLogin | None:
    """The DIGEST-MD5 login of the JAAS file's client section, or None when there is none."""
    location = properties.get(LOGIN_CONFIG, "").removeprefix("=")  # Java's "==file": this file alone
    if not location:
        return None
    section = properties.get(ZOOKEEPER_SASL_CLIENT_CONFIG, DEFAULT_LOGIN_SECTION)
    try:
        sections = parse_jaas_file(Path(location).read_text())
    except OSError as error:
        raise ConfigError(
            f"{LOGIN_CONFIG}={location}: the JAAS file cannot be read: {error.strerror}", LOGIN_CONFIG
        ) from None
    except (JaasConfigError, UnicodeDecodeError) as error:
        raise ConfigError(f"{LOGIN_CONFIG}={location}: {error}", LOGIN_CONFIG) from None
    modules = sections.get(section)
    if modules is None:
        return None
    if properties.get(ZOOKEEPER_SASL_CLIENT, "true").lower() != "true":  # Java's Boolean.parseBoolean
        raise ConfigError(
            f"the JAAS file {location} has a {section} section, but the system property "
            f"{ZOOKEEPER_SASL_CLIENT} disables SASL to ZooKeeper",
            ZOOKEEPER_SASL_CLIENT,
        )
    names = [module.name for module in modules]
    if names != [DIGEST_LOGIN_MODULE]:
        raise ConfigError(
            f"JAAS section {section} of {location}: odradek logs in to ZooKeeper with {DIGEST_LOGIN_MODULE} "
            f"(DIGEST-MD5) alone, not {', '.join(names)}",
            LOGIN_CONFIG,
        )
    options = modules[0].options
    missing = [option for option in ("username", "password") if not options.get(option)]
    if missing:
        raise ConfigError(
            f"JAAS section {section} of {location}: {DIGEST_LOGIN_MODULE} needs {' and '.join(missing)}",
            LOGIN_CONFIG,
        )
    return SaslLogin(options["username"], options["password"])
