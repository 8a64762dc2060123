"""Where a process listens, read from the kernel: the local addresses of its listening TCP sockets.

Connecting to an address only tells that something answers there; the bound address tells what else
would answer (0.0.0.0 is every interface), so tests of where a server binds read it here.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import time
from pathlib import Path

_LISTEN = "0A"


def listening_addresses(pid: int, port: int) -> set[str]:
    """The addresses `pid` listens on at `port` (``0.0.0.0``, ``::``, ``127.0.0.1``...)."""
    inodes = _socket_inodes(pid)
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                address, _, local_port = local.rpartition(":")
                if state == _LISTEN and int(local_port, 16) == port and inode in inodes:
                    found.add(_address(address))
    return found


def wait_listening(pid: int, port: int, timeout: float = 30.0) -> set[str]:
    """`listening_addresses` once there is one (a server binds some time after its process starts)."""
    deadline = time.monotonic() + timeout
    while True:
        found = listening_addresses(pid, port)
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


def _address(hex_address: str) -> str:
    """/proc/net/tcp{,6} write addresses as host-order 32-bit words in hex."""
    raw = bytes.fromhex(hex_address)
    packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(packed))
