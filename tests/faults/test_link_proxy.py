"""The harness's network cut: proxies that know which broker a connection comes from and can cut it.

The test process plays broker 7 (its pid is given as broker 7's), an echo server plays the upstream.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.faults.link_proxy import LinkProxies, find_source


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    stopping = threading.Event()

    def serve(connection: socket.socket) -> None:
        with connection, contextlib.suppress(OSError):
            while data := connection.recv(4096):
                connection.sendall(data)

    def accept() -> None:
        while not stopping.is_set():
            with contextlib.suppress(OSError):
                connection, _ = server.accept()
                threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield int(server.getsockname()[1])
    stopping.set()
    server.close()


@pytest.fixture
def proxies() -> Iterator[LinkProxies]:
    made = LinkProxies(lambda: {os.getpid(): 7})
    yield made
    made.close()


def _echoes(sock: socket.socket, payload: bytes = b"ping") -> bool:
    sock.settimeout(1.0)
    try:
        sock.sendall(payload)
        return sock.recv(4096) == payload
    except OSError:
        return False


def test_the_broker_behind_a_connection_is_found_from_the_socket_table(echo_port: int) -> None:
    with socket.create_connection(("127.0.0.1", echo_port)) as sock:
        peer_port = sock.getsockname()[1]
        assert find_source(peer_port, echo_port, {os.getpid(): 7}) == 7
        assert find_source(peer_port, echo_port, {1: 7}) is None  # not that process's socket


def test_isolating_a_broker_black_holes_its_open_links_and_healing_reopens_them(
    proxies: LinkProxies, echo_port: int
) -> None:
    port = proxies.to_broker(8, "127.0.0.1", echo_port)
    with socket.create_connection(("127.0.0.1", port)) as before:
        assert _echoes(before)
        proxies.isolate(7)
        assert not _echoes(before)  # sent, never answered: as a dropped path
        with socket.create_connection(("127.0.0.1", port)) as during:
            assert not _echoes(during)  # a new connection is accepted and held the same way
            proxies.heal()
            before.settimeout(5)
            assert before.recv(4096) == b""  # healing closes the black-holed connections
    with socket.create_connection(("127.0.0.1", port)) as after:
        assert _echoes(after)


def test_isolating_the_destination_cuts_every_broker_from_it(proxies: LinkProxies, echo_port: int) -> None:
    port = proxies.to_broker(8, "127.0.0.1", echo_port)
    proxies.isolate(8)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert not _echoes(sock)


def test_another_brokers_isolation_leaves_a_link_alone(proxies: LinkProxies, echo_port: int) -> None:
    port = proxies.to_broker(8, "127.0.0.1", echo_port)
    proxies.isolate(9)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert _echoes(sock)


def test_a_brokers_zookeeper_proxy_is_cut_with_it(proxies: LinkProxies, echo_port: int) -> None:
    mine = proxies.to_zookeeper(7, "127.0.0.1", echo_port)
    theirs = proxies.to_zookeeper(9, "127.0.0.1", echo_port)
    proxies.isolate(7)
    with (
        socket.create_connection(("127.0.0.1", mine)) as cut,
        socket.create_connection(("127.0.0.1", theirs)) as kept,
    ):
        assert not _echoes(cut)
        assert _echoes(kept)
