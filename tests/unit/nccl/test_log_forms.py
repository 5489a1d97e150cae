"""Every line form of tests/fixtures/nccl-logs/forms.json, built from NCCL's format string and read.

The table names each form's first and last release and the file:line printing it at both tags
(tools/nccl_log_forms.py computes them from NVIDIA/nccl's source at every release tag; with
ROCETUNE_NCCL_REPO set to a clone, the last test re-checks that). Here each form's `line`, NCCL's
format filled with `args`, is read by the reader, and what it must yield is `expect`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from rocetune.nccl.log import READS, READS_TEXT, read_log
from rocetune.nccl.versions import parse_version

ROOT = Path(__file__).resolve().parents[3]
TABLE = json.loads((ROOT / "tests" / "fixtures" / "nccl-logs" / "forms.json").read_text())
FORMS = [f for f in TABLE["forms"] if "line" in f]
INFO = "gpu-a:4100:4150 [2] NCCL INFO "
# C length modifiers Python's % does not take: %ld, %lx, %lld, %llx, %lu, %lX
_LENGTH = re.compile(r"%(#?\d*)(?:ll|l|z)([dxXu])")


def c_format(fmt: str, args) -> str:
    return _LENGTH.sub(r"%\1\2", fmt).replace("%u", "%d").replace("%p", "%s") % tuple(args)


def build(form) -> str:
    text = c_format(form["line"], form["args"])
    if form["kind"] in ("warn", "version-bare", "diag") or text.startswith("\n"):
        return text + "\n"
    return INFO + text + "\n"


def test_the_table_covers_the_releases_the_reader_reads():
    assert READS_TEXT == "NCCL 2.6 to 2.31"
    first = min(parse_version(f["first"]) for f in TABLE["forms"])
    last = max(parse_version(f["last"]) for f in TABLE["forms"])
    assert first <= READS[0] and last[:2] == READS[1][:2]


@pytest.mark.parametrize("form", FORMS, ids=[f["id"] for f in FORMS])
def test_each_form_is_read(form):
    r = read_log(build(form))
    exp, kind = form["expect"], form["kind"]
    p = r.processes[0] if r.processes else None
    if kind == "warn":
        (w,) = r.warnings
        assert (w.where, w.process) == (exp["where"], exp["process"])
    elif kind in ("version", "version-bare"):
        assert [parse_version(v)[:3] for v in r.versions] == [parse_version(exp["version"])]
    elif kind == "git":
        assert p.git_version == exp["git"]
    elif kind == "network":
        assert p.network == exp["network"]
    elif kind == "devices":
        assert [[d.name, d.port, d.link_layer, d.rail, d.plane] for d in p.ib_devices] == exp["devices"]
    elif kind == "no-device":
        assert p.ib_no_device is not None
    elif kind == "socket":
        assert [list(x) for x in p.socket_interfaces] == exp["socket"]
    elif kind == "gdr-hca":
        # the HCA's own "NET/IB : Using" line is not in this log: the device is entered by index and name
        assert [[d.name, d.gdr] for d in p.ib_devices] == [exp["gdr"]]
    elif kind == "gdr-pair":
        (g,) = p.gdr_paths
        assert [g.enabled, g.gpu, g.hca, g.distance, g.level, g.rank, g.mode] == exp["pair"]
    elif kind == "dmabuf":
        assert p.dmabuf_gpus == exp["dmabuf"]
    elif kind == "rings-gdr":
        assert list(p.rings_gdr) == exp["rings_gdr"]
    elif kind == "connection":
        assert list(p.transports) == [exp["transport"]]
        if "pair" in exp:
            (pair,) = p.net_pairs.values()
            assert [pair.gpu, pair.netdev, pair.state] == exp["pair"]
    elif kind == "qp":
        assert (p.qp_mtus, p.qp_gid_indexes) == ([exp["mtu"]], [exp["gid"]])  # no device line needed
    elif kind == "channels":
        assert p.channels == exp["channels"]
    elif kind == "env":
        name, value = exp["env"]
        assert p.env[name].value == value
    elif kind == "env-invalid":
        name, value = exp["invalid"]
        assert p.env_invalid[name][0] == value
    elif kind == "rank":
        assert (p.ranks, p.nranks) == ([exp["rank"][0]], exp["rank"][1])
    elif kind == "mismatch":
        assert list(p.net_mismatch) == exp["mismatch"]
    elif kind == "net-plugin":
        assert p.net_plugin == exp["net_plugin"]
    elif kind == "env-plugin":
        assert p.env_plugin == exp["env_plugin"]
    elif kind == "port-event":
        ((e, _ev),) = p.port_events
        assert [e.device, e.port, e.kind] == exp["event"]
    elif kind == "diag":
        ((d, _ev),) = r.diag
        assert [d.host, d.pid, d.tag, d.check] == exp["diag"]
    else:
        pytest.fail(f"no check for kind {kind}")
    assert r.unrecognized_lines == 0


def test_the_doc_names_each_form_with_its_releases():
    page = (ROOT / "docs" / "nccl-log.md").read_text()
    for f in TABLE["forms"]:
        older = " or older" if f.get("first_scanned") else ""
        assert f"| `{f['id']}` | {f['first']}{older} | {f['last']} |" in page, f["id"]


@pytest.mark.skipif(not os.environ.get("ROCETUNE_NCCL_REPO"), reason="ROCETUNE_NCCL_REPO names no NCCL git clone")
def test_the_table_agrees_with_nccl_at_every_tag():
    sys.path.insert(0, str(ROOT / "tools"))
    import nccl_log_forms

    assert nccl_log_forms.check(os.environ["ROCETUNE_NCCL_REPO"], write=False) == 0
