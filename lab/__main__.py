"""`python3 -m lab up N | status | ssh HOST CMD | pid HOST | deps | down` (see docs/lab.md)."""

import sys

from lab.netns import main

sys.exit(main())
