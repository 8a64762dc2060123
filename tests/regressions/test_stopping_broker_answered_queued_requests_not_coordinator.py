"""A stopping broker stopped its group coordinator, then still handled the requests queued on its
connections: a group it coordinated got NOT_COORDINATOR from the broker that led its partition (seen
as librdkafka's pipelined OffsetCommits during a SIGTERM, which it then retried out of order). As
Kafka's broker (stopProcessingRequests before the coordinators shut down), queued requests are now
left unanswered and the connection closes."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.raw_client import ConnectionClosedError, RawClient

GROUP = "stopping"


def test_a_stopping_broker_answers_no_queued_request_not_coordinator(tmp_path: Path) -> None:
    # the first join of a new group waits out the initial rebalance delay: a request in flight
    broker = BrokerProcess(tmp_path / "broker", {"group.initial.rebalance.delay.ms": "20000"}).start()
    try:
        with RawClient(broker.port, timeout=30) as client:
            fetch = OffsetFetchRequest(group_id=GROUP, topics=None)
            wait_until(
                lambda: client.request(fetch, 3).error_code == ErrorCode.NONE,
                60,
                "the group coordinator loaded",
                interval=0.1,
            )
            join = JoinGroupRequest(
                group_id=GROUP,
                session_timeout_ms=30_000,
                rebalance_timeout_ms=30_000,
                member_id="",
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
            )
            client.send(join, 3)
            client.send(fetch, 3)  # queued behind the join
            time.sleep(0.5)  # both frames reach the broker before it is told to stop
            assert broker.process is not None
            broker.process.send_signal(signal.SIGTERM)
            client.receive(11, 3)  # the join under way is answered (its group is unloaded)
            try:
                _, queued = client.receive(9, 3)
            except (ConnectionClosedError, OSError):
                return  # unanswered: the client asks again elsewhere
            assert queued.error_code != ErrorCode.NOT_COORDINATOR
    finally:
        broker.stop()
