"""nccl-ib-timeout: NCCL_IB_TIMEOUT=20 where the NCCL found defaults to less.

The verbs QP timeout is 4.096 us x 2^N per retry (7 retries); past it a connection fails with a
transport error. NCCL's default rose from 14 (67 ms per try, up to 2.13.4) to 18 (2.14.3) and to
20 (about 4 s per try, 30 s in all; 2.23.4; 2.30.7 src/transport/net_ib/connect.cc:15; env.rst
"The default value used by NCCL is 20 (since 2.23; it was 18 since 2.14, and 14 before that)").
The increases followed large fabrics, where a congested multi-tier RoCE or IB network can stall
a QP longer than the old defaults allow. So:

* NCCL older than 2.23.4 (default 14 or 18): NCCL_IB_TIMEOUT=20, the value NCCL itself now uses;
* NCCL version unknown: 20 too -- it is the default of every release since 2.23.4, so setting it
  changes nothing there and protects an older library;
* NCCL >= 2.23.4: nothing. Some vendors ship 22 on their largest RoCE fabrics (OCI H100 and
  later); that is a fabric-size decision that lengthens hang detection to about two minutes,
  made by the fabric's owner (a declared value is kept) or with --set.
"""

from __future__ import annotations

from typing import List

from ..model.plan import Decision
from ..nccl import defaults

ID = "nccl-ib-timeout"
TARGET = 20


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    if not sel.chosen:
        return []
    version = ctx.host.nccl_version()
    if version is None:
        return [ctx.decision("NCCL_IB_TIMEOUT", TARGET,
                             f"the NCCL version is unknown: {TARGET} is NCCL's default since 2.23.4, and "
                             "older releases default to 18 (2.14-2.22) or 14, too short for large fabrics",
                             nccl=ctx.host.nccl_evidence(), nccl_default=None)]
    dflt = defaults.default("NCCL_IB_TIMEOUT", version)
    if dflt is not None and dflt >= TARGET:
        return []
    vtext = defaults.text(version)
    return [ctx.decision("NCCL_IB_TIMEOUT", TARGET,
                         f"NCCL {vtext} defaults to {dflt} (4.096 us x 2^{dflt} per retry); {TARGET} is the "
                         "default NCCL adopted in 2.23.4 for large fabrics",
                         nccl=ctx.host.nccl_evidence(), nccl_default=dflt)]
