"""Broker configs of authentication (SASL, TLS) and authorization (ACLs, super users).

Key-store and trust-store passwords, key material and the JAAS config are PASSWORD configs: they are
never logged and DescribeConfigs reports them as sensitive with no value. Listener-scoped variants
(``listener.name.<listener>.<config>``) are accepted by BrokerConfig as given.
"""

from __future__ import annotations

from odradek.config.types import ConfigKey, ConfigType, DynamicUpdateMode, Importance
from odradek.config.validators import NonNull, one_of

HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
PER_BROKER = DynamicUpdateMode.PER_BROKER

SECURITY_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "authorizer.class.name",
        ConfigType.STRING,
        "",
        LOW,
        "Authorizer to use; empty means no authorization. odradek's ACL authorizer answers to "
        "Kafka's AclAuthorizer and StandardAuthorizer class names.",
        NonNull(),
    ),
    ConfigKey(
        "super.users",
        ConfigType.STRING,
        None,
        LOW,
        "Principals allowed everything, separated by semicolons (User:alice;User:bob).",
    ),
    ConfigKey(
        "allow.everyone.if.no.acl.found",
        ConfigType.BOOLEAN,
        False,
        LOW,
        "Allow an operation on a resource that has no ACLs at all.",
    ),
    ConfigKey(
        "principal.builder.class",
        ConfigType.CLASS,
        "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
        MEDIUM,
        "Builds the principal of a connection from its authentication.",
        dynamic=PER_BROKER,
        note="Accepted; odradek always builds principals the way Kafka's default builder does.",
    ),
    ConfigKey(
        "sasl.enabled.mechanisms",
        ConfigType.LIST,
        ["GSSAPI"],
        MEDIUM,
        "SASL mechanisms the broker offers.",
        dynamic=PER_BROKER,
        note="odradek implements PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.",
    ),
    ConfigKey(
        "sasl.mechanism.inter.broker.protocol",
        ConfigType.STRING,
        "GSSAPI",
        MEDIUM,
        "SASL mechanism brokers use with each other.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "sasl.jaas.config",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "JAAS login context, in JAAS file syntax.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "sasl.server.max.receive.size",
        ConfigType.INT,
        524288,
        MEDIUM,
        "Largest SASL token accepted before authentication completes.",
    ),
    ConfigKey(
        "connections.max.reauth.ms",
        ConfigType.LONG,
        0,
        MEDIUM,
        "Longest session of an authenticated connection before it must re-authenticate; 0 never.",
    ),
    ConfigKey(
        "ssl.protocol",
        ConfigType.STRING,
        "TLSv1.3",
        MEDIUM,
        "TLS protocol used to create contexts.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.enabled.protocols",
        ConfigType.LIST,
        ["TLSv1.2", "TLSv1.3"],
        MEDIUM,
        "TLS protocol versions accepted.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.cipher.suites",
        ConfigType.LIST,
        [],
        MEDIUM,
        "Cipher suites accepted; empty means the TLS library's defaults.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.keystore.type",
        ConfigType.STRING,
        "JKS",
        MEDIUM,
        "Key store format: JKS, PKCS12 or PEM.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.keystore.location", ConfigType.STRING, None, MEDIUM, "Path of the key store.", dynamic=PER_BROKER
    ),
    ConfigKey(
        "ssl.keystore.password",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Password of the key store.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.key.password",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Password of the private key.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.keystore.key",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Private key in PEM, given inline instead of a key store file.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.keystore.certificate.chain",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Certificate chain in PEM, given inline.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.truststore.type",
        ConfigType.STRING,
        "JKS",
        MEDIUM,
        "Trust store format: JKS, PKCS12 or PEM.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.truststore.location",
        ConfigType.STRING,
        None,
        MEDIUM,
        "Path of the trust store.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.truststore.password",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Password of the trust store.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.truststore.certificates",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Trusted certificates in PEM, given inline.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.client.auth",
        ConfigType.STRING,
        "none",
        MEDIUM,
        "Whether TLS clients must (required), may (requested) or do not (none) present a certificate.",
        one_of("required", "requested", "none"),
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.endpoint.identification.algorithm",
        ConfigType.STRING,
        "https",
        LOW,
        "Host-name check of the peer's certificate; empty turns it off.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.principal.mapping.rules",
        ConfigType.STRING,
        "DEFAULT",
        LOW,
        "Rules turning a certificate's distinguished name into a principal name.",
    ),
)
