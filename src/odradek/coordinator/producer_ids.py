"""Producer ids for idempotent producers, unique across restarts.

Ids are handed out from blocks; the start of the next unused block is written (atomically, fsynced)
before any id of the current block is given out, so a crash can skip ids but never repeat one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

BLOCK_SIZE: Final = 1000
FILE_NAME: Final = "producer-id-block"


class ProducerIdManager:
    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / FILE_NAME
        self.next_id = self._read()
        self.block_end = self.next_id  # nothing reserved yet

    def generate(self) -> int:
        if self.next_id >= self.block_end:
            self._reserve(self.next_id + BLOCK_SIZE)
        producer_id = self.next_id
        self.next_id += 1
        return producer_id

    def _read(self) -> int:
        try:
            return int(self.path.read_text().strip() or 0)
        except FileNotFoundError:
            return 0
        except ValueError:
            return 0

    def _reserve(self, block_end: int) -> None:
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w") as file:
            file.write(f"{block_end}\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        self.block_end = block_end
