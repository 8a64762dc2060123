"""On a single node a CreateAcls or DeleteAcls wrote the ACL file (write, fsync, rename, fsync of the
directory) on the event loop itself: on a slow disk every connection of the broker waited for that
fsync. It now is written from a worker thread, one change at a time (the authorizer's own turn).

Instead of timing, a stand-in for the file write records the thread it runs on.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from odradek.cluster.metadata import acls as acl_files
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.authorizer import AclAuthorizer
from odradek.storage.files import atomic_write


def _recording_writes(monkeypatch: pytest.MonkeyPatch, module: object) -> list[int]:
    """The threads the module's file writes run on."""
    threads: list[int] = []

    def recorded(path: Path, payload: bytes, mode: int) -> None:
        threads.append(threading.get_ident())
        atomic_write(path, payload, mode=mode)

    monkeypatch.setattr(module, "atomic_write", recorded)
    return threads


def test_a_single_nodes_acl_change_is_written_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers = _recording_writes(monkeypatch, acl_files)
    authorizer = AclAuthorizer(acl_files.LocalAclStore(tmp_path), [], allow_everyone_if_no_acl_found=False)
    binding = AclBinding(
        ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL),
        AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
    )
    asyncio.run(authorizer.create_acls([binding]))
    assert writers and threading.get_ident() not in writers
    assert acl_files.LocalAclStore(tmp_path).load() == {binding.pattern: frozenset({binding.entry})}
