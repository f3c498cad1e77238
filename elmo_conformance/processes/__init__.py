"""The process kit: how code under test is started, found and ended (spec §11.1 isolation, §15.7
process lifetime).

- ``sandbox``: the sandbox every process of code under test starts in (bubblewrap);
- ``tree``: what a process is (parent, group, session, start time, CPU ticks), its descendants,
  the processes carrying an environment mark, the family of a process the harness started;
- ``kill``: signalling a family (each process only while it is the one found), ending a process
  group and reaping its leader, the descendants of a process;
- ``guard``: ``python -m elmo_conformance.processes.guard VARIABLE VALUE [FOLDER]``, which ends
  every marked process once its starter is done or dead.

Used by everything that starts or ends such a process: the wire client, the runner's supervision,
the mutation tool and the batch. It imports only the standard library and ``ground``.
"""
