"""Collapsed stacks (py-spy's `--format raw`) into hot-spot tables and a self-contained SVG flame graph.

The same samples feed both, so the percentages in the docs are the widths in the picture.
A collapsed stack is one line: `frame;frame;...;leaf COUNT`, root first.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

_LINE = re.compile(r"^(.*) (\d+)$")
_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


#: Leaf frames that are waiting, not working, though py-spy (which cannot see into C code without
#: --native) reports them as active: a thread-pool worker blocked on its empty queue.
IDLE_LEAVES = ("_worker (stdlib/concurrent/futures/thread.py)",)


def read_collapsed(path: Path) -> tuple[Counter[tuple[str, ...]], int]:
    """The stacks, less those whose leaf is known to be idle; and how many samples were dropped so."""
    stacks: Counter[tuple[str, ...]] = Counter()
    dropped = 0
    for line in path.read_text(errors="replace").splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        stack = tuple(shorten(frame) for frame in match.group(1).split(";"))
        if function_of(stack[-1]) in IDLE_LEAVES:
            dropped += int(match.group(2))
        else:
            stacks[stack] += int(match.group(2))
    return stacks, dropped


def shorten(frame: str) -> str:
    """`func (/long/path/site-packages/x/y.py:12)` -> `func (x/y.py:12)`; thread labels stay."""
    match = _FRAME.match(frame)
    if not match:
        return frame
    path = match.group("file")
    for marker in ("/src/", "/site-packages/", "/lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/lib/python3.":
                path = "stdlib/" + path.split("/", 1)[-1]
            break
    line = f":{match.group('line')}" if match.group("line") else ""
    return f"{match.group('function')} ({path}{line})"


def function_of(frame: str) -> str:
    """A frame without its line number: the function as a whole."""
    match = _FRAME.match(frame)
    if not match:
        return frame
    return f"{match.group('function')} ({match.group('file')})"


@dataclass(frozen=True)
class HotSpot:
    function: str
    samples: int
    percent: float


def hot_spots(stacks: Counter[tuple[str, ...]], top: int = 15) -> dict[str, list[HotSpot]]:
    """Self time (the function is the leaf), total time of odradek's own functions (anywhere on the
    stack), and the share of each thread, all as percentages of every (non-idle) sample."""
    total = sum(stacks.values()) or 1
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    for stack, count in stacks.items():
        frames = [f for f in stack if not f.startswith(("thread ", "process "))]
        thread = next((f for f in stack if f.startswith("thread ")), "")
        threads[thread] += count
        if frames:
            own[function_of(frames[-1])] += count
        for function in {function_of(f) for f in frames if _is_broker_code(f)}:
            inclusive[function] += count

    def ranked(counter: Counter[str]) -> list[HotSpot]:
        return [HotSpot(name, n, 100 * n / total) for name, n in counter.most_common(top)]

    return {"self": ranked(own), "total": ranked(inclusive), "threads": ranked(threads)}


def _is_broker_code(frame: str) -> bool:
    """odradek's own functions below the entry point (the loop and `main` are on every stack)."""
    return "(odradek/" in frame and "(odradek/cli/" not in frame


# ----- SVG -------------------------------------------------------------------------------------------


@dataclass
class _Node:
    name: str
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def write_svg(stacks: Counter[tuple[str, ...]], path: Path, title: str) -> None:
    root = _Node("all")
    for stack, count in stacks.items():
        root.count += count
        node = root
        for frame in stack:
            node = node.children.setdefault(frame, _Node(frame))
            node.count += count
    width, row, pad = 1200.0, 16, 10
    total = root.count or 1
    scale = (width - 2 * pad) / total
    rects: list[str] = []
    depth_max = 0

    def draw(node: _Node, x: float, depth: int) -> None:
        nonlocal depth_max
        w = node.count * scale
        if w < 0.3:
            return
        depth_max = max(depth_max, depth)
        label = f"{node.name} ({node.count} samples, {100 * node.count / total:.2f}%)"
        text = html.escape(node.name[: int(w / 6.5)]) if w > 25 else ""
        rects.append(
            f'<g><title>{html.escape(label)}</title><rect x="{x:.1f}" y="{{y{depth}}}" width="{w:.1f}" '
            f'height="{row - 1}" fill="{_colour(node.name)}" rx="2"/>'
            f'<text x="{x + 3:.1f}" y="{{t{depth}}}">{text}</text></g>'
        )
        child_x = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            draw(child, child_x, depth + 1)
            child_x += child.count * scale

    draw(root, pad, 0)
    height = (depth_max + 1) * row + 50
    body = "\n".join(rects)
    for depth in range(depth_max + 1):  # root at the bottom, as flame graphs are drawn
        y = height - 20 - (depth + 1) * row
        body = body.replace(f"{{y{depth}}}", str(y)).replace(f"{{t{depth}}}", str(y + row - 4))
    path.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
        f'font-family="monospace" font-size="11">\n'
        f'<rect width="100%" height="100%" fill="#fdfdf6"/>\n'
        f'<text x="{width / 2:.0f}" y="20" text-anchor="middle" font-size="15">{html.escape(title)}</text>\n'
        f"{body}\n</svg>\n"
    )


def _colour(name: str) -> str:
    digest = hashlib.md5(name.encode(), usedforsecurity=False).digest()
    if name.startswith(("thread ", "process ", "all")):
        return "#d8d8d8"
    return f"rgb({205 + digest[0] % 50},{80 + digest[1] % 130},{40 + digest[2] % 50})"
