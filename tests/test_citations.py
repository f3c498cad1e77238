"""Every § the project cites exists in spec/elmo.md (the spec is the source of truth: a test, a
docstring, a message or a page that cites a section the spec does not have sends its reader
nowhere). Read from every text file of the checkout that the project writes."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = {".py", ".md", ".json", ".toml", ".j2", ".html", ".c", ".h", ".txt", ".ini", ".cfg", ".yaml", ".yml"}
SKIPPED = {"node_modules", "build", "dist", "target", "__pycache__"}
CITED = re.compile(r"§\s?(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#+ (\d+(?:\.\d+)*)\.? ", re.MULTILINE)


def sections() -> set[str]:
    return set(HEADING.findall((ROOT / "spec" / "elmo.md").read_text(encoding="utf-8")))


def citations(root: Path) -> dict[str, list[str]]:
    """Each cited section number and the files that cite it."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        if any(part.startswith(".") or part in SKIPPED for part in relative.parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number in CITED.findall(text):
            found.setdefault(number.rstrip("."), []).append(relative.as_posix())
    return found


def test_every_cited_section_exists(tmp_path: Path) -> None:
    known = sections()
    assert {"1", "8", "13.2", "15.3"} <= known, "the spec's headings are read"
    missing = {number: sorted(set(files)) for number, files in citations(ROOT).items() if number not in known}
    assert not missing, f"sections cited that spec/elmo.md does not have: {missing}"
    # The check can fail: a file citing a section that does not exist is found.
    absent = "99.1"
    (tmp_path / "note.md").write_text(f"see §{absent} and §8\n", encoding="utf-8")
    assert {n for n in citations(tmp_path) if n not in known} == {absent}
