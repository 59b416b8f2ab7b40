"""A real headless Chromium, driven over the W3C WebDriver protocol by
``chromedriver`` (Debian packages chromium and chromium-driver): plain JSON
over HTTP, so the standard library is the whole client."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Where distributions put the browser and its driver.
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver",)
#: W3C WebDriver's key of an element reference.
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


def find_browser() -> tuple[str, str] | None:
    """``(browser, driver)`` executables, or ``None`` when either is missing."""
    browser = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    driver = next((found for name in DRIVERS if (found := shutil.which(name))), None)
    return (browser, driver) if browser and driver else None


class WebDriverError(RuntimeError):
    """The driver refused a command (its error code and message)."""


class Session:
    """One browser window: open a URL, find elements, click, type, read."""

    def __init__(self, base: str, session_id: str) -> None:
        self.base = f"{base}/session/{session_id}"

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return command(method, self.base + path, body)

    def open(self, url: str) -> None:
        self.call("POST", "/url", {"url": url})

    @property
    def url(self) -> str:
        return str(self.call("GET", "/url"))

    def find(self, css: str) -> str:
        return str(self.call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT])

    def find_all(self, css: str) -> list[str]:
        found = self.call("POST", "/elements", {"using": "css selector", "value": css})
        return [str(element[ELEMENT]) for element in found]

    def click(self, element: str) -> None:
        self.call("POST", f"/element/{element}/click", {})

    def type(self, element: str, text: str) -> None:
        self.call("POST", f"/element/{element}/value", {"text": text})

    def text(self, element: str) -> str:
        return str(self.call("GET", f"/element/{element}/text"))

    def attribute(self, element: str, name: str) -> str | None:
        value = self.call("GET", f"/element/{element}/attribute/{name}")
        return None if value is None else str(value)

    def wait_for(self, css: str, timeout_s: float = 15.0) -> list[str]:
        """The elements matching ``css``, once there are any."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.find_all(css)
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


def command(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)["value"]
    except urllib.error.HTTPError as exc:
        value = json.load(exc).get("value", {})
        first_line = str(value.get("message", "")).splitlines()[:1]
        raise WebDriverError(f"{value.get('error')}: {' '.join(first_line)}") from None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def headless_browser(browser: str, driver: str) -> Iterator[Session]:
    """A fresh headless browser window (1400x1000: the desktop layout)."""
    port = free_port()
    process = subprocess.Popen([driver, f"--port={port}"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                command("GET", f"{base}/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        options = {"binary": browser,
                   "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                            "--disable-dev-shm-usage", "--window-size=1400,1000"]}
        created = command("POST", f"{base}/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": options}}})
        session = Session(base, created["sessionId"])
        try:
            yield session
        finally:
            command("DELETE", session.base)
    finally:
        process.terminate()
        process.wait(timeout=30)
