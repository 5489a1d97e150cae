"""nic_firmware's decisions on recorded real `mlxconfig` query outputs (fixtures/PROVENANCE.md):
only the parameters whose Next Boot differs are set, and a Current/Next Boot mismatch is
reported as a pending firmware reset."""

from __future__ import annotations

import pytest

from tests.unit.roles import FIXTURES, load_module_utils

F = load_module_utils("nic_firmware", "nic_firmware_state")

CX6 = (FIXTURES / "mlxconfig-e-q-egrep-connectx6-shs-docs.txt").read_text()
CX5 = (FIXTURES / "mlxconfig-q-connectx5-shs-docs.txt").read_text()


def test_the_three_columns_are_read_and_elisions_skipped():
    rows = F.parse_query(CX5)
    assert rows["ADVANCED_PCI_SETTINGS"] == {"Default": "False(0)", "Current": "True(1)", "Next Boot": "True(1)"}
    assert rows["MEMIC_SIZE_LIMIT"]["Next Boot"] == "_256KB(1)"
    assert rows["SAFE_MODE_THRESHOLD"]["Next Boot"] == "10"
    assert set(rows) == {"MEMIC_BAR_SIZE", "MEMIC_SIZE_LIMIT", "ADVANCED_PCI_SETTINGS",
                         "SAFE_MODE_THRESHOLD", "SAFE_MODE_ENABLE"}
    assert F.parse_query(CX6)["PCI_WR_ORDERING"] == {"Default": "per_mkey(0)", "Current": "per_mkey(0)",
                                                     "Next Boot": "force_relax(1)"}


def test_an_indented_table_from_a_document_is_read_too():
    indented = "".join("   " + line for line in CX5.splitlines(True))
    assert F.parse_query(indented) == F.parse_query(CX5)


def test_output_without_a_table_is_an_error():
    with pytest.raises(F.FirmwareError, match="Configurations"):
        F.parse_query("-E- Failed to open device: 0000:3b:00.0\n")


@pytest.mark.parametrize("shown, value", [("True(1)", (("TRUE", 1))), ("per_mkey(0)", ("PER_MKEY", 0)),
                                          ("0xff", (None, 255)), ("255", (None, 255)),
                                          ("_256KB(1)", ("_256KB", 1))])
def test_values_as_the_tools_print_them(shown, value):
    assert F.parse_value(shown) == value


@pytest.mark.parametrize("wanted", [True, 1, "1", "True", "true", "TRUE(1)"])
def test_a_value_given_as_mnemonic_bool_or_number_matches(wanted):
    assert F.same(F.wanted_value("ADVANCED_PCI_SETTINGS", wanted), "True(1)")
    assert not F.same(F.wanted_value("ADVANCED_PCI_SETTINGS", wanted), "False(0)")


def test_the_mnemonic_is_compared_case_blind():
    assert F.same(F.wanted_value("PCI_WR_ORDERING", "force_relax"), "force_relax(1)")
    assert not F.same(F.wanted_value("PCI_WR_ORDERING", "per_mkey"), "force_relax(1)")
    assert F.same(F.wanted_value("ROCE_CC_PRIO_MASK_P1", "0xff"), "255")


def test_only_what_differs_from_next_boot_is_set():
    settings = {"ADVANCED_PCI_SETTINGS": True, "SAFE_MODE_THRESHOLD": 10, "SAFE_MODE_ENABLE": False}
    plan = F.device_plan("0000:3b:00.0", settings, CX5)
    assert plan["changes"] == {"SAFE_MODE_ENABLE": {"next_boot": "True(1)", "wanted": "0"}}
    assert plan["pending_reset"] == []
    assert F.set_argv("mlxconfig", "0000:3b:00.0", plan["changes"]) == \
        ["mlxconfig", "-y", "-d", "0000:3b:00.0", "set", "SAFE_MODE_ENABLE=0"]
    assert F.diff_lines("0000:3b:00.0", plan["changes"]) == ["0000:3b:00.0 SAFE_MODE_ENABLE: True(1) -> 0"]


