"""SIGTERM while a broker starts: a cluster member serves before its start ends (registered, known to
the controller and to clients), so a SIGTERM then must not kill it on the spot, unlogged, as the
default action did. The start completes and the broker stops as it would have once started; a second
SIGTERM during the start exits at once."""

from __future__ import annotations

import signal
import time
from pathlib import Path

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
