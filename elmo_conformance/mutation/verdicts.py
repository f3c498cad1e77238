"""Verdicts (spec §13.1): each adapter's result for each mutant, and whether it fails the session.

A catalog mutant fails the session when it survives, is equivalent, reaches no test, crashes the
run, or when a case of one of its expected killers runs and passes. Extra mutants (ids beyond the
catalog) are reported with their killers and never fail it. A catalog mutant an adapter does not
declare is "not declared", never "killed"; one of a component the adapter does not implement
(§11) is "not applicable" and is never run.
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass, field

from elmo_conformance.ground.resources import PLUGIN
from elmo_conformance.mutation import gate
from elmo_conformance.mutation.model import Baseline, MutantInfo, MutantRun
from elmo_conformance.mutation.runner import Results, not_applicable

# Statuses beyond Stryker's, for mutants that were not run.
NOT_DECLARED, NOT_TESTABLE, NOT_RUN = "NotDeclared", "NotTestable", "NotRun"
NOT_APPLICABLE = "NotApplicable"  # a catalog mutant of a component the adapter does not implement (§11)


@dataclass
class Verdict:
    impl: str
    adapter: str
    mutant: str
    title: str
    catalog: bool
    status: str
    killers: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # expected killers' cases that ran and passed
    notes: list[str] = field(default_factory=list)
    failure: str | None = None  # why it fails the session
    info: MutantInfo | None = None
    run: MutantRun | None = None

    def reproduce_forms(self, test: str | None = None) -> list[str]:
        """The commands that run the suite on this mutant (`-k test`: that test only): through nox
        in a checkout, through the console command, and with plain pytest from the user's own
        directory (where nox would not install what their adapter needs)."""
        options = f" --impl {shlex.quote(self.impl)} --mutant {shlex.quote(self.mutant)}"
        options += f" -k {shlex.quote(test)}" if test else ""
        return [
            f"nox -s conformance --{options}",
            f"elmo-conformance{options}",
            f"python -m pytest -p {PLUGIN} --pyargs elmo_conformance.conformance{options}",
        ]

    def reproduce(self, test: str | None = None) -> str:
        """`reproduce_forms`, one a line, the later ones as "or:" lines aligned under a
        "    reproduce: " label."""
        return "\n           or: ".join(self.reproduce_forms(test))


def baseline_problem(baseline: Baseline) -> str | None:
    """Why an adapter's mutants could not be run, when that fails the session."""
    if baseline.error:
        prefix = "" if baseline.error.startswith("--impl") else f"--impl {baseline.impl}: "
        return prefix + baseline.error
    if not baseline.unavailable and not baseline.cases:
        what = f"none of its {len(baseline.tests)} tests checks" if baseline.tests else "no test was collected for"
        return (
            f"--impl {baseline.impl}: the clean baseline run cannot judge a mutant: {what} the adapter "
            f"{baseline.name or baseline.impl!r}; run `nox -s conformance -- --impl {baseline.impl}` to see why"
        )
    if baseline.failures:
        names = ", ".join(t.nodeid for t in baseline.failures[:5])
        more = f" and {len(baseline.failures) - 5} more" if len(baseline.failures) > 5 else ""
        return (
            f"--impl {baseline.impl}: the clean baseline run must pass, but {len(baseline.failures)} test(s) "
            f"failed: {names}{more}; run `elmo-conformance --impl {shlex.quote(baseline.impl)}` "
            f"(or `nox -s conformance -- --impl {shlex.quote(baseline.impl)}`) to see why"
        )
    return None


def _expected(verdict: Verdict, baseline: Baseline, run: MutantRun, expected: list[str]) -> None:
    """The catalog gate (gate.py) on this run: the baseline's cases of the expected killers, each
    with its outcome on the mutant."""
    cases: dict[str, str | None] = {}
    for t in baseline.tests.values():
        if t.name in expected:
            got = run.tests.get(t.nodeid)
            cases[t.nodeid] = "skipped" if t.outcome == "skipped" else (got.outcome if got is not None else None)
    result = gate.check(expected, cases)
    for name in result.unknown:
        verdict.missed.append(f"{name}: no test of that name in the suite (spec/mutants.json is out of date)")
    for name in result.skipped:
        first = next(t for t in baseline.tests.values() if t.name == name)
        verdict.notes.append(f"{name} is skipped for {verdict.adapter}: {first.message or ''}".rstrip(": "))
    verdict.notes += [f"{nodeid} did not run ({run.status})" for nodeid in result.not_run]
    verdict.missed += [f"{nodeid} {outcome}" for nodeid, outcome in result.missed]


