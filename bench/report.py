"""The short table printed at the end of a run, made from the JSON it writes."""

from __future__ import annotations


def _s(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:.1f} ms" if abs(value) < 1 else f"{value:.2f} s"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _gf(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e9:.1f}"


def table(result: dict) -> str:
    lines: list[str] = []
    peaks = result.get("peak", {})
    if peaks:
        lines.append("Matmul peak: " + ", ".join(f"{dt} {_gf(p['flops_per_s'])} GFLOP/s" for dt, p in peaks.items()))
    suite = result.get("suite")
    if suite:
        lines += ["", "| Suite run | pytest time | wall | slowest 5 share | outcome |", "|---|---|---|---|---|"]
        lines += [_suite_row(run) for _, run in _runs(suite.get("per_adapter"))]
        lines += [_suite_row(run, f" ({n} workers)") for n, run in _runs(suite.get("workers"))]
        lines += [_mutants_row(run) for _, run in _runs(suite.get("mutants"))]
        for part in ("workers", "mutants"):
            if "pending" in suite.get(part, {}):
                lines.append(f"| {part}: pending | | | | {suite[part]['pending']} |")
        if suite.get("isolation"):
            lines += ["", "| Adapter | in-process | child process (default) | ratio of medians | ratio of minimums |"]
            lines.append("|---|---|---|---|---|")
            for impl, run in suite["isolation"].items():
                if "error" in run:
                    lines.append(f"| {impl} | - | - | - | {run['error']} |")
                    continue
                median = run["median_s"]
                lines.append(
                    f"| {impl} | {_s(median['in_process'])} | {_s(median['child_process'])} | "
                    f"{_x(run['ratio_median'])} | {_x(run['ratio_min'])} |"
                )
    boxed = result.get("sandbox")
    if boxed:
        lines += [
            "",
            "| Sandbox (numpy's suite) | --no-sandbox | sandbox (default) | ratio of medians | ratio of minimums |",
        ]
        lines.append("|---|---|---|---|---|")
        if "error" in boxed:
            lines.append(f"| pytest time | - | - | - | {boxed['error']} |")
        else:
            median = boxed["median_s"]
            lines.append(
                f"| pytest time | {_s(median['no_sandbox'])} | {_s(median['sandbox'])} | "
                f"{_x(boxed['ratio_median'])} | {_x(boxed['ratio_min'])} |"
            )
            lines.append(f"| CPU time, ratio of medians | | | {_x(boxed['cpu_ratio_median'])} | |")
    for part in result.get("bilm", []):
        size = ", ".join(f"{k}={v}" for k, v in part["size"].items())
        lines += ["", f"biLM loss+grad, {part['dtype']}, {size}", *_race(part)]
    for part in result.get("probe", []):
        size = ", ".join(f"{k}={v}" for k, v in part["size"].items())
        lines += ["", f"Probe fit, {part['dtype']}, {size}", *_probe(part)]
    for part in result.get("wire", []):
        size = ", ".join(f"{k}={v}" for k, v in part["size"].items())
        lines += ["", f"Wire encoding of one bilm_loss_grad call (request and result), {part['dtype']}, {size}"]
        lines += ["| encoding | bytes | encode + decode | vs fastest |", "|---|---|---|---|"]
        for name, timing in part["timings"].items():
            ratio = part["ratio_to_fastest"][name]
            lines.append(f"| {name} | {part['bytes'][name]:,} | {_s(timing['median_s'])} | {_x(ratio)} |")
    for part in result.get("scaling", []):
        lines += [
            "",
            f"biLM scaling in {part['axis']} ({part['dtype']}): median time at {part['axis']} = {part['values']}",
        ]
        lines += ["| contender | times | fit a + b·x: a, r² |", "|---|---|---|"]
        for name, times in part["median_s"].items():
            fit = part["fit"][name]
            lines.append(f"| {name} | {', '.join(_s(t) for t in times)} | {_s(fit['intercept_s'])}, {fit['r2']:.3f} |")
    return "\n".join(lines)


def _runs(value: dict | None) -> list[tuple[str, dict]]:
    if not value or "pending" in value:
        return []
    return list(value.items())


def _mutants_row(run: dict) -> str:
    if "error" in run:
        return f"| `{run['command']}` | - | - | - | {run['error']} |"
    statuses = ", ".join(f"{n} {k}" for k, n in sorted(run["statuses"].items()))
    split = f"baseline {_s(run['baseline_s'])} + mutants {_s(run['mutation_s'])}, {run['workers']} workers"
    return f"| `{run['command']}` | {split} | {_s(run['wall_s'])} | {_pct(run['slowest_share'])} (mutant runs) | {statuses} |"


def _suite_row(run: dict, suffix: str = "") -> str:
    if "error" in run:
        return f"| `{run['command']}`{suffix} | - | - | - | {run['error']} |"
    outcome = ", ".join(f"{n} {k}" for k, n in sorted(run["summary"].items()))
    return (
        f"| `{run['command']}`{suffix} | {_s(run['pytest_s'])} | {_s(run['wall_s'])} "
        f"| {_pct(run['slowest_share'])} | {outcome} |"
    )


def _race(part: dict) -> list[str]:
    reference = part.get("reference")
    against = f" | ratio to {reference}: medians, minimums" if reference else ""
    lines = [
        f"| contender | median | ratio to baseline: medians, minimums{against} | GFLOP/s | of peak |",
        "|---|---|---|---|---|" + ("---|" if reference else ""),
    ]
    for name, row in part["results"].items():
        to_reference = (
            f" | {_x(row['ratio_to_reference'])}, {_x(row['ratio_of_min_to_reference'])}" if reference else ""
        )
        lines.append(
            f"| {name} | {_s(row['median_s'])} | {_x(row['ratio_to_baseline'])}, {_x(row['ratio_of_min_to_baseline'])}"
            f"{to_reference} | {_gf(row.get('flops_per_s'))} | {_pct(row.get('fraction_of_peak'))} |"
        )
    empty = " |" if reference else ""
    lines += [f"| {name} | skipped | {reason}{empty} | | |" for name, reason in part.get("skipped", {}).items()]
    return lines


def _probe(part: dict) -> list[str]:
    lines = [
        "| contender | median | ratio to sklearn: medians, minimums | train acc | held-out acc | GFLOP/s | of peak |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in part["results"].items():
        note = f" ({row['n_iter']} of at most {row['max_iter']} iterations)" if "n_iter" in row else ""
        lines.append(
            f"| {name}{note} | {_s(row['median_s'])} | {_x(row['ratio_to_sklearn'])}, {_x(row['ratio_of_min_to_sklearn'])} "
            f"| {row['train_accuracy']:.4f} "
            f"| {row['held_out_accuracy']:.4f} | {_gf(row.get('flops_per_s'))} | {_pct(row.get('fraction_of_peak'))} |"
        )
    lines += [f"| {name} | skipped | {reason} | | | | |" for name, reason in part.get("skipped", {}).items()]
    return lines
