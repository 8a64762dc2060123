"""One fault run from start to report: cluster up, workload on, faults in turn, heal, read back, check.

`run()` returns the report as a dict (what `python -m tests.faults --report` writes): the schedule and
what each fault did, how long the cluster took to lead every partition again, the sizes of the
histories, the checker's anomalies, the writers' delivery errors and the "one replica left in sync"
probe. Everything it starts is stopped in a `finally`, also on Ctrl-C.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.faults import faults
from tests.faults.checker import check, summary
from tests.faults.cluster import PARTITIONS, TOPIC, FaultCluster
from tests.faults.min_insync import probe_one_replica_in_sync
from tests.faults.workload import Workload, read_everything

#: Bound on every wait for the cluster to recover; generous for a loaded machine.
RECOVERY_TIMEOUT_S = 60.0


def run(
    base: Path,
    brokers: int,
    fault_count: int,
    seed: int,
    log: Any = print,
    interrupted: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    started = time.monotonic()
    rng = random.Random(seed)
    kinds = faults.schedule(seed, fault_count)
    report: dict[str, Any] = {"seed": seed, "brokers": brokers, "schedule": kinds, "faults": []}
    cluster = FaultCluster(base, brokers)
    workload: Workload | None = None
    try:
        cluster.start()
        cluster.create_topic()
        report["setup_s"] = round(time.monotonic() - started, 1)
        workload = Workload(cluster.bootstrap, TOPIC, PARTITIONS)
        workload.start()
        time.sleep(3)
        for number, kind in enumerate(kinds, 1):
            if interrupted():  # asked to stop, its KeyboardInterrupt lost (see __main__.py)
                raise KeyboardInterrupt
            at = time.monotonic() - started
            record: dict[str, Any] = {"n": number, "kind": kind, "at_s": round(at, 1)}
            try:
                record.update(faults.inject(kind, cluster, rng))
            except Exception as error:  # recorded in the report; the run goes on (Ctrl-C still ends it)
                record["error"] = f"{type(error).__name__}: {error}"[-500:]
            record["led_again_s"] = _recover(cluster)
            log(f"fault {number}/{len(kinds)} {record}")
            report["faults"].append(record)
            time.sleep(rng.uniform(1.0, 3.0))
        report["faults_done_s"] = _since(started)
        workload.stop()
        report["writers_done_s"] = _since(started)
        _recover(cluster)
        report["in_sync_at_end_s"] = _wait_in_sync(cluster)
        histories = workload.histories
        histories.final = read_everything(cluster.bootstrap, TOPIC, PARTITIONS)
        report["read_back_s"] = _since(started)
        anomalies = check(histories)
        report["summary"] = summary(histories)
        report["delivery_errors"] = dict(workload.errors)
        report["anomalies"] = anomalies.as_dict()
        report["not_enough_replicas"] = probe_one_replica_in_sync(cluster)
    finally:
        if workload is not None:
            workload.stop(timeout=5)  # at once on Ctrl-C; a no-op after the stop above
        cluster.close()
    report["duration_s"] = round(time.monotonic() - started, 1)
    return report


def _since(started: float) -> float:
    return round(time.monotonic() - started, 1)


def _recover(cluster: FaultCluster) -> float | None:
    """Seconds until every broker runs and every partition has a leader again; None past the bound."""
    started = time.monotonic()
    try:
        cluster.heal_all()
        cluster.wait_for(cluster.led, RECOVERY_TIMEOUT_S, "leaders")
    except (RuntimeError, TimeoutError):
        return None
    return round(time.monotonic() - started, 1)


def _wait_in_sync(cluster: FaultCluster) -> float | None:
    """Seconds until every replica is in sync again, None if that did not happen within the bound."""
    try:
        return round(cluster.wait_for(cluster.healthy, RECOVERY_TIMEOUT_S, "every replica in sync"), 1)
    except TimeoutError:
        return None
