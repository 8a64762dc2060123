"""What the commands print: aligned tables, sizes and rates for people, and a progress line on stderr."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TextIO


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Left-aligned columns two spaces apart, as kafka-consumer-groups prints them; None shows as '-'."""
    cells = [list(headers)] + [["-" if cell is None else str(cell) for cell in row] for row in rows]
    widths = [max(len(row[column]) for row in cells) for column in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def human_bytes(count: float) -> str:
    """1023 B, 1.5 KiB, 12.3 MiB ..."""
    if count < 1024:
        return f"{int(count)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        count /= 1024
        if count < 1024 or unit == "TiB":
            break
    return f"{count:.1f} {unit}"


def human_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def plural(count: int, noun: str) -> str:
    """'1 message', '2 messages', '1,000 messages'."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def rate(count: float, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


class Progress:
    """A one-line progress display on stderr: redrawn in place on a terminal, a line a second otherwise.

    `total_bytes` (the input's size, when known) adds a percentage and an estimate of the time left.
    Nothing is drawn before `delay` seconds, so a small input finishes without a flicker.
    """

    def __init__(self, stream: TextIO, total_bytes: int | None = None, delay: float = 0.0) -> None:
        self.stream = stream
        self.total_bytes = total_bytes if total_bytes else None
        self.in_place = stream.isatty()
        self.interval = 0.1 if self.in_place else 1.0
        self.started = time.monotonic()
        self.delay = delay
        self.last_drawn = self.started  # the first line comes after one interval, with something to show
        self.drawn = False
        self.width = 0

    def update(self, messages: int, payload_bytes: int, input_bytes: int) -> None:
        now = time.monotonic()
        if now - self.started >= self.delay and now - self.last_drawn >= self.interval:
            self.last_drawn = now
            self._draw(self.line(messages, payload_bytes, input_bytes, now - self.started))

    def finish(self, messages: int, payload_bytes: int, input_bytes: int) -> None:
        """Draw the final state (if anything was drawn, or there is no delay) and end the line."""
        if not self.drawn and self.delay > 0:
            return
        self._draw(self.line(messages, payload_bytes, input_bytes, time.monotonic() - self.started))
        if self.in_place:
            self.stream.write("\n")
            self.stream.flush()

    def line(self, messages: int, payload_bytes: int, input_bytes: int, elapsed: float) -> str:
        parts = [
            plural(messages, "message"),
            human_bytes(payload_bytes),
            f"{rate(messages, elapsed):,.0f} msg/s",
            f"{human_bytes(rate(payload_bytes, elapsed))}/s",
        ]
        if self.total_bytes:
            done = min(1.0, input_bytes / self.total_bytes)
            parts.append(f"{_bar(done)} {done:4.0%}")
            if 0 < done < 1 and elapsed > 0.5:
                parts.append(f"{human_duration(elapsed * (1 - done) / done)} left")
        return "  ".join(parts)

    def _draw(self, line: str) -> None:
        self.drawn = True
        if self.in_place:
            padding = " " * max(0, self.width - len(line))
            self.stream.write(f"\r{line}{padding}")
            self.width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _bar(done: float, width: int = 20) -> str:
    filled = int(done * width)
    return "[" + "#" * filled + "." * (width - filled) + "]"
