"""Broker configs of authentication (SASL, TLS) and authorization (ACLs, super users).

TLS and SASL are built (odradek.security): their settings are read per listener
(``listener.name.<listener>.<config>`` before ``<config>``). Key and trust stores may be changed with
AlterConfigs on the broker, listener-prefixed only (as Kafka's SslFactory reconfigures): the listener's
new connections then use them. Every other TLS and SASL setting is read once at start-up and is
read-only. ACLs are built too (odradek.security.authorizer): the authorizer settings are read once at
start-up. The inter-broker SASL mechanism is read at start-up by the brokers' own client
(cluster/inter_broker_connection.py). The principal builder is refused
(start-up or AlterConfigs fails naming it) unless left at its default, also when listener-scoped.
``ssl.cipher.suites`` is reloaded as the stores are (security/cipher_suites.py says which lists can be
honoured).
Passwords are PASSWORD configs: never logged,
described with no value.
"""

from __future__ import annotations

from odradek.config.types import ConfigKey, ConfigType, DynamicUpdateMode, Importance
from odradek.config.validators import Check, at_least, one_of

HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
PER_BROKER = DynamicUpdateMode.PER_BROKER
PRINCIPALS = "odradek builds principals itself (User:<SASL name> or the mapped certificate name)."
#: Kafka's ACL authorizers (ZooKeeper mode, KRaft mode): odradek answers both with AclAuthorizer semantics.
AUTHORIZER_CLASS_NAMES = (
    "kafka.security.authorizer.AclAuthorizer",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
)

SECURITY_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "authorizer.class.name",
        ConfigType.STRING,
        "",
        LOW,
        "Authorizer of every request: kafka.security.authorizer.AclAuthorizer or "
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer (both: ACLs in the log dir, in ZooKeeper's "
        "/kafka-acl with zookeeper.connect); empty means "
        "no authorization: every client may do everything.",
        Check(
            lambda value: value in ("", *AUTHORIZER_CLASS_NAMES),
            f"empty or one of {', '.join(AUTHORIZER_CLASS_NAMES)}",
            "odradek's authorizer has the semantics of Kafka's ACL authorizers; set "
            + " or ".join(AUTHORIZER_CLASS_NAMES)
            + ", or leave it empty for no authorization",
        ),
    ),
    ConfigKey(
        "super.users",
        ConfigType.STRING,
        None,
        LOW,
        "Principals allowed everything whatever the ACLs, separated by semicolons (User:alice;User:bob).",
        authorizer_config=True,
    ),
    ConfigKey(
        "allow.everyone.if.no.acl.found",
        ConfigType.BOOLEAN,
        False,
        LOW,
        "Allow an operation on a resource that no ACL applies to at all (false: only ACLs allow).",
        authorizer_config=True,
    ),
    ConfigKey(
        "principal.builder.class",
        ConfigType.CLASS,
        "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
        MEDIUM,
        "Builds the principal of a connection from its authentication.",
        dynamic=PER_BROKER,
        refused=PRINCIPALS,
    ),
    ConfigKey(
        "sasl.enabled.mechanisms",
        ConfigType.LIST,
        ["GSSAPI"],
        MEDIUM,
        "SASL mechanisms the broker offers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (GSSAPI is not built).",
    ),
    ConfigKey(
        "sasl.mechanism.inter.broker.protocol",
        ConfigType.STRING,
        "GSSAPI",
        MEDIUM,
        "SASL mechanism brokers log in to each other with when the inter-broker listener uses SASL: "
        "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (GSSAPI, the default, and OAUTHBEARER are refused then).",
        cluster_only="a single node logs in to no other broker (the mechanism is still checked).",
    ),
    ConfigKey(
        "sasl.jaas.config",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        'JAAS login context, in JAAS file syntax; PLAIN\'s users are its user_<name>="<password>" options.',
    ),
    ConfigKey(
        "sasl.server.max.receive.size",
        ConfigType.INT,
        524288,
        MEDIUM,
        "Largest SASL token accepted before authentication completes.",
    ),
    # ----- delegation tokens (KIP-48): security/delegation_tokens.py; read once at start-up -----
    ConfigKey(
        "delegation.token.secret.key",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Secret key that signs delegation tokens (the HMAC of a token id), the same on every broker; "
        "unset or empty: the token APIs answer DELEGATION_TOKEN_AUTH_DISABLED.",
    ),
    ConfigKey(
        "delegation.token.master.key",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Deprecated name of delegation.token.secret.key, read when that one is not set.",
    ),
    ConfigKey(
        "delegation.token.max.lifetime.ms",
        ConfigType.LONG,
        7 * 24 * 3600 * 1000,
        MEDIUM,
        "A token's longest life, beyond which it cannot be renewed.",
        at_least(1),
    ),
    ConfigKey(
        "delegation.token.expiry.time.ms",
        ConfigType.LONG,
        24 * 3600 * 1000,
        MEDIUM,
        "How long a token lives unrenewed (and the renewal period when a client asks for a negative one).",
        at_least(1),
    ),
    ConfigKey(
        "delegation.token.expiry.check.interval.ms",
        ConfigType.LONG,
        3600 * 1000,
        LOW,
        "How often tokens past their expiry are removed.",
        at_least(1),
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
        "TLS protocol of the contexts (TLS, TLSv1.2, TLSv1.3): the highest version offered.",
    ),
    ConfigKey(
        "ssl.enabled.protocols",
        ConfigType.LIST,
        ["TLSv1.2", "TLSv1.3"],
        MEDIUM,
        "TLS protocol versions accepted: TLSv1.2 and/or TLSv1.3.",
    ),
    ConfigKey(
        "ssl.cipher.suites",
        ConfigType.LIST,
        [],
        MEDIUM,
        "Cipher suites accepted (IANA names); empty means OpenSSL's defaults. TLS 1.3 suites cannot be "
        "narrowed: with TLSv1.3 enabled the list must name all three.",
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
        "ssl.keystore.location",
        ConfigType.STRING,
        None,
        MEDIUM,
        "Path of the key store (for PEM: the private key and the certificate chain in one file).",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.keystore.password",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Password of a JKS or PKCS12 key store (required with one); a PEM key store has none.",
        dynamic=PER_BROKER,
    ),
    ConfigKey(
        "ssl.key.password",
        ConfigType.PASSWORD,
        None,
        MEDIUM,
        "Password of the private key; the key store's password when not set.",
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
        "Password of a JKS or PKCS12 trust store (required with one); a PEM trust store has none.",
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
    ),
    ConfigKey(
        "ssl.endpoint.identification.algorithm",
        ConfigType.STRING,
        "https",
        LOW,
        "Host-name check of the peer's certificate (https or empty); a broker only checks it as a client.",
    ),
    ConfigKey(
        "ssl.principal.mapping.rules",
        ConfigType.STRING,
        "DEFAULT",
        LOW,
        "Rules turning a certificate's distinguished name into a principal name.",
    ),
)
