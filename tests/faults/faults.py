"""The faults and their seeded schedule.

A schedule is a list of fault kinds drawn from a seeded `random.Random`; each fault picks its target
(the leader of a random partition, the controller, a follower) from the cluster as it is at that
moment, with the same generator, so one seed replays the same run as far as the cluster lets it.
Every fault is undone before the next one starts (restart, SIGCONT, heal), and the harness then waits
for the cluster to have a leader for every partition again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odradek.storage.files import CLEAN_SHUTDOWN_MARKER
from tests.faults.cluster import SESSION_TIMEOUT_MS, TOPIC, FaultCluster

#: Past the session timeout, so that ZooKeeper expires the paused or cut broker's session.
PAST_SESSION_TIMEOUT_S = SESSION_TIMEOUT_MS / 1000 + 3
#: How long a killed broker stays down before its restart.
DOWN_S = 2.0


@dataclass(frozen=True)
class Fault:
    kind: str
    inject: Callable[[FaultCluster, random.Random], dict[str, Any]]


def schedule(seed: int, count: int) -> list[str]:
    """`count` fault kinds, every kind used, in an order given by `seed`."""
    rng = random.Random(seed)
    kinds = list(FAULTS)
    chosen = [kinds[i % len(kinds)] for i in range(count)]
    rng.shuffle(chosen)
    return chosen


def inject(kind: str, cluster: FaultCluster, rng: random.Random) -> dict[str, Any]:
    """Inject one fault and undo it; returns what was done, for the report."""
    return FAULTS[kind].inject(cluster, rng)


# ----- the faults --------------------------------------------------------------------------------


def kill_leader(cluster: FaultCluster, rng: random.Random) -> dict[str, Any]:
    """SIGKILL the leader of a random partition, restart it after a short while."""
    partition, leader = _random_leader(cluster, rng)
    cluster.kill(leader)
    time.sleep(DOWN_S)
    cluster.restart(leader)
    return {"broker": leader, "partition": partition}


def kill_controller(cluster: FaultCluster, rng: random.Random) -> dict[str, Any]:
    controller = cluster.controller()
    cluster.kill(controller)
    time.sleep(DOWN_S)
    cluster.restart(controller)
    return {"broker": controller}


def clean_restart(cluster: FaultCluster, rng: random.Random) -> dict[str, Any]:
    """SIGTERM (controlled shutdown) and start again; a leader half of the time."""
    broker = _random_leader(cluster, rng)[1] if rng.random() < 0.5 else rng.choice(cluster.ids)
    cluster.terminate(broker)
    cluster.restart(broker)
    return {"broker": broker}


def pause(cluster: FaultCluster, rng: random.Random) -> dict[str, Any]:
    """SIGSTOP a leader past the ZooKeeper session timeout, then SIGCONT: it must find itself fenced."""
    partition, leader = _random_leader(cluster, rng)
    cluster.pause(leader)
    try:
        expired = _session_expiry(cluster, leader)
    finally:
        cluster.resume(leader)
    return {"broker": leader, "partition": partition, "session_expired_after_s": expired}


def isolate(cluster: FaultCluster, rng: random.Random) -> dict[str, Any]:
    """Cut a leader off from ZooKeeper and the other brokers while clients still reach it."""
    partition, leader = _random_leader(cluster, rng)
    cluster.proxies.isolate(leader)
    try:
        expired = _session_expiry(cluster, leader)
        reached = _answers_clients(cluster, leader)
    finally:
        cluster.proxies.heal()
    return {
        "broker": leader,
        "partition": partition,
        "session_expired_after_s": expired,
        "clients_reach_it": reached,
    }


def lose_follower_tail(cluster: FaultCluster, rng: random.Random) -> dict[str, Any]:
    """KIP-101/279: a follower loses its unflushed tail (SIGKILL keeps the page cache, so cut it by hand)."""
    partitions = cluster.partitions()
    partition = rng.choice(sorted(partitions))
    followers = [r for r in partitions[partition].replicas if r != partitions[partition].leader]
    broker = rng.choice(followers or cluster.ids)
    cluster.kill(broker)
    cut = {
        p: truncate_newest_segment(cluster.log_dir(broker) / f"{TOPIC}-{p}", rng) for p in sorted(partitions)
    }
    (cluster.log_dir(broker) / CLEAN_SHUTDOWN_MARKER).unlink(missing_ok=True)
    cluster.restart(broker)
    return {"broker": broker, "bytes_cut": {p: n for p, n in cut.items() if n}}


FAULTS = {
    fault.kind: fault
    for fault in (
        Fault("kill-leader", kill_leader),
        Fault("kill-controller", kill_controller),
        Fault("clean-restart", clean_restart),
        Fault("pause", pause),
        Fault("isolate", isolate),
        Fault("lose-follower-tail", lose_follower_tail),
    )
}


# ----- helpers ---------------------------------------------------------------------------------


def _random_leader(cluster: FaultCluster, rng: random.Random) -> tuple[int, int]:
    # the metadata asked may lag behind the last recovery for a moment: ask again, up to 30 s
    deadline = time.monotonic() + 30
    while not (led := _leaders(cluster)):
        if time.monotonic() > deadline:
            raise RuntimeError("no partition has a leader")
        time.sleep(0.5)
    partition = rng.choice(sorted(led))
    return partition, led[partition]


def _answers_clients(cluster: FaultCluster, broker: int) -> bool:
    """Whether the broker answers a client's ApiVersions on its client listener."""
    from odradek.protocol.messages.api_versions import ApiVersionsRequest
    from tests.support.raw_client import RawClient

    process = cluster.brokers[broker]
    try:
        with RawClient(process.port, timeout=5, host=process.host) as client:
            client.request(ApiVersionsRequest(client_software_name="faults", client_software_version="1"), 3)
    except Exception:
        return False
    return True


def _leaders(cluster: FaultCluster) -> dict[int, int]:
    """Partition -> leader of the partitions that have one ({} while metadata cannot be had)."""
    try:
        return {p: m.leader for p, m in cluster.partitions().items() if m.leader >= 0}
    except Exception:
        return {}


def _session_expiry(cluster: FaultCluster, broker: int) -> float | None:
    """Wait out PAST_SESSION_TIMEOUT_S; the seconds until ZooKeeper dropped the broker's registration
    (the fault took hold), None if it never did."""
    started = time.monotonic()
    expired: float | None = None
    while (elapsed := time.monotonic() - started) < PAST_SESSION_TIMEOUT_S:
        if expired is None and not cluster.registered_in_zookeeper(broker):
            expired = round(elapsed, 1)
        time.sleep(0.25)
    return expired


def truncate_newest_segment(partition_dir: Path, rng: random.Random) -> int:
    """Cut up to 4 KiB off the newest segment of a stopped broker's partition; the bytes cut."""
    segments = sorted(partition_dir.glob("*.log"))
    if not segments:
        return 0
    newest = segments[-1]
    size = newest.stat().st_size
    cut = min(size, rng.randint(1, 4096))
    with open(newest, "r+b") as log:
        log.truncate(size - cut)
    return cut
