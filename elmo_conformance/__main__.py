"""`python -m elmo_conformance`: the console command `elmo-conformance` (elmo_conformance/cli.py)."""

import sys

from elmo_conformance.cli import main

if __name__ == "__main__":
    sys.exit(main())
