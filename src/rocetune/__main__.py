import os
import sys

from .cli.main import main

code = main()
# The process ends here: skip the interpreter's teardown of every module it imported (a few ms
# of each start). What it would do on the way out is flush the output.
try:
    sys.stdout.flush()
    sys.stderr.flush()
except BaseException:
    os._exit(120)  # what Python exits with when it cannot flush stdout
os._exit(code)
