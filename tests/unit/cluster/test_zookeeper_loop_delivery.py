"""kazoo's callbacks, from kazoo's threads, reach the broker's event loop (and nothing once it closed)."""

from __future__ import annotations

import asyncio
import threading

from odradek.cluster.zookeeper.loop_delivery import deliver_on_loop


def test_values_from_another_thread_are_delivered_on_the_loop_in_order() -> None:
    async def main() -> list[tuple[int, bool]]:
        loop = asyncio.get_running_loop()
        received: list[tuple[int, bool]] = []
        done = asyncio.Event()

        def on_value(value: int) -> None:
            received.append((value, threading.current_thread() is threading.main_thread()))
            if value == 99:
                done.set()

        deliver = deliver_on_loop(loop, on_value)
        thread = threading.Thread(target=lambda: [deliver(n) for n in range(100)])
        thread.start()
        await asyncio.wait_for(done.wait(), 5)
        thread.join()
        return received

    assert asyncio.run(main()) == [(n, True) for n in range(100)]


def test_a_value_after_the_loop_closed_is_dropped() -> None:
    loop = asyncio.new_event_loop()
    deliver = deliver_on_loop(loop, lambda value: None)
    loop.close()
    deliver("a watch firing during shutdown")  # no RuntimeError from a closed loop
