"""GROUP config resources: where a group coordinator reads them (`GroupConfigStore`), a single node's
(`LocalGroupConfigs`, `<first log dir>/__odradek_group_configs.json`) and a ZooKeeper cluster's
(`ZkGroupConfigs`), kept as entity_configs.py keeps every such entity type. Kafka 4.4 keeps them in its
KRaft metadata log; in ZooKeeper they are where Kafka's ConfigType names them (ConfigType.GROUP; no
Kafka broker writes these):

```
/config/groups/<group>              {"version":1,"config":{"share.auto.offset.reset":"earliest"}}
/config/changes/config_change_<n>   {"version":2,"entity_path":"groups/<group>"}
```
Every broker of a cluster keeps every group's configs, so a share partition led anywhere takes its
group's configs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final, Protocol

from odradek.cluster.metadata.entity_configs import EntityConfigChange, LocalEntityConfigs, ZkEntityConfigs
from odradek.cluster.zookeeper.client import ZooKeeperClient

FILE_NAME: Final = "__odradek_group_configs.json"
GROUPS_CONFIG: Final = "groups"


class GroupConfigStore(Protocol):
    """Where GROUP config resources are kept: a single node's log dir or ZooKeeper."""

    def configs(self, group_id: str) -> Mapping[str, str]: ...

    def group_ids(self) -> list[str]: ...

    async def alter(self, group_id: str, change: EntityConfigChange, *, validate_only: bool) -> None:
        """Apply `change` to the group's stored configs, as one step against other changes; an empty
        result deletes them."""
        ...


class _GroupsKept:
    """What either store keeps of the groups' configs, in memory, as its file or znodes say."""

    _groups: dict[str, dict[str, str]]

    def configs(self, group_id: str) -> Mapping[str, str]:
        """The group's stored configs ({} if none)."""
        return self._groups.get(group_id, {})

    def group_ids(self) -> list[str]:
        """The groups with configs set, sorted."""
        return sorted(self._groups)

    def _apply(self, name: str, configs: dict[str, str]) -> None:
        _apply_group(self._groups, name, configs)


class LocalGroupConfigs(_GroupsKept, LocalEntityConfigs):
    file_name = FILE_NAME
    entries = "groups"

    def __init__(self, log_dir: Path) -> None:
        super().__init__(log_dir)
        self._groups = {}


class ZkGroupConfigs(_GroupsKept, ZkEntityConfigs):
    config_type = GROUPS_CONFIG
    what = "configs of group"
    changes = "group config"

    def __init__(self, zk: ZooKeeperClient) -> None:
        super().__init__(zk)
        self._groups = {}


def _apply_group(groups: dict[str, dict[str, str]], name: str, configs: dict[str, str]) -> None:
    if configs:
        groups[name] = configs
    else:
        groups.pop(name, None)
