"""`elmo-conformance batch`: many implementations, and their mutants, checked on Dask workers.

- `submissions`: what a command-line argument names (an --impl argument, a folder with adapter.py
  or an elmo-submission.json manifest), packed to travel with its job;
- `jobs`: one job as it runs on a worker: self-contained, bounded by its deadline, and leaving no
  process behind (a guard process ends every process of the job when it ends or its worker dies);
- `executor`: the Dask cluster (embedded LocalCluster or an existing one), the version check, the
  queue kept on the client, the retry of a job whose worker died;
- `records`: each submission's verdict, batch.json and the class dashboard (index.html);
- `__main__`: the command line (`main`).

Dask is an optional dependency (`pip install 'elmo-conformance[dask]'`); nothing here imports it
until a batch runs.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from .__main__ import main as batch

    return batch(argv)


__all__ = ["main"]
