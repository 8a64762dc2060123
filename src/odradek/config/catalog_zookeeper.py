"""Broker configs of the ZooKeeper connection (zookeeper.*), and KRaft's, which odradek refuses."""

from __future__ import annotations

from odradek.config.types import ConfigKey, ConfigType, Importance
from odradek.config.validators import at_least

HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
ZOOKEEPER = "odradek's ZooKeeper client does not offer this yet."
ZOOKEEPER_REVOCATION = (
    "odradek's TLS client (Python's ssl) fetches neither certificate revocation lists nor OCSP answers."
)
NO_ZOOKEEPER = "a single node does not use ZooKeeper."
NO_KRAFT = (
    "odradek is a ZooKeeper-mode broker (a single node without zookeeper.connect): KRaft's roles, "
    "quorum and metadata migration are not built."
)

ZOOKEEPER_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "zookeeper.connect",
        ConfigType.STRING,
        None,
        HIGH,
        "ZooKeeper ensemble as host:port,...[/chroot]; unset runs a single node without ZooKeeper.",
    ),
    ConfigKey(
        "zookeeper.session.timeout.ms",
        ConfigType.INT,
        18000,
        HIGH,
        "ZooKeeper session timeout.",
        cluster_only=NO_ZOOKEEPER,
    ),
    ConfigKey(
        "zookeeper.connection.timeout.ms",
        ConfigType.INT,
        None,
        HIGH,
        "How long to wait for a ZooKeeper connection; defaults to zookeeper.session.timeout.ms.",
        cluster_only=NO_ZOOKEEPER,
    ),
    ConfigKey(
        "zookeeper.set.acl",
        ConfigType.BOOLEAN,
        False,
        HIGH,
        "Give the znodes the broker creates Kafka's ACLs: its own ZooKeeper identity (SASL login or "
        "client certificate) may do all, the world only read, and nothing under /config/users or "
        "/config/brokers.",
        cluster_only=NO_ZOOKEEPER,
    ),
    ConfigKey(
        "zookeeper.max.in.flight.requests",
        ConfigType.INT,
        10,
        HIGH,
        "Most unanswered requests to ZooKeeper.",
        at_least(1),
        refused=ZOOKEEPER,
    ),
    *(
        ConfigKey(name, config_type, default, importance, doc, cluster_only=NO_ZOOKEEPER)
        for name, config_type, default, importance, doc in (
            (
                "zookeeper.ssl.client.enable",
                ConfigType.BOOLEAN,
                False,
                MEDIUM,
                "Connect to ZooKeeper over TLS.",
            ),
            (
                "zookeeper.clientCnxnSocket",
                ConfigType.STRING,
                None,
                MEDIUM,
                "ZooKeeper's client socket class, a JVM's choice of I/O: ClientCnxnSocketNetty or "
                "ClientCnxnSocketNIO, accepted and alike here (read with zookeeper.ssl.client.enable).",
            ),
            (
                "zookeeper.ssl.keystore.location",
                ConfigType.STRING,
                None,
                MEDIUM,
                "Key store for TLS to ZooKeeper.",
            ),
            (
                "zookeeper.ssl.keystore.password",
                ConfigType.PASSWORD,
                None,
                MEDIUM,
                "Password of zookeeper.ssl.keystore.location.",
            ),
            (
                "zookeeper.ssl.keystore.type",
                ConfigType.STRING,
                None,
                MEDIUM,
                "Type of zookeeper.ssl.keystore.location.",
            ),
            (
                "zookeeper.ssl.truststore.location",
                ConfigType.STRING,
                None,
                MEDIUM,
                "Trust store for TLS to ZooKeeper.",
            ),
            (
                "zookeeper.ssl.truststore.password",
                ConfigType.PASSWORD,
                None,
                MEDIUM,
                "Password of zookeeper.ssl.truststore.location.",
            ),
            (
                "zookeeper.ssl.truststore.type",
                ConfigType.STRING,
                None,
                MEDIUM,
                "Type of zookeeper.ssl.truststore.location.",
            ),
            ("zookeeper.ssl.protocol", ConfigType.STRING, "TLSv1.2", LOW, "TLS protocol to ZooKeeper."),
            (
                "zookeeper.ssl.enabled.protocols",
                ConfigType.LIST,
                None,
                LOW,
                "TLS protocols enabled to ZooKeeper.",
            ),
            (
                "zookeeper.ssl.cipher.suites",
                ConfigType.LIST,
                None,
                LOW,
                "Cipher suites enabled to ZooKeeper.",
            ),
            (
                "zookeeper.ssl.endpoint.identification.algorithm",
                ConfigType.STRING,
                "HTTPS",
                LOW,
                "Host name verification of ZooKeeper's certificate.",
            ),
        )
    ),
    ConfigKey(
        "zookeeper.ssl.crl.enable",
        ConfigType.BOOLEAN,
        False,
        LOW,
        "Check certificate revocation lists.",
        refused=ZOOKEEPER_REVOCATION,
    ),
    ConfigKey(
        "zookeeper.ssl.ocsp.enable",
        ConfigType.BOOLEAN,
        False,
        LOW,
        "Check certificates with OCSP.",
        refused=ZOOKEEPER_REVOCATION,
    ),
    ConfigKey(
        "process.roles",
        ConfigType.LIST,
        [],
        HIGH,
        "KRaft roles (broker, controller); empty for a ZooKeeper-mode broker.",
        refused=NO_KRAFT,
    ),
    ConfigKey(
        "zookeeper.metadata.migration.enable",
        ConfigType.BOOLEAN,
        False,
        HIGH,
        "Migrate the cluster's metadata from ZooKeeper to KRaft controllers.",
        refused=NO_KRAFT,
    ),
    ConfigKey(
        "zookeeper.metadata.migration.min.batch.size",
        ConfigType.INT,
        200,
        MEDIUM,
        "Records per batch of a ZooKeeper to KRaft migration.",
        at_least(1),
        refused=NO_KRAFT,
    ),
)
