"""`python3 -m lab up N | status | ssh HOST CMD | pid HOST | deps | down` (see docs/lab.md)."""

import sys

from lab.cli import main

sys.exit(main())
