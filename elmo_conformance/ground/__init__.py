"""The ground floor: where the suite's files are (``resources``) and its version (``version``).

Every other part of the package may import these; they import nothing of the package.
"""
