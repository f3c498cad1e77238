"""Mutants marked equivalent by the user (spec §13.2; docs/mutation.md, "Equivalent mutants").

An equivalent mutant computes what the original computes, so no test can kill it; counting it
as a survivor lowers the score for nothing. The user says so, with a reason, in a TOML file they
keep in their repository (default: `equivalent-mutants.toml` in the project root; `--equivalents
FILE`), one table per mutant id (the ids of `mutate --list`, stable while the mutated line's text
is unchanged):

    [fba59c30b9]
    reason = "softmin_unshifted is never called"
    change = "outside_mix.py:24:5  softmax_unshifted -> softmin_unshifted"   # optional, for readers

A marked mutant is not run: its status is Ignored, with the reason, in the terminal, summary.md
and the reports, and it stays out of the score. An entry whose id no generated mutant has any more
(its line changed) is listed as stale, so the file does not quietly mark nothing; an entry whose
`change` names a file this run does not mutate (`--source` on some of the files) is not.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "equivalent-mutants.toml"
_ID = re.compile(r"[0-9a-f]{10}")


class EquivalentsError(ValueError):
    """The equivalents file cannot be used as written (exit status 2)."""


@dataclass(frozen=True)
class Equivalent:
    mutant: str
    reason: str
    change: str | None = None


def default_path(root: str | Path) -> Path:
    return Path(root) / FILE_NAME


def load(path: Path, given: bool) -> dict[str, Equivalent]:
    """The marked mutants of `path` by id; {} when the default file is absent. `given`: the user
    named the file with --equivalents (then it must exist)."""
    where = f"--equivalents {path}" if given else str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if given:
            raise EquivalentsError(f"{where}: no such file") from None
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise EquivalentsError(f"{where}: cannot be read: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EquivalentsError(f"{where}: not TOML: {exc}") from None
    found = {}
    for key, entry in data.items():
        if not _ID.fullmatch(key):
            raise EquivalentsError(
                f"{where}: [{key}]: a table's name is a mutant id, 10 lowercase hex digits as "
                "`elmo-conformance mutate --list` prints them"
            )
        if not isinstance(entry, dict):
            raise EquivalentsError(f'{where}: {key}: expected a table [{key}] with reason = "..."')
        reason, change = entry.get("reason"), entry.get("change")
        if not isinstance(reason, str) or not reason.strip():
            raise EquivalentsError(
                f'{where}: [{key}]: needs reason = "..." (why this mutant computes what the original does)'
            )
        if change is not None and not isinstance(change, str):
            raise EquivalentsError(f"{where}: [{key}]: change is a string (the mutant as --list shows it)")
        unknown = sorted(set(entry) - {"reason", "change"})
        if unknown:
            raise EquivalentsError(f"{where}: [{key}]: unknown key(s) {', '.join(unknown)}; expected reason, change")
        found[key] = Equivalent(key, reason.strip(), change)
    return found


def entry_text(mutant: str, change: str) -> str:
    """The lines that mark `mutant` equivalent, for the user to paste and complete."""
    quoted = change.replace("\\", "\\\\").replace('"', '\\"')
    return f'[{mutant}]\nreason = "WHY IT COMPUTES WHAT THE ORIGINAL DOES"\nchange = "{quoted}"\n'


__all__ = ["FILE_NAME", "Equivalent", "EquivalentsError", "default_path", "entry_text", "load"]
