"""CONTRIBUTING.md's checklists name real files and commands: every path it names exists (a glob
matches something), every `nox -s` session it names is in noxfile.py, every script it runs is
there, and the checklist for a spec function names every built-in adapter's package; `.ci/run`
runs the test commands README gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from elmo_conformance.adapters.loading import BUILTINS

ROOT = Path(__file__).resolve().parent.parent
TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def named_paths(text: str) -> list[str]:
    """The paths in backticks: a word with a slash, or a top-level file such as `README.md`."""
    found = []
    for code in re.findall(r"`([^`\n]+)`", text):
        for word in code.split():
            if word.startswith(("cmd:", "./", "'")) or "://" in word:
                continue
            if "/" in word or re.fullmatch(r"[A-Z]+\.md|LICENSE|pyproject\.toml|noxfile\.py|\w+\.txt", word):
                found.append(word.rstrip(".,:;)"))
    return list(dict.fromkeys(found))


def missing(paths: list[str], root: Path) -> list[str]:
    return [p for p in paths if not (any(root.glob(p)) if "*" in p else (root / p).exists())]


def test_every_path_named_exists(tmp_path: Path) -> None:
    drifted = TEXT + "\n1. Edit `adapters/numpy/gone.py` and `spec/*.yaml`.\n"
    assert missing(named_paths(drifted), ROOT) == ["adapters/numpy/gone.py", "spec/*.yaml"]
    assert missing(named_paths(TEXT), ROOT) == []


def test_every_session_and_script_named_exists() -> None:
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    sessions = set(re.findall(r"@nox\.session\s+def (\w+)", noxfile))
    named = set(re.findall(r"nox -s ((?:\w+ ?)+)", TEXT))
    assert {s for group in named for s in group.split()} <= sessions
    assert "ghost" not in sessions
    for script in re.findall(r"python (scripts/\S+\.py)", TEXT):
        assert (ROOT / script).is_file(), script


@pytest.mark.parametrize("builtin", sorted(BUILTINS))
def test_the_spec_function_checklist_names_every_builtin_adapter(builtin: str) -> None:
    checklist = TEXT.split("## Add a spec function", 1)[1].split("\n## ", 1)[0]
    assert f"adapters/{builtin}/" in checklist, (
        f"CONTRIBUTING.md: adding a function does not say what adapters/{builtin}/ needs"
    )


def test_the_license_file_is_the_license_pyproject_declares() -> None:
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"]["text"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith(f"{declared} License\n")


def test_the_changelog_keeps_an_unreleased_section_first() -> None:
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert headings[0] == "Unreleased"
    from elmo_conformance import __version__

    assert any(heading.startswith(__version__) for heading in headings), f"CHANGELOG.md has no entry for {__version__}"


def ci_misses(readme: str, ci_script: str) -> list[str]:
    """The test commands of README's opening block (`nox -s tests ...` lines) that no line of
    `.ci/run` runs (`python -m nox -s [other sessions] tests ...`)."""
    block = readme.split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.startswith("nox -s tests")]
    lines = [line.strip() for line in ci_script.splitlines()]
    return [
        command
        for command in commands
        if not any(
            re.fullmatch(rf"python -m nox -s (\w+ )*{re.escape(command[len('nox -s ') :])}", line) for line in lines
        )
    ]


def test_ci_runs_the_test_commands_the_readme_gives() -> None:
    """`.ci/run` runs each test command of README's opening block: `nox -s tests` and the tests
    marked `integration`, which `nox -s tests` leaves out."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci_misses(readme, ci_script.replace("python -m nox -s tests -- -m integration\n", "")) == [
        "nox -s tests -- -m integration"
    ]
    assert ci_misses(readme, ci_script) == []
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert re.search(r'FAST_FEEDBACK = "[^"]*\bnot integration\b', noxfile), "nox -s tests runs the integration tests"
