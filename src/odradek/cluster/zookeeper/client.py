"""A ZooKeeper session over kazoo, with Kafka's connect string, chroot and start-up znodes.

`ZooKeeperClient.connect("host:2181,host2:2181/kafka", ...)` connects as a Kafka broker does: the chroot
(`/kafka`) is created first if missing, through a session without it, then the client works inside it.
Every method blocks (kazoo is thread-based); see the package docstring for how the event loop uses it.
Reads are retried while the connection is lost; writes are not, since a write whose answer was lost
may have happened: callers decide (the controller, by the epoch check). No call waits longer than the
session timeout: then ZooKeeperConnectionError.

The sessions are secured as `ZooKeeperSecurity` asks (TLS, a SASL login, ACLs on created znodes:
session.py); a login ZooKeeper refuses is a ZooKeeperAuthenticationError, at once, while a connection
lost during the login is a lost connection (connected again, the session kept).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import (
    AuthFailedError,
    ConnectionClosedError,
    ConnectionLoss,
    InvalidACLError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, KeeperState, ZnodeStat

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.cluster_znodes import ClusterIdZnode
from odradek.cluster.zookeeper.errors import (
    ZooKeeperAuthenticationError,
    ZooKeeperAuthorizationError,
    ZooKeeperConnectionError,
)
from odradek.cluster.zookeeper.loop_delivery import deliver_on_loop
from odradek.cluster.zookeeper.session import ZooKeeperSecurity, last_tls_error, secured_kazoo

log = logging.getLogger(__name__)

#: How long after a refused login the session is started again (Kafka's ZooKeeperClient waits 1 s).
RELOGIN_BACKOFF_S = 1.0

#: What kazoo's operations do, for the one line of a refusal.
_VERBS = {
    "create": "create",
    "delete": "delete",
    "set": "write",
    "get": "read",
    "get_children": "list",
    "commit": "commit a multi-operation on",
}

#: Kafka's defaults for zookeeper.session.timeout.ms and zookeeper.connection.timeout.ms (which
#: falls back to the session timeout).
DEFAULT_SESSION_TIMEOUT_MS = 18_000


class ZooKeeperClient:
    """One ZooKeeper session, inside the connect string's chroot."""

    def __init__(
        self, kazoo: KazooClient, connect_string: str, session_timeout_ms: int, sasl_user: str | None = None
    ) -> None:
        self.kazoo = kazoo
        self.connect_string = connect_string
        self.session_timeout_ms = session_timeout_ms
        self._closed = threading.Event()
        self._restarting = threading.Lock()
        if sasl_user is not None:
            self._log_in_again_when_refused(sasl_user)

    @classmethod
    def connect(
        cls,
        connect_string: str,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        connection_timeout_ms: int | None = None,
        security: ZooKeeperSecurity | None = None,
    ) -> ZooKeeperClient:
        """Connect (creating the chroot if missing) or raise ZooKeeperConnectionError in time
        (ZooKeeperAuthenticationError when ZooKeeper refuses the SASL login)."""
        connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        security = security or ZooKeeperSecurity()
        hosts, chroot = split_chroot(connect_string)
        if chroot:
            # as Kafka: the chroot (and any missing parent) gets the ACL of a znode at that path
            root = cls._start(hosts, connect_string, session_timeout_ms, connection_timeout_ms, security)
            try:
                if root.read(chroot) is None:
                    root.create_persistent_path(chroot)
            finally:
                root.close()
        return cls._start(connect_string, connect_string, session_timeout_ms, connection_timeout_ms, security)

    @classmethod
    def _start(
        cls,
        hosts: str,
        connect_string: str,
        session_timeout_ms: int,
        connection_timeout_ms: int,
        security: ZooKeeperSecurity,
    ) -> ZooKeeperClient:
        kazoo = secured_kazoo(
            hosts,
            security,
            timeout=session_timeout_ms / 1000,
            # reconnect for as long as it takes, but never wait more than 2 s between attempts
            connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 2.0},
        )
        try:
            if not _start_session(kazoo, connection_timeout_ms / 1000):
                raise KazooTimeoutError()
        except KazooTimeoutError:
            kazoo.stop()  # kazoo would go on trying in the background
            kazoo.close()
            reason = last_tls_error(kazoo)
            raise ZooKeeperConnectionError(
                f"Could not connect to ZooKeeper at {connect_string} within "
                f"zookeeper.connection.timeout.ms={connection_timeout_ms}"
                + (f" ({reason})" if reason else "")
            ) from None
        except AuthFailedError:
            kazoo.stop()
            kazoo.close()
            assert security.sasl is not None  # only a login is refused so
            raise ZooKeeperAuthenticationError(
                f"ZooKeeper at {connect_string} refused the SASL login of user "
                f"'{security.sasl.username}' (DIGEST-MD5, from the JAAS Client section): "
                "wrong user name or password, or SASL is not enabled on the server"
            ) from None
        except ConnectionClosedError:
            kazoo.stop()
            kazoo.close()
            raise ZooKeeperConnectionError(
                f"Lost the connection to ZooKeeper at {connect_string} while logging in"
            ) from None
        return cls(
            kazoo, connect_string, session_timeout_ms, security.sasl.username if security.sasl else None
        )

    def close(self) -> None:
        """End the session (its ephemeral znodes go at once) and release kazoo's threads."""
        with self._restarting:
            self._closed.set()
        self.kazoo.stop()
        self.kazoo.close()

    def _log_in_again_when_refused(self, user: str) -> None:
        """kazoo stops for good when ZooKeeper refuses a login on a reconnection (a password changed on
        the server): as Kafka's ZooKeeperClient (scheduleReinitialize on AuthFailed), start a new session
        a second later, and again until ZooKeeper takes the login. Its owner sees the session LOST, then
        CONNECTED, as after an expiry (the broker registers again, the controller is elected again)."""

        def on_state(state: KazooState) -> None:
            if state == KazooState.LOST and self.kazoo.client_state == KeeperState.AUTH_FAILED:
                log.error(
                    "ZooKeeper at %s refused the SASL login of user '%s': trying again in %.0f s",
                    self.connect_string,
                    user,
                    RELOGIN_BACKOFF_S,
                )
                timer = threading.Timer(RELOGIN_BACKOFF_S, self._restart)
                timer.daemon = True
                timer.start()

        self.kazoo.add_listener(on_state)

    def _restart(self) -> None:
        with self._restarting:  # never after close(), nor during it
            if self._closed.is_set():
                return
            # kazoo's connection thread has ended (its state is CLOSED by now): start it again (not
            # kazoo.stop() first, whose close request would wait in the queue and end the new session;
            # not kazoo.start(), which closes the client for good on a timeout): it reconnects, with a
            # new session, until it can.
            self.kazoo.start_async()

    @property
    def session_id(self) -> int:
        return int(self.kazoo.client_id[0]) if self.kazoo.client_id else 0

    @property
    def connected(self) -> bool:
        return bool(self.kazoo.connected)

    # -- reads ------------------------------------------------------------------------------------

    def read(self, path: str) -> tuple[bytes | None, ZnodeStat] | None:
        """The data and stat of `path`, or None when it does not exist."""
        try:
            data, stat = self.retry(self.kazoo.get_async, path)
        except NoNodeError:
            return None
        return data, stat

    def children(self, path: str) -> list[str]:
        """The names of `path`'s children, sorted ([] when `path` does not exist)."""
        try:
            return sorted(self.retry(self.kazoo.get_children_async, path))
        except NoNodeError:
            return []

    def retry(self, operation_async: Callable[..., Any], *args: Any) -> Any:
        """The result of kazoo's `operation_async(*args)`, asked again while the connection is lost, as
        Kafka's retryRequestUntilConnected does (for reads, whose repeating is harmless), but for no
        longer than zookeeper.session.timeout.ms: then ZooKeeperConnectionError, instead of hanging.

        kazoo queues a request made while disconnected until it reconnects: waiting on its answer
        with a timeout is what bounds the wait while ZooKeeper is unreachable.
        """
        deadline = time.monotonic() + self.session_timeout_ms / 1000
        pause = 0.05
        while True:
            remaining = deadline - time.monotonic()
            try:
                return operation_async(*args).get(timeout=max(remaining, 0.001))
            except (ConnectionLoss, SessionExpiredError, AuthFailedError, ConnectionClosedError):
                # (a refused login, or a client being started again after one: see _log_in_again_when_refused)
                remaining = deadline - time.monotonic()
                if remaining > 0:
                    time.sleep(min(pause, remaining))
                    pause = min(pause * 2, 1.0)
                    continue
            except KazooTimeoutError:
                pass
            except NoAuthError:
                raise self._refused(operation_async, args) from None
            raise ZooKeeperConnectionError(
                f"Lost the connection to ZooKeeper at {self.connect_string} for longer than "
                f"zookeeper.session.timeout.ms={self.session_timeout_ms}"
            )

    def write(self, operation_async: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """The result of kazoo's `operation_async(*args, **kwargs)` (a create, set, delete or multi),
        not asked again: an answer lost with the connection leaves it unknown whether it happened.
        ZooKeeperConnectionError when there is no answer within zookeeper.session.timeout.ms."""
        try:
            return operation_async(*args, **kwargs).get(timeout=self.session_timeout_ms / 1000)
        except (ConnectionLoss, KazooTimeoutError, AuthFailedError, ConnectionClosedError):
            raise ZooKeeperConnectionError(
                f"No answer from ZooKeeper at {self.connect_string} to a write within "
                f"zookeeper.session.timeout.ms={self.session_timeout_ms}: it may or may not have happened"
            ) from None
        except NoAuthError:
            raise self._refused(operation_async, args) from None
        except InvalidACLError:
            raise self._no_identity(args) from None

    def commit(self, transaction: TransactionRequest) -> list[Any]:
        """Commit a multi; its results, one per op (an exception instance for a failed op)."""
        results: list[Any] = self.write(transaction.commit_async)
        if any(isinstance(result, NoAuthError) for result in results):
            raise self._refused(transaction.commit_async, ())
        if any(isinstance(result, InvalidACLError) for result in results):
            raise self._no_identity(())
        return results

    def _refused(
        self, operation_async: Callable[..., Any], args: tuple[Any, ...]
    ) -> ZooKeeperAuthorizationError:
        """A znode's ACL refused this session (zookeeper.set.acl, by another identity): one line."""
        operation = getattr(operation_async, "__name__", "").removesuffix("_async")
        verb = _VERBS.get(operation, "act on")
        path = args[0] if args and isinstance(args[0], str) else "a znode"
        return ZooKeeperAuthorizationError(
            f"ZooKeeper at {self.connect_string} refused to {verb} {path}: its ACL does not allow this "
            "broker's identity (every broker must log in to ZooKeeper as the identity owning the cluster's "
            "znodes, with zookeeper.set.acl)"
        )

    def _no_identity(self, args: tuple[Any, ...]) -> ZooKeeperAuthorizationError:
        """A create with zookeeper.set.acl's ACL (the creator's) in a session ZooKeeper gave no identity:
        InvalidACL. A certificate ZooKeeper never asked for (its ssl.clientAuth=none) does this."""
        path = args[0] if args and isinstance(args[0], str) else "a znode"
        return ZooKeeperAuthorizationError(
            f"ZooKeeper at {self.connect_string} refused the ACL of {path}: this session has no identity "
            "in ZooKeeper to own it (zookeeper.set.acl needs a SASL login, or a client certificate that "
            "ZooKeeper asks for and authenticates: ssl.clientAuth=want or need on the server)"
        )

    # -- Kafka's start-up znodes ------------------------------------------------------------------

    def create_persistent_path(self, path: str, data: bytes | None = None, exist_ok: bool = True) -> None:
        """Create `path` and any missing parent, as Kafka's createRecursive: parents with no data (null,
        not empty, as Kafka leaves them). An existing `path` is an error unless `exist_ok`."""
        try:
            self.write(self.kazoo.create_async, path, data)
        except NoNodeError:
            parent = path.rsplit("/", 1)[0]
            if parent:
                self.create_persistent_path(parent)
            try:
                self.write(self.kazoo.create_async, path, data)
            except NodeExistsError:
                if not exist_ok:
                    raise
        except NodeExistsError:
            if not exist_ok:
                raise

    def ensure_persistent_paths(self) -> None:
        """The persistent znodes a Kafka broker makes sure exist at start (ZkData.PersistentZkPaths)."""
        for path in paths.PERSISTENT_PATHS:
            self.create_persistent_path(path)

    def get_or_create_cluster_id(self, proposed_cluster_id: str) -> str:
        """The cluster id in /cluster/id, written as `proposed_cluster_id` if there is none yet."""
        try:
            self.create_persistent_path(
                paths.CLUSTER_ID, ClusterIdZnode(proposed_cluster_id).serialize(), exist_ok=False
            )
            return proposed_cluster_id
        except NodeExistsError:
            found = self.read(paths.CLUSTER_ID)
            if found is None:
                raise ZooKeeperConnectionError(f"{paths.CLUSTER_ID} vanished while being read") from None
            return ClusterIdZnode.parse(found[0]).cluster_id

    # -- watches, delivered onto an event loop ----------------------------------------------------

    def watch_children(
        self, path: str, on_change: Callable[[list[str]], None], loop: asyncio.AbstractEventLoop
    ) -> None:
        """Call `on_change(sorted children)` on `loop` now and whenever `path`'s children change
        (kazoo re-arms the watch). `path` must exist: the watch ends, silently, when it is deleted."""
        deliver = deliver_on_loop(loop, on_change)

        def changed(children: list[str] | None) -> None:
            if children is not None:
                deliver(sorted(children))

        self.kazoo.ChildrenWatch(path, changed)

    def watch_data(
        self, path: str, on_change: Callable[[bytes | None], None], loop: asyncio.AbstractEventLoop
    ) -> None:
        """Call `on_change(data)` on `loop` now and whenever `path` is created, changed or deleted
        (None while it does not exist): how brokers see /controller come and go."""
        deliver = deliver_on_loop(loop, on_change)

        def changed(data: bytes | None, stat: ZnodeStat | None) -> None:
            deliver(data if stat is not None else None)

        self.kazoo.DataWatch(path, changed)

    def watch_session(self, on_state: Callable[[str], None], loop: asyncio.AbstractEventLoop) -> None:
        """Call `on_state("CONNECTED" | "SUSPENDED" | "LOST")` on `loop` at each change of the
        session: LOST means it expired (its ephemeral znodes are gone) and a new one is being made."""
        deliver = deliver_on_loop(loop, on_state)

        def listener(state: KazooState) -> None:
            deliver(str(state))

        self.kazoo.add_listener(listener)


def _start_session(kazoo: KazooClient, timeout_s: float) -> bool:
    """Start `kazoo`; whether its session is connected and, with SASL, logged in within `timeout_s`.

    Not kazoo's start(), which gives up when the connection drops right after the session is made.
    kazoo reports the session connected before the login ends, and queues requests until then: a first
    request answered is the proof. A connection lost meanwhile, during the login too, is connected again
    until the time is up; a login ZooKeeper refuses raises AuthFailedError.
    """
    deadline = time.monotonic() + timeout_s
    if not kazoo.start_async().wait(timeout_s):
        return False
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            kazoo.exists_async("/").get(timeout=remaining)
            return True
        except KazooTimeoutError:
            return False
        except ConnectionLoss:
            time.sleep(min(0.05, max(deadline - time.monotonic(), 0)))
    return False


def split_chroot(connect_string: str) -> tuple[str, str]:
    """`"h1:2181,h2:2181/kafka/a"` → `("h1:2181,h2:2181", "/kafka/a")` (chroot "" when there is none)."""
    hosts, slash, chroot = connect_string.partition("/")
    chroot = f"{slash}{chroot}".rstrip("/")
    return hosts, chroot
