"""Kafka's broker jars in the user's cache, fetched once from a Maven repository and checked against the
lock file (kafka_lock.py) before they are used.

Each jar is written to a `.part-` file in the cache directory, its size bounded by the lock's and its
SHA-1 and SHA-256 computed as it arrives; only when both digests are the ones pinned (and the
repository's own `.sha1` file says the same SHA-1) is it renamed into place, so a jar in the cache is
always whole and the pinned one: a cut, tampered or oversized download is deleted and never used. A
jar already in the cache is checked again before each use, and fetched anew if it is not the pinned
one. A file lock keeps two commands sharing the cache from writing the same jar; the `.part-` files a
killed command left are removed by the next one.

The cache directory, and each directory above it, must be writable by this user alone (or be sticky,
as /tmp): whoever else could write there could swap a jar after its check and before Java reads it.
Reads take what has arrived rather than wait for a whole chunk, so that the deadline of a download
holds against a repository that trickles its bytes.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import hashlib
import http.client
import os
import pwd
import stat
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from odradek.cli.cluster_up.kafka_lock import KAFKA_VERSION, Artifact

#: Maven Central; a mirror (or a file:// directory in Maven's layout) is given with --maven-repository
#: or this environment variable.
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
REPOSITORY_ENV = "ODRADEK_MAVEN_REPOSITORY"
SCHEMES = ("https", "http", "file")
#: Per socket operation, and for a whole jar (a mirror that trickles bytes forever is given up on).
SOCKET_TIMEOUT_S = 60.0
JAR_TIMEOUT_S = 600.0
#: A `.sha1` file is 40 hex digits, sometimes followed by the file's name.
MAX_SHA1_FILE_BYTES = 1024
CHUNK_BYTES = 1 << 16
PART_PREFIX = ".part-"

Report = Callable[[str], None]


class JarCacheError(Exception):
    """A jar could not be fetched or is not the pinned one; the message names the artifact and URL."""


def default_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """$XDG_CACHE_HOME/odradek/kafka-3.9.2, or ~/.cache/odradek/kafka-3.9.2."""
    base = environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if Path(base).is_absolute() else Path.home() / ".cache"  # as the XDG spec says
    return root / "odradek" / f"kafka-{KAFKA_VERSION}"


def check_repository(url: str) -> str:
    """`url` without a trailing slash; raises JarCacheError unless it is http(s) or file."""
    if urllib.parse.urlsplit(url).scheme not in SCHEMES:
        raise JarCacheError(f"--maven-repository {url!r}: not an https://, http:// or file:// URL")
    return url.rstrip("/")


def cached_class_path(
    artifacts: Sequence[Artifact], cache_dir: Path, repository: str, report: Report
) -> list[Path]:
    """The jars of `artifacts` in `cache_dir`, in order, each fetched from `repository` unless the
    cache holds it already; `report` is told once before anything is downloaded."""
    repository = check_repository(repository)
    cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private(cache_dir)
    with _exclusive(cache_dir / ".lock"):
        for stale in cache_dir.glob(f"{PART_PREFIX}*"):  # left by a command killed mid-download
            stale.unlink(missing_ok=True)
        missing = [a for a in artifacts if not _holds(cache_dir / a.file_name, a)]
        if missing:
            megabytes = sum(a.size for a in missing) / 1e6
            report(
                f"downloading Apache Kafka {KAFKA_VERSION}'s broker ({len(missing)} jars, "
                f"{megabytes:.0f} MB) from {repository} into {cache_dir}"
            )
        for artifact in missing:
            _download(artifact, cache_dir, repository)
    return [cache_dir / a.file_name for a in artifacts]


def _check_private(cache_dir: Path) -> None:
    """Raises JarCacheError unless only this user (and root) may change what `cache_dir` holds: it is
    this user's and no directory on its way, as written or as links resolve it, may be written by
    others (unless sticky: there others may not rename or remove what is not theirs)."""
    user = os.geteuid()
    absolute = cache_dir.absolute()
    for directory in dict.fromkeys([absolute, *absolute.parents, *cache_dir.resolve().parents]):
        try:
            found = os.stat(directory)
        except OSError as error:
            raise JarCacheError(f"the Kafka jar cache {cache_dir}: {error}") from error
        owners = (user,) if directory == absolute else (user, 0)
        if found.st_uid not in owners:
            raise JarCacheError(
                f"{directory} is owned by user {found.st_uid}: it cannot hold the Kafka jar cache safely"
            )
        writers = stat.S_IWOTH | (0 if _private_group(found.st_gid) else stat.S_IWGRP)
        if found.st_mode & writers and not (directory != absolute and found.st_mode & stat.S_ISVTX):
            raise JarCacheError(
                f"{directory} may be written by other users: they could replace a cached Kafka jar "
                "between its check and its use (chmod go-w, or choose another XDG_CACHE_HOME)"
            )


def _private_group(gid: int) -> bool:
    """This user's own group (a user private group, as umask 002 systems give each user): its write
    permission lets no one else in."""
    if gid != os.getegid():
        return False
    try:
        members = grp.getgrgid(gid).gr_mem
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return False
    return set(members) <= {user}


def _holds(path: Path, artifact: Artifact) -> bool:
    try:
        if path.stat().st_size != artifact.size:
            return False
        with open(path, "rb") as jar:
            return hashlib.file_digest(jar, "sha256").hexdigest() == artifact.sha256
    except OSError:
        return False


def _download(artifact: Artifact, cache_dir: Path, repository: str) -> None:
    url = f"{repository}/{artifact.repository_path}"
    published = _published_sha1(artifact, f"{url}.sha1")
    if published != artifact.sha1:
        raise JarCacheError(
            f"{artifact.coordinates}: {url}.sha1 says {published}, the lock file pins {artifact.sha1}"
        )
    handle, name = tempfile.mkstemp(prefix=f"{PART_PREFIX}{artifact.file_name}-", dir=cache_dir)
    part = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            sha1, sha256 = _copy_bounded(artifact, url, out)
            out.flush()
            os.fsync(out.fileno())
        if (sha1, sha256) != (artifact.sha1, artifact.sha256):
            raise JarCacheError(
                f"{artifact.coordinates}: {url} is not the pinned jar (SHA-256 {sha256}, the lock file "
                f"pins {artifact.sha256})"
            )
        os.replace(part, cache_dir / artifact.file_name)
    finally:
        part.unlink(missing_ok=True)
    _sync_directory(cache_dir)


def _published_sha1(artifact: Artifact, url: str) -> str:
    deadline = time.monotonic() + JAR_TIMEOUT_S
    text = b""
    with _open(artifact, url) as response:
        while len(text) <= MAX_SHA1_FILE_BYTES and (
            chunk := _read_some(artifact, url, response, MAX_SHA1_FILE_BYTES + 1 - len(text), deadline)
        ):
            text += chunk
    if len(text) > MAX_SHA1_FILE_BYTES:
        raise JarCacheError(
            f"{artifact.coordinates}: {url} is not a .sha1 file (over {MAX_SHA1_FILE_BYTES} bytes)"
        )
    words = text.decode("ascii", "replace").split()
    return words[0].lower() if words else ""


def _copy_bounded(artifact: Artifact, url: str, out: BinaryIO) -> tuple[str, str]:
    """Copies `url` to `out`, never more than the pinned size; returns its SHA-1 and SHA-256."""
    sha1, sha256 = hashlib.sha1(), hashlib.sha256()
    received = 0
    deadline = time.monotonic() + JAR_TIMEOUT_S
    with _open(artifact, url) as response:
        while chunk := _read_some(artifact, url, response, CHUNK_BYTES, deadline):
            received += len(chunk)
            if received > artifact.size:
                raise JarCacheError(
                    f"{artifact.coordinates}: {url} sent more than the pinned {artifact.size} bytes"
                )
            sha1.update(chunk)
            sha256.update(chunk)
            out.write(chunk)
    if received != artifact.size:
        raise JarCacheError(
            f"{artifact.coordinates}: {url} sent {received} bytes, the lock file pins {artifact.size}"
        )
    return sha1.hexdigest(), sha256.hexdigest()


def _read_some(artifact: Artifact, url: str, response: BinaryIO, limit: int, deadline: float) -> bytes:
    """What has arrived, up to `limit` bytes (b"" at the end); raises JarCacheError past `deadline`.
    read1 returns after one receive where read would wait for all `limit` bytes, however slowly they
    come, so the deadline is looked at after each piece a slow repository sends."""
    if time.monotonic() > deadline:
        raise JarCacheError(f"{artifact.coordinates}: {url} took over {JAR_TIMEOUT_S:g} s")
    read1 = getattr(response, "read1", None)  # http.client's responses and files have it
    return bytes(read1(limit) if read1 is not None else response.read(limit))


@contextlib.contextmanager
def _open(artifact: Artifact, url: str) -> Iterator[BinaryIO]:
    try:
        with urllib.request.urlopen(url, timeout=SOCKET_TIMEOUT_S) as response:
            yield response
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise JarCacheError(f"{artifact.coordinates}: downloading {url} failed: {reason}") from error


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _sync_directory(directory: Path) -> None:
    """The rename is durable: a crash after it never leaves the cache naming a jar it lost."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
