"""Expected failures: `--xfails-file PATH`, a plain-text list of tests an adapter is known to fail.

One entry per line, a test pattern and, after `#`, the reason (required):

    test_padding_never_leaks[mine-float32]        # padded rows are masked by multiplication
    conformance/test_probe.py::test_probe_matches_reference[mine-float64]  # lr is float32 inside
    test_rejects_bad_input[mine-*-V09-*]          # params of mixed dtypes are cast, not refused

Blank lines and lines that start with `#` are ignored. A pattern matches a collected test when it
equals the test's node id, its name with parameters (`test_x[mine-float64]`), or its bare name
(`test_x`, every case of it); `*` matches any run of characters and is the only special character
(`[` and `]` are literal). Every listed test is marked `xfail(strict=True)`: it is reported as
`xfailed` when it fails, and a listed test that passes fails the run as `XPASS(strict)`. An entry
that matches no collected test gives a warning in the summary (a stale entry hides nothing, but
usually means a typo or a renamed test).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest


class UnusedXfailEntry(pytest.PytestWarning):
    """An --xfails-file entry that matches no collected test."""


@dataclass
class Entry:
    pattern: str
    reason: str
    where: str  # "PATH:LINE", for messages
    matched: int = field(default=0, compare=False)

    def matches(self, item: pytest.Item) -> bool:
        regex = ".*".join(re.escape(part) for part in self.pattern.split("*"))
        forms = (item.nodeid, item.name, getattr(item, "originalname", item.name))
        return any(re.fullmatch(regex, form) for form in forms)


def parse(path: Path) -> list[Entry]:
    """The entries of one file; a line without a pattern or without a reason is a usage error."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise pytest.UsageError(f"--xfails-file {path}: cannot read it ({exc.strerror or exc})") from None
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        pattern, hash_, reason = stripped.partition("#")
        pattern, reason = pattern.strip(), reason.strip()
        if not hash_ or not reason:
            raise pytest.UsageError(
                f"--xfails-file {path}, line {number}: {pattern!r} has no reason; write it as "
                f"'{pattern}  # why it is expected to fail'"
            )
        if not pattern:
            raise pytest.UsageError(f"--xfails-file {path}, line {number}: a reason without a test pattern")
        if any(ch.isspace() for ch in pattern):
            raise pytest.UsageError(
                f"--xfails-file {path}, line {number}: {pattern!r} contains white space; one test pattern per line"
            )
        entries.append(Entry(pattern, reason, f"{path}:{number}"))
    return entries


class Xfails:
    """The plugin object: marks the listed tests and warns about entries that match nothing."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries

    @classmethod
    def from_files(cls, paths: list[str]) -> Xfails:
        return cls([entry for path in paths for entry in parse(Path(path))])

    # tryfirst: see every collected test, before -k, -m or --deselect leave some out.
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            entry = next((entry for entry in self.entries if entry.matches(item)), None)
            if entry is not None:
                entry.matched += 1
                item.add_marker(pytest.mark.xfail(reason=f"{entry.reason} ({entry.where})", strict=True))
        for entry in self.entries:
            if not entry.matched:
                warnings.warn(
                    UnusedXfailEntry(f"--xfails-file {entry.where}: {entry.pattern!r} matches no collected test"),
                    stacklevel=1,
                )
