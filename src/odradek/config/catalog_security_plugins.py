"""Kafka's broker security settings for what odradek does not build: Java classes and security
providers (its TLS is OpenSSL's through Python's `ssl`, its SASL mechanisms its own), GSSAPI (Kerberos)
and OAUTHBEARER login and token validation, and the password encoder of dynamic password configs.

Each is refused unless left at its default (start-up, or AlterConfigs, fails naming it): unknown to the
catalog they were logged as unknown and ignored, so a custom SASL callback handler, say, was silently
not used. Their defaults are Kafka 3.9's (the key and trust manager algorithms: the JVM's defaults).
"""

from __future__ import annotations

from odradek.config.types import ConfigKey, ConfigType, ConfigValue, Importance

JAVA_CLASSES = "odradek cannot load Java classes: its TLS is OpenSSL's and its SASL mechanisms its own."
JAVA_SECURITY = (
    "odradek's TLS is OpenSSL's (Python's ssl): Java security providers, key and trust manager "
    "algorithms and random number generators do not apply."
)
GSSAPI = "GSSAPI (Kerberos) is not built: sasl.enabled.mechanisms refuses it."
OAUTHBEARER = "OAUTHBEARER is not built: sasl.enabled.mechanisms refuses it."
PASSWORD_ENCODER = (
    "odradek has no password encoder: dynamic password configs are refused in ZooKeeper, never "
    "stored in clear."
)


def _refused(name: str, kind: ConfigType, default: ConfigValue, doc: str, why: str) -> ConfigKey:
    return ConfigKey(name, kind, default, Importance.MEDIUM, doc, refused=why)


S, C, D, L, INT, SH, LST, P = (
    ConfigType.STRING,
    ConfigType.CLASS,
    ConfigType.DOUBLE,
    ConfigType.LONG,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LIST,
    ConfigType.PASSWORD,
)

SECURITY_PLUGIN_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    _refused("security.providers", S, None, "Creators of Java security providers.", JAVA_SECURITY),
    _refused("ssl.provider", S, None, "Java security provider of TLS connections.", JAVA_SECURITY),
    _refused("ssl.keymanager.algorithm", S, "SunX509", "Java key manager factory algorithm.", JAVA_SECURITY),
    _refused("ssl.trustmanager.algorithm", S, "PKIX", "Java trust manager factory algorithm.", JAVA_SECURITY),
    _refused(
        "ssl.secure.random.implementation",
        S,
        None,
        "Java SecureRandom implementation for TLS.",
        JAVA_SECURITY,
    ),
    _refused("ssl.engine.factory.class", C, None, "Class that creates TLS engines.", JAVA_CLASSES),
    _refused(
        "sasl.server.callback.handler.class",
        C,
        None,
        "Server callback handler of SASL mechanisms.",
        JAVA_CLASSES,
    ),
    _refused(
        "sasl.client.callback.handler.class",
        C,
        None,
        "Client callback handler of SASL mechanisms.",
        JAVA_CLASSES,
    ),
    _refused("sasl.login.class", C, None, "Login class of SASL mechanisms.", JAVA_CLASSES),
    _refused(
        "sasl.login.callback.handler.class",
        C,
        None,
        "Login callback handler of SASL mechanisms.",
        JAVA_CLASSES,
    ),
    _refused("sasl.kerberos.service.name", S, None, "Kerberos principal name Kafka runs as.", GSSAPI),
    _refused("sasl.kerberos.kinit.cmd", S, "/usr/bin/kinit", "Kerberos kinit command path.", GSSAPI),
    _refused(
        "sasl.kerberos.ticket.renew.window.factor", D, 0.8, "Share of a ticket's life before renewal.", GSSAPI
    ),
    _refused("sasl.kerberos.ticket.renew.jitter", D, 0.05, "Random jitter of ticket renewal.", GSSAPI),
    _refused("sasl.kerberos.min.time.before.relogin", L, 60000, "Least time between relogins, ms.", GSSAPI),
    _refused(
        "sasl.kerberos.principal.to.local.rules",
        LST,
        ["DEFAULT"],
        "Rules mapping Kerberos principal names to short names.",
        GSSAPI,
    ),
    _refused(
        "sasl.login.refresh.window.factor",
        D,
        0.8,
        "Share of a credential's life before refresh.",
        OAUTHBEARER,
    ),
    _refused(
        "sasl.login.refresh.window.jitter", D, 0.05, "Random jitter of credential refresh.", OAUTHBEARER
    ),
    _refused(
        "sasl.login.refresh.min.period.seconds", SH, 60, "Least time between refreshes, s.", OAUTHBEARER
    ),
    _refused(
        "sasl.login.refresh.buffer.seconds", SH, 300, "Time kept before expiry on refresh, s.", OAUTHBEARER
    ),
    _refused(
        "sasl.login.connect.timeout.ms", INT, None, "Identity provider connect timeout, ms.", OAUTHBEARER
    ),
    _refused("sasl.login.read.timeout.ms", INT, None, "Identity provider read timeout, ms.", OAUTHBEARER),
    _refused("sasl.login.retry.backoff.max.ms", L, 10000, "Longest login retry backoff, ms.", OAUTHBEARER),
    _refused("sasl.login.retry.backoff.ms", L, 100, "First login retry backoff, ms.", OAUTHBEARER),
    _refused("sasl.oauthbearer.scope.claim.name", S, "scope", "JWT claim of the token's scope.", OAUTHBEARER),
    _refused("sasl.oauthbearer.sub.claim.name", S, "sub", "JWT claim of the token's subject.", OAUTHBEARER),
    _refused(
        "sasl.oauthbearer.token.endpoint.url", S, None, "Identity provider token endpoint.", OAUTHBEARER
    ),
    _refused(
        "sasl.oauthbearer.jwks.endpoint.url", S, None, "Identity provider key set endpoint.", OAUTHBEARER
    ),
    _refused(
        "sasl.oauthbearer.jwks.endpoint.refresh.ms", L, 3600000, "Key set refresh interval, ms.", OAUTHBEARER
    ),
    _refused(
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        L,
        100,
        "First key set retry backoff, ms.",
        OAUTHBEARER,
    ),
    _refused(
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        L,
        10000,
        "Longest key set retry backoff, ms.",
        OAUTHBEARER,
    ),
    _refused(
        "sasl.oauthbearer.clock.skew.seconds", INT, 30, "Clock skew allowed for tokens, s.", OAUTHBEARER
    ),
    _refused("sasl.oauthbearer.expected.audience", LST, None, "Audiences a token must name.", OAUTHBEARER),
    _refused("sasl.oauthbearer.expected.issuer", S, None, "Issuer a token must name.", OAUTHBEARER),
    _refused("password.encoder.secret", P, None, "Secret encoding dynamic passwords.", PASSWORD_ENCODER),
    _refused("password.encoder.old.secret", P, None, "Previous password encoder secret.", PASSWORD_ENCODER),
    _refused(
        "password.encoder.keyfactory.algorithm", S, None, "Password encoder key factory.", PASSWORD_ENCODER
    ),
    _refused(
        "password.encoder.cipher.algorithm",
        S,
        "AES/CBC/PKCS5Padding",
        "Password encoder cipher.",
        PASSWORD_ENCODER,
    ),
    _refused("password.encoder.key.length", INT, 128, "Password encoder key length.", PASSWORD_ENCODER),
    _refused("password.encoder.iterations", INT, 4096, "Password encoder iterations.", PASSWORD_ENCODER),
)
