"""Headless Chromium for the report pages: `screenshot` (its `--screenshot`, for the README's
images) and `Chromium`, a page driven over the Chrome DevTools Protocol (websocket-client), for
the browser tests: console errors, network requests, clicks, evaluated expressions, full-page PNGs.

Chromium runs headless without a sandbox, GPU, background networking, component updates, sync or
first-run, with a fresh profile folder: it must work on a machine with no network.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--hide-scrollbars",
)


class BrowserUnavailable(RuntimeError):
    """No Chromium (or no websocket-client to drive it) on this machine."""


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    raise BrowserUnavailable("headless Chromium is not installed (Debian: apt-get install chromium)")


def screenshot(page: str | Path, png: str | Path, width: int = 1400, height: int = 1000, timeout: float = 120) -> Path:
    """A PNG of the top `width` x `height` pixels of the HTML file `page` (a path, or a file: URL
    with a fragment), by `chromium --screenshot`."""
    browser = find_chromium()
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="elmo-chromium-") as profile:
        command = [
            browser,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={png}",
            page if str(page).startswith("file:") else Path(page).resolve().as_uri(),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if not png.is_file():
        raise RuntimeError(f"Chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-1500:]}")
    return png


class Chromium:
    """One headless Chromium page over the DevTools protocol; a context manager.

    Events are kept in `events` from the start, so `console_errors()` and `requests()` see
    everything the page did since `open`.
    """

    def __init__(self, width: int = 1400, height: int = 1000, timeout: float = 60) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self.events: list[dict[str, Any]] = []
        self._next = 0
        self._process: subprocess.Popen | None = None
        self._profile: tempfile.TemporaryDirectory | None = None
        self._socket: Any = None

    def __enter__(self) -> Chromium:
        try:
            import websocket
        except ImportError as exc:
            raise BrowserUnavailable(f"websocket-client is not installed ({exc})") from None
        browser = find_chromium()
        self._profile = tempfile.TemporaryDirectory(prefix="elmo-chromium-")
        profile = Path(self._profile.name)
        command = [
            browser,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={self.width},{self.height}",
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
            "about:blank",
        ]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            port = self._port(profile)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=self.timeout) as answer:
                targets = json.load(answer)
            url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
            self._socket = websocket.create_connection(url, timeout=self.timeout, suppress_origin=True)
            for domain in ("Runtime", "Log", "Page", "Network"):
                self.send(f"{domain}.enable")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _port(self, profile: Path) -> int:
        deadline = time.monotonic() + self.timeout
        marker = profile / "DevToolsActivePort"
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                err = self._process.stderr.read().decode(errors="replace") if self._process.stderr else ""
                raise RuntimeError(f"Chromium exited with code {self._process.returncode}: {err[-1500:]}")
            if marker.is_file():
                first = marker.read_text(encoding="utf-8").split("\n", 1)[0].strip()
                if first.isdigit():
                    return int(first)
            time.sleep(0.05)
        raise RuntimeError(f"Chromium did not open its DevTools port within {self.timeout:g} s")

    def __exit__(self, *exc: object) -> None:
        if self._socket is not None:
            try:
                self._socket.close()
            except Exception:  # noqa: BLE001  (closing a broken socket)
                pass
            self._socket = None
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
            if self._process.stderr:
                self._process.stderr.close()
            self._process = None
        if self._profile is not None:
            self._profile.cleanup()
            self._profile = None

    # -- the protocol ----------------------------------------------------------------------------

    def _receive(self) -> dict[str, Any]:
        message = json.loads(self._socket.recv())
        if "id" not in message:
            self.events.append(message)
        return message

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Call a DevTools method and return its result; events that arrive meanwhile are kept."""
        self._next += 1
        self._socket.send(json.dumps({"id": self._next, "method": method, "params": params}))
        while True:
            message = self._receive()
            if message.get("id") == self._next:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def wait_for(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        """The first event `method` from now on (or already kept since the last wait)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        start = len(self.events)
        while True:
            for event in self.events[start:]:
                if event.get("method") == method:
                    return event
            start = len(self.events)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout or self.timeout:g} s")
            self._receive()

    # -- what the tests use ----------------------------------------------------------------------

    def open(self, page: str | Path) -> None:
        """Load an HTML file and wait for its load event."""
        self.events.clear()
        self.send("Page.navigate", url=Path(page).resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception raises RuntimeError)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(
                f"{expression}: {result['exceptionDetails'].get('exception', result['exceptionDetails'])}"
            )
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click (pressed, released) at the middle of the first element matching `selector`."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if box is None:
            raise LookupError(f"no element matches {selector!r}")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, png: str | Path, full_page: bool = True) -> Path:
        """A PNG of the page (the whole page, or the viewport)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["captureBeyondViewport"] = True
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = self.send("Page.captureScreenshot", **params)["data"]
        png = Path(png)
        png.write_bytes(base64.b64decode(data))
        return png

    def console_errors(self) -> list[str]:
        """Uncaught exceptions, console.error/assert calls and error log entries (CSP violations,
        failed loads) since `open`."""
        errors = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                errors.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}".rstrip())
        return errors

    def requests(self) -> list[str]:
        """The URL of every request the page made since `open` (the page's own file included)."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]
