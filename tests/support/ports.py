"""Loopback ports for the servers tests start (brokers, ZooKeeper, proxies).

A port taken with bind(0) comes from the kernel's ephemeral range, the range it also hands out as the
source port of every outgoing connection: between the test closing its probe socket and the broker
binding the port, a client connecting anywhere could take it ("Address already in use"). Ports below
that range are never handed out on their own, so a port found free there stays free until someone binds
it on purpose. Each pytest-xdist worker draws from its own block, so workers never race for one; a random
start keeps separate runs (other worktrees, a bench) apart.
"""

from __future__ import annotations

import itertools
import os
import random
import socket
import threading
from collections.abc import Iterator

#: Below Linux's default ephemeral range (32768-60999) and above most well-known services.
FIRST_PORT = 20000
LAST_PORT = 32767
BLOCKS = 8


def _worker_block() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    size = (LAST_PORT + 1 - FIRST_PORT) // BLOCKS
    start = FIRST_PORT + (index % BLOCKS) * size
    return range(start, start + size)


def _candidates() -> Iterator[int]:
    block = _worker_block()
    offset = random.randrange(len(block))
    return itertools.cycle([*block[offset:], *block[:offset]])


_lock = threading.Lock()
_next_candidate = _candidates()


def _is_free(port: int) -> bool:
    # Servers bind with SO_REUSEADDR (asyncio's start_server, ZooKeeper): a port with connections in
    # TIME_WAIT is usable by them, so test it the same way. 0.0.0.0 covers every loopback address.
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port no server of this run has been given, free on every loopback address now."""
    with _lock:
        for _ in range(LAST_PORT + 1 - FIRST_PORT):
            port = next(_next_candidate)
            if _is_free(port):
                return port
    raise RuntimeError(f"no free port between {FIRST_PORT} and {LAST_PORT}")
