"""Apache Kafka 3.9 and odradek side by side at scale (issue #27): N partitions, RF=3, on 3 brokers.

    .venv/bin/python bench/kafka_scale_bench.py [--partitions 1000 10000] [--quick] [--profile WHEN]

For each N and each kind, in turn (Kafka then odradek for one N, then the next N), on a fresh ZooKeeper
of its own: three brokers of that kind (tests/support/mixed_cluster.py; Kafka 3.9.2 from the Maven
cache with kafka-server-start.sh's JVM options: -Xmx1G -Xms1G, G1), then

- creation: one CreateTopics of N partitions, replication factor 3, until every broker's Metadata
  gives every partition a leader and all three replicas in its ISR;
- RSS per partition: each broker's resident set size then, less its RSS before the CreateTopics,
  divided by the replicas it holds (N: RF=3 on 3 brokers);
- controller failover: confluent-kafka producers (acks=all, idempotent; bench/scale_probes.py) write one
  record to each partition in turn, at most 2,000 records a second and one unacknowledged record per
  partition; once every partition has acknowledged one, SIGKILL the
  controller and time, per partition, the acknowledgement of the first record *sent after* the kill
  (a record already replicated before the kill says nothing). The worst partition is the failover
  time: it includes the ZooKeeper session's expiry (6 s for both), the new controller's election and
  its work, the leaders' ISR shrink, the client's metadata refresh and its retry backoff (≤ 200 ms);
- recovery: restart the old controller and wait for full ISRs; then SIGKILL another broker, wait for
  its ZooKeeper registration to go (Kafka refuses to start before), restart it, and time its first
  Metadata answer (start-up with N partitions on disk) and every partition's ISR full again.

A phase that takes longer than --phase-timeout (300 s) is recorded as such and ends that kind's run.
py-spy records odradek's brokers during each phase (--profile largest: at the largest N only), hot
spots in the JSON and one flame graph per phase. Raw results and the commands go to
docs/bench/kafka-scale.json, the table into docs/bench/kafka-scale.md between its table markers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # broker_bench, as bench/run_broker_bench.py
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scale_probes import RATE, ProducerLoop, profiled, spread
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from broker_bench.peers import sample_process
from tests.support.kafka_reference import KAFKA_SERVER_START_JVM_OPTIONS
from tests.support.mixed_cluster import Kind, MixedCluster
from tests.support.zookeeper import ZooKeeperServer

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "bench" / "kafka-scale.json"
TABLE = REPO / "docs" / "bench" / "kafka-scale.md"
PROFILES = REPO / "docs" / "bench" / "kafka-scale-profiles"
TOPIC = "scale"
BROKERS = (1, 2, 3)
#: Every broker's Metadata is asked this often while waiting (10,000 partitions: once a second, as the
#: answers, three of 10,000 partitions each, cost the brokers too).
POLL_S = 0.25
POLL_S_PER_PARTITION = 1 / 10_000
#: Partitions a request at a time, where the broker refuses them all in one (see request_partitions).
SPLIT_PARTITIONS = 5000


class PhaseTimeout(Exception):
    pass


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--quick", action="store_true", help="1,000 partitions only")
    parser.add_argument("--kinds", nargs="+", choices=[k.value for k in Kind], default=["kafka", "odradek"])
    parser.add_argument("--phase-timeout", type=float, default=300.0)
    parser.add_argument("--profile", choices=["none", "largest", "all"], default="largest")
    parser.add_argument("--keep", type=Path, help="keep the brokers' data and logs under this directory")
    args = parser.parse_args()
    sizes = [1000] if args.quick else sorted(args.partitions)
    report: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python", *sys.argv]),
        "nproc": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        "kafka_jvm_options": KAFKA_SERVER_START_JVM_OPTIONS,
        "producer_records_per_s": RATE,
        "phase_timeout_s": args.phase_timeout,
        "runs": [],
    }
    started = time.monotonic()
    for partitions in sizes:
        for kind in (Kind(k) for k in args.kinds):
            profile = kind is Kind.ODRADEK and (
                args.profile == "all" or (args.profile == "largest" and partitions == sizes[-1])
            )
            run = measure(kind, partitions, args.phase_timeout, profile, args.keep)
            report["runs"].append(run)
            report["load_average_after"] = os.getloadavg()
            report["run_seconds"] = round(time.monotonic() - started)
            RESULTS.write_text(json.dumps(report, indent=1) + "\n")  # a run cut short keeps its figures
            print(brief(run), flush=True)
    table = markdown(report)
    write_table(table)
    print(table)
    return 0


def measure(kind: Kind, partitions: int, timeout: float, profile: bool, keep: Path | None) -> dict[str, Any]:
    """One kind's three brokers on a ZooKeeper of their own, N partitions through every phase."""
    run: dict[str, Any] = {"kind": kind.value, "partitions": partitions, "load_average": os.getloadavg()}
    base = Path(tempfile.mkdtemp(prefix=f"scale-{kind.value}-{partitions}-", dir=keep))
    zookeeper = ZooKeeperServer(base / "zookeeper").start()
    cluster = MixedCluster(
        base / "cluster",
        zookeeper,
        dict.fromkeys(BROKERS, kind),
        kafka_jvm_options=KAFKA_SERVER_START_JVM_OPTIONS,
    )
    phases = Phases(cluster, partitions, timeout, profile, run)
    try:
        cluster.start()
        phases.create()
        phases.fail_over_controller()
        phases.recover()
    except PhaseTimeout as slow:
        run["stopped"] = str(slow)
    except Exception as error:  # a broken run is a result too: say what broke and go on
        run["error"] = f"{type(error).__name__}: {error}"[:2000]
        run["logs"] = cluster.log_excerpts()[-6000:]
    finally:
        cluster.stop()
        zookeeper.stop()
        if keep is None:
            _remove(base)
    return run


