"""Every finding on every fixture host is a registered check's, carrying the check's fix and
source and what was read; a saved Features file gives the same findings as the probe."""

from __future__ import annotations

import json

import pytest

from rocetune import app, checks
from rocetune.cli.report import all_findings
from rocetune.planner import build_plan
from tests.fixtures.roots import all_hosts, root_of


@pytest.mark.parametrize("host", all_hosts())
def test_findings_are_registered_checks_with_evidence(host, tmp_path):
    features = app.host_features(root_of(host))
    found = all_findings(features, build_plan(features))
    for f in found:
        c = checks.get(f.id)
        assert f.severity in c.severities and f.kind == c.kind and f.source == c.source, f
        assert f.fix and f.evidence, f
        assert (f.rule is not None) == (c.kind == "rule"), f
    saved = tmp_path / "features.json"
    saved.write_text(json.dumps(features))
    again = app.host_features("/", str(saved))
    assert [x.to_dict() for x in all_findings(again, build_plan(again))] == [x.to_dict() for x in found]
