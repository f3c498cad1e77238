"""Headless Chromium for the report pages, driven by Playwright: `Chromium`, one page for the
browser tests (console errors, requests made, dialogs, clicks, evaluated expressions, PNG
screenshots), and `screenshot`, a PNG of the top of a page for the pictures of docs/checking.md.

Playwright's Python package drives the system's Chromium, launched by its executable path: no
browser is downloaded. Chromium runs headless without a sandbox, GPU, QUIC, background networking,
component updates, sync or first-run, in a fresh profile (Playwright makes one per launch): it must
work on a machine with no network.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--hide-scrollbars",
)


class BrowserUnavailable(RuntimeError):
    """No Chromium (or no Playwright to drive it) on this machine."""


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    raise BrowserUnavailable("headless Chromium is not installed (Debian: apt-get install chromium)")


def _url(page: str | Path) -> str:
    """A file: URL as given (it may carry a fragment), or a path's."""
    return str(page) if str(page).startswith("file:") else Path(page).resolve().as_uri()


def screenshot(page: str | Path, png: str | Path, width: int = 1400, height: int = 1000, timeout: float = 120) -> Path:
    """A PNG of the top `width` x `height` pixels of the HTML file `page` (a path, or a file: URL
    with a fragment)."""
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    with Chromium(width=width, height=height, timeout=timeout) as browser:
        browser.open(page)
        return browser.screenshot(png, full_page=False)


class Chromium:
    """One headless Chromium page; a context manager.

    What the page does is kept from `open` on: `console_errors()`, `requests()` and `dialogs`
    (the message of every alert, confirm or prompt, each dismissed).
    """

    def __init__(self, width: int = 1400, height: int = 1000, timeout: float = 60) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self.dialogs: list[str] = []
        self._errors: list[str] = []
        self._requests: list[str] = []
        self._playwright: Any = None
        self._browser: Any = None
        self._page: Any = None

    def __enter__(self) -> Chromium:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:
            raise BrowserUnavailable(f"playwright is not installed ({exc})") from None
        executable = find_chromium()
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=executable, args=list(FLAGS), timeout=self.timeout * 1000
            )
            self._page = self._browser.new_page(viewport={"width": self.width, "height": self.height})
            self._page.set_default_timeout(self.timeout * 1000)
            self._page.on("console", self._console)
            self._page.on("pageerror", lambda error: self._errors.append(f"exception: {error}"))
            self._page.on("request", lambda request: self._requests.append(request.url))
            self._page.on("requestfailed", lambda r: self._errors.append(f"request failed: {r.url} {r.failure}"))
            self._page.on("dialog", self._dialog)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._browser is not None:
            self._browser.close()
            self._browser = self._page = None
        if self._playwright is not None:
            self._playwright.stop()
            self._playwright = None

    def _console(self, message: Any) -> None:
        if message.type in ("error", "assert"):
            where = message.location.get("url", "") if message.location else ""
            self._errors.append(f"console: {message.text} {where}".rstrip())

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    # -- what the tests use ----------------------------------------------------------------------

    def open(self, page: str | Path) -> None:
        """Load an HTML file (a path, or a file: URL) and wait for its load event."""
        self._errors.clear()
        self._requests.clear()
        self.dialogs.clear()
        self._page.goto(_url(page), wait_until="load")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception raises RuntimeError)."""
        from playwright.sync_api import Error

        try:
            return self._page.evaluate(expression)
        except Error as exc:
            raise RuntimeError(f"{expression}: {exc.message}") from None

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the first element matching `selector`, scrolled into
        view once it is visible, stable and enabled."""
        if self._page.locator(selector).count() == 0:
            raise LookupError(f"no element matches {selector!r}")
        self._page.locator(selector).first.click()

    def screenshot(self, png: str | Path, full_page: bool = True) -> Path:
        """A PNG of the page (the whole page, or the viewport)."""
        png = Path(png)
        self._page.screenshot(path=str(png), full_page=full_page)
        return png

    def console_errors(self) -> list[str]:
        """Uncaught exceptions, console.error/assert calls (failed loads and CSP violations
        included) and failed requests since `open`."""
        return list(self._errors)

    def requests(self) -> list[str]:
        """The URL of every request the page made since `open` (the page's own file included)."""
        return list(self._requests)
