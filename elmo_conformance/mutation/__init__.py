"""Mutation testing of the conformance suite (spec §13): `elmo-conformance mutants --impl numpy`.

Every declared mutant of each adapter is run through the whole suite in spawned, long-lived
workers, after a clean baseline run; the killers found are compared with the catalog's
(spec/mutants.json), and the results are written as a terminal table, a Stryker-format JSON report,
an HTML report and a markdown summary.
"""
