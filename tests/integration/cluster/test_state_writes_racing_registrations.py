"""A partition state the controller writes while a broker it names registers again (it restarted,
maybe without its unflushed tail), with a real ZooKeeper and fake brokers.

The next controller finds the restarts no controller saw by comparing each named broker's
registration (its czxid) with the state's last write (its mzxid): a state written after the new
registration hides it. So no state may name a broker whose registration changed since the controller
last read the registrations: the controller's write fails if any broker registered meanwhile, and the
controller then handles that broker's change before it decides again. Each test holds the bounce the
way a controller that stops right after the write would leave it (on its queue), then lets the next
controller take over: the restarted broker must not stay in the ISR.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import pytest

from odradek.cluster.controller import broker_changes
from odradek.cluster.controller.config import ControllerConfig
from odradek.cluster.controller.controller import KafkaController
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.zookeeper import brokers, paths, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode
from odradek.protocol.error_codes import ErrorCode
from tests.integration.cluster.test_controller_alter_partition import Setup, _until, change, run


def _bounce_before_the_first_write(monkeypatch: pytest.MonkeyPatch, s: Setup, broker_id: int) -> list[int]:
    """Broker `broker_id` registers again (a new czxid) just before the controller's first write of
    t-0's state, after the controller decided it: the list gets its new broker epoch."""
    real = topics.update_partition_state
    bounced: list[int] = []

    def bounce_then_write(*args: object, **kwargs: object) -> int | None:
        if args[1:3] == ("t", 0) and not bounced:
            s.zk.kazoo.delete(paths.broker(broker_id))
            bounced.append(brokers.register_broker(s.zk, s.fakes[broker_id].registration()))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(topics, "update_partition_state", bounce_then_write)
    return bounced


class _BrokerChanges:
    """Stands in for broker_changes.on_broker_change (set before the controller starts, which takes
    it): broker changes are handled as usual until `hold`, then only `handled` more; the later ones
    wait on the controller's queue (as for a controller that stops before it gets to them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._real = broker_changes.on_broker_change
        self._left: int | None = None
        self.held: list[ControllerTerm] = []
        monkeypatch.setattr(broker_changes, "on_broker_change", self._on_broker_change)

    def hold(self, handled: int = 0) -> None:
        self._left = handled

    async def _on_broker_change(self, term: ControllerTerm) -> None:
        if self._left is None:
            await self._real(term)
        elif self._left > 0:
            self._left -= 1
            await self._real(term)
        else:
            self.held.append(term)


async def _next_controllers_state(s: Setup) -> PartitionStateZnode:
    """Stop the controller (its /controller goes with its session), let another take over from
    ZooKeeper, and return t-0's state once it has handled its failover."""
    await s.controller.stop()
    s.controller.zk.close()
    successor = KafkaController(s.connect(), ControllerConfig(broker_id=3))
    await successor.start()
    try:
        await _until(lambda: successor.is_active)
        await successor.wait_idle()
        return (await s.state())[0]
    finally:
        await successor.stop()


def test_an_isr_change_written_as_a_member_registers_again_keeps_its_restart_in_sight(
    connect_zk: Callable[[], ZooKeeperClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    changes = _BrokerChanges(monkeypatch)

    async def scenario(s: Setup) -> None:
        changes.hold()
        bounced = _bounce_before_the_first_write(monkeypatch, s, 2)
        # leader 1 drops 3 and keeps 2, as it last saw broker 2 fetch (its previous registration)
        kept = replace(change((1, 2), 0), member_epochs=(-1, s.epochs[2]))
        await s.alter(kept)
        assert bounced, "broker 2 did not register again during the write"
        znode = await _next_controllers_state(s)
        assert 2 not in znode.isr, f"broker 2 restarted and is still in the ISR {list(znode.isr)}"

    run(connect_zk, scenario)


def test_a_failures_isr_shrink_written_as_a_member_registers_again_keeps_its_restart_in_sight(
    connect_zk: Callable[[], ZooKeeperClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    changes = _BrokerChanges(monkeypatch)

    async def scenario(s: Setup) -> None:
        changes.hold(handled=1)  # broker 3's departure is handled
        bounced = _bounce_before_the_first_write(monkeypatch, s, 2)
        await asyncio.to_thread(s.zk.kazoo.delete, paths.broker(3))
        await _until(lambda: len(changes.held) > 0)  # broker 2's bounce waits behind it
        await s.controller.wait_idle()
        assert bounced, "broker 2 did not register again during the write"
        znode = await _next_controllers_state(s)
        assert 2 not in znode.isr, f"broker 2 restarted and is still in the ISR {list(znode.isr)}"

    run(connect_zk, scenario)


def test_a_bounce_found_at_the_write_is_handled_at_once_and_the_isr_change_is_out_of_date(
    connect_zk: Callable[[], ZooKeeperClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario(s: Setup) -> None:
        bounced = _bounce_before_the_first_write(monkeypatch, s, 2)
        kept = replace(change((1, 2), 0), member_epochs=(-1, s.epochs[2]))
        # The controller handled the bounce before answering: broker 2 left the ISR (a failure, a
        # new leader epoch the leader hears of in LeaderAndIsr), so the proposal is out of date.
        assert await s.alter(kept) == (ErrorCode.NONE, [ErrorCode.INVALID_UPDATE_VERSION])
        context = s.controller.context
        assert context is not None and context.live_brokers[2].epoch == bounced[0]
        znode, _ = await s.state()
        assert (znode.leader, list(znode.isr)) == (1, [1, 3])

    run(connect_zk, scenario)
