"""The node settings file: the jobs' NCCL release, the env overrides, other env files jobs
source and the check configuration, in one document that every verb reads through the root."""

import pytest

from rocetune import app
from rocetune.envfiles.degrade import shortfalls
from rocetune.errors import ExitCode, RocetuneError
from rocetune.model import node_settings as ns

DOC = """\
version: 1
nccl_version: "2.20.5"
env:
  set:
    NCCL_IB_QPS_PER_CONNECTION: 4
    NCCL_IB_ECE_ENABLE: false
  unset: [NCCL_IB_SPLIT_DATA_ON_QPS]
  files: [/shared/jobs/nccl.env]
skip:
  - id: doctor-ecn-off
    reason: Soft-RoCE has no ECN sysfs
"""


def test_every_part_is_read_and_the_origin_is_the_nodes_path():
    s = ns.load_text(DOC, "/tmp/copy/doctor.yml")
    assert s.nccl_version == "2.20.5" and s.env_files == ("/shared/jobs/nccl.env",)
    assert s.overrides.set == {
        "NCCL_IB_QPS_PER_CONNECTION": ("4", ns.ORIGIN_SET),
        "NCCL_IB_ECE_ENABLE": ("0", ns.ORIGIN_SET),
    }
    assert s.overrides.unset == {"NCCL_IB_SPLIT_DATA_ON_QPS": ns.ORIGIN_UNSET}
    assert [r.id for r in s.checks.rules] == ["doctor-ecn-off"]
    # the env file records the node's path whatever copy was read: every writer gives the same bytes
    assert ns.ORIGIN_SET == "/etc/rocetune/doctor.yml: env.set"
    from rocetune.model.check_config import DEFAULT_PATH

    assert ns.PATH == DEFAULT_PATH  # one file


@pytest.mark.parametrize(
    "doc, says",
    [
        ('nccl_version: "2.20"\n', "nccl_version: '2.20' is not a release X.Y.Z"),
        ("env:\n  set: {1BAD: x}\n", "'1BAD' is not an environment variable name"),
        ("env:\n  set: {A: x}\n  unset: [A]\n", "env: A is both set and unset"),
        ("env:\n  files: [relative/nccl.env]\n", "env.files: 'relative/nccl.env' is not an absolute path"),
        ("env:\n  sets: {A: x}\n", "sets"),
    ],
)
def test_a_bad_document_is_an_input_error_naming_the_field(doc, says):
    with pytest.raises(RocetuneError) as err:
        ns.load_text(doc, "doctor.yml")
    assert err.value.code == ExitCode.INPUT and says in err.value.message and err.value.message.startswith("doctor.yml")


def test_every_verb_reads_it_under_the_root(tmp_path):
    (tmp_path / "etc/rocetune").mkdir(parents=True)
    assert app.node_settings(str(tmp_path)).source is None
    (tmp_path / "etc/rocetune/doctor.yml").write_text(DOC)
    request = app.PlanRequest(root=str(tmp_path), sets=("NCCL_IB_QPS_PER_CONNECTION=8",))
    user = request.user()
    assert user is not None and user.set["NCCL_IB_QPS_PER_CONNECTION"] == ("8", "--set")  # the command line wins
    assert user.set["NCCL_IB_ECE_ENABLE"] == ("0", ns.ORIGIN_SET)
    assert [r.id for r in app.check_config(str(tmp_path)).rules] == ["doctor-ecn-off"]


def test_no_degrade_names_a_plan_change_the_release_does_not_read():
    old = {"NCCL_IB_GID_INDEX": "3"}
    new = {"NCCL_IB_ADDR_RANGE": "192.168.0.0/16"}
    assert shortfalls(old, new, (2, 20, 5)) == [
        "NCCL_IB_ADDR_RANGE=192.168.0.0/16 would be set, and NCCL 2.20.5 does not read it"
    ]
    assert shortfalls(old, new, (2, 21, 5)) == []
    assert shortfalls(old, new, (2, 20, 5), chosen={"NCCL_IB_ADDR_RANGE"}) == []  # the user's own choice
    assert shortfalls(old, new, None) == []
