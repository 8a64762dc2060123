"""SIGTERM while a broker starts: a cluster member serves before its start ends (registered, known to
the controller and to clients), so a SIGTERM then must not kill it on the spot, unlogged, as the
default action did. The start completes and the broker stops as it would have once started; a second
SIGTERM during the start exits at once. One that comes while the broker waits for an old registration
of its id to go ends the start there: nothing serves yet."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.ports import free_port
from tests.support.zookeeper import ZooKeeperServer

WAIT_S = 60


def _broker_waiting_for_zookeeper(tmp_path: Path, port: int) -> BrokerProcess:
    """A broker whose ZooKeeper does not answer yet: its start waits there (kazoo retries)."""
    broker = BrokerProcess(
        tmp_path / "broker",
        {"zookeeper.connect": f"127.0.0.1:{port}", "zookeeper.connection.timeout.ms": "120000"},
    )
    broker.start(wait=False)
    wait_until(lambda: "Connecting to 127.0.0.1" in broker.log_text(), WAIT_S, "the broker trying ZooKeeper")
    return broker


def test_a_sigterm_during_the_start_stops_the_broker_gracefully_once_started(tmp_path: Path) -> None:
    port = free_port()
    broker = _broker_waiting_for_zookeeper(tmp_path, port)
    zookeeper = ZooKeeperServer(tmp_path / "zookeeper", port=port)
    try:
        assert broker.process is not None
        broker.process.send_signal(signal.SIGTERM)
        wait_until(lambda: "SIGTERM during start-up" in broker.log_text(), WAIT_S, "the SIGTERM logged")
        assert broker.process.poll() is None
        (tmp_path / "zookeeper").mkdir()
        zookeeper.start()
        assert broker.process.wait(WAIT_S) == 0
        log = broker.log_path.read_text()
        assert log.index("broker started") < log.index("broker stopping") < log.index("broker stopped"), log
    finally:
        broker.kill()
        zookeeper.stop()


def test_a_second_sigterm_during_the_start_exits_at_once(tmp_path: Path) -> None:
    broker = _broker_waiting_for_zookeeper(tmp_path, free_port())
    try:
        assert broker.process is not None
        broker.process.send_signal(signal.SIGTERM)
        wait_until(lambda: "SIGTERM during start-up" in broker.log_text(), WAIT_S, "the SIGTERM logged")
        started = time.monotonic()
        broker.process.send_signal(signal.SIGTERM)
        assert broker.process.wait(WAIT_S) == 128 + signal.SIGTERM
        assert time.monotonic() - started < 10
        assert "SIGTERM again during start-up: exiting now" in broker.log_text()
    finally:
        broker.kill()


def test_a_sigterm_while_the_broker_waits_for_an_old_registration_ends_the_start_unregistered(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    """The wait for a predecessor's /brokers/ids/<id> to go ran in a worker thread that nothing could
    wake: a SIGTERM was held for up to 1.5 session timeouts, then the broker registered, joined the
    cluster and made a controlled shutdown (or, the id still held, exited as a failed start). Nothing
    serves yet during that wait, so the start now ends there, cleanly, without registering."""
    holder = ZooKeeperClient.connect(
        zookeeper_connect, session_timeout_ms=10_000, connection_timeout_ms=10_000
    )
    try:
        holder.ensure_persistent_paths()
        holder.kazoo.create(paths.broker(1), b"{}", ephemeral=True)  # held by a session that stays
        broker = BrokerProcess(
            tmp_path / "broker",
            {"zookeeper.connect": zookeeper_connect, "zookeeper.session.timeout.ms": "10000"},
        )
        broker.start(wait=False)
        try:
            wait_until(lambda: "waiting up to" in broker.log_text(), WAIT_S, "the broker waiting")
            assert broker.process is not None
            broker.process.send_signal(signal.SIGTERM)
            assert broker.process.wait(WAIT_S) == 0
            log = broker.log_path.read_text()
            assert "registered in ZooKeeper as broker 1" not in log and "already registered" not in log
            assert "controlled shutdown" not in log and "broker started" not in log
            assert log.index("SIGTERM during start-up") < log.index("odradek.broker broker stopped"), log
        finally:
            broker.kill()
        assert holder.read(paths.broker(1)) is not None  # still the holder's
    finally:
        holder.close()
