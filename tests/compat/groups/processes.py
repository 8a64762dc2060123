"""Run `member_process` children and follow what they print."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


class MemberProcess:
    def __init__(self, client: str, bootstrap: str, group: str, topic: str, *extra: str) -> None:
        env = {**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'src'}"}
        command = [
            sys.executable,
            "-m",
            "tests.compat.groups.member_process",
            client,
            bootstrap,
            group,
            topic,
            *extra,
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=None, env=env, cwd=REPO)
        self.assigned: frozenset[int] = frozenset()
        self.consumed: list[tuple[int, int]] = []
        self.committed: dict[int, int] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = json.loads(line)
            if "assigned" in event:
                self.assigned = frozenset(event["assigned"])
            elif "consumed" in event:
                self.consumed.append((event["consumed"][0], event["consumed"][1]))
            elif "committed" in event:
                self.committed.update({int(p): o for p, o in event["committed"].items()})

    def assignment(self) -> frozenset[int]:
        return self.assigned

    def wait_consumed(self, count: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.consumed) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.consumed) >= count, f"consumed only {len(self.consumed)} of {count}"

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, no close."""
        self.process.kill()
        self.process.wait()
        self._reader.join(5)

    def __enter__(self) -> MemberProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.kill()
