"""A real Apache ZooKeeper for the cluster tests: Debian's jars, run by Java on a free loopback port.

`scripts/install-system-deps.sh` installs Debian's `zookeeper` package; only its jars are used here.
`ZooKeeperServer` writes a throwaway `zoo.cfg` (tickTime=500, so sessions can be as short as 1 s and
expire quickly; admin server off; only the `srvr` and `ruok` four-letter words) and runs
`QuorumPeerMain` standalone until `srvr` answers that it serves.

Fixtures: `zookeeper_server` (one server for the session) and `zookeeper_connect` (a connect string
with a fresh chroot per test, not yet created, so tests never see each other's znodes). Where Java or
the jars are missing the tests skip, and fail under CI. `expire_session` ends a kazoo client's session
on the server, as a long pause would: its ephemeral znodes go and the client gets a new session.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
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
#: A small heap and the client JIT only: start-up time matters more than throughput on two shared cores.
JVM_OPTIONS = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def zookeeper_command() -> list[str] | None:
    """The `java ... QuorumPeerMain` command without its zoo.cfg, or None where Java or the jar is missing."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if java is None or not Path(java).exists() or not ZOOKEEPER_JAR.exists():
        return None
    classpath = [str(ZOOKEEPER_JAR)]
    if SLF4J_SIMPLE_JAR.exists():
        classpath.append(str(SLF4J_SIMPLE_JAR))
    return [
        java,
        *JVM_OPTIONS,
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

    def __init__(self, base_dir: Path, port: int | None = None) -> None:
        self.base_dir = base_dir
        self.port = port or free_port()
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
        return "Mode: standalone" in four_letter_word(self.connect_string, "srvr")

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def _start_once(self, timeout: float) -> bool:
        command = zookeeper_command()
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
        config.write_text(
            "\n".join(
                [
                    f"tickTime={TICK_TIME_MS}",
                    f"dataDir={data_dir}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
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


def four_letter_word(connect_string: str, word: str, timeout: float = 1.0) -> str:
    """Send a four-letter word and return the answer ('' when the server does not answer)."""
    host, _, port = connect_string.partition("/")[0].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
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
