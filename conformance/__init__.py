"""The conformance harness for spec/elmo.md: a pytest plugin plus one test file per spec section.

Run it with `pytest conformance --impl numpy` (or `nox -s conformance -- --impl numpy`).
"""
