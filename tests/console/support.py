"""Helpers of the console's browser tests: a console process, a headless Chromium, seeding a cluster,
and the admin-API answers the pages are checked against."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.broker_process import REPO, _die_with_parent, free_port
from tests.support.requirements import missing, require_module

# The README's screenshots are refreshed on request (`make console-screenshots` sets
# ODRADEK_SCREENSHOTS); otherwise they go to a scratch folder, so a test run leaves the tree as it was.
SCREENSHOTS = Path(
    os.environ.get("ODRADEK_SCREENSHOTS") or Path(tempfile.gettempdir()) / "odradek-console-shots"
)
if not SCREENSHOTS.is_absolute():
    SCREENSHOTS = REPO / SCREENSHOTS
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


class ConsoleProcess:
    """`odradek console` in a child process on a free loopback port."""

    def __init__(self, bootstrap: str, *extra: str, log_dir: Path) -> None:
        self.port = free_port()
        self.bootstrap = bootstrap
        self.extra = list(extra)
        self.log_path = log_dir / f"console-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ConsoleProcess:
        command = [sys.executable, "-m", "odradek.cli.main", "console", "--bootstrap-server", self.bootstrap]
        command += ["--port", str(self.port), "--sample-interval", "1", *self.extra]
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO, preexec_fn=_die_with_parent
            )
        try:
            return self._wait_ready(timeout)
        except BaseException:
            self.stop()  # a console that never answered is not left behind
            raise

    def _wait_ready(self, timeout: float) -> ConsoleProcess:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"console exited with {self.process.returncode}:\n{self.log_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/static/console.css", timeout=1):
                    return self
            except urllib.error.HTTPError:
                return self  # it answers (401 with basic auth)
            except (urllib.error.URLError, OSError):  # not listening yet, or too busy starting to answer
                time.sleep(0.1)
        raise RuntimeError(f"console did not answer within {timeout}s:\n{self.log_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""


@contextlib.contextmanager
def running_console(bootstrap: str, *extra: str, log_dir: Path) -> Iterator[ConsoleProcess]:
    console = ConsoleProcess(bootstrap, *extra, log_dir=log_dir).start()
    try:
        yield console
    finally:
        console.stop()


def chromium(*arguments: str) -> Any:
    """A headless Debian Chromium driven through Debian's chromedriver, with these extra command-line
    `arguments`; Selenium Manager is kept offline."""
    require_module("selenium")
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        missing(
            "chromium and chromium-driver are not installed (scripts/install-system-deps.sh installs them)"
        )
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never download a browser or a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        *arguments,
    ):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def screenshot(driver: Any, name: str) -> Path:
    """The whole page (the window grown to its height, up to 2,400 px) as <SCREENSHOTS>/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(int(height), 700), 2400))
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)
    return path


def load_seconds(driver: Any) -> float:
    """The last navigation's time from request to the load event, as the browser measured it."""
    timing = driver.execute_script(
        "const t = performance.getEntriesByType('navigation')[0]; return [t.startTime, t.loadEventEnd];"
    )
    return float(timing[1] - timing[0]) / 1000


def answer_seconds(driver: Any) -> float:
    """The last navigation's time from the request to the page's last byte: the console's part of it."""
    timing = driver.execute_script(
        "const t = performance.getEntriesByType('navigation')[0]; return [t.requestStart, t.responseEnd];"
    )
    return float(timing[1] - timing[0]) / 1000


def wait_for(condition: Any, timeout: float = 20.0, interval: float = 0.25, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            last = condition()
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last value: {last!r})")


def text_of(driver: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.CSS_SELECTOR, css).text).strip()


def http_status(
    url: str, data: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, str]:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
