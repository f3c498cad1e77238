"""The ground floor: where the suite's files are (``resources``), its version (``version``) and
a test's outcome from pytest's reports (``outcomes``).

Every other part of the package may import these; they import nothing of the package.
"""