def _failure(verdict: Verdict, run: MutantRun) -> str | None:
    n = len(run.tests)
    reasons = {
        "Survived": f"survived: all {n} tests that reach it passed"
        + (" (possibly equivalent: the pre-check saw no output change)" if run.possibly_equivalent else ""),
        "NoCoverage": f"was not tested: {run.reason}",
        "RuntimeError": f"could not be judged, the run broke: {run.reason}",
    }
    if verdict.status in reasons:
        return reasons[verdict.status]
    if verdict.missed:
        return "expected killer(s) did not kill it: " + "; ".join(verdict.missed)
    return None


def judge_one(impl: str, baseline: Baseline, mutant: str, catalog_entry: dict | None, results: Results) -> Verdict:
    info = next((m for m in baseline.mutants if m.id == mutant), None)
    title = catalog_entry["title"] if catalog_entry else (info.title if info else mutant)
    verdict = Verdict(impl, baseline.name or impl, mutant, title, catalog_entry is not None, NOT_RUN, info=info)
    if info is None and not baseline.error:
        verdict.status = NOT_DECLARED
        return verdict
    if baseline_problem(baseline):
        return verdict
    if baseline.unavailable or not baseline.ran:
        verdict.status = NOT_TESTABLE
        verdict.notes.append(f"the clean baseline skipped every test: {baseline.unavailable or _first_skip(baseline)}")
        return verdict
    component = not_applicable(catalog_entry, baseline)
    if component:
        verdict.status = NOT_APPLICABLE
        verdict.notes.append(f"{verdict.adapter} does not declare the component {component!r} it breaks (§11)")
        return verdict
    run = results.runs.get((impl, mutant))
    if run is None:
        return verdict  # filtered out with --mutant
    verdict.run, verdict.status, verdict.killers = run, run.status, run.killers
    if run.difference:
        verdict.notes.append(f"pre-check: {run.difference}")
    elif run.possibly_equivalent:
        verdict.notes.append("possibly equivalent: the equivalence pre-check saw no output change (§13.1)")
    if catalog_entry is not None:
        if run.status in ("Killed", "Timeout", "Survived"):
            _expected(verdict, baseline, run, list(catalog_entry["expected_killers"]))
        verdict.failure = _failure(verdict, run)
    elif run.status == "RuntimeError":  # an extra mutant that could not be judged: nothing was checked
        verdict.failure = _failure(verdict, run)
    return verdict


def _first_skip(baseline: Baseline) -> str:
    return next((t.message for t in baseline.tests.values() if t.message), "no test collected")


def judge(results: Results) -> list[Verdict]:
    """One verdict per adapter and mutant: the catalog's ids (or those picked with --mutant),
    then each adapter's extra ids."""
    catalog = {entry["id"]: entry for entry in results.catalog}
    only = results.options.only
    verdicts = []
    for impl in results.options.impls:
        baseline = results.baselines.get(impl) or Baseline(impl, error="no baseline result")
        extras = sorted(m.id for m in baseline.mutants if m.id not in catalog)
        for mutant in [*catalog, *extras]:
            if only and mutant not in only:
                continue
            verdicts.append(judge_one(impl, baseline, mutant, catalog.get(mutant), results))
    return verdicts


def session_failures(results: Results, verdicts: list[Verdict]) -> list[str]:
    """Every reason the session fails, one line each; empty when it passes. A session in which no
    mutant ran at all never passes: it would be a gate that checks nothing."""
    problems = [p for b in results.baselines.values() if (p := baseline_problem(b))]
    problems += _same_names(results)
    problems += [f"{v.adapter} {v.mutant} ({v.title}) {v.failure}" for v in verdicts if v.failure]
    if not problems and not results.runs:
        counts = Counter((v.adapter, _WHY_NOT_RUN.get(v.status, v.status)) for v in verdicts)
        why = "; ".join(f"{adapter}: {n} {status}" for (adapter, status), n in counts.items())
        problems.append(f"no mutant was run, so nothing was checked ({why or 'no mutant was selected'})")
    return problems


_WHY_NOT_RUN = {
    NOT_DECLARED: "not declared",
    NOT_TESTABLE: "not testable",
    NOT_RUN: "not run",
    NOT_APPLICABLE: "not applicable",
}


def _same_names(results: Results) -> list[str]:
    """Two --impl arguments whose adapters share a name: their reports would merge."""
    by_name: dict[str, list[str]] = {}
    for impl, baseline in results.baselines.items():
        if baseline.name:
            by_name.setdefault(baseline.name, []).append(impl)
    return [
        f"--impl {' and --impl '.join(map(shlex.quote, impls))}: both adapters are named {name!r}; "
        "the reports need one name per adapter (give one another `name`, §11)"
        for name, impls in by_name.items()
        if len(impls) > 1
    ]
