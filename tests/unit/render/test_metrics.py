"""doctor's metrics text: a status per graded check, findings, the verdict, env drift, the NIC
counter rates since the baseline; label values escaped as the exposition format wants."""

from rocetune import checks
from rocetune.doctor.nic_health import rates
from rocetune.render.metrics import textfile
from tests.unit.doctor.nicsnap import PORT, later, real_snapshot


def _data(**kw):
    base = {"expect": {"verdict": "short", "differences": [{"id": "expect-rails"}]},
            "readings": {"env_files": {}, "env_refused": {"reasons": ["x"], "files": []}},
            "counters": {"rates": []}, "skipped": []}
    base.update(kw)
    return base


def test_statuses_verdict_and_refusal():
    found = [checks.finding("doctor-port-down", "mlx5_4:1", "down"),
             checks.finding("doctor-ecn-off", "ens1", "off", severity="warning"),
             checks.finding("doctor-acs-redirect", "host", "not checked", severity="info")]
    skipped = [checks.finding("doctor-memlock-logins", "host", "m").to_dict()]
    text = textfile(found, _data(skipped=skipped), ["doctor-port-down", "doctor-ecn-off", "doctor-acs-redirect",
                                                     "doctor-memlock-logins", "doctor-iommu-translated"], 1, "0.1.0")
    assert 'rocetune_doctor_check_status{check="doctor-port-down"} 2\n' in text
    assert 'rocetune_doctor_check_status{check="doctor-ecn-off"} 1\n' in text
    assert 'rocetune_doctor_check_status{check="doctor-acs-redirect"} 0\n' in text  # a note is not a problem
    assert 'rocetune_doctor_check_status{check="doctor-memlock-logins"} -1\n' in text
    assert 'rocetune_doctor_check_status{check="doctor-iommu-translated"} 0\n' in text
    assert 'rocetune_doctor_findings{check="doctor-port-down",severity="error"} 1\n' in text
    assert 'rocetune_expect_verdict{verdict="short"} 1\n' in text and 'rocetune_expect_verdict{verdict="met"} 0\n' in text
    assert "rocetune_expect_differences 1\n" in text and "rocetune_env_refused 1\n" in text
    assert "rocetune_doctor_exit_code 1\n" in text
    assert text.count("# TYPE ") == text.count("# HELP ")


def test_label_values_are_escaped():
    found = [checks.finding("doctor-port-down", 'a"b\\c\nd', "down")]
    text = textfile(found, _data(), [], 1, "0.1.0")
    assert 'rocetune_doctor_findings{check="doctor-port-down",severity="error"} 1' in text
    rows = textfile([], _data(counters={"rates": [{"check": "nic-link-flaps", "subject": 'p"1', "unit": "per_hour",
                                                  "rate": 0.5}]}), [], 0, "0.1.0")
    assert 'rocetune_nic_events_per_hour{check="nic-link-flaps",subject="p\\"1"} 0.5\n' in rows


def test_counter_rates_since_the_baseline():
    base = real_snapshot()
    now = later(base, hours=2, port={"link_downed": 3})
    got = {(c, s): (u, r) for c, s, u, r in rates(base, now)}
    assert got[("nic-link-flaps", PORT)] == ("per_hour", 1.5)
    assert rates(None, now) == []
    rebooted = dict(now, boot_id="another")
    assert rates(base, rebooted) == []


def test_env_drift_is_counted_per_file_rocetune_wrote():
    from rocetune.doctor.readings import ENV_FILES

    by_path = {path: fmt for fmt, path in ENV_FILES.items()}
    sh_path, conf_path = "/etc/rocetune/nccl.env", "/etc/nccl.conf"
    sh, conf = by_path[sh_path], by_path[conf_path]
    drift = checks.finding("doctor-env-drift", sh_path, "differs", severity="warning",
                           evidence={"file": sh_path, "changes": ["NCCL_IB_TC 106 -> unset", "NCCL_IB_HCA a -> b"]})
    env_files = {sh: "# rocetune 0.1.0\nexport NCCL_IB_TC=106\n", conf: "NCCL_IB_HCA=site's own\n"}
    text = textfile([drift], _data(readings={"env_files": env_files, "env_refused": None}), [], 5, "0.1.0")
    assert f'rocetune_env_drift_variables{{file="{sh_path}"}} 2\n' in text
    assert conf_path not in text  # the site's own file is not rocetune's to hold to the plan
    clean = textfile([], _data(readings={"env_files": env_files, "env_refused": None}), [], 0, "0.1.0")
    assert f'rocetune_env_drift_variables{{file="{sh_path}"}} 0\n' in clean and "rocetune_env_refused 0\n" in clean
