"""A real Apache ZooKeeper for the cluster tests: Debian's jars, run by Java on a free loopback port.

`scripts/install-system-deps.sh` installs Debian's `zookeeper` package; only its jars are used here.
`ZooKeeperServer` writes a throwaway `zoo.cfg` (tickTime=500, so sessions can be as short as 1 s and
expire quickly; admin server off; only the `srvr` and `ruok` four-letter words) and runs
`QuorumPeerMain` standalone until `srvr` answers that it serves.

A test may ask for a secured server: `sasl_users` turns on SASL (DIGEST-MD5, users from a JAAS `Server`
section), `require_sasl` refuses every unauthenticated session (ZooKeeper 3.8's `enforce.auth`), and
`tls` serves a TLS-only port (Netty, no plaintext port; a client certificate is asked for, not
required, and authenticates its session as `x509:<subject DN>`).

Fixtures: `zookeeper_server` (one server for the session) and `zookeeper_connect` (a connect string
with a fresh chroot per test, not yet created, so tests never see each other's znodes). Where Java or
the jars are missing the tests skip, and fail under CI. `expire_session` ends a kazoo client's session
on the server, as a long pause would: its ephemeral znodes go and the client gets a new session.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState

from tests.support.broker_process import _die_with_parent, free_port
from tests.support.requirements import missing

#: Where Debian's `libzookeeper-java` puts the server jar; its manifest's Class-Path names the other
#: jars it needs (netty, jute, slf4j-api...), all from Debian packages it depends on.
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
#: An slf4j binding (from `libslf4j-java`, a dependency of the package): without one ZooKeeper logs
#: nothing at all, and a server that fails to start would leave no reason behind.
SLF4J_SIMPLE_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
TICK_TIME_MS = 500
#: Netty's codec jar, which its handler jar (TLS) needs but the server jar's manifest does not name.
NETTY_CODEC_JAR = Path("/usr/share/java/netty-codec.jar")
#: A small heap and the client JIT only: start-up time matters more than throughput on two shared cores.
JVM_OPTIONS = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


@dataclass(frozen=True)
class ZooKeeperTls:
    """The server's TLS: its key store and the trust store it checks client certificates with."""

    key_store: Path
    trust_store: Path
    password: str
    store_type: str = "PKCS12"


