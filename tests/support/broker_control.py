"""A control channel from the Java suite's tests to the process that owns the brokers: a small HTTP server
on loopback through which a JUnit test SIGKILLs a broker and starts it again (support/BrokerControl.java).

    POST /brokers/<node>/kill       SIGKILL the broker (nothing flushed, no controlled shutdown)
    POST /brokers/<node>/restart    start it again on its data; answers once it listens

Each answers 200 "ok", 404 for another path or an unknown node, 500 with the error when the step failed.
One step at a time: a second request waits for the first. Which broker leads a partition or coordinates
a group the tests ask the brokers themselves (AdminClient), as an operator would, so the same test runs
against odradek's cluster (tests/compat/java/test_java_clients_cluster.py) and Apache Kafka's
(tests/support/java_reference.py).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.ports import free_port

HOST = "127.0.0.1"
_STEP = re.compile(r"^/brokers/(\d{1,3})/(kill|restart)$")


class BrokerControl:
    """What the server does on each step; `kill` and `restart` take a node id."""

    def __init__(
        self, nodes: Collection[int], kill: Callable[[int], None], restart: Callable[[int], None]
    ) -> None:
        self.nodes = frozenset(nodes)
        self.steps = {"kill": kill, "restart": restart}
        # One thread does every step, one at a time, and lives as long as the server: a broker is started
        # with PR_SET_PDEATHSIG (broker_process._die_with_parent), which fires when the *thread* that
        # started it ends, so a broker started from a request's own thread died with the request.
        self._stepper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="broker-control-step")
        #: (step, node) in the order done, for a failure's report.
        self.done: list[tuple[str, int]] = []

    def apply(self, path: str) -> tuple[int, str]:
        """(HTTP status, body) for a POST to `path`."""
        step = _STEP.match(path)
        if step is None or int(step.group(1)) not in self.nodes:
            return 404, f"no such step: {path}"
        node, action = int(step.group(1)), step.group(2)
        try:
            self._stepper.submit(self.steps[action], node).result()
        except Exception as error:  # the test sees why; the server stays up for the next step
            return 500, f"{action} broker {node} failed: {error!r}"[:2000]
        self.done.append((action, node))
        return 200, "ok"

    def close(self) -> None:
        self._stepper.shutdown(wait=True)


@contextmanager
def serving(control: BrokerControl) -> Iterator[str]:
    """Serve `control` on a free loopback port for the block; yields its base URL."""
    server = ThreadingHTTPServer((HOST, free_port()), _handler(control))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="broker-control", daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        control.close()


def _handler(control: BrokerControl) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            status, body = control.apply(self.path)
            self._answer(status, body)

        def do_GET(self) -> None:
            self._answer(405, "POST only")

        def _answer(self, status: int, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the steps are in `control.done`; the test output stays the clients'

    return Handler
