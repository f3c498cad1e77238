"""The process kit: how code under test is started (the sandbox, ``sandbox``).

Used by everything that starts a process of code under test: the wire client, the harness, the
runner, the mutation tool and the batch.
"""
