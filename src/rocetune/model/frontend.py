"""Which interface is the host's front end (management) port, from its default routes.

The IPv4 default route with the lowest metric decides: that is where the host's own traffic
leaves and what every node reaches. IPv6 router advertisements put a default route on every
interface that hears them (QEMU's user network does; so do data centres that send RAs on their
RoCE rails), so an IPv6 default route decides only on a host without an IPv4 one, and only when
one interface holds it at the lowest metric. Otherwise the front end is unknown, said as a doubt,
and no port is excluded for it.

Features written before `net.default_routes` existed carry only `default_route_interfaces`
(every interface with a default route of either family): those names are taken as they are.
"""

from __future__ import annotations

from typing import List, Optional

from .record import Record


class FrontEnd(Record):
    interfaces: List[str]
    why: str
    doubts: List[str]  # the choice may be wrong: warn
    notes: List[str]  # default routes that were not taken, and why
    _fields = ("interfaces", "why", "doubts", "notes")

    def __init__(self, interfaces: List[str], why: str, doubts: Optional[List[str]] = None,
                 notes: Optional[List[str]] = None) -> None:
        self.interfaces = interfaces
        self.why = why
        self.doubts = [] if doubts is None else doubts
        self.notes = [] if notes is None else notes


def front_end(net: dict) -> FrontEnd:
    routes = net.get("default_routes")
    if routes is None:
        names = list(net.get("default_route_interfaces") or
                     [i["name"] for i in net.get("interfaces", []) if i.get("default_route")])
        return FrontEnd(sorted(set(names)), "carries the default route")
    v4 = [r for r in routes if r.get("family") == "inet"]
    v6 = [r for r in routes if r.get("family") == "inet6"]
    doubts: List[str] = []
    notes: List[str] = []
    if v4:
        best = min(r["metric"] for r in v4)
        names = sorted({r["interface"] for r in v4 if r["metric"] == best})
        backups = sorted({r["interface"] for r in v4 if r["interface"] not in names})
        if len(names) > 1:
            doubts.append("IPv4 default routes at the same metric " + str(best) + " on " +
                          ", ".join(names) + ": each is taken as front end")
        if backups:
            notes.append("IPv4 default route(s) at a higher metric on " + ", ".join(backups) +
                          " (a backup path): not taken as front end")
        six_only = sorted({r["interface"] for r in v6} - set(names) - set(backups))
        if six_only:
            notes.append("IPv6 default route(s) on " + ", ".join(six_only) + " (router advertisements?) "
                          "do not make them front end: the IPv4 default route decides")
        return FrontEnd(names, f"carries the IPv4 default route, metric {best}", doubts, notes)
    if not v6:
        return FrontEnd([], "no default route")
    best = min(r["metric"] for r in v6)
    names = sorted({r["interface"] for r in v6 if r["metric"] == best})
    if len(names) == 1:
        return FrontEnd(names, f"carries the IPv6 default route, metric {best}, and no interface an IPv4 one")
    return FrontEnd([], "no IPv4 default route", [
        "IPv6 default routes only, at the same metric " + str(best) + " on " + ", ".join(names) +
        " (router advertisements on every port?): the front end port is unknown, none is excluded "
        "for carrying a default route"])