def zookeeper_command(jvm_options: tuple[str, ...] = ()) -> list[str] | None:
    """The `java ... QuorumPeerMain` command without its zoo.cfg, or None where Java or the jar is missing."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if java is None or not Path(java).exists() or not ZOOKEEPER_JAR.exists():
        return None
    classpath = [str(ZOOKEEPER_JAR)]
    for jar in (SLF4J_SIMPLE_JAR, NETTY_CODEC_JAR):
        if jar.exists():
            classpath.append(str(jar))
    return [
        java,
        *JVM_OPTIONS,
        *jvm_options,
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        os.pathsep.join(classpath),
        MAIN_CLASS,
    ]


class ZooKeeperServer:
    """One standalone ZooKeeper in a child process; its data dir is thrown away with `base_dir`.

    Start it from a thread that outlives it (the test's own): the child is SIGTERMed when the thread
    that started it ends (PR_SET_PDEATHSIG follows the thread, not the process). Stopped and started
    again, it keeps its port and data, so sessions survive a restart shorter than their timeout.
    """

    def __init__(
        self,
        base_dir: Path,
        port: int | None = None,
        *,
        sasl_users: dict[str, str] | None = None,
        require_sasl: bool = False,
        tls: ZooKeeperTls | None = None,
    ) -> None:
        self.base_dir = base_dir
        self.port = port or free_port()
        self.sasl_users = dict(sasl_users or {})
        self.require_sasl = require_sasl
        self.tls = tls
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = base_dir / "zookeeper.log"
        #: Seconds from launching Java to `srvr` answering, for the record.
        self.start_seconds: float | None = None

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0, attempts: int = 3) -> ZooKeeperServer:
        """Start and wait until it serves; a port taken meanwhile by someone else is retried on another."""
        for attempt in range(attempts):
            if self._start_once(timeout):
                return self
            if attempt + 1 < attempts and "Address already in use" in self.log_text():
                self.port = free_port()
                continue
            break
        raise RuntimeError(f"ZooKeeper did not start on {self.connect_string}:\n{self.log_text()}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it has not gone within `timeout`."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def serves(self) -> bool:
        """Whether the server answers `srvr` as a standalone server that serves requests."""
        context = None
        if self.tls is not None:  # the four-letter words are served on the TLS port too
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return "Mode: standalone" in four_letter_word(self.connect_string, "srvr", context=context)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def _start_once(self, timeout: float) -> bool:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        jvm_options: tuple[str, ...] = ()
        if self.sasl_users:
            jvm_options = (f"-Djava.security.auth.login.config={self._write_jaas()}",)
        command = zookeeper_command(jvm_options)
        if command is None:
            raise RuntimeError("ZooKeeper cannot run here: Java or Debian's zookeeper jars are missing")
        config = self._write_config()
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*command, str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            if self.serves():
                self.start_seconds = time.monotonic() - started
                return True
            time.sleep(0.05)
        self.stop()
        return False

    def _write_config(self) -> Path:
        data_dir = self.base_dir / f"data-{self.port}"
        data_dir.mkdir(parents=True, exist_ok=True)
        config = self.base_dir / "zoo.cfg"
        if self.tls is None:
            port = [f"clientPort={self.port}", "clientPortAddress=127.0.0.1"]
        else:  # a TLS port only: nothing reaches this server in the clear
            tls = self.tls
            port = [
                f"secureClientPort={self.port}",
                "secureClientPortAddress=127.0.0.1",
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                f"ssl.keyStore.location={tls.key_store}",
                f"ssl.keyStore.password={tls.password}",
                f"ssl.keyStore.type={tls.store_type}",
                f"ssl.trustStore.location={tls.trust_store}",
                f"ssl.trustStore.password={tls.password}",
                f"ssl.trustStore.type={tls.store_type}",
                "ssl.clientAuth=want",
            ]
        if self.sasl_users:
            port.append("authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
        if self.require_sasl:
            port += ["enforce.auth.enabled=true", "enforce.auth.schemes=sasl"]
        config.write_text(
            "\n".join(
                [
                    f"tickTime={TICK_TIME_MS}",
                    f"dataDir={data_dir}",
                    *port,
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=srvr,ruok",
                    # every test connects from 127.0.0.1: no per-address connection limit
                    "maxClientCnxns=0",
                    # throwaway data: no fsync per write, and 1 MB log files instead of 64 MB
                    "forceSync=no",
                    "preAllocSize=1024",
                    "",
                ]
            )
        )
        return config

    def _write_jaas(self) -> Path:
        """The server's JAAS file: its `Server` section holds the users DIGEST-MD5 accepts."""
        users = " ".join(f'user_{name}="{password}"' for name, password in self.sasl_users.items())
        jaas = self.base_dir / "zookeeper-jaas.conf"
        jaas.write_text(
            f"Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required {users};\n}};\n"
        )
        return jaas


def four_letter_word(
    connect_string: str, word: str, timeout: float = 1.0, context: ssl.SSLContext | None = None
) -> str:
    """Send a four-letter word and return the answer ('' when the server does not answer)."""
    host, _, port = connect_string.partition("/")[0].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as plain:
            sock = context.wrap_socket(plain, server_hostname=host) if context is not None else plain
            sock.sendall(word.encode("ascii"))
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return ""
    return b"".join(chunks).decode("utf-8", "replace")


def expire_session(client: KazooClient, connect_string: str, timeout: float = 15.0) -> None:
    """End `client`'s session on the server, as a pause past the session timeout would.

    A second connection takes the session over (same id and password) and closes it: the server deletes
    the session's ephemeral znodes at once. `client` learns it when it reconnects (LOST), and kazoo opens
    a new session for it; this returns once that new session is connected. Taking over can lose a race
    with `client` reconnecting first, hence a few attempts (as kazoo's own test harness did).
    """
    lost = threading.Event()
    reconnected = threading.Event()

    def on_state(state: KazooState) -> bool:
        if state == KazooState.LOST:
            lost.set()
        elif state == KazooState.CONNECTED and lost.is_set():
            reconnected.set()
            return True  # done: kazoo removes the listener
        return False

    client.add_listener(on_state)
    session_id, password = client.client_id
    deadline = time.monotonic() + timeout
    while not lost.is_set() and time.monotonic() < deadline:
        impostor = KazooClient(hosts=connect_string, client_id=(session_id, password), timeout=2.0)
        impostor.start(timeout=5.0)
        impostor.stop()
        impostor.close()
        lost.wait(2.0)
    if not reconnected.wait(max(0.0, deadline - time.monotonic())):
        client.remove_listener(on_state)
        raise TimeoutError(f"session 0x{session_id:x} was not expired and replaced within {timeout}s")


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """One ZooKeeper for the whole test session (tests keep apart through `zookeeper_connect`)."""
    if zookeeper_command() is None:
        missing(
            f"ZooKeeper is not installed ({ZOOKEEPER_JAR} and java are needed; "
            "scripts/install-system-deps.sh installs Debian's zookeeper)"
        )
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zookeeper_connect(zookeeper_server: ZooKeeperServer) -> str:
    """`zookeeper.connect` for one test: the shared server with a fresh chroot (created by the client)."""
    return f"{zookeeper_server.connect_string}/odradek-test-{uuid.uuid4().hex[:12]}"
