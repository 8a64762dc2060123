"""Delegation tokens (security/delegation_tokens.py's `TokenStore`): a single node's and a ZooKeeper
cluster's.

`LocalTokenStore`: `<first log dir>/__odradek_delegation_tokens.json` holds each token's information in
the JSON of Kafka's token znodes (no HMAC: it is derived from the secret key), owner-only, replaced
atomically from a worker thread on each change, as the SCRAM credentials' file.

In ZooKeeper, as Kafka 3.9's DelegationTokenManagerZk keeps them: `ZkTokenStore` writes a token's
znode (set, or create when absent, as KafkaZkClient's setOrCreateDelegationToken) or deletes it, then
creates a `token_change_` notification naming the token. `TokenChangeListener` is every broker's side
(ZkNodeChangeNotificationListener): on new notifications it reads each named token again into its
manager's cache (gone: removed there), and deletes notifications older than 15 minutes. Every
ZooKeeper call blocks: they run in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

from kazoo.exceptions import NoNodeError

from odradek.cluster.zookeeper import delegation_token_znodes as znodes
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import ZooKeeperError
from odradek.cluster.zookeeper.notifications import CHANGE_EXPIRATION_MS, purge_expired_notifications
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.security.delegation_tokens import DelegationTokenManager, TokenInformation, TokenStoreError
from odradek.storage.files import atomic_write

log = logging.getLogger(__name__)
T = TypeVar("T")

FILE_NAME: Final = "__odradek_delegation_tokens.json"
_VERSION: Final = 1


class LocalTokenStore:
    """A single node's, in `<first log dir>/__odradek_delegation_tokens.json`."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / FILE_NAME
        self.tokens: dict[str, TokenInformation] = {}
        # one write at a time, in the order asked (each replaces the whole file)
        self._writing = asyncio.Lock()

    def load(self) -> list[TokenInformation]:
        """The tokens in the file (none if there is no file); TokenStoreError if it is unreadable."""
        try:
            doc = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as error:
            raise TokenStoreError(f"cannot read delegation tokens {self.path}: {error}") from None
        if (
            not isinstance(doc, dict)
            or doc.get("version") != _VERSION
            or not isinstance(doc.get("tokens"), list)
        ):
            raise TokenStoreError(f"{self.path}: not a version {_VERSION} delegation token file")
        try:
            tokens = [
                znodes.decode_token(json.dumps(token).encode(), str(self.path)) for token in doc["tokens"]
            ]
        except MalformedZnodeError as error:
            raise TokenStoreError(str(error)) from None
        self.tokens = {token.token_id: token for token in tokens}
        return tokens

    async def write(self, token: TokenInformation) -> None:
        async with self._writing:
            tokens = {**self.tokens, token.token_id: token}
            await self._persist(tokens)

    async def delete(self, token_id: str) -> None:
        async with self._writing:
            tokens = {key: value for key, value in self.tokens.items() if key != token_id}
            await self._persist(tokens)

    async def _persist(self, tokens: dict[str, TokenInformation]) -> None:
        doc = {
            "version": _VERSION,
            "tokens": [json.loads(znodes.encode_token(token)) for _, token in sorted(tokens.items())],
        }
        data = (json.dumps(doc, indent=1) + "\n").encode()
        try:
            await asyncio.to_thread(self._write_file, data)
        except OSError as error:
            raise TokenStoreError(f"cannot write delegation tokens {self.path}: {error}") from None
        self.tokens = tokens

    def _write_file(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, data, mode=0o600)


