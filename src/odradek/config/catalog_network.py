"""Broker configs about listeners, sockets and connections, request handling threads and limits, and
odradek's metrics endpoint and web console (``metrics.*``, ``console.*``, odradek-specific).

odradek runs every connection on one asyncio loop, so Kafka's thread-pool sizes are accepted and
validated but size nothing (``inert``). Listeners speak PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
(security/, docs/security.md).
"""

from __future__ import annotations

from odradek.config.hosts import BIND_HOST, HOST_NAMES
from odradek.config.listeners import (
    DEFAULT_PROTOCOL_MAP,
    SECURITY_PROTOCOLS,
    is_endpoint_list,
    is_protocol_map,
)
from odradek.config.types import INT_MAX, ConfigKey, ConfigType, DynamicUpdateMode, Importance
from odradek.config.validators import SOCKET_BUFFER_BYTES, Check, at_least, between, one_of

HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
PER_BROKER, CLUSTER_WIDE = DynamicUpdateMode.PER_BROKER, DynamicUpdateMode.CLUSTER_WIDE
ONE_LOOP = "odradek serves every connection from one asyncio loop, so there is no thread pool to size."
CONNECTION_SETUP = (
    "odradek's clients to other brokers bound connecting by replica.socket.timeout.ms (replica fetchers), "
    "controller.socket.timeout.ms (the controller and AlterPartition) and request.timeout.ms (transaction "
    "markers and verification); a connection set-up timeout with backoff of its own is not built."
)

#: Network configs Kafka reads for the whole broker only: a listener.name.<listener>. form of one would
#: do nothing, so it is refused.
BROKER_WIDE_NETWORK_CONFIGS = frozenset(
    ("socket.send.buffer.bytes", "socket.receive.buffer.bytes", "queued.max.requests")
)

LISTENER_LIST = Check(
    is_endpoint_list, "LISTENER_NAME://host:port,...", "Must be LISTENER_NAME://host:port, ..."
)
HOST_COUNTS = Check(
    lambda text: (
        isinstance(text, str) and all(_is_host_count(item) for item in text.split(",") if item.strip())
    ),
    "host:count,...",
    "Must be host:count pairs separated by commas",
)
PROTOCOL_MAP = Check(
    is_protocol_map,
    "LISTENER_NAME:SECURITY_PROTOCOL,...",
    f"Must be LISTENER_NAME:SECURITY_PROTOCOL pairs, the protocol one of {', '.join(SECURITY_PROTOCOLS)}",
)

