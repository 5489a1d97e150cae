"""Expectations an operator writes once: versions as their series, GPUDirect as a minimum, an
empty document as no expectations."""

from __future__ import annotations

import pytest

from rocetune.model import expect as e


@pytest.mark.parametrize(
    "key, version, written",
    [
        ("kernel", "6.8.0-1017-nvidia", "6.8.*"),
        ("kernel", "5.14.0-427.13.1.el9_4.x86_64", "5.14.*"),
        ("nvidia_driver", "550.54.15", "550.*"),
        ("nccl", "2.21.5", "2.21.*"),
        ("rdma_core", "50.0", "50.*"),
        ("nic_firmware", "28.39.1002", "28.39.*"),
        ("rdma_core", "50", "50"),
        ("nccl", "2.26.*", "2.26.*"),
    ],
)
def test_a_version_is_written_as_its_series(key, version, written):
    assert e.series(key, version) == written
    if key != "nic_firmware":  # held per rail (tested on the fixture host)
        assert e.evaluate({"versions": {key: written}}, e.NodeFacts(versions={key: version})) == []


def test_the_next_build_meets_the_series_and_the_next_series_does_not():
    doc = {"versions": {"kernel": e.series("kernel", "6.8.0-1017-nvidia")}}
    assert e.evaluate(doc, e.NodeFacts(versions={"kernel": "6.8.0-1018-nvidia"})) == []
    (diff,) = e.evaluate(doc, e.NodeFacts(versions={"kernel": "6.11.0-1003-nvidia"}))
    assert diff.field == "versions.kernel" and diff.severity == "error"


@pytest.mark.parametrize(
    "want, got, ok",
    [
        ("none", "peermem", True),
        ("none", None, True),
        ("any", "dmabuf", True),
        ("any", "none", False),
        ("dmabuf", "peermem", False),
        ("peermem", "peermem", True),
    ],
)
def test_gpudirect_is_a_minimum(want, got, ok):
    assert (e.evaluate({"gpudirect": want}, e.NodeFacts(gpudirect=got)) == []) is ok


def test_a_document_with_no_field_declares_nothing():
    assert e.declares_nothing(e.load_text("", "x")) and e.declares_nothing(e.load_text("version: 1\n", "x"))
    assert not e.declares_nothing(e.load_text("gpus: {count: 8}\n", "x"))
