"""Kafka's ControllerChannelManager: one connection per live broker, to its inter-broker listener
(with its TLS and SASL: cluster/inter_broker_connection.py).

Each broker has its own queue and sender task (Kafka's RequestSendThread): requests go in the order
they were queued, one in flight at a time; a broker that cannot be reached keeps its queue while the
sender reconnects with backoff (the request is sent again on the new connection, as Kafka does), and
everything queued for a broker is dropped when it leaves the cluster. Errors in responses are logged:
the controller does not wait on them (a broker that refuses is fenced, or will be told again), but its
``on_response`` hears every answer (the LeaderAndIsr answers name the replicas on failed log dirs).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from odradek.cluster.controller.requests import BrokerRequest
from odradek.cluster.inter_broker_connection import (
    PLAINTEXT,
    InterBrokerAuthenticationError,
    InterBrokerSecurity,
    open_inter_broker_connection,
    round_trip,
)
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.schema import Request, Response
from odradek.tasks.cancelling import cancel_and_wait

logger = logging.getLogger(__name__)

#: Told of each answer a broker gave: its id, the request and the response.
ResponseListener = Callable[[int, Request, Response], None]

#: Kafka's reconnect.backoff.ms and reconnect.backoff.max.ms defaults (a little lower at the start,
#: so a broker starting a moment after the controller is reached quickly).
RECONNECT_BACKOFF_S = 0.05
RECONNECT_BACKOFF_MAX_S = 1.0
#: How long to wait for a connection (controller.socket.timeout.ms) and for an answer before
#: reconnecting (request.timeout.ms): their defaults.
CONNECT_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 30.0


class BrokerChannel:
    """The queue and sender task of one broker."""

    def __init__(
        self,
        broker_id: int,
        host: str,
        port: int,
        client_id: str,
        security: InterBrokerSecurity = PLAINTEXT,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        on_response: ResponseListener | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.on_response = on_response
        self.host = host
        self.port = port
        self.client_id = client_id
        #: The inter-broker listener's TLS and SASL (a refused login is retried like a failed connection).
        self.security = security
        self.request_timeout_s = request_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.queue: asyncio.Queue[BrokerRequest] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._correlation_id = 0
        #: How many requests were answered (for logs and tests).
        self.sent = 0
        #: A request taken from the queue is being sent or waits for its answer.
        self.in_flight = False

    @property
    def idle(self) -> bool:
        """Everything queued so far was answered."""
        return self.queue.empty() and not self.in_flight

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"controller-to-{self.broker_id}"
        )

    def cancel(self) -> None:
        """Stop sending at once; what is queued is dropped (the broker left)."""
        if self._task is not None:
            self._task.cancel()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)

    async def _run(self) -> None:
        backoff = RECONNECT_BACKOFF_S
        writer: asyncio.StreamWriter | None = None
        reader: asyncio.StreamReader | None = None
        try:
            while True:
                item = await self.queue.get()
                self.in_flight = True
                while True:  # the same request until it is answered
                    try:
                        if writer is None or reader is None:
                            reader, writer = await self._connect()
                        response = await asyncio.wait_for(
                            self._exchange(reader, writer, item), self.request_timeout_s
                        )
                        backoff = RECONNECT_BACKOFF_S
                        self.sent += 1
                        self.in_flight = False
                        _log_errors(self.broker_id, item, response)
                        if self.on_response is not None:
                            self.on_response(self.broker_id, item.request, response)
                        break
                    except (OSError, asyncio.IncompleteReadError, TimeoutError, CodecError) as error:
                        current = asyncio.current_task()
                        if current is not None and current.cancelling():
                            # stop() cancelled the wait just as the connection failed: wait_for then
                            # raises the connection's error and the cancellation would be lost.
                            raise asyncio.CancelledError from error
                        # a refused login or certificate is a misconfiguration, not a passing outage
                        logger.log(
                            logging.WARNING
                            if isinstance(error, InterBrokerAuthenticationError)
                            else logging.INFO,
                            "Controller's connection to broker %d (%s:%d) failed (%s); retrying in %.2fs",
                            self.broker_id,
                            self.host,
                            self.port,
                            error,
                            backoff,
                        )
                        if writer is not None:
                            writer.close()
                        reader = writer = None
                        await asyncio.sleep(backoff)
                        backoff = min(backoff * 2, RECONNECT_BACKOFF_MAX_S)
        finally:
            if writer is not None:
                writer.close()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.wait_for(
            open_inter_broker_connection(self.host, self.port, self.security, self.client_id),
            self.connect_timeout_s,
        )

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, item: BrokerRequest
    ) -> Any:
        self._correlation_id += 1
        return await round_trip(
            reader, writer, item.request, item.version, self._correlation_id, self.client_id
        )


class ControllerChannelManager:
    def __init__(
        self,
        controller_id: int,
        security: InterBrokerSecurity = PLAINTEXT,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        on_response: ResponseListener | None = None,
    ) -> None:
        """``on_response``: told of every answer (the broker, the request, the response), on the loop;
        the controller queues the LeaderAndIsr answers as events (Kafka's LeaderAndIsrResponseReceived)."""
        self.client_id = f"controller-{controller_id}"
        self.on_response = on_response
        self.security = security
        self.request_timeout_s = request_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.channels: dict[int, BrokerChannel] = {}

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        """Open a channel to a broker that joined (a bounced broker's old one is replaced)."""
        old = self.channels.get(broker_id)
        if old is not None and (old.host, old.port) == (host, port):
            return
        if old is not None:
            self._drop(broker_id)
        channel = BrokerChannel(
            broker_id,
            host,
            port,
            self.client_id,
            self.security,
            self.request_timeout_s,
            self.connect_timeout_s,
            self.on_response,
        )
        self.channels[broker_id] = channel
        channel.start()

    def remove_broker(self, broker_id: int) -> None:
        """A broker left: what was queued for it is dropped (the next controller tells it again)."""
        self._drop(broker_id)

    def send(self, broker_id: int, item: BrokerRequest) -> None:
        channel = self.channels.get(broker_id)
        if channel is None:
            logger.warning(
                "Controller has no channel to broker %d: %s dropped", broker_id, type(item.request).__name__
            )
            return
        channel.queue.put_nowait(item)

    async def deliver_queued(self, timeout: float, skip: int | None = None) -> None:
        """Wait (at most `timeout` seconds) until every broker but `skip` has answered what was queued
        for it: a controller stepping down with its broker's orderly shutdown hands over decisions it
        wrote rather than leaving brokers on different epochs until the next controller repeats them
        (Kafka's controller, stopped near the end of its broker's shutdown, keeps sending meanwhile)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while any(not c.idle for b, c in self.channels.items() if b != skip):
            if asyncio.get_running_loop().time() >= deadline:
                return
            await asyncio.sleep(0.005)

    async def close(self) -> None:
        """Stop every sender and drop what they had queued (on resignation: nothing more is sent)."""
        channels, self.channels = self.channels, {}
        for channel in channels.values():
            await channel.stop()

    def _drop(self, broker_id: int) -> None:
        channel = self.channels.pop(broker_id, None)
        if channel is not None:
            channel.cancel()


def _log_errors(broker_id: int, item: BrokerRequest, response: Any) -> None:
    codes = [getattr(response, "error_code", 0)]
    for errors in (
        getattr(response, "partition_errors", []),
        *(t.partition_errors for t in getattr(response, "topics", [])),
    ):
        # A partition already at that leader epoch answers STALE_CONTROLLER_EPOCH: a new controller
        # repeats every leadership on purpose, and Kafka's controller ignores these answers too.
        codes += [p.error_code for p in errors if p.error_code != ErrorCode.STALE_CONTROLLER_EPOCH]
    failed = [c for c in codes if c]
    if failed:
        logger.warning(
            "Broker %d answered %s with errors %s",
            broker_id,
            type(item.request).__name__,
            sorted(set(failed)),
        )
