"""`rocetune capture` writes what the probe read; probing the unpacked capture gives the same Features."""

import os
import tarfile

import pytest

from rocetune.probe.capture import build_tar, record
from tests.integration.clirun import features_of, rocetune

pytestmark = pytest.mark.slow  # captures and replays whole hosts

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hosts")


def _unpack(archive: str, dest) -> str:
    with tarfile.open(archive) as tar:
        tar.extractall(dest)
    return str(dest)


def _comparable(features: dict) -> dict:
    # A live probe reads verbs through pyverbs; the capture replays `ibv_devinfo`, its
    # command-line twin. Which one was used is provenance, not a host fact.
    out = dict(features)
    out["verbs"] = {k: v for k, v in features["verbs"].items() if k != "via"}
    out["sources"] = {k: v for k, v in features["sources"].items() if k != "verbs"}
    return out


@pytest.mark.skipif(os.geteuid() != 0, reason="as a normal user the live probe warns of what it may not read "
                    "(/root), which a capture cannot hold")
def test_live_capture_replays_to_the_same_features(tmp_path):
    archive = tmp_path / "host.tar.gz"
    proc = rocetune("capture", "-o", str(archive))
    assert proc.returncode == 0, proc.stderr
    root = _unpack(str(archive), tmp_path / "root")
    assert os.path.isfile(os.path.join(root, "proc", "cpuinfo"))
    assert _comparable(features_of(root)) == _comparable(features_of("/"))


def test_capture_is_deterministic_and_small(tmp_path):
    a, b = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    rocetune("capture", "-o", str(a), check=True)
    rocetune("capture", "-o", str(b), check=True)
    assert a.read_bytes() == b.read_bytes()
    assert a.stat().st_size < 2 << 20


def _fixture_hosts():
    if not os.path.isdir(FIXTURES):
        return []
    return sorted(h for h in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, h, "sys")))


@pytest.mark.parametrize("host", _fixture_hosts())
def test_capture_of_a_fixture_host_replays_identically(host, tmp_path):
    root = os.path.join(FIXTURES, host)
    features, rec = record(root)
    archive = tmp_path / "c.tar.gz"
    archive.write_bytes(build_tar(root, rec))
    replay = _unpack(str(archive), tmp_path / "r")
    assert features_of(replay) == features
    # Only what was read travels: the capture never carries files the probe did not look at.
    assert not os.path.exists(os.path.join(replay, "PROVENANCE.md"))
