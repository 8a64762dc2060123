"""#17: a leader that crashed, lost its unflushed tail and registered again while no controller
watched must not lead with that shorter log.

Found by the fault harness (170 acknowledged values lost): a broker that was the controller and led
partitions was killed, lost its tail, and registered again before the next controller read
/brokers/ids. That controller found it live and named in the partition state as leader, sent it the
same leader epoch, and the followers truncated to its shorter log. Here the gap between controllers
is made on purpose, on test_replication's cluster: /controller is taken by a broker id that does not
exist while the leader dies and comes back, then given up.
"""

from __future__ import annotations

import json

from kazoo.client import KazooClient

from odradek.storage.files import CLEAN_SHUTDOWN_MARKER
from tests.integration.cluster.test_replication import (  # noqa: F401 - cluster and zk_view are fixtures
    BROKER_IDS,
    PATIENCE_S,
    Cluster,
    _consume_all,
    _produce_all,
    _state,
    cluster,
    zk_view,
)
from tests.support.interop import wait_until

TOPIC = "unseen-restart"
#: /controller while no broker may be the controller.
NOBODY = 99


def _controller_in_zookeeper(replicated: Cluster, zk: KazooClient) -> int:
    path = f"{replicated.chroot}/controller"
    if not zk.exists(path):
        return -1
    data, _ = zk.get(path)
    return int(json.loads(data)["brokerid"])


def test_a_leader_that_lost_its_tail_and_returned_between_controllers_does_not_lead_again(
    cluster: Cluster,  # noqa: F811 - the fixture
    zk_view: KazooClient,  # noqa: F811 - the fixture
) -> None:
    cluster.create(TOPIC, led_by_controller=False)
    wait_until(lambda: len(_state(cluster, TOPIC)["isr"]) == 3, PATIENCE_S, "the whole ISR", 0.1)
    leader = int(_state(cluster, TOPIC)["leader"])

    acknowledged = [f"acked-{i}".encode() for i in range(300)]
    for chunk in range(0, len(acknowledged), 100):  # a few batches: the cut below takes some of them
        _produce_all(cluster, TOPIC, acknowledged[chunk : chunk + 100])
    assert _state(cluster, TOPIC)["leader"] == leader

    # No controller from here: the leader's death and return go unseen
    controller_path = f"{cluster.chroot}/controller"
    nobody = json.dumps({"version": 1, "brokerid": NOBODY, "timestamp": "0"}).encode()
    transaction = zk_view.transaction()
    transaction.delete(controller_path)
    transaction.create(controller_path, nobody)
    transaction.commit()

    # The leader crashes and loses the newest half of its segment (never flushed)
    cluster.brokers[leader].kill()
    [segment, *_] = sorted(cluster.partition_dir(leader, TOPIC).glob("*.log"), reverse=True)
    with open(segment, "r+b") as log:
        log.truncate(segment.stat().st_size // 2)
    (cluster.brokers[leader].data_dir / CLEAN_SHUTDOWN_MARKER).unlink(missing_ok=True)
    # its session's end, as ZooKeeper would at expiry, and its return
    registration = f"{cluster.chroot}/brokers/ids/{leader}"
    zk_view.delete(registration)
    cluster.brokers[leader].start()
    wait_until(
        lambda: zk_view.exists(registration) is not None, PATIENCE_S, "the leader registered again", 0.1
    )

    # A controller again: it finds the returned broker live and named leader in the partition state
    zk_view.delete(controller_path)
    wait_until(
        lambda: _controller_in_zookeeper(cluster, zk_view) in BROKER_IDS, PATIENCE_S, "a new controller", 0.1
    )
    more = [f"after-{i}".encode() for i in range(20)]
    _produce_all(cluster, TOPIC, more)
    read = _consume_all(cluster, TOPIC, len(acknowledged) + len(more))
    present = set(read)
    lost = [v for v in acknowledged if v not in present]
    assert not lost, f"{len(lost)} acknowledged values lost, from {lost[0]!r}"
    assert read == acknowledged + more
    assert _state(cluster, TOPIC)["leader"] != leader
    # the returned broker follows, with nothing it should not have, and rejoins the ISR
    wait_until(lambda: len(_state(cluster, TOPIC)["isr"]) == 3, PATIENCE_S, "it back in sync", 0.1)
