"""An `os.fsync` stand-in for tests: records which thread each fsync ran on, and can hold one fsync (as a
very slow disk would) so a test can look at the broker while a file operation is under way."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FsyncCall:
    path: str
    on_main_thread: bool


class FsyncGate:
    """Install with ``monkeypatch.setattr(os, "fsync", gate)``. The first fsync of a file whose path
    contains ``hold_marker`` waits (at most ``hold_seconds``) until ``release()``; ``holding`` is set
    meanwhile. The event loop runs on the main thread, so an fsync there is one that stalled it."""

    def __init__(self, hold_marker: str | None = None, hold_seconds: float = 10.0) -> None:
        self.real: Callable[[int], None] = os.fsync
        self.hold_marker = hold_marker
        self.hold_seconds = hold_seconds
        self.calls: list[FsyncCall] = []
        self.holding = threading.Event()
        self.released = threading.Event()
        self._lock = threading.Lock()
        self._held = False

    def __call__(self, fd: int) -> None:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = "?"
        self.calls.append(FsyncCall(path, threading.current_thread() is threading.main_thread()))
        if self.hold_marker is not None and self.hold_marker in path:
            with self._lock:
                hold, self._held = not self._held, True
            if hold:
                self.holding.set()
                self.released.wait(self.hold_seconds)
        self.real(fd)

    def release(self) -> None:
        self.released.set()

    def calls_under(self, marker: str) -> list[FsyncCall]:
        return [call for call in self.calls if marker in call.path]
