"""The JSON report in Stryker's mutation-testing-report-schema, schemaVersion 2.

`files` holds the source files where the mutants' overrides live (adapters/numpy/mutants.py, ...),
each mutant located at its override; `testFiles` holds every conformance test case the baselines
ran. A mutant's id is "<adapter>:<mutant id>", since one report covers several adapters. Statuses
are Stryker's; an equivalent or untestable mutant is "Ignored" with the reason, and a catalog
mutant an adapter does not declare has no source to point at, so it is listed in `config` only.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from elmo_conformance.ground.resources import project_root, spec_version
from elmo_conformance.ground.version import __version__
from elmo_conformance.mutation.runner import Results
from elmo_conformance.mutation.verdicts import NOT_APPLICABLE, NOT_DECLARED, NOT_RUN, NOT_TESTABLE, Verdict

REPO = project_root()  # the repository root in a checkout, the package's folder when installed
_STATUS = {NOT_TESTABLE: "Ignored"}


MESSAGE_CHARS = 3000  # of a killing test's message, from its start (where it says what differed)


def _relative(path: str, root: Path | None = None) -> str:
    """Path relative to `root` (a generated run's project root), else to the repository (or,
    outside it, to the working directory), with '/'."""
    if root is not None:
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
        if not relative.startswith(".."):
            return Path(relative).as_posix()
    absolute = Path(path).resolve()
    for base in (REPO, Path.cwd()):
        try:
            return absolute.relative_to(base).as_posix()
        except ValueError:
            continue
    return absolute.as_posix()


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


def _reason(v: Verdict) -> str:
    parts = []
    if v.failure:
        parts.append(f"FAILS THE SESSION: {v.failure}")
    if v.run is not None and v.run.reason and v.status != "Killed":
        parts.append(v.run.reason)
    if v.status == "Killed" and v.run is not None and v.killers:
        first = v.run.tests[v.killers[0]].message or ""
        clipped = first[:MESSAGE_CHARS] + (" [...]" if len(first) > MESSAGE_CHARS else "")
        parts.append(f"killed by {len(v.killers)} test case(s); first: {v.killers[0]}\n{clipped}")
    parts += v.notes
    return "\n".join(parts) or v.status


def mutant_result(v: Verdict, line: int | None = None) -> dict:
    """One mutant; `line` places a mutant without source of its own on that line of its listing."""
    info = v.info
    assert info is not None
    start, end, end_column = (line, line, 2) if line is not None else (info.start_line, info.end_line, info.end_column)
    generated = info.replacement is not None  # a generated mutant (§13.2): one change in the user's source
    result: dict[str, Any] = {
        "id": v.mutant if generated else f"{v.adapter}:{v.mutant}",
        "mutatorName": (info.rule or "universalmutator") if generated else v.mutant,
        "description": v.title if generated else ("" if v.catalog else "(extra) ") + v.title,
        "location": {
            "start": {"line": start, "column": info.start_column if line is None else 1},
            "end": {"line": end, "column": end_column},
        },
        "status": _STATUS.get(v.status, v.status),
        "statusReason": _reason(v),
    }
    if generated:
        result["replacement"] = info.replacement
    if v.run is not None:
        result["killedBy"] = list(v.killers)
        result["coveredBy"] = list(v.run.selected)
        result["testsCompleted"] = len(v.run.tests)
        result["duration"] = round(v.run.duration * 1000, 1)
    return result


def test_files(results: Results) -> dict:
    files: dict[str, dict] = {}
    for baseline in results.baselines.values():
        for test in baseline.tests.values():
            key = _relative(test.file)
            entry = files.setdefault(key, {"source": _read(test.file), "tests": []})
            name = test.nodeid.split("::", 1)[-1]
            if test.spec:  # the spec sections it checks, so that killedBy reads as a spec's clause
                name += " (" + ", ".join(f"§{section}" for section in test.spec) + ")"
            entry["tests"].append(
                {"id": test.nodeid, "name": name, "location": {"start": {"line": test.line, "column": 1}}}
            )
    return files


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("pytest", "hypothesis", "numpy", "torch", "jax"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _listing(impl: str, sourceless: list[Verdict]) -> tuple[str, dict]:
    """A file entry for mutants with no source to point at (those a process declares, §15.4): a
    listing of their ids and titles, each mutant on its own line."""
    lines = [f"# mutants declared by --impl {impl}"] + [f"{v.mutant}: {v.title}" for v in sourceless]
    entry: dict[str, Any] = {"language": "text", "source": "\n".join(lines) + "\n", "mutants": []}
    entry["mutants"] = [mutant_result(v, line=i + 2) for i, v in enumerate(sourceless)]
    return f"{impl} (declared mutants)", entry


_LANGUAGES = {"python": "python", "c": "c", "cpp": "cpp", "rust": "rust", "go": "go", "java": "java"}


def report(
    results: Results, verdicts: list[Verdict], framework: str = "elmo-conformance mutants", root: Path | None = None
) -> dict:
    """The report; `root`: a generated run's project root, which its files are named relative to
    and which is its `projectRoot` (the repository's otherwise)."""
    files: dict[str, dict] = {}
    unlisted = []
    sourceless: dict[str, list[Verdict]] = {}
    for v in verdicts:
        if v.status in (NOT_DECLARED, NOT_RUN, NOT_APPLICABLE) or v.info is None:
            unlisted.append({"adapter": v.adapter, "impl": v.impl, "mutant": v.mutant, "status": v.status})
            continue
        if v.info.file is None:
            sourceless.setdefault(v.impl, []).append(v)
            continue
        key = _relative(v.info.file, root)
        language = _LANGUAGES.get(v.info.language, v.info.language)
        entry = files.setdefault(key, {"language": language, "source": _read(v.info.file), "mutants": []})
        entry["mutants"].append(mutant_result(v))
    for impl, listed in sourceless.items():
        key, entry = _listing(impl, listed)
        files[key] = entry
    t = results.timings
    return {
        "schemaVersion": "2",
        "thresholds": {"high": 100, "low": 90},  # every catalog mutant must die: below 100 is news
        "projectRoot": (root or REPO).as_posix(),
        "files": files,
        "testFiles": test_files(results),
        "framework": {"name": framework, "version": __version__, "dependencies": _versions()},
        "performance": {
            "setup": 0,
            "initialRun": round(t.get("baseline", 0.0) * 1000),
            "mutation": round(t.get("mutants", 0.0) * 1000),
        },
        "system": {
            "ci": bool(os.environ.get("CI")),
            "os": {"platform": sys.platform},
            "cpu": {"logicalCores": os.cpu_count() or 1},
        },
        "config": {
            "suiteVersion": __version__,
            "specVersion": spec_version(),
            "impls": list(results.options.impls),
            "failFast": results.options.fail_fast,
            "workers": results.options.workers,
            "notListed": unlisted,
            "failures": [f"{v.adapter} {v.mutant}: {v.failure}" for v in verdicts if v.failure],
        },
    }
