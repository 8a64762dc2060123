"""Kafka's broker jars in the user's cache (`cluster up --kafka N`): fetched once from a Maven repository
(here a fake one served on 127.0.0.1 from a temp dir, never Maven Central), each checked against the
lock's size, SHA-1 and SHA-256 and the repository's .sha1 file before it is renamed into place, and
reused with no request afterwards. A hostile or broken repository (another jar, a wrong .sha1, an
endless or cut response, a missing file) stops the command in one line naming the artifact and the
URL, and leaves nothing in the cache that a later run would use."""

from __future__ import annotations

import getpass
import grp
import hashlib
import http.server
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli.cluster_up import jar_cache
from odradek.cli.cluster_up.jar_cache import (
    PART_PREFIX,
    JarCacheError,
    cached_class_path,
    check_repository,
    default_cache_dir,
)
from odradek.cli.cluster_up.kafka_lock import Artifact, read_lock
from tests.support.ports import free_port

#: A trickled answer: its bytes one at a time, never all of them (the connection then closes).
TRICKLED_BYTES = 100
TRICKLE_PAUSE_S = 0.1

JARS = {
    "org.example:first:1.0": b"PK first jar " * 1000,
    "org.example.other:second:2.0-rc1": b"PK second jar " * 3000,
}


class FakeRepository:
    """A Maven repository on 127.0.0.1 serving `root`; `served` records each path asked for. A path in
    `endless` is answered with bytes until the client goes away; one in `trickled` with its length
    announced and its first `TRICKLED_BYTES` bytes sent one at a time, `TRICKLE_PAUSE_S` apart."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.served: list[str] = []
        self.endless: set[str] = set()
        self.trickled: set[str] = set()
        #: Set once a trickled answer has sent all it would send.
        self.trickle_done = threading.Event()
        repository = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                repository.served.append(self.path)
                if self.path in repository.endless:
                    self.send_response(200)
                    self.end_headers()
                    try:
                        while True:
                            self.wfile.write(b"\0" * 65536)
                    except OSError:
                        return
                file = repository.root / self.path.lstrip("/")
                if not file.is_file():
                    self.send_error(404)
                    return
                body = file.read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path in repository.trickled:
                    try:
                        for byte in body[:TRICKLED_BYTES]:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(TRICKLE_PAUSE_S)
                    except OSError:
                        return
                    repository.trickle_done.set()
                    return
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/maven2/"

    def path_of(self, artifact: Artifact) -> Path:
        return self.root / "maven2" / str(artifact.repository_path)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def artifacts(repository: FakeRepository) -> tuple[Artifact, ...]:
    lines = []
    for coordinates, data in JARS.items():
        sha1 = hashlib.sha1(data).hexdigest()
        lines.append(f"{coordinates} {len(data)} {sha1} {hashlib.sha256(data).hexdigest()}")
    pinned = read_lock("\n".join(lines))
    for artifact, data in zip(pinned, JARS.values(), strict=True):
        path = repository.path_of(artifact)
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        Path(f"{path}.sha1").write_text(f"{artifact.sha1}  {path.name}\n")  # as some repositories write it
    return pinned


@pytest.fixture
def repository(tmp_path: Path) -> Iterator[FakeRepository]:
    served = FakeRepository(tmp_path / "repository")
    yield served
    served.close()


def fetch(artifacts: tuple[Artifact, ...], cache: Path, url: str) -> list[Path]:
    return cached_class_path(artifacts, cache, url, report=lambda _: None)


def test_first_use_downloads_each_jar_checked_then_reuses_the_cache_with_no_request(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    cache = tmp_path / "cache"
    reports: list[str] = []
    jars = cached_class_path(artifacts, cache, repository.url, report=reports.append)
    assert [p.read_bytes() for p in jars] == list(JARS.values())  # in the lock's order
    assert len(reports) == 1 and "2 jars" in reports[0] and repository.url.rstrip("/") in reports[0]
    assert sorted(repository.served) == sorted(
        f"/maven2/{a.repository_path}{suffix}" for a in artifacts for suffix in ("", ".sha1")
    )
    repository.close()  # offline from now on: any request would fail
    repository.served.clear()
    assert fetch(artifacts, cache, repository.url) == jars
    assert repository.served == []
    assert sorted(p.name for p in cache.iterdir()) == sorted([".lock", *(a.file_name for a in artifacts)])


def test_a_tampered_jar_is_refused_naming_it_and_not_kept(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    tampered = bytearray(JARS["org.example.other:second:2.0-rc1"])
    tampered[100] ^= 1  # same size, same .sha1 file: only the bytes differ
    repository.path_of(artifacts[1]).write_bytes(bytes(tampered))
    cache = tmp_path / "cache"
    with pytest.raises(JarCacheError) as refused:
        fetch(artifacts, cache, repository.url)
    message = str(refused.value)
    assert "org.example.other:second:2.0-rc1" in message and "is not the pinned jar" in message
    assert f"{repository.url}{artifacts[1].repository_path}" in message and "\n" not in message
    assert artifacts[1].file_name not in {p.name for p in cache.iterdir()}
    assert not list(cache.glob(f"{PART_PREFIX}*"))


def test_a_repository_whose_sha1_file_differs_from_the_lock_is_refused_before_the_jar_is_fetched(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    Path(f"{repository.path_of(artifacts[0])}.sha1").write_text("0" * 40)
    with pytest.raises(
        JarCacheError, match=r"org.example:first:1.0: .*\.sha1 says 0{40}, the lock file pins"
    ):
        fetch(artifacts, tmp_path / "cache", repository.url)
    assert f"/maven2/{artifacts[0].repository_path}" not in repository.served


def test_an_endless_response_is_cut_at_the_pinned_size_and_not_kept(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    repository.endless.add(f"/maven2/{artifacts[0].repository_path}")
    cache = tmp_path / "cache"
    with pytest.raises(JarCacheError, match=f"sent more than the pinned {artifacts[0].size} bytes"):
        fetch(artifacts, cache, repository.url)
    assert [p.name for p in cache.iterdir()] == [".lock"]


def test_a_cut_jar_is_refused_and_not_kept(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    path = repository.path_of(artifacts[0])
    path.write_bytes(path.read_bytes()[:-10])
    cache = tmp_path / "cache"
    with pytest.raises(JarCacheError, match=f"sent {artifacts[0].size - 10} bytes, the lock file pins"):
        fetch(artifacts, cache, repository.url)
    assert [p.name for p in cache.iterdir()] == [".lock"]


def test_a_missing_artifact_names_the_artifact_and_the_url(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    repository.path_of(artifacts[1]).unlink()
    url = f"{repository.url}{artifacts[1].repository_path}"
    with pytest.raises(JarCacheError, match=f"org.example.other:second:2.0-rc1: downloading {url} failed"):
        fetch(artifacts, tmp_path / "cache", repository.url)


def test_an_unreachable_repository_names_the_artifact_and_the_url(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    repository.close()
    with pytest.raises(JarCacheError, match=f"org.example:first:1.0: downloading {repository.url}"):
        fetch(artifacts, tmp_path / "cache", repository.url)


def test_a_cached_jar_changed_since_is_fetched_again(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    cache = tmp_path / "cache"
    jars = fetch(artifacts, cache, repository.url)
    jars[0].write_bytes(b"X" * artifacts[0].size)  # same size, other bytes
    repository.served.clear()
    fetch(artifacts, cache, repository.url)
    assert jars[0].read_bytes() == JARS["org.example:first:1.0"]
    assert repository.served == [
        f"/maven2/{artifacts[0].repository_path}.sha1",
        f"/maven2/{artifacts[0].repository_path}",
    ]


def test_a_half_written_download_left_by_a_killed_command_is_removed_and_never_used(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    left = cache / f"{PART_PREFIX}{artifacts[0].file_name}-x1y2"
    left.write_bytes(JARS["org.example:first:1.0"][:500])
    jars = fetch(artifacts, cache, repository.url)
    assert not left.exists()
    assert jars[0].read_bytes() == JARS["org.example:first:1.0"]


def test_a_file_url_repository_is_read_like_a_served_one(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    jars = fetch(artifacts, tmp_path / "cache", (repository.root / "maven2").as_uri())
    assert [p.read_bytes() for p in jars] == list(JARS.values())


@pytest.mark.parametrize("url", ["ftp://mirror.example/maven2", "/srv/maven2", "javascript:alert(1)"])
def test_a_repository_that_is_not_an_http_or_file_url_is_refused(url: str) -> None:
    with pytest.raises(JarCacheError, match="not an https://, http:// or file:// URL"):
        check_repository(url)


def test_the_cache_is_under_xdg_cache_home_or_home_cache(tmp_path: Path) -> None:
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "odradek" / "kafka-3.9.2"
    # a relative XDG_CACHE_HOME is ignored, as the XDG base directory specification says
    assert default_cache_dir({"XDG_CACHE_HOME": "rel"}) == Path.home() / ".cache" / "odradek" / "kafka-3.9.2"
    assert default_cache_dir({}) == Path.home() / ".cache" / "odradek" / "kafka-3.9.2"


@pytest.mark.parametrize("suffix", ["", ".sha1"])
def test_a_repository_trickling_bytes_is_given_up_on_after_the_download_deadline_not_after_its_last_byte(
    tmp_path: Path,
    repository: FakeRepository,
    artifacts: tuple[Artifact, ...],
    monkeypatch: pytest.MonkeyPatch,
    suffix: str,
) -> None:
    """A read of a whole chunk waited for the chunk (or the connection's end): a server sending a byte
    every few seconds, each within the socket timeout, held the command past JAR_TIMEOUT_S for as
    long as it liked; the deadline was looked at only between chunks."""
    monkeypatch.setattr(jar_cache, "JAR_TIMEOUT_S", TRICKLE_PAUSE_S * 3)
    repository.trickled.add(f"/maven2/{artifacts[0].repository_path}{suffix}")
    with pytest.raises(JarCacheError, match="took over"):
        fetch(artifacts, tmp_path / "cache", repository.url)
    # given up on while the server was still trickling, not once it had sent its last byte
    assert not repository.trickle_done.is_set()


def test_a_cache_directory_others_may_write_is_refused_as_its_jars_could_be_swapped_after_their_check(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    with pytest.raises(JarCacheError, match=f"{cache} may be written by other users"):
        fetch(artifacts, cache, repository.url)
    assert repository.served == []


def test_a_cache_directory_under_a_directory_others_may_write_is_refused(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    """Whoever may write the parent may rename the cache away and put one of their own in its place."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(JarCacheError, match=f"{shared} may be written by other users"):
        fetch(artifacts, shared / "cache", repository.url)


def test_a_cache_directory_under_a_sticky_world_writable_directory_is_used(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    """As /tmp: others may not rename or remove what they do not own there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    jars = fetch(artifacts, shared / "cache", repository.url)
    assert [p.read_bytes() for p in jars] == list(JARS.values())


def test_a_cache_directory_owned_by_another_user_is_refused(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    other = os.geteuid() + 4242
    if os.geteuid() != 0:
        pytest.skip("only root may give a directory to another user")
    os.chown(cache, other, -1)
    with pytest.raises(JarCacheError, match=f"{cache} is owned by user {other}"):
        fetch(artifacts, cache, repository.url)


def test_a_new_cache_directory_is_made_private(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    cache = tmp_path / "new" / "cache"
    fetch(artifacts, cache, repository.url)
    assert cache.stat().st_mode & 0o077 == 0


def test_a_cache_directory_writable_by_the_users_own_private_group_is_used(
    tmp_path: Path, repository: FakeRepository, artifacts: tuple[Artifact, ...]
) -> None:
    """umask 002 systems give each user a group of their own: its write permission lets no one else in."""
    if any(member for member in grp.getgrgid(os.getegid()).gr_mem if member != getpass.getuser()):
        pytest.skip("this user's group has other members")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    cache.chmod(0o770)
    jars = fetch(artifacts, cache, repository.url)
    assert [p.read_bytes() for p in jars] == list(JARS.values())