class Phases:
    """The phases of one run, in order; each adds its figures to `run`."""

    def __init__(
        self, cluster: MixedCluster, partitions: int, timeout: float, profile: bool, run: dict[str, Any]
    ) -> None:
        self.cluster = cluster
        self.partitions = partitions
        self.timeout = timeout
        self.profile = profile
        self.run = run
        self.label = f"{cluster.kinds[1].value}-{partitions}"

    def create(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap()})
        # one small topic first, so that neither kind's figures include its first CreateTopics (a JVM's
        # classes loaded and compiled, odradek's modules imported)
        admin.create_topics([NewTopic("warm-up", 1, 3)])["warm-up"].result(self.timeout)
        self.wait("the warm-up topic in sync", time.monotonic(), lambda: self.in_sync("warm-up", 1))
        before = self.rss()
        with self.profiled("create"):
            start = time.monotonic()
            requests = self.request_partitions(admin, NewTopic(TOPIC, self.partitions, 3))
            answered = round(time.monotonic() - start, 3)
            leaders = self.wait("every partition led on every broker", start, self.all_led)
            in_sync = self.wait("every partition's ISR full on every broker", start, self.all_in_sync)
        after = self.rss()
        self.run["create"] = {
            "answered_s": answered,
            "all_led_s": leaders,
            "all_in_sync_s": in_sync,
            "requests": requests,
        }
        self.run["rss_bytes"] = {"before": before, "after_create": after}
        self.run["rss_per_partition_bytes"] = {
            broker: round((after[broker] - before[broker]) / self.partitions) for broker in after
        }

    def request_partitions(self, admin: AdminClient, topic: NewTopic) -> list[str]:
        """One CreateTopics; if the broker refuses so many partitions in one request (odradek past
        10,000 metadata records, as Kafka's KRaft controller; Kafka's ZooKeeper mode has no such
        bound), CreateTopics of SPLIT_PARTITIONS and CreatePartitions by as many until all exist.
        What was asked and answered, in order."""
        asked = [f"CreateTopics {topic.num_partitions}"]
        try:
            self.answer(admin.create_topics([topic], **self.timeouts())[TOPIC])
            return [*asked, "ok"]
        except KafkaException as error:
            if error.args[0].code() != KafkaError.POLICY_VIOLATION:
                raise
            asked.append(f"refused: {error.args[0].str()}")
        count = min(SPLIT_PARTITIONS, topic.num_partitions)
        self.answer(admin.create_topics([NewTopic(TOPIC, count, 3)], **self.timeouts())[TOPIC])
        asked += [f"CreateTopics {count}", "ok"]
        while count < topic.num_partitions:
            count = min(count + SPLIT_PARTITIONS, topic.num_partitions)
            added = admin.create_partitions([NewPartitions(TOPIC, count)], **self.timeouts())
            self.answer(added[TOPIC])
            asked += [f"CreatePartitions to {count}", "ok"]
        return asked

    def timeouts(self) -> dict[str, float]:
        """The broker may take the whole phase to answer (Kafka waits for the new leaders), and the
        client waits as long (its own default is 60 s)."""
        return {"operation_timeout": self.timeout, "request_timeout": self.timeout}

    def answer(self, future: Future[None]) -> None:
        """A request's answer; a timed-out one is let be (the change may still complete)."""
        try:
            future.result(self.timeout)
        except KafkaException as error:
            if error.args[0].code() not in (KafkaError.REQUEST_TIMED_OUT, KafkaError._TIMED_OUT):
                raise

    def fail_over_controller(self) -> None:
        loop = ProducerLoop(self.cluster.bootstrap(), TOPIC, self.partitions)
        loop.start()
        try:
            warm = time.monotonic()
            try:
                self.wait("an ack on every partition", warm, lambda: len(loop.acks.ever) == self.partitions)
            except PhaseTimeout:
                self.run["controller_failover"] = {
                    "partitions_acknowledged_before_the_kill": len(loop.acks.ever),
                    "delivery_errors": dict(loop.acks.errors),
                    "records_not_queued": loop.skipped,
                }
                raise
            controller = self.cluster.controller()
            assert controller is not None
            elected: list[float] = []
            with self.profiled("failover", excluding=controller):
                killed = time.monotonic()
                loop.acks.start_from(killed)
                self.cluster.kill(controller)

                def every_partition_acked() -> bool:
                    if not elected and self.cluster.controller() not in (None, controller):
                        elected.append(round(time.monotonic() - killed, 3))
                    return len(loop.acks.after_mark()) == self.partitions

                worst = self.wait("an ack after the kill on every partition", killed, every_partition_acked)
            firsts = list(loop.acks.after_mark().values())
            self.run["controller_failover"] = {
                "killed": controller,
                "new_controller_s": elected[0] if elected else None,
                "every_partition_acked_s": worst,
                **spread(firsts),
                "producer_interval_per_partition_s": loop.interval_s,
                "delivery_errors": dict(loop.acks.errors),
            }
        finally:
            loop.stop()
        # the old controller back, for the recovery phase to start from a whole cluster
        self.cluster.start_broker(controller, wait=False)
        rejoined = time.monotonic()
        self.run["controller_failover"]["old_controller_back_in_sync_s"] = self.wait(
            "the old controller back in every ISR", rejoined, self.all_in_sync
        )

    def recover(self) -> None:
        controller = self.cluster.controller()
        victim = next(b for b in BROKERS if b != controller)
        killed = time.monotonic()
        self.cluster.kill(victim)
        gone = self.wait("its registration gone", killed, lambda: victim not in self.cluster.registered())
        restarted = time.monotonic()
        self.cluster.start_broker(victim, wait=False)
        with self.profiled("recovery"):
            answered = self.wait("its first Metadata answer", restarted, lambda: self.answers(victim))
            in_sync = self.wait("every partition's ISR full", restarted, self.all_in_sync)
        self.run["recovery"] = {
            "killed": victim,
            "registration_gone_s": gone,
            "first_metadata_answer_s": answered,
            "all_in_sync_after_restart_s": in_sync,
            "all_in_sync_after_kill_s": round(time.monotonic() - killed, 3),
        }

    # -- probes ------------------------------------------------------------------------------------

    def wait(self, what: str, since: float, check: Callable[[], bool]) -> float:
        """Seconds from `since` to `check` holding (polled); PhaseTimeout past the phase's bound."""
        last_error: Exception | None = None
        while True:
            try:
                done = check()
            except Exception as error:  # a broker not answering yet
                done, last_error = False, error
            now = time.monotonic()
            if done:
                return round(now - since, 3)
            if now - since > self.timeout:
                raise PhaseTimeout(f"{what}: not within {self.timeout:.0f} s (last error: {last_error!r})")
            time.sleep(max(POLL_S, self.partitions * POLL_S_PER_PARTITION))

    def all_led(self) -> bool:
        views = [self.cluster.partitions(TOPIC, broker) for broker in self.cluster.running()]
        return all(len(v) == self.partitions and all(p.leader >= 0 for p in v.values()) for v in views)

    def all_in_sync(self) -> bool:
        return self.in_sync(TOPIC, self.partitions)

    def in_sync(self, topic: str, partitions: int) -> bool:
        """Every broker running and describing every partition of `topic` led, with all 3 in its ISR."""
        if self.cluster.running() != list(BROKERS):
            return False
        for broker in BROKERS:
            view = self.cluster.partitions(topic, broker)
            if len(view) != partitions or any(
                p.leader < 0 or len(p.isr) != len(BROKERS) for p in view.values()
            ):
                return False
        return True

    def answers(self, broker: int) -> bool:
        self.cluster.metadata(broker, [])
        return True

    def rss(self) -> dict[int, int]:
        return {broker: sample_process(self.cluster.pid(broker)).rss_bytes for broker in BROKERS}

    def profiled(self, phase: str, excluding: int | None = None) -> AbstractContextManager[None]:
        if not self.profile:
            return nullcontext()
        pids = {broker: self.cluster.pid(broker) for broker in self.cluster.running() if broker != excluding}
        into = self.run.setdefault("profiles", {}).setdefault(phase, {})
        return profiled(pids, PROFILES, f"{self.label}-{phase}", into)


