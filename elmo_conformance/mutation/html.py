"""The self-contained HTML report: the JSON report inside Stryker's mutation-testing-elements viewer.

The viewer (npm package `mutation-testing-elements`) is installed with npm on first use into a
cache folder outside the repository and inlined, so the HTML needs nothing else to open.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

ELEMENTS = "mutation-testing-elements"
ELEMENTS_VERSION = "3.9.0"
SCHEMA = "mutation-testing-report-schema"
SCHEMA_VERSION = "3.8.4"
NPM_TIMEOUT_S = 300


class NpmUnavailable(Exception):
    """npm is missing or the install failed; the message says which and what to do."""


def cache_dir() -> Path:
    """~/.cache/elmo-conformance/npm, or under $XDG_CACHE_HOME; $ELMO_CONFORMANCE_NPM_CACHE wins."""
    if os.environ.get("ELMO_CONFORMANCE_NPM_CACHE"):
        return Path(os.environ["ELMO_CONFORMANCE_NPM_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "elmo-conformance" / "npm"


def npm_package(name: str, version: str) -> Path:
    """The installed package's folder, installing it with npm into the cache folder if needed."""
    root = cache_dir()
    folder = root / "node_modules" / name
    if _installed_version(folder) == version:
        return folder
    npm = shutil.which("npm")
    if npm is None:
        raise NpmUnavailable(f"npm is not installed, so {name} cannot be installed (install Node.js and npm)")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:  # one install at a time, across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed_version(folder) != version:
            command = [npm, "install", "--prefix", str(root), "--no-audit", "--no-fund", "--loglevel=error"]
            try:
                done = subprocess.run(
                    [*command, f"{name}@{version}"], capture_output=True, text=True, timeout=NPM_TIMEOUT_S
                )
            except subprocess.TimeoutExpired:
                raise NpmUnavailable(f"`npm install {name}@{version}` took over {NPM_TIMEOUT_S} s") from None
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise NpmUnavailable(f"`npm install {name}@{version}` failed: {' '.join(tail)}")
    if _installed_version(folder) != version:
        raise NpmUnavailable(f"npm ran but {folder} does not hold {name}@{version}")
    return folder


def _installed_version(folder: Path) -> str | None:
    try:
        return json.loads((folder / "package.json").read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None


def embed(report: dict) -> str:
    """The report as a JavaScript literal that is safe inside <script>: every '<' escaped."""
    return json.dumps(report, ensure_ascii=False).replace("<", "\\u003c")


def page(report: dict, viewer_js: str, title: str = "elmo-conformance mutants") -> str:
    # Inline scripts end at the first "</script"; the viewer bundle must not contain one.
    if "</script" in viewer_js.lower():
        viewer_js = viewer_js.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<title>{title}</title>\n<script>{viewer_js}</script>\n</head>\n<body>\n"
        f"<mutation-test-report-app title-postfix='{title}'></mutation-test-report-app>\n"
        "<script>document.querySelector('mutation-test-report-app').report = "
        f"{embed(report)};</script>\n</body>\n</html>\n"
    )


def write_html(report: dict, path: Path) -> None:
    """Write the HTML report; NpmUnavailable when the viewer cannot be installed."""
    folder = npm_package(ELEMENTS, ELEMENTS_VERSION)
    viewer = (folder / "dist" / "mutation-test-elements.js").read_text(encoding="utf-8")
    path.write_text(page(report, viewer), encoding="utf-8")