NETWORK_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "metrics.port",
        ConfigType.INT,
        None,
        LOW,
        "Port of the HTTP endpoint serving metrics; unset (the default) means no endpoint.",
        between(0, 65535),
        odradek_specific=True,
    ),
    ConfigKey(
        "metrics.host",
        ConfigType.STRING,
        "127.0.0.1",
        LOW,
        "Address the metrics endpoint binds to: this machine only by default, since it answers without "
        "authentication and names every topic, user and client id; 0.0.0.0 (or ::) exposes it on every "
        "interface.",
        BIND_HOST,
        odradek_specific=True,
    ),
    ConfigKey(
        "console.port",
        ConfigType.INT,
        None,
        LOW,
        "Port of the web console the broker runs beside itself (odradek console in a child process, on "
        "console.host, talking to this broker's first listener); unset (the default) means no console. "
        "Needs the console extra.",
        between(1, 65535),
        odradek_specific=True,
    ),
    ConfigKey(
        "console.host",
        ConfigType.STRING,
        "127.0.0.1",
        LOW,
        "Address the broker's web console serves on: this machine only by default; any other (0.0.0.0 "
        "or :: for every interface) needs console.basic.auth.file.",
        BIND_HOST,
        odradek_specific=True,
    ),
    ConfigKey(
        "console.allowed.hosts",
        ConfigType.LIST,
        [],
        LOW,
        "Host names (or addresses) browsers may reach the broker's console by, besides loopback ones and "
        "console.host; a request naming another host is refused (DNS rebinding).",
        HOST_NAMES,
        odradek_specific=True,
    ),
    ConfigKey(
        "console.basic.auth.file",
        ConfigType.STRING,
        None,
        LOW,
        "File of user:password lines: every request to the broker's console then needs one of them "
        "(HTTP basic auth). Required when console.host is not a loopback address.",
        odradek_specific=True,
    ),
    ConfigKey(
        "console.command.config",
        ConfigType.STRING,
        None,
        LOW,
        "Properties file of the client settings the broker's console uses to reach the broker's first "
        "listener (security.protocol, sasl.*, ssl.*), as odradek console --command-config: secrets stay "
        "in the file, out of the console process' command line.",
        odradek_specific=True,
    ),
    ConfigKey(
        "listeners",
        ConfigType.STRING,
        "PLAINTEXT://:9092",
        HIGH,
        "Addresses to accept connections on, as LISTENER_NAME://host:port; an empty host means every "
        "interface, port 0 a free port. Read-only: odradek cannot re-bind its listeners at run "
        "time.",
        LISTENER_LIST,
    ),
    ConfigKey(
        "advertised.listeners",
        ConfigType.STRING,
        None,
        HIGH,
        "Addresses clients are told to use, if different from listeners.",
        LISTENER_LIST,
    ),
    ConfigKey(
        "listener.security.protocol.map",
        ConfigType.STRING,
        DEFAULT_PROTOCOL_MAP,
        LOW,
        "Security protocol of each listener name: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
        PROTOCOL_MAP,
    ),
    ConfigKey(
        "inter.broker.listener.name",
        ConfigType.STRING,
        None,
        MEDIUM,
        "Listener brokers use to talk to each other, with its security protocol and settings; not to "
        "be set together with security.inter.broker.protocol.",
    ),
    ConfigKey(
        "security.inter.broker.protocol",
        ConfigType.STRING,
        "PLAINTEXT",
        MEDIUM,
        "Security protocol brokers use to talk to each other (the listener of that name); "
        "not to be set together with inter.broker.listener.name.",
        one_of(*SECURITY_PROTOCOLS),
    ),
    ConfigKey(
        "early.start.listeners",
        ConfigType.STRING,
        None,
        HIGH,
        "Listeners that may serve before the authorizer has loaded its ACLs; each must be a listener "
        "name in listeners.",
        inert="Every listener starts once the authorizer has its ACLs (as a Kafka broker with "
        "ZooKeeper, whose ACL authorizer is ready at start), so only the names are checked.",
    ),
    ConfigKey(
        "control.plane.listener.name",
        ConfigType.STRING,
        None,
        HIGH,
        "Listener reserved for controller-to-broker requests (ZooKeeper mode).",
        refused="the controller's requests share the inter-broker listener; one of their own is not built.",
    ),
    ConfigKey(
        "socket.send.buffer.bytes",
        ConfigType.INT,
        100 * 1024,
        HIGH,
        "SO_SNDBUF of every socket a listener accepts; -1 keeps the OS default.",
        SOCKET_BUFFER_BYTES,
    ),
    ConfigKey(
        "socket.receive.buffer.bytes",
        ConfigType.INT,
        100 * 1024,
        HIGH,
        "SO_RCVBUF of every listener's server socket, which the sockets it accepts inherit (set before "
        "listening, so the TCP window scale can follow), and of the broker's own connections for "
        "transaction markers and produce verification to other brokers; -1 keeps the OS default.",
        SOCKET_BUFFER_BYTES,
    ),
    ConfigKey(
        "socket.connection.setup.timeout.ms",
        ConfigType.LONG,
        10 * 1000,
        MEDIUM,
        "How long the broker's clients to other brokers wait for a connection to be set up, the first "
        "time (then more, up to socket.connection.setup.timeout.max.ms).",
        refused=CONNECTION_SETUP,
    ),
    ConfigKey(
        "socket.connection.setup.timeout.max.ms",
        ConfigType.LONG,
        30 * 1000,
        MEDIUM,
        "The most the broker's clients to other brokers wait for a connection to be set up.",
        refused=CONNECTION_SETUP,
    ),
    ConfigKey(
        "socket.request.max.bytes",
        ConfigType.INT,
        100 * 1024 * 1024,
        HIGH,
        "Largest request the broker reads; a bigger size prefix closes the connection.",
        at_least(1),
    ),
    ConfigKey(
        "unstable.api.versions.enable",
        ConfigType.BOOLEAN,
        False,
        LOW,
        "Advertise API versions Kafka has not released yet (for testing).",
        refused="odradek advertises released API versions only.",
    ),
    ConfigKey(
        "unstable.feature.versions.enable",
        ConfigType.BOOLEAN,
        False,
        LOW,
        "Allow feature versions Kafka has not released yet (for testing).",
        refused="odradek advertises released feature versions only.",
    ),
    ConfigKey(
        "socket.listen.backlog.size",
        ConfigType.INT,
        50,
        MEDIUM,
        "Listen backlog of each listener's server socket (connections waiting to be accepted).",
        at_least(1),
    ),
    ConfigKey(
        "connections.max.idle.ms",
        ConfigType.LONG,
        10 * 60 * 1000,
        MEDIUM,
        "A connection whose client has sent nothing and read none of its answers for this long is "
        "closed, answers pending or not. A negative value never closes idle connections.",
    ),
    ConfigKey(
        "connection.failed.authentication.delay.ms",
        ConfigType.INT,
        100,
        LOW,
        "Delay before answering (and closing) a connection whose SASL authentication failed.",
        at_least(0),
    ),
    ConfigKey(
        "max.connections",
        ConfigType.INT,
        INT_MAX,
        MEDIUM,
        "Most connections the broker holds; at the limit a listener accepts no more until one closes "
        "(per listener: listener.name.<listener>.max.connections). With more than one listener, the "
        "inter-broker listener is exempt and closes the least recently used connection of another.",
        at_least(0),
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "max.connections.per.ip",
        ConfigType.INT,
        INT_MAX,
        MEDIUM,
        "Most connections from one address; a connection over it is closed as soon as it is accepted.",
        at_least(0),
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "max.connections.per.ip.overrides",
        ConfigType.STRING,
        "",
        MEDIUM,
        "Per-host exceptions to max.connections.per.ip, as host:count,... (host names resolved when read).",
        HOST_COUNTS,
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "max.connection.creation.rate",
        ConfigType.INT,
        INT_MAX,
        MEDIUM,
        "Most new connections admitted per second (counted over the last second); beyond it a listener "
        "waits before accepting (per listener: listener.name.<listener>.max.connection.creation.rate).",
        at_least(0),
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "queued.max.requests",
        ConfigType.INT,
        500,
        HIGH,
        "Requests read and waiting to be taken up, across every connection, at which the broker stops "
        "reading from sockets until one is taken up. A request being handled no longer counts, whatever "
        "it waits for (as in Kafka's request queue), nor do those a connection has read behind it.",
        at_least(1),
    ),
    ConfigKey(
        "queued.max.request.bytes",
        ConfigType.LONG,
        -1,
        MEDIUM,
        "Memory for request bodies read but not yet handled (a request's declared size is reserved when "
        "its size prefix arrives); when none is free the broker stops reading from sockets until a "
        "request is done. 0 or less for no limit; otherwise at least socket.request.max.bytes.",
    ),
    ConfigKey(
        "num.network.threads",
        ConfigType.INT,
        3,
        HIGH,
        "Threads handling network I/O.",
        at_least(1),
        dynamic=CLUSTER_WIDE,
        inert=ONE_LOOP,
    ),
    ConfigKey(
        "num.io.threads",
        ConfigType.INT,
        8,
        HIGH,
        "Threads processing requests.",
        at_least(1),
        dynamic=CLUSTER_WIDE,
        inert=ONE_LOOP,
    ),
    ConfigKey(
        "background.threads",
        ConfigType.INT,
        10,
        HIGH,
        "Threads for background tasks.",
        at_least(1),
        dynamic=CLUSTER_WIDE,
        inert=ONE_LOOP,
    ),
    ConfigKey(
        "request.timeout.ms",
        ConfigType.INT,
        30000,
        HIGH,
        "How long the broker waits for answers to its own requests, a transaction marker for its "
        "partition's ISR, and the transaction coordinator for an expired transactional id's removal "
        "to reach the ISR (its other writes wait the transaction's own timeout).",
        cluster_only=(
            "a single node sends no requests to other brokers, and its writes are in the ISR at once."
        ),
    ),
    ConfigKey(
        "fetch.max.bytes",
        ConfigType.INT,
        55 * 1024 * 1024,
        MEDIUM,
        "Most bytes one Fetch response carries.",
        at_least(1024),
    ),
    ConfigKey(
        "max.incremental.fetch.session.cache.slots",
        ConfigType.INT,
        1000,
        MEDIUM,
        "Most incremental fetch sessions kept (consumers' and followers'; 0: none, every fetch is full).",
        at_least(0),
    ),
    ConfigKey(
        "max.request.partition.size.limit",
        ConfigType.INT,
        2000,
        MEDIUM,
        "Most partitions one DescribeTopicPartitions answer holds (a client's ResponsePartitionLimit is "
        "cut to it).",
        at_least(1),
    ),
)


def _is_host_count(item: str) -> bool:
    host, _, count = item.strip().rpartition(":")
    return bool(host.strip("[] ")) and count.strip().isdigit()
