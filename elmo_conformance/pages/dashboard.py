"""The dashboard across runs: many reports (implementations, machines, suite versions) in one
page. Each adapter of each report is one *result*, labelled by its adapter name, and where two
results share a name, by the machine and commit too. The page shows pass counts per spec section,
the margins of §10 side by side, the mutants of §13 each implementation's suite run killed (from
the mutation runner's Stryker JSON, whose mutant ids are "<adapter>:<mutant id>") and where every
result comes from."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elmo_conformance.conformance import passtable
from elmo_conformance.conformance.record import ReportError, load, section_key, split_message, version
from elmo_conformance.pages.runpage import DTYPES, fmt_margin, level, quantities_of
from elmo_conformance.spec.catalog import mutant_catalog, sections

DETECTED = ("Killed", "Timeout")
# What the score of generated mutants counts against the detected (docs/mutation.md).
LET_THROUGH = ("Survived", "NoCoverage")
NOT_RUN = ("skip", "n/i")  # skipped, or not implemented: a component the adapter does not declare (§11)


@dataclass
class Result:
    """One adapter of one report."""

    source: str
    report: dict[str, Any]
    adapter: dict[str, Any]
    label: str = ""
    mutants: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.adapter["name"]

    @property
    def provenance(self) -> dict[str, Any]:
        return self.report.get("provenance") or {}

    @property
    def host(self) -> str:
        return (self.provenance.get("machine") or {}).get("host") or "unknown machine"

    @property
    def commit(self) -> str:
        commit = self.provenance.get("commit")
        if not commit:
            return "no commit"
        return commit["sha"][:10] + ("+" if commit.get("dirty") else "")

    @property
    def suite_version(self) -> str:
        return self.provenance.get("suite_version") or f"unknown (report version {version(self.report)})"

    @property
    def spec_version(self) -> str:
        return self.report.get("spec_version") or "unknown"

    def owns(self, result: dict[str, Any]) -> bool:
        case = result.get("case") or ""
        return bool(case) and "-" in case and case.rsplit("-", 1)[0] == self.name

    @property
    def tests(self) -> list[dict[str, Any]]:
        return [r for r in self.report["tests"] if self.owns(r)]

    @property
    def margins(self) -> dict[str, dict[str, Any]]:
        return (self.report.get("margins") or {}).get(self.name, {})


def results_of(reports: Sequence[tuple[str, dict[str, Any]]]) -> list[Result]:
    """Every adapter of every report, labelled so that no two labels are equal."""
    results = [Result(source, report, adapter) for source, report in reports for adapter in report["adapters"]]
    label(results)
    return results


def label(results: Sequence[Result]) -> None:
    """Adapter name; where names repeat, `name @ host`; then `name @ host commit`; then `#n`."""
    for r in results:
        r.label = r.name
    for extend in (lambda r: f"{r.name} @ {r.host}", lambda r: f"{r.name} @ {r.host} {r.commit}"):
        counts = Counter(r.label for r in results)
        for r in results:
            if counts[r.label] > 1:
                r.label = extend(r)
    counts = Counter(r.label for r in results)
    seen: Counter[str] = Counter()
    for r in results:
        if counts[r.label] > 1:
            seen[r.label] += 1
            r.label = f"{r.label} #{seen[r.label]}"


def titles_of(results: Sequence[Result]) -> dict[str, str]:
    titles = dict(sections())
    for r in results:  # a report's own titles first: it may come from another spec version
        titles.update(r.report.get("section_titles") or {})
    return titles


def section_table(results: Sequence[Result]) -> dict[str, Any]:
    """Rows: every spec section cited; cells: each result's outcomes of the cases citing it."""
    counts: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    failing: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        for test in r.tests:
            word = passtable.kind(test)
            for number in test["sections"]:
                counts[number][r.label][word] += 1
                if word in ("FAIL", "XPASS"):
                    body = split_message(test.get("message"))[0]
                    failing[(number, r.label)].append({"nodeid": test["nodeid"], "message": body})
    titles = titles_of(results)
    rows = []
    for number in sorted(counts, key=section_key):
        cells = [cell(counts[number].get(r.label), failing.get((number, r.label), [])) for r in results]
        rows.append({"section": number, "title": titles.get(number, ""), "cells": cells})
    totals = []
    for r in results:
        total = Counter(passtable.kind(t) for t in r.tests)
        totals.append(cell(total, []))
    return {"rows": rows, "totals": totals}


def cell(counts: Counter | None, failing: list[dict[str, Any]]) -> dict[str, Any]:
    """'passed/run' with the failures, xfails and skips; the class of the worst outcome."""
    if not counts:
        return {"text": "–", "note": "", "worst": "none", "failing": []}
    ran = sum(n for word, n in counts.items() if word not in NOT_RUN)
    notes = [f"{counts[w]} {w}" for w in passtable.KINDS if w != "pass" and counts.get(w)]
    worst = next(w for w in passtable.KINDS if counts.get(w))
    text = f"{counts.get('pass', 0)}/{ran}" if ran else "skipped"
    return {"text": text, "note": ", ".join(notes), "worst": worst, "failing": failing}


def margin_table(results: Sequence[Result]) -> dict[str, Any]:
    """Columns: each result's dtypes with margins; rows: §10's quantities."""
    columns: list[dict[str, Any]] = []
    for r in results:
        for dtype in sorted(r.margins, key=lambda d: (DTYPES.index(d) if d in DTYPES else 9, d)):
            columns.append({"label": f"{r.label} {dtype}", "values": r.margins[dtype]})
    quantities = quantities_of({r.label: r.margins for r in results})
    rows = []
    for quantity in quantities:
        cells = []
        for col in columns:
            entry = col["values"].get(quantity)
            cells.append(
                None
                if entry is None
                else {**entry, "text": fmt_margin(entry["max_margin"]), "level": level(entry["max_margin"])}
            )
        rows.append({"quantity": quantity, "cells": cells})
    return {"columns": columns, "quantities": quantities, "rows": rows}