def test_a_value_waiting_for_a_firmware_reset_is_reported_not_set_again():
    plan = F.device_plan("0000:3b:00.0", {"PCI_WR_ORDERING": "force_relax"}, CX6)
    assert plan["changes"] == {}
    assert plan["pending_reset"] == ["PCI_WR_ORDERING"]


def test_a_parameter_the_firmware_lacks_names_device_and_parameter():
    with pytest.raises(F.FirmwareError, match=r"0000:3b:00.0: the firmware has no parameter CNP_DSCP_P1"):
        F.device_plan("0000:3b:00.0", {"CNP_DSCP_P1": 48, "ADVANCED_PCI_SETTINGS": True}, CX5)


def test_settings_are_checked_before_any_device_is_read():
    F.check_settings({"CNP_DSCP_P1": 48, "ROCE_CC_PRIO_MASK_P1": "0xff", "ATS_ENABLED": True})
    with pytest.raises(F.FirmwareError) as err:
        F.check_settings({"cnp_dscp_p1": 48, "CNP_802P_PRIO_P1": [6]})
    assert "'cnp_dscp_p1' is not an NVCONFIG parameter name" in str(err.value)
    assert "CNP_802P_PRIO_P1: [6] is not a firmware value" in str(err.value)


def test_one_device_per_card_through_its_first_function():
    resolved = {"ens1f0np0": "0000:3b:00.0", "ens1f1np1": "0000:3b:00.1", "ens2f0np0": "0000:86:00.0"}
    found = F.devices_of(["ens1f0np0", "ens1f1np1", "ens2f0np0"], ["3B:00.1"], resolve=resolved.__getitem__)
    assert found == {"0000:3b:00.0": ["ens1f0np0", "ens1f1np1", "3B:00.1"], "0000:86:00.0": ["ens2f0np0"]}
    with pytest.raises(F.FirmwareError, match="nic_firmware_devices: 'mlx5_0' is not a PCI address"):
        F.devices_of([], ["mlx5_0"])


def test_a_netdev_without_a_pci_device_is_named(tmp_path):
    (tmp_path / "veth0").mkdir()
    with pytest.raises(F.FirmwareError, match="veth0: no PCI device"):
        F.devices_of(["veth0"], [], resolve=lambda i: F.interface_device(i, str(tmp_path)))


def test_the_query_asks_only_for_the_wanted_parameters():
    assert F.query_argv("mstconfig", "0000:3b:00.0", {"CNP_DSCP_P1": 48, "ATS_ENABLED": 1}) == \
        ["mstconfig", "-d", "0000:3b:00.0", "-e", "q", "ATS_ENABLED", "CNP_DSCP_P1"]


def test_force_relax_is_recognised_in_every_form_and_refused_without_the_opt_in():
    for value in ("force_relax", "FORCE_RELAX", "force_relax(1)", 1, "1", True, "true"):  # true is set as 1
        assert F.forces_relaxed_ordering("PCI_WR_ORDERING", value), value
    for value in ("per_mkey", "per_mkey(0)", 0, False):
        assert not F.forces_relaxed_ordering("PCI_WR_ORDERING", value), value
    assert not F.forces_relaxed_ordering("ATS_ENABLED", 1)
    # The query's columns read back through the same judgement (a NIC left at force_relax).
    row = F.parse_query(CX6)["PCI_WR_ORDERING"]
    assert F.forces_relaxed_ordering("PCI_WR_ORDERING", F.next_boot(row))
    assert not F.forces_relaxed_ordering("PCI_WR_ORDERING", row["Current"])
    refused = F.relaxed_ordering_problems({"PCI_WR_ORDERING": "force_relax"}, allowed=False)
    assert len(refused) == 1 and "NVIDIA/nccl#531" in refused[0] and F.ALLOW_VAR in refused[0]
    assert F.relaxed_ordering_problems({"PCI_WR_ORDERING": "force_relax"}, allowed=True) == []
    assert F.relaxed_ordering_problems({"PCI_WR_ORDERING": "per_mkey"}, allowed=False) == []
