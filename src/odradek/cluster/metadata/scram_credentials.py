"""Where SCRAM credentials are kept (security.scram_credentials.CredentialStore): a single node's file,
or ZooKeeper's /config/users/<user> as Kafka 3.9 keeps them.

On a single node they live in ``<first log dir>/__odradek_scram_credentials.json`` (owner-only,
replaced atomically on each change, written from a worker thread one change at a time: an fsync on the
event loop held every connection of the broker).

In a ZooKeeper cluster a user's znode is its dynamic config (`{"version":1,"config":{...}}`, the name
sanitized as Kafka's Sanitizer does) where each SCRAM mechanism is a key whose value is
ScramCredentialUtils' string (`salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`). The same
znode holds the user's quotas (`producer_byte_rate`...): an alteration reads the config, changes only
the mechanisms' keys and writes it back by compare-and-set on the znode's version, tried again on a
conflict, then notifies `users/<user>` under /config/changes (ZkAdminManager.alterUserScramCredentials,
changeConfigs). A user left with no config and no client quotas loses its znode, as in Kafka.

Every broker keeps the credentials in memory for the SASL exchange (Kafka's CredentialCache): read at
start-up, and again for a user whenever a notification names it (`user_changed`, called by the broker's
config change follower). DescribeUserScramCredentials reads ZooKeeper itself, as Kafka does, so a
change made through another broker is seen at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Collection
from pathlib import Path
from typing import Final

from kazoo.exceptions import BadVersionError, NodeExistsError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.config_znodes import EntityConfigZnode
from odradek.cluster.zookeeper.configs import create_config_change_notification, remove_empty_entity
from odradek.cluster.zookeeper.errors import ZooKeeperError
from odradek.cluster.zookeeper.sanitizer import desanitize, sanitize
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.security.scram_credentials import (
    MECHANISMS,
    CredentialError,
    ScramCredential,
    UserCredentials,
    credential_from_string,
    credential_to_string,
)
from odradek.storage.files import atomic_write

log = logging.getLogger(__name__)

FILE_NAME: Final = "__odradek_scram_credentials.json"
_VERSION: Final = 1
#: Attempts of one compare-and-set of a user's config before giving up.
MAX_UPDATE_RETRIES: Final = 10


class LocalScramCredentialStore:
    """A single node's credentials by user and mechanism: one file in the first log dir."""

    def __init__(self, path: Path, credentials: UserCredentials | None = None) -> None:
        self.path = path
        self.credentials: UserCredentials = credentials or {}
        self._turn = asyncio.Lock()

    @classmethod
    def load(cls, log_dir: Path) -> LocalScramCredentialStore:
        """The credentials in the file (blocking; at start-up). CredentialError: unreadable."""
        path = log_dir / FILE_NAME
        try:
            doc = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as error:
            raise CredentialError(f"cannot read SCRAM credentials {path}: {error}") from None
        if doc.get("version") != _VERSION:
            raise CredentialError(f"{path}: unsupported version {doc.get('version')!r}")
        try:
            credentials = {
                user: {mechanism: ScramCredential.from_json(c) for mechanism, c in by_mechanism.items()}
                for user, by_mechanism in doc.get("users", {}).items()
            }
        except (KeyError, TypeError, ValueError) as error:
            raise CredentialError(f"{path}: malformed credential: {error}") from None
        return cls(path, credentials)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.credentials.get(user, {}).get(mechanism)

    def users(self) -> list[str]:
        return sorted(self.credentials)

    async def describe(self, users: Collection[str] | None) -> UserCredentials:
        named = self.users() if users is None else users
        return {user: dict(self.credentials[user]) for user in named if self.credentials.get(user)}

    async def alter(
        self, upserts: dict[tuple[str, str], ScramCredential], deletions: set[tuple[str, str]]
    ) -> None:
        """Apply one AlterUserScramCredentials change: in the file first, then in force."""
        async with self._turn:
            changed = {user: dict(by_mechanism) for user, by_mechanism in self.credentials.items()}
            for user, mechanism in deletions:
                by_mechanism = changed.get(user, {})
                by_mechanism.pop(mechanism, None)
                if not by_mechanism:
                    changed.pop(user, None)
            for (user, mechanism), credential in upserts.items():
                changed.setdefault(user, {})[mechanism] = credential
            await asyncio.to_thread(self._write, changed)
            self.credentials = changed
        names = sorted({f"{u}/{m}" for u, m in [*upserts, *deletions]})
        log.info("SCRAM credentials changed: %s", ", ".join(names))

    def _write(self, credentials: UserCredentials) -> None:
        doc = {
            "version": _VERSION,
            "users": {
                user: {mechanism: c.to_json() for mechanism, c in sorted(by_mechanism.items())}
                for user, by_mechanism in sorted(credentials.items())
            },
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, (json.dumps(doc, indent=1) + "\n").encode(), mode=0o600)


