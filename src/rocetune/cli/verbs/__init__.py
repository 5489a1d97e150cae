"""One module per verb. Each defines NAME, ORDER, HELP, register(parser) and run(args) -> Result.

Verb modules stay light at import time (argparse only): `rocetune probe` must not pay for
the imports of `capture` or `lint`. Heavy imports go inside run().
"""

NAMES = ("probe", "env", "doctor", "topo", "capture", "explain", "lint", "qos", "fleet")
