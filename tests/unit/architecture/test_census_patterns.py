"""The census's definitions (tools/architecture/patterns.py) on synthetic modules: what each counts,
and the look-alikes it must not count."""

from __future__ import annotations

from pathlib import Path

from tools.architecture.census import take
from tools.architecture.patterns import (
    ANY,
    HANDLER_WAIT,
    LEADER_CHECK,
    LOG_APPEND,
    LOG_READ,
    MODE_CHECK,
    WIRING,
)

from tests.unit.architecture.conftest import PackageMaker


def _found(package: Path, pattern: str) -> list[tuple[str, int, str]]:
    return [(f.path, f.line, f.kind) for f in take(package).findings if f.pattern == pattern]


def test_mode_checks_are_the_branches_on_single_node_or_cluster(make_package: PackageMaker) -> None:
    package = make_package(
        {
            "handlers/produce.py": (
                "def handle(context, replicas):\n"
                "    if context.services.replicas is None:\n"  # 2
                "        return\n"
                "    assert replicas is not None\n"  # 4
                "    if context.services.mode is BrokerMode.ZOOKEEPER:\n"  # 5
                "        return\n"
            ),
            "storage/log_manager.py": "def f(self):\n    return self.single_node\n",  # 2
            "coordinator/classic_group.py": "def f(member):\n    return member is None\n",  # a group member
            "server/broker.py": (
                "def f(config, member, services):\n"
                "    if config.zookeeper_connect and member is None:\n"  # 2: two checks
                "        return isinstance(services.acls, ZkAclStore)\n"  # 3
            ),
            "config/broker.py": "def f(config):\n    return config.zookeeper_connect\n",  # config's own
            # cluster-only
            "cluster/metadata/zk_topics.py": "def f(config):\n    return config.zookeeper_connect\n",
        }
    )
    assert sorted(_found(package, MODE_CHECK)) == [
        ("odradek/handlers/produce.py", 2, "replicas is None"),
        ("odradek/handlers/produce.py", 4, "replicas is None"),
        ("odradek/handlers/produce.py", 5, "BrokerMode comparison"),
        ("odradek/server/broker.py", 2, "member is None"),
        ("odradek/server/broker.py", 2, "zookeeper.connect read"),
        ("odradek/server/broker.py", 3, "isinstance of a mode's class"),
        ("odradek/storage/log_manager.py", 2, "single_node flag"),
    ]


def test_wiring_is_a_hook_or_collaborator_set_on_another_object_after_construction(
    make_package: PackageMaker,
) -> None:
    package = make_package(
        {
            "server/broker.py": (
                "import functools\n"
                "class Broker:\n"
                "    def start(self, replicas, services, response, code):\n"
                "        replicas.on_change = self.changed\n"  # 4: a method of the package
                "        services.runtime.replicated = functools.partial(wait, services)\n"  # 5
                "        services.tls = TlsReloader()\n"  # 6: a collaborator
                "        reloader = TlsReloader()\n"
                "        services.other = reloader\n"  # 8: a local holding one
                "        replicas.leaders.lag_ms = self.config.replica_lag_time_max_ms\n"  # 9: a setting
                "        response.error_code = code\n"  # data, not wiring
                "        self.hook = self.changed\n"  # its own attribute
                "    def changed(self): ...\n"
                "def wait(): ...\n"
                "class TlsReloader: ...\n"
            ),
            "storage/segment.py": (
                "class Segment:\n"
                "    @classmethod\n"
                "    def open(cls):\n"
                "        segment = cls()\n"
                "        segment.index = Index()\n"  # its own class building an instance
                "        return segment\n"
                "class Index: ...\n"
            ),
        }
    )
    assert _found(package, WIRING) == [
        ("odradek/server/broker.py", 4, "hook"),
        ("odradek/server/broker.py", 5, "hook"),
        ("odradek/server/broker.py", 6, "collaborator"),
        ("odradek/server/broker.py", 8, "collaborator"),
        ("odradek/server/broker.py", 9, "setting"),
    ]