def load_mutation_report(path: str | Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{adapter: {mutant id: {'status', 'description', 'catalog'}}} from the mutation runner's
    Stryker JSON (elmo_conformance/mutation/stryker.py); a file that is not one is refused by name."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schemaVersion") != "2" or not isinstance(data.get("files"), dict):
        raise ReportError(
            f"{path}: not a mutation report (Stryker schemaVersion 2 with 'files', elmo_conformance/mutation)"
        )
    catalog = {m["id"] for m in mutant_catalog()}
    found_config = data.get("config")
    config: dict[str, Any] = found_config if isinstance(found_config, dict) else {}
    found_impls = config.get("impls")
    impls: list[Any] = found_impls if isinstance(found_impls, list) else []
    found: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for name, entry in data["files"].items():
        for mutant in entry.get("mutants", []) if isinstance(entry, dict) else []:
            adapter, sep, mutant_id = str(mutant.get("id", "")).rpartition(":")
            generated = not sep and len(impls) == 1  # `mutate`'s report: ids of its one --impl's mutants
            if generated:
                adapter = str(impls[0])
            if not (sep or generated) or not mutant_id or "status" not in mutant:
                raise ReportError(
                    f"{path}: files/{name}: a mutant without an '<adapter>:<mutant id>' id (or, in a report of "
                    "`mutate`, config.impls naming its one implementation) or without a status"
                )
            found[adapter][mutant_id] = {
                "status": mutant["status"],
                "description": mutant.get("description", "") or f"{name}: {mutant.get('replacement', '')}",
                "catalog": mutant_id in catalog,
                "generated": generated,
            }
    for unlisted in (data.get("config") or {}).get("notListed", []):
        found[unlisted["adapter"]].setdefault(
            unlisted["mutant"],
            {"status": unlisted["status"], "description": "", "catalog": unlisted["mutant"] in catalog},
        )
    return dict(found)


def mutant_table(results: Sequence[Result]) -> dict[str, Any] | None:
    """Rows: catalog mutants (§13) then extras; cells: each result's status; and a total per result."""
    if not any(r.mutants for r in results):
        return None
    catalog = [m["id"] for m in mutant_catalog()]
    titles = {m["id"]: m.get("title", "") for m in mutant_catalog()}
    # Generated mutants (`mutate`, §13.2): a row for each one the suite let through, none for the
    # thousands it killed; the totals count them all.
    extras = sorted(
        {
            mid
            for r in results
            for mid, m in r.mutants.items()
            if mid not in catalog and not (m.get("generated") and m["status"] not in LET_THROUGH)
        }
    )
    rows = []
    for mid in [*catalog, *extras]:
        described = next(
            (r.mutants[mid]["description"] for r in results if r.mutants.get(mid, {}).get("description")), ""
        )
        cells = []
        for r in results:
            entry = r.mutants.get(mid)
            status = entry["status"] if entry else ("" if not r.mutants else "–")
            cells.append({"status": status, "detected": status in DETECTED})
        rows.append({"id": mid, "catalog": mid in catalog, "title": titles.get(mid) or described, "cells": cells})
    totals: list[dict[str, Any]] = []
    for r in results:
        if not r.mutants:
            totals.append({"text": "no mutation report", "complete": None})
            continue
        in_catalog = [m for mid, m in r.mutants.items() if mid in catalog]
        killed = sum(m["status"] in DETECTED for m in in_catalog)
        extra = [m for mid, m in r.mutants.items() if mid not in catalog and not m.get("generated")]
        generated = [m for m in r.mutants.values() if m.get("generated")]
        text = f"{killed}/{len(catalog)} catalog" if in_catalog or not generated else ""
        if extra:
            text += f", {sum(m['status'] in DETECTED for m in extra)}/{len(extra)} extra"
        complete = killed == len(catalog)
        if generated:
            judged = [m for m in generated if m["status"] in (*DETECTED, *LET_THROUGH)]
            detected = sum(m["status"] in DETECTED for m in judged)
            score = f"{100 * detected / len(judged):.1f} %" if judged else "no mutant judged"
            text += (", " if text else "") + f"generated: {detected}/{len(judged)} detected ({score})"
            complete = bool(judged) and detected == len(judged) and (killed == len(catalog) or not in_catalog)
        totals.append({"text": text, "complete": complete})
    return {"rows": rows, "totals": totals}


def attach_mutants(results: Sequence[Result], mutation: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Give each result the mutants of its adapter name, or of its --impl (a report of `mutate`
    names the implementation as its --impl was given): every result of that name."""
    for r in results:
        for key in dict.fromkeys((r.name, r.adapter.get("impl"))):
            if key in mutation:
                r.mutants.update(mutation[key])


def read(report_paths: Sequence[str | Path], mutant_paths: Sequence[str | Path] = ()) -> list[Result]:
    """Load, check and label every report, and attach the mutation reports' results."""
    reports = [(str(path), load(path)) for path in report_paths]
    if not reports:
        raise ReportError("no report given: pass the --report JSON files of one or more runs")
    results = results_of(reports)
    for path in mutant_paths:
        attach_mutants(results, load_mutation_report(path))
    return results