class ZkTokenStore:
    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk

    def load(self) -> list[TokenInformation]:
        """Create Kafka's token paths and read every token (blocking; at start-up). A malformed token
        is logged and skipped, as Kafka's loadCache does."""
        self.zk.create_persistent_path(znodes.TOKEN_CHANGES)
        self.zk.create_persistent_path(znodes.TOKENS)
        tokens = []
        for token_id in self.zk.children(znodes.TOKENS):
            try:
                info = self.read(token_id)
            except MalformedZnodeError as error:
                log.error("delegation token skipped: %s", error)
                continue
            if info is not None:
                tokens.append(info)
        log.info("delegation tokens loaded from ZooKeeper: %d", len(tokens))
        return tokens

    def read(self, token_id: str) -> TokenInformation | None:
        path = znodes.token_path(token_id)
        found = self.zk.read(path)
        return None if found is None else znodes.decode_token(found[0], path)

    async def write(self, token: TokenInformation) -> None:
        await self._run(self._write, token)

    async def delete(self, token_id: str) -> None:
        await self._run(self._delete, token_id)

    async def _run(self, work: Callable[[T], None], argument: T) -> None:
        try:
            await asyncio.to_thread(work, argument)
        except ZooKeeperError as error:
            raise TokenStoreError(str(error)) from None

    def _write(self, token: TokenInformation) -> None:
        path = znodes.token_path(token.token_id)
        data = znodes.encode_token(token)
        try:
            self.zk.write(self.zk.kazoo.set_async, path, data, -1)
        except NoNodeError:
            self.zk.create_persistent_path(path, data)
        self._notify(token.token_id)

    def _delete(self, token_id: str) -> None:
        with contextlib.suppress(NoNodeError):  # expired by another broker first
            self.zk.write(self.zk.kazoo.delete_async, znodes.token_path(token_id), -1)
        self._notify(token_id)

    def _notify(self, token_id: str) -> None:
        self.zk.write(
            self.zk.kazoo.create_async,
            f"{znodes.TOKEN_CHANGES}/{znodes.CHANGE_PREFIX}",
            token_id.encode(),
            sequence=True,
        )


class TokenChangeListener:
    """Follows /delegation_token/token_changes into this broker's token cache."""

    def __init__(
        self,
        store: ZkTokenStore,
        tokens: DelegationTokenManager,
        change_expiration_ms: int = CHANGE_EXPIRATION_MS,
    ) -> None:
        self.store = store
        self.tokens = tokens
        self.change_expiration_ms = change_expiration_ms
        #: The newest notification handled (the cache was loaded from the tokens themselves at start).
        self.sequence = -1
        self._processing = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.store.zk.watch_children(znodes.TOKEN_CHANGES, self._changed, loop)

    def _changed(self, _names: list[str]) -> None:
        task = asyncio.get_running_loop().create_task(self.process())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def process(self) -> None:
        async with self._processing:
            try:
                changed, names = await asyncio.to_thread(self._changes_after, self.sequence)
            except (ZooKeeperError, MalformedZnodeError) as error:
                log.error("delegation token notifications not processed: %s", error)
                return
            for sequence, token_id, info in changed:
                await self.tokens.token_changed(token_id, info)
                self.sequence = max(self.sequence, sequence)
            if names:
                try:
                    await asyncio.to_thread(
                        purge_expired_notifications,
                        self.store.zk,
                        znodes.TOKEN_CHANGES,
                        names,
                        self.change_expiration_ms,
                    )
                except ZooKeeperError as error:
                    log.warning("old delegation token notifications not purged: %s", error)

    def _changes_after(
        self, sequence: int
    ) -> tuple[list[tuple[int, str, TokenInformation | None]], list[str]]:
        """The tokens named by notifications after `sequence`, as ZooKeeper holds them now, in order."""
        zk = self.store.zk
        prefix = znodes.CHANGE_PREFIX
        names = [
            name
            for name in zk.children(znodes.TOKEN_CHANGES)
            if name.startswith(prefix) and name[len(prefix) :].isdigit()
        ]
        numbered = sorted((int(name[len(prefix) :]), name) for name in names)
        changed: list[tuple[int, str, TokenInformation | None]] = []
        for number, name in numbered:
            if number <= sequence:
                continue
            found = zk.read(f"{znodes.TOKEN_CHANGES}/{name}")
            if found is None or found[0] is None:
                continue  # purged meanwhile
            try:
                token_id = found[0].decode("utf-8")
                info = self.store.read(token_id)
            except (UnicodeDecodeError, MalformedZnodeError) as error:
                log.error("delegation token notification %s skipped: %s", name, error)
                continue
            changed.append((number, token_id, info))
        return changed, names
