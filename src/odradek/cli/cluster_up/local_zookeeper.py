"""A standalone Apache ZooKeeper for a development cluster (`odradek cluster up`): Debian's jars, run
by Java, its data in the cluster's directory.

`scripts/install-system-deps.sh` installs Debian's `zookeeper` package; only its jars are used: the
server jar (its manifest's Class-Path names the jars it needs) and an slf4j binding, so that a server
that fails to start says why in its log.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from odradek.cli.cluster_up.child_process import start_child
from odradek.cli.cluster_up.java import find_java

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
SLF4J_SIMPLE_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
#: Short ticks so that sessions may be short (a session timeout is at least 2 ticks).
TICK_TIME_MS = 500


class ZooKeeperUnavailableError(Exception):
    """Java or the ZooKeeper jars are missing, or the server did not start; the message says which."""


def zookeeper_command() -> list[str]:
    java = find_java()
    if java is None:
        raise ZooKeeperUnavailableError("Java is not installed: run scripts/install-system-deps.sh")
    if not ZOOKEEPER_JAR.exists():
        raise ZooKeeperUnavailableError(
            f"{ZOOKEEPER_JAR} is missing: run scripts/install-system-deps.sh (Debian's zookeeper package)"
        )
    classpath = [str(ZOOKEEPER_JAR)] + ([str(SLF4J_SIMPLE_JAR)] if SLF4J_SIMPLE_JAR.exists() else [])
    return [
        java,
        "-Xms32m",
        "-Xmx256m",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        os.pathsep.join(classpath),
        MAIN_CLASS,
    ]


def start_zookeeper(directory: Path, port: int, timeout: float = 60.0) -> subprocess.Popen[bytes]:
    """Start ZooKeeper on 127.0.0.1:`port`, its data and log in `directory`; returns once it serves."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "zoo.cfg"
    config.write_text(
        "\n".join(
            [
                f"tickTime={TICK_TIME_MS}",
                f"dataDir={directory / 'data'}",
                f"clientPort={port}",
                "clientPortAddress=127.0.0.1",
                "admin.enableServer=false",
                "4lw.commands.whitelist=srvr,ruok",
                "maxClientCnxns=0",
                "",
            ]
        )
    )
    # ZooKeeper must outlive the brokers' controlled shutdowns: the command stops it last
    process = start_child([*zookeeper_command(), str(config)], directory / "zookeeper.log")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ZooKeeperUnavailableError(f"ZooKeeper exited: see {directory / 'zookeeper.log'}")
        if _serves(port):
            return process
        time.sleep(0.1)
    process.terminate()
    raise ZooKeeperUnavailableError(f"ZooKeeper did not serve within {timeout:.0f}s: see its log")


def _serves(port: int) -> bool:
    """ZooKeeper's `srvr` four-letter word answers once the server serves."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"srvr")
            return b"Mode:" in sock.recv(4096)
    except OSError:
        return False
