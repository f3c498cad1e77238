"""`elmo-conformance batch`: many implementations, and their mutants, checked on Dask workers.

- `submissions`: what a command-line argument names (an --impl argument, a folder with adapter.py
  or an elmo-submission.json manifest), packed to travel with its job;
- `jobs`: one job as it runs on a worker: self-contained, bounded by its deadline, and leaving no
  process behind (a guard process ends every process of the job when it ends or its worker dies);
- `executor`: the Dask cluster (embedded LocalCluster or an existing one), the version check, the
  queue kept on the client, the retry of a job whose worker died;
- `records`: each submission's verdict, batch.json and the class dashboard (index.html);
- `journal`: the pytest plugin in a job's harness that journals each test as it finishes and
  stops a test at its CPU-time limit;
- `grading`: the grading file, each submission's grade, grades.csv and Gradescope's results.json;
- `regrade`: the results kept under --out/cache/, keyed by all a result depends on
  (docs/grading.md);
- `__main__`: the command line (`main`).

Dask is an optional dependency (`pip install 'elmo-conformance[dask]'`); nothing here imports it
until a batch runs.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from elmo_conformance.batch.__main__ import main as batch

    return batch(argv)


__all__ = ["main"]
