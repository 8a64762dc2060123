"""`odradek reassign --execute|--verify|--cancel|--list`, shaped like kafka-reassign-partitions.

The plan is kafka-reassign-partitions' JSON file:
`{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3]}]}` (`log_dirs`, if
present, must be "any": odradek has no AlterReplicaLogDirs). --execute prints the current assignment
of the plan's partitions (a plan to go back) and starts the reassignments; --verify says, per
partition, whether its reassignment is complete, still in progress, or failed (its replicas are not
the plan's); --cancel stops them; --list shows those in progress. --generate is not offered.

APIs: Metadata (to find the controller), AlterPartitionReassignments and ListPartitionReassignments,
sent to the controller with odradek's own wire client (librdkafka has no reassignment calls).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from odradek.cli.arguments import add_connection_arguments
from odradek.cli.client import ClientConfig, check_reachable, client_config
from odradek.cli.errors import CliError, command
from odradek.cli.wire import call
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from odradek.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

EXAMPLES = """examples:
  odradek reassign --execute --reassignment-json-file plan.json
  odradek reassign --verify --reassignment-json-file plan.json
  odradek reassign --cancel --reassignment-json-file plan.json
  odradek reassign --list

plan.json: {"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3]}]}
"""
WHAT = "odradek reassign sends its requests without librdkafka (which has no reassignment calls)"
Plan = dict[tuple[str, int], list[int]]


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "reassign",
        help="move partitions' replicas to other brokers",
        description="Start, verify, cancel and list partition reassignments "
        "(like kafka-reassign-partitions).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    action = parser.add_mutually_exclusive_group(required=True)
    for name, text in (
        ("--execute", "start the plan's reassignments"),
        ("--verify", "say whether the plan's reassignments are complete"),
        ("--cancel", "cancel the plan's reassignments in progress"),
        ("--list", "list the reassignments in progress"),
    ):
        action.add_argument(name, action="store_true", help=text)
    parser.add_argument("--reassignment-json-file", type=Path, metavar="FILE", help="the plan (JSON)")
    add_connection_arguments(parser)
    parser.set_defaults(run=run)


@command("reassign")
def run(args: argparse.Namespace) -> int:
    check_reachable(args.bootstrap_server, args.request_timeout)
    config = client_config(args)
    if args.list:
        return _list(config, args.request_timeout)
    if args.reassignment_json_file is None:
        raise CliError("--reassignment-json-file is required with --execute, --verify and --cancel")
    plan = read_plan(args.reassignment_json_file)
    if args.execute:
        return _execute(config, args.request_timeout, plan)
    if args.cancel:
        return _alter(config, args.request_timeout, {tp: None for tp in plan}, "cancelled")
    return _verify(config, args.request_timeout, plan)


def read_plan(path: Path) -> Plan:
    """kafka-reassign-partitions' reassignment JSON, checked before anything is sent."""
    try:
        document = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise CliError(f"cannot read the plan {path}: {error}") from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise CliError(f'{path}: a "partitions" list is expected')
    plan: Plan = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise CliError(f"{path}: each partition is an object, not {entry!r}")
        topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
        if not isinstance(topic, str) or not isinstance(partition, int) or not isinstance(replicas, list):
            raise CliError(f'{path}: {entry!r} needs "topic", "partition" and "replicas"')
        if not all(isinstance(r, int) for r in replicas):
            raise CliError(f"{path}: the replicas of {topic}-{partition} must be broker ids")
        if any(d != "any" for d in entry.get("log_dirs", [])):
            raise CliError(f'{path}: log_dirs other than "any" are not supported (no AlterReplicaLogDirs)')
        if (topic, partition) in plan:
            raise CliError(f"{path}: {topic}-{partition} is in the plan twice")
        plan[(topic, partition)] = replicas
    return plan


def _execute(config: ClientConfig, timeout: float, plan: Plan) -> int:
    current = _current_replicas(config, timeout, sorted({topic for topic, _ in plan}))
    missing = sorted(tp for tp in plan if tp not in current)
    if missing:
        raise CliError("unknown partitions: " + ", ".join(f"{t}-{p}" for t, p in missing))
    rollback = [{"topic": t, "partition": p, "replicas": current[(t, p)]} for t, p in sorted(plan)]
    print("Current partition replica assignment\n")
    print(json.dumps({"version": 1, "partitions": rollback}))
    print("\nSave this to use as the --reassignment-json-file option during rollback")
    return _alter(config, timeout, dict(plan), "started")


def _alter(
    config: ClientConfig, timeout: float, targets: dict[tuple[str, int], list[int] | None], done: str
) -> int:
    by_topic: dict[str, list[ReassignablePartition]] = {}
    for (topic, partition), replicas in sorted(targets.items()):
        by_topic.setdefault(topic, []).append(
            ReassignablePartition(partition_index=partition, replicas=replicas)
        )
    request = AlterPartitionReassignmentsRequest(
        timeout_ms=int(timeout * 1000),
        allow_replication_factor_change=True,
        topics=[ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
    )
    response = _to_controller(config, timeout, request)
    _check(response.error_code, response.error_message, "AlterPartitionReassignments")
    failed = 0
    for topic in response.responses:
        for answer in topic.partitions:
            name = f"{topic.name}-{answer.partition_index}"
            if answer.error_code:
                failed += 1
                error = ErrorCode.for_code(answer.error_code)
                print(f"{name}: {answer.error_message or error.message.rstrip('.')} ({error.name})")
            else:
                print(f"Successfully {done} partition reassignment for {name}")
    if failed:
        raise CliError(f"{failed} partition reassignment(s) failed")
    return 0


def _verify(config: ClientConfig, timeout: float, plan: Plan) -> int:
    ongoing = _ongoing(config, timeout, list(plan))
    current = _current_replicas(config, timeout, sorted({topic for topic, _ in plan}))
    print("Status of partition reassignment:")
    unfinished = 0
    for (topic, partition), replicas in sorted(plan.items()):
        name = f"{topic}-{partition}"
        if (topic, partition) in ongoing:
            unfinished += 1
            print(f"Reassignment of partition {name} is still in progress.")
        elif current.get((topic, partition)) == replicas:
            print(f"Reassignment of partition {name} is completed.")
        else:
            unfinished += 1
            print(
                f"There is no active reassignment of partition {name}, but replica set is "
                f"{current.get((topic, partition))} rather than {replicas}."
            )
    return 1 if unfinished else 0


def _list(config: ClientConfig, timeout: float) -> int:
    ongoing = _ongoing(config, timeout, None)
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for (topic, partition), moving in sorted(ongoing.items()):
        replicas, adding = _ids(moving.replicas), _ids(moving.adding_replicas)
        removing = _ids(moving.removing_replicas)
        print(f"{topic}-{partition}: replicas: {replicas}. adding: {adding}. removing: {removing}.")
    return 0


def _ongoing(
    config: ClientConfig, timeout: float, partitions: list[tuple[str, int]] | None
) -> dict[tuple[str, int], Any]:
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(partitions):
            by_topic.setdefault(topic, []).append(partition)
        topics = [
            ListPartitionReassignmentsTopics(name=t, partition_indexes=ps) for t, ps in by_topic.items()
        ]
    request = ListPartitionReassignmentsRequest(timeout_ms=int(timeout * 1000), topics=topics)
    response = _to_controller(config, timeout, request)
    _check(response.error_code, response.error_message, "ListPartitionReassignments")
    return {(t.name, p.partition_index): p for t in response.topics for p in t.partitions}


def _current_replicas(
    config: ClientConfig, timeout: float, topics: list[str]
) -> dict[tuple[str, int], list[int]]:
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=False
    )
    response = call(config, timeout, request, WHAT)
    return {
        (t.name, p.partition_index): list(p.replica_nodes)
        for t in response.topics
        if not t.error_code
        for p in t.partitions
    }


def _to_controller(config: ClientConfig, timeout: float, request: Any) -> Any:
    """Send `request` to the controller Metadata names (only it serves reassignments)."""
    metadata = call(config, timeout, MetadataRequest(topics=[], allow_auto_topic_creation=False), WHAT)
    controller = next((b for b in metadata.brokers if b.node_id == metadata.controller_id), None)
    if controller is None:
        raise CliError("no controller is known yet (a single broker without zookeeper.connect has none)")
    return call(
        {**config, "bootstrap.servers": f"{controller.host}:{controller.port}"}, timeout, request, WHAT
    )


def _check(code: int, message: str | None, api: str) -> None:
    if code:
        error = ErrorCode.for_code(code)
        raise CliError(
            f"{api} failed: {message or error.message.rstrip('.')} ({error.name})", kafka_code=code
        )


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)
