"""`elmo-conformance mutate --scheduler ADDRESS | --scheduler-file PATH`: the run's jobs on a Dask
cluster, through the executor (elmo_conformance.executor.remote), with the same workers, deadlines
and verdict rules as the local pool.

The Dask workers may not share this machine's filesystem, so what a job reads is shipped: the
run's scratch folder (the clean copy of the project root, built where there is a build, and the
baseline's copy) and the files mutated (a mutant is written from its file's text). On a worker
they lie under a base folder at the same paths (executor.shipping.Relocation), and `localize` maps
the paths a job names (the project root, the copies, the working folder, the program's words
inside the root) there; `delocalize` maps the baseline's per-file line coverage back to the
user's file names. Each Dask machine has its own copy: a compiled mutant whose program is another
mutant's (programs.py) is set aside when both ran on one machine, as with local workers.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from elmo_conformance.executor.remote import run_on_cluster
from elmo_conformance.executor.shipping import Relocation, Shipment
from elmo_conformance.mutation.copies import FromCopy
from elmo_conformance.mutation.model import Baseline
from elmo_conformance.mutation.pool import SERVE, Scheduler
from elmo_conformance.mutation.scratch import Target
from elmo_conformance.mutation.worker import SINGLE_THREADED, BaselineJob, GeneratedJob

HYPOTHESIS = "HYPOTHESIS_STORAGE_DIRECTORY"


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _words(command: str | None, inside: Callable[[str], bool], where: Relocation) -> str | None:
    """A `cmd:` command with each absolute word for which `inside` holds mapped into the base."""
    if not command or not command.startswith("cmd:"):
        return command
    words = shlex.split(command[len("cmd:") :])
    return "cmd:" + shlex.join(where.here(w) if os.path.isabs(w) and inside(w) else w for w in words)


def _target(target: Target, where: Relocation) -> Target:
    root = target.root
    return replace(
        target,
        root=where.here(root),
        template=where.here(target.template) if target.template else None,
        cwd=where.here(target.cwd or os.sep),  # relative words and the adapter file resolve as here
        program=_words(target.program, lambda w: _inside(w, root), where),
        import_path=tuple(where.here(p) if _inside(p, root) else p for p in target.import_path),
    )


def localize(value: Any, where: Relocation) -> Any:
    """A job with its paths mapped into the worker's copy."""
    if isinstance(value, GeneratedJob):
        assert value.target is not None
        generated = value.generated
        return replace(
            value,
            target=_target(value.target, where),
            generated=replace(generated, file=where.here(generated.file)) if generated else None,
            scratch=where.here(value.scratch) if value.scratch else "",
        )
    if isinstance(value, BaselineJob):
        copy = value.copy
        return replace(
            value,
            lines=tuple(where.here(f) for f in value.lines),
            copy=FromCopy(where.here(copy.roots[0]), where.here(copy.copy)) if copy is not None else None,
            run_as=(
                _words(value.run_as, where.shipped, where) or ""
                if value.run_as.startswith("cmd:")
                else (where.here(value.run_as) if value.run_as and where.shipped(value.run_as) else value.run_as)
            ),
            cwd=where.here(value.cwd) if value.cwd else "",
            target=_target(value.target, where) if value.target is not None else None,  # a program's coverage copy
            scratch=where.here(value.scratch) if value.scratch else "",
        )
    return value


def delocalize(answer: tuple, where: Relocation) -> tuple:
    """A worker's answer with the baseline's line coverage under the user's file names again."""
    if answer[0] == "done" and isinstance(answer[1], Baseline):
        baseline = answer[1]
        baseline.lines = {where.back(file): lines for file, lines in baseline.lines.items()}
        baseline.functions = {where.back(file): spans for file, spans in baseline.functions.items()}
    return answer


def shipment(scratch: Path, files: list[Path]) -> Shipment:
    """What the jobs read: the scratch folder (the clean copy, the baseline's) and the sources."""
    return Shipment((str(scratch), *(str(f) for f in files)))


def run_jobs(
    scheduler: Scheduler,
    client: Any,
    scratch: Path,
    files: list[Path],
    progress: Callable[[str], None],
    env: dict[str, str],
) -> None:
    """The run's jobs on the cluster of `client`; `env`: what the local workers' environment adds
    (the sandbox's switch, Hypothesis's folder), on top of each Dask worker's own."""
    extra = {**SINGLE_THREADED, **env}
    where = shipment(scratch, files)
    run_on_cluster(scheduler, client, SERVE, progress, where, localize, delocalize, extra, (HYPOTHESIS,))