def test_any_collaborators_are_parameters_and_attributes_typed_any_but_not_message_values(
    make_package: PackageMaker,
) -> None:
    package = make_package(
        {
            "coordinator/txn_coordinator.py": (
                "from typing import Any\n"
                "Group = Any\n"
                "class TransactionCoordinator:\n"
                "    logs: Any | None\n"  # 4
                "    def __init__(self, cluster: Any, request: Any, *args: Any, **kw: Any) -> None:\n"  # 5
                "        self.groups: Any = None\n"  # 6
                "    def load(self, group: Group) -> None: ...\n"  # 7: an alias of Any
            ),
        }
    )
    assert _found(package, ANY) == [
        ("odradek/coordinator/txn_coordinator.py", 4, "attribute logs"),
        ("odradek/coordinator/txn_coordinator.py", 5, "constructor parameter cluster"),
        ("odradek/coordinator/txn_coordinator.py", 6, "attribute groups"),
        ("odradek/coordinator/txn_coordinator.py", 7, "parameter group"),
    ]


def test_handler_side_waits_are_awaits_of_isr_or_append_events_in_handlers(
    make_package: PackageMaker,
) -> None:
    waits = (
        "async def handle(services, waiter, coordinator):\n"
        "    with services.appends.waiting_on([]) as waiter:\n"  # 2
        "        await waiter.wait(1)\n"  # 3
        "    await wait_for_replicas([], 0, services)\n"  # 4
        "    await txn_log_replicated(coordinator)\n"  # 5
        "    await coordinator.join_group()\n"  # a coordinator call: not a wait
    )
    package = make_package({"handlers/produce.py": waits, "coordinator/runtime.py": waits})
    assert _found(package, HANDLER_WAIT) == [
        ("odradek/handlers/produce.py", 2, "waiting_on append events"),
        ("odradek/handlers/produce.py", 3, "await wait"),
        ("odradek/handlers/produce.py", 4, "await wait_for_replicas"),
        ("odradek/handlers/produce.py", 5, "await txn_log_replicated"),
    ]


def test_hand_made_leader_checks_are_leadership_read_outside_cluster(make_package: PackageMaker) -> None:
    checks = (
        "def f(self, replicas, state, group, member_id):\n"
        "    hosted = replicas.leading.get(('t', 0))\n"  # 2
        "    epoch = self.leadership.leader_epoch('t', 0)\n"  # 3
        "    mine = state.leader_id == self.node_id\n"  # 4
        "    return group.is_leader(member_id) or self.leading\n"  # a group's leader; its own map
    )
    package = make_package({"handlers/produce.py": checks, "cluster/replica_manager.py": checks})
    assert _found(package, LEADER_CHECK) == [
        ("odradek/handlers/produce.py", 2, "reads the replica manager's leading map"),
        ("odradek/handlers/produce.py", 3, "asks leadership.leader_epoch"),
        ("odradek/handlers/produce.py", 4, "compares a leader with its own id"),
    ]


def test_log_appends_outside_storage_are_leader_and_follower_appends(make_package: PackageMaker) -> None:
    appends = (
        "def f(log, batches, epoch, responses):\n"
        "    log.append(batches, leader_epoch=epoch)\n"  # 2
        "    log.append_as_follower(batches)\n"  # 3
        "    responses.append(batches)\n"  # a list
    )
    package = make_package(
        {
            "handlers/produce.py": appends,
            "storage/log_manager.py": appends,
            "partition/replica_manager.py": appends,  # the one entry (append_records)
        }
    )
    assert _found(package, LOG_APPEND) == [
        ("odradek/handlers/produce.py", 2, "append as leader"),
        ("odradek/handlers/produce.py", 3, "append as follower"),
    ]


def test_log_reads_outside_storage_are_reads_with_an_isolation_or_a_minimum(
    make_package: PackageMaker,
) -> None:
    reads = (
        "def f(log, offset, isolation, zk, path):\n"
        "    log.read(offset, 100, isolation=isolation)\n"  # 2
        "    log.read(offset, 100, min_one_message=True)\n"  # 3
        "    zk.read(path)\n"  # a znode
    )
    package = make_package(
        {
            "handlers/fetch.py": reads,
            "storage/log.py": reads,
            "partition/partition_read.py": reads,  # the one entry (read_from_log)
        }
    )
    assert _found(package, LOG_READ) == [
        ("odradek/handlers/fetch.py", 2, "log read"),
        ("odradek/handlers/fetch.py", 3, "log read"),
    ]
