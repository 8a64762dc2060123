"""On a single node an AlterUserScramCredentials wrote the credential file (write, fsync, rename, fsync
of the directory) on the event loop itself: on a slow disk every connection of the broker waited for
that fsync (the client quota file was already written from a worker thread). It now is written from a
worker thread too, one change at a time, and the credentials in force change once it is written.

Instead of timing, a stand-in for the file write records the thread it runs on.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from odradek.cluster.metadata import scram_credentials as scram_files
from odradek.security.scram_credentials import credential_from_password
from odradek.storage.files import atomic_write


def _recording_writes(monkeypatch: pytest.MonkeyPatch, module: object) -> list[int]:
    """The threads the module's file writes run on."""
    threads: list[int] = []

    def recorded(path: Path, payload: bytes, mode: int) -> None:
        threads.append(threading.get_ident())
        atomic_write(path, payload, mode=mode)

    monkeypatch.setattr(module, "atomic_write", recorded)
    return threads


def test_a_single_nodes_scram_credential_change_is_written_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers = _recording_writes(monkeypatch, scram_files)
    store = scram_files.LocalScramCredentialStore.load(tmp_path)
    credential = credential_from_password("SCRAM-SHA-256", "alice-secret", 4096)
    asyncio.run(store.alter({("alice", "SCRAM-SHA-256"): credential}, set()))
    assert writers and threading.get_ident() not in writers
    again = scram_files.LocalScramCredentialStore.load(tmp_path)
    assert again.get("alice", "SCRAM-SHA-256") == credential
