"""bench/scale_probes.py's producer loop: what it measures is the brokers, not librdkafka's queues.

librdkafka sends each partition's records in a ProduceRequest of their own, at most 5 in flight per
broker connection for an idempotent producer, and a broker answers a connection's requests one at a
time; one producer writing a record to each of 1,000 partitions every 0.5 s queued records faster than
its three connections carried them, and some partitions' first record waited in librdkafka for minutes
(docs/bench/kafka-scale.md). These run the loop against a port nobody listens on: nothing is ever
acknowledged, so what stays queued is what the loop queued."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.support.broker_process import REPO
from tests.support.interop import wait_until
from tests.support.ports import free_port


@pytest.fixture(scope="module", autouse=True)
def bench_on_path() -> Iterator[None]:
    sys.path[:0] = [str(REPO), str(REPO / "bench")]
    yield
    sys.path.remove(str(REPO))
    sys.path.remove(str(REPO / "bench"))


def test_producer_loop_queues_no_second_record_while_a_partitions_first_is_unacknowledged() -> None:
    from bench.scale_probes import ProducerLoop

    loop = ProducerLoop(f"127.0.0.1:{free_port()}", "scale", 40)
    loop.start()
    try:
        wait_until(lambda: loop.rounds >= 3, 30, "three rounds of the loop")
    finally:
        loop.stopping.set()
        loop.join(30)
    # (not `len(producer)`: librdkafka counts its unserved events there too, e.g. "all brokers down")
    assert loop.unacknowledged == set(range(40)) and loop.skipped == 0
    rounds = loop.rounds
    # every pass after the first held each partition back (the last pass counted may be cut short)
    assert loop.held_back >= 40 * (rounds - 2), f"only {loop.held_back} sends held back in {rounds} rounds"


def test_producer_loop_spreads_many_partitions_over_several_producers() -> None:
    from bench.scale_probes import PARTITIONS_PER_PRODUCER, ProducerLoop

    loop = ProducerLoop(f"127.0.0.1:{free_port()}", "scale", 4 * PARTITIONS_PER_PRODUCER)
    try:
        assert len(loop.producers) == 4
        assert {loop.producer_of(p) for p in range(4 * PARTITIONS_PER_PRODUCER)} == set(loop.producers)
    finally:
        loop.close()