class ZkScramCredentialStore:
    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk
        self.credentials: UserCredentials = {}
        self._updating = asyncio.Lock()

    def load(self) -> ZkScramCredentialStore:
        """Read every user's credentials (blocking; at start-up)."""
        self.credentials = self._read_all()
        return self

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.credentials.get(user, {}).get(mechanism)

    async def describe(self, users: Collection[str] | None) -> UserCredentials:
        try:
            if users is None:
                return await asyncio.to_thread(self._read_all)
            read = await asyncio.to_thread(lambda: {user: self._read(user) for user in users})
        except (ZooKeeperError, MalformedZnodeError) as error:
            # (the reason stays here: clients get UNKNOWN_SERVER_ERROR's own message, as from Kafka)
            log.error("SCRAM credentials not read from ZooKeeper: %s", error)
            raise CredentialError(f"SCRAM credentials not read from ZooKeeper: {error}") from None
        return {user: found for user, found in read.items() if found}

    async def alter(
        self, upserts: dict[tuple[str, str], ScramCredential], deletions: set[tuple[str, str]]
    ) -> None:
        by_user: dict[str, dict[str, ScramCredential | None]] = {}
        for (user, mechanism), credential in upserts.items():
            by_user.setdefault(user, {})[mechanism] = credential
        for user, mechanism in deletions:
            by_user.setdefault(user, {})[mechanism] = None
        async with self._updating:
            for user, changes in by_user.items():
                try:
                    stored = await asyncio.to_thread(self._alter_user, user, changes)
                except (ZooKeeperError, MalformedZnodeError, CredentialError) as error:
                    log.error("SCRAM credentials of %s not changed: %s", user, error)
                    raise CredentialError(f"SCRAM credentials of {user} not changed: {error}") from None
                self._cache(user, stored)
        changed = sorted({f"{u}/{m}" for u, m in [*upserts, *deletions]})
        log.info("SCRAM credentials changed in ZooKeeper: %s", ", ".join(changed))

    async def user_changed(self, entity_name: str) -> None:
        """A /config/changes notification named `users/<entity_name>`: read that user again."""
        if "/" in entity_name or entity_name == paths.DEFAULT_ENTITY:
            return  # a (user, client id) or default quota entity: no credentials there
        try:
            user = desanitize(entity_name)
        except UnicodeDecodeError:
            log.warning("config change of users/%s skipped: not a sanitized user name", entity_name)
            return
        async with self._updating:
            try:
                stored = await asyncio.to_thread(self._read, user)
            except (ZooKeeperError, MalformedZnodeError) as error:
                log.error("SCRAM credentials of %s not reloaded: %s", user, error)
                return
            self._cache(user, stored)
        log.info("SCRAM credentials of %s reloaded: %s", user, ", ".join(sorted(stored)) or "none left")

    # ----- helpers ---------------------------------------------------------------------------------

    def _cache(self, user: str, stored: dict[str, ScramCredential]) -> None:
        if stored:
            self.credentials[user] = stored
        else:
            self.credentials.pop(user, None)

    def _read_all(self) -> UserCredentials:
        found: UserCredentials = {}
        for node in self.zk.children(f"{paths.CONFIG}/{paths.USER_CONFIG}"):
            try:
                user = desanitize(node)
            except UnicodeDecodeError:  # not a name Kafka's Sanitizer writes: no SCRAM user of ours
                log.warning("/config/users/%s skipped: not a sanitized user name", node)
                continue
            credentials = self._read(user)
            if credentials:
                found[user] = credentials
        return found

    def _read(self, user: str) -> dict[str, ScramCredential]:
        config = self._config(user)[0]
        return _credentials(user, config)

    def _config(self, user: str) -> tuple[dict[str, str], int | None]:
        path = paths.config_entity(paths.USER_CONFIG, sanitize(user))
        found = self.zk.read(path)
        if found is None:
            return {}, None
        return dict(EntityConfigZnode.parse(found[0], path).config), found[1].version

    def _alter_user(
        self, user: str, changes: dict[str, ScramCredential | None]
    ) -> dict[str, ScramCredential]:
        name = sanitize(user)
        path = paths.config_entity(paths.USER_CONFIG, name)
        for _ in range(MAX_UPDATE_RETRIES + 1):
            config, version = self._config(user)
            for mechanism, credential in changes.items():
                if credential is None:
                    config.pop(mechanism, None)
                else:
                    config[mechanism] = credential_to_string(credential)
            if not config and (
                version is None or remove_empty_entity(self.zk, paths.USER_CONFIG, name, version)
            ):
                # nothing left of the user: no znode, as Kafka (AdminZkClient.tryCleanQuotaNodes)
                create_config_change_notification(self.zk, f"{paths.USER_CONFIG}/{name}")
                return {}
            data = EntityConfigZnode(config).serialize()
            try:
                if version is None:
                    self.zk.create_persistent_path(path, data, exist_ok=False)
                else:
                    self.zk.write(self.zk.kazoo.set_async, path, data, version)
            except (BadVersionError, NodeExistsError):
                # changed by another broker (its quotas or credentials) since read: apply to that
                time.sleep(random.uniform(0.05, 0.1))
                continue
            create_config_change_notification(self.zk, f"{paths.USER_CONFIG}/{name}")
            return _credentials(user, config)
        raise CredentialError(f"{path} changed too often to be updated ({MAX_UPDATE_RETRIES} retries)")


def _credentials(user: str, config: dict[str, str]) -> dict[str, ScramCredential]:
    credentials = {}
    for mechanism in MECHANISMS:
        if mechanism in config:
            try:
                credentials[mechanism] = credential_from_string(config[mechanism])
            except CredentialError:  # another tool's bad value: that mechanism cannot log in
                # (not the error's text: it may quote the value, a salted key)
                log.error(
                    "SCRAM credential %s of %s ignored: not salt=...,stored_key=...,server_key=...,"
                    "iterations=... (ScramCredentialUtils' form)",
                    mechanism,
                    user,
                )
    return credentials
