"""Where jobs run: the part of the mutation runner and of the batch that knows nothing of ELMo.

- `local`: long-lived worker processes on this machine, one job each at a time, each job with its
  own deadline; a worker that passes it is killed and replaced (the job is a Timeout), one that
  dies is replaced (the job is a RuntimeError), and the run goes on;
- `cluster`: a Dask client on an embedded LocalCluster or an existing cluster (`--scheduler
  ADDRESS`, `--scheduler-file PATH`), with the suite's version checked on the scheduler and every
  worker;
- `remote`: the same workers and deadlines on a Dask cluster: each Dask worker process keeps a
  local worker warm for the run and takes jobs one at a time; the files the jobs need are shipped
  once per machine, and paths in jobs and results are mapped by the caller's functions.

What a job is, what its events mean and how a result is judged are the caller's (the mutation
runner's scheduler, `elmo_conformance.mutation`); nothing here imports the layers above it.
Dask is imported only when a cluster is used.
"""

from __future__ import annotations