# -- reporting -------------------------------------------------------------------------------------

ROWS: tuple[tuple[str, Callable[[dict[str, Any]], Any]], ...] = (
    ("CreateTopics answered (s)", lambda r: r.get("create", {}).get("answered_s")),
    ("requests (a single CreateTopics unless noted)", lambda r: _requests(r.get("create", {}))),
    (
        "every partition led and in sync on every broker (s)",
        lambda r: r.get("create", {}).get("all_in_sync_s"),
    ),
    (
        "RSS per partition replica, mean of 3 brokers (bytes)",
        lambda r: _mean(r.get("rss_per_partition_bytes")),
    ),
    ("RSS after creation, largest broker (MiB)", lambda r: _largest_mib(r.get("rss_bytes"))),
    (
        "controller failover: new controller (s)",
        lambda r: r.get("controller_failover", {}).get("new_controller_s"),
    ),
    (
        "controller failover: acks=all on every partition (s)",
        lambda r: r.get("controller_failover", {}).get("max_s"),
    ),
    ("controller failover: p50 partition (s)", lambda r: r.get("controller_failover", {}).get("p50_s")),
    (
        "recovery: first Metadata answer after restart (s)",
        lambda r: r.get("recovery", {}).get("first_metadata_answer_s"),
    ),
    (
        "recovery: full ISR after restart (s)",
        lambda r: r.get("recovery", {}).get("all_in_sync_after_restart_s"),
    ),
    (
        "recovery: full ISR after the SIGKILL (s)",
        lambda r: r.get("recovery", {}).get("all_in_sync_after_kill_s"),
    ),
)


