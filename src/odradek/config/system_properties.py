"""The JVM system properties a Kafka broker is given in KAFKA_OPTS, as Kafka's start scripts pass them.

Kafka reads its ZooKeeper login from system properties, not from server.properties:
`-Djava.security.auth.login.config=<JAAS file>` (whose `Client` section is the login),
`-Dzookeeper.sasl.client=false` (no SASL to ZooKeeper) and `-Dzookeeper.sasl.clientconfig=<section>`.
`odradek broker` reads the same words from the same variable, so a Kafka broker's environment moves over
unchanged. Other JVM options (heap, GC, JMX) mean nothing to this process and are left alone; a
`zookeeper.*` property odradek does not read (ZooKeeper's TLS or Kerberos properties) stops the start,
naming it, instead of being silently dropped.
"""

from __future__ import annotations

import shlex
from typing import Final

from odradek.config.types import ConfigError

KAFKA_OPTS: Final = "KAFKA_OPTS"
LOGIN_CONFIG: Final = "java.security.auth.login.config"
ZOOKEEPER_SASL_CLIENT: Final = "zookeeper.sasl.client"
ZOOKEEPER_SASL_CLIENT_CONFIG: Final = "zookeeper.sasl.clientconfig"
#: The zookeeper.* system properties odradek honours.
ZOOKEEPER_PROPERTIES: Final = (ZOOKEEPER_SASL_CLIENT, ZOOKEEPER_SASL_CLIENT_CONFIG)


def system_properties(kafka_opts: str) -> dict[str, str]:
    """The `-Dname=value` properties of KAFKA_OPTS; raises ConfigError for one odradek cannot honour."""
    try:
        words = shlex.split(kafka_opts)
    except ValueError as error:
        raise ConfigError(f"{KAFKA_OPTS} cannot be split into words: {error}", KAFKA_OPTS) from None
    properties: dict[str, str] = {}
    for word in words:
        if not word.startswith("-D"):
            continue
        name, _, value = word[2:].partition("=")
        if name.startswith("zookeeper.") and name not in ZOOKEEPER_PROPERTIES:
            raise ConfigError(
                f"{KAFKA_OPTS}: odradek cannot honour the system property {name}: of ZooKeeper's it reads "
                f"{' and '.join(ZOOKEEPER_PROPERTIES)}; TLS to ZooKeeper is set with the broker's "
                "zookeeper.ssl.* configs",
                name,
            )
        properties[name] = value
    return properties
