"""`python -m rocetune` and the `rocetune` command."""

import os
import sys

from .cli.main import main


def run() -> None:
    """Run the command line, then end the process without the interpreter's teardown of every
    module it imported (a few ms of each start); what that would do on the way out is flush the
    output."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        os._exit(120)  # what Python exits with when it cannot flush stdout
    os._exit(code)


if __name__ == "__main__":
    run()