def markdown(report: dict[str, Any]) -> str:
    """One table per partition count: a row per figure, Kafka, odradek and odradek / Kafka."""
    lines = [
        f"Run {report['when']}: `{report['command']}`, {report['nproc']} cores, load average "
        f"{_load(report['load_average_before'])} before, {_load(report.get('load_average_after'))} after, "
        f"{report.get('run_seconds')} s.",
        "",
    ]
    for partitions in sorted({r["partitions"] for r in report["runs"]}):
        runs = {r["kind"]: r for r in report["runs"] if r["partitions"] == partitions}
        kafka, odradek = runs.get("kafka", {}), runs.get("odradek", {})
        lines += [f"**{partitions:,} partitions, RF=3, 3 brokers**", ""]
        lines += ["| | Kafka 3.9.2 | odradek | odradek / Kafka |", "| --- | --- | --- | --- |"]
        for label, figure in ROWS:
            mine, theirs = figure(odradek), figure(kafka)
            lines.append(f"| {label} | {_cell(theirs)} | {_cell(mine)} | {_ratio(mine, theirs)} |")
        for kind, run in runs.items():
            for problem in ("stopped", "error"):
                if problem in run:
                    lines.append(f"\n{kind} {problem}: {run[problem].splitlines()[0]}")
        lines.append("")
    return "\n".join(lines)


def write_table(table: str) -> None:
    """The table into the doc between its markers (the doc's prose around it stays)."""
    start, end = "<!-- scale-table -->", "<!-- /scale-table -->"
    text = TABLE.read_text() if TABLE.exists() else f"# Apache Kafka and odradek at scale\n\n{start}\n{end}\n"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    TABLE.write_text(pattern.sub(lambda _: f"{start}\n{table}\n{end}", text))


def brief(run: dict[str, Any]) -> str:
    figures = {label: figure(run) for label, figure in ROWS}
    shown = ", ".join(f"{label} {value}" for label, value in figures.items() if value is not None)
    trouble = run.get("stopped") or run.get("error") or ""
    return f"{run['kind']} {run['partitions']}: {shown} {trouble}".strip()


def _requests(create: dict[str, Any]) -> str | None:
    asked = create.get("requests")
    if not asked:
        return None
    made = [a for a in asked if a.startswith("Create")]
    return "1" if len(made) == 1 else f"{len(made) - 1} after a refusal: " + ", ".join(made[1:])


def _mean(per_broker: dict[int, int] | None) -> int | None:
    return round(sum(per_broker.values()) / len(per_broker)) if per_broker else None


def _largest_mib(rss: dict[str, dict[int, int]] | None) -> float | None:
    return round(max(rss["after_create"].values()) / 2**20, 1) if rss else None


def _cell(value: Any) -> str:
    return "—" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _ratio(mine: Any, theirs: Any) -> str:
    if not isinstance(mine, int | float) or not isinstance(theirs, int | float) or not theirs:
        return "—"
    return f"{mine / theirs:.2f}"


def _load(load: Any) -> str:
    return "—" if not load else " / ".join(f"{x:.1f}" for x in load)


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
