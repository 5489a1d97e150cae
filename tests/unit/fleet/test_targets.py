"""Which host, port, user and key a gather uses: inventory, then the command line, then
~/.ssh/config, then the defaults."""

from __future__ import annotations

import pytest

from rocetune.errors import RocetuneError
from rocetune.fleet.targets import Defaults, Target, check_name, complete, from_names


def _config(tmp_path, text):
    path = tmp_path / "config"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_ssh_config_fills_what_nothing_else_gives(tmp_path):
    key = tmp_path / "id_gpu"
    key.write_text("k", encoding="utf-8")
    conf = _config(tmp_path, f"Host gpu*\n  HostName 10.0.0.7\n  Port 2222\n  User ops\n  IdentityFile {key}\n")
    [t] = complete(from_names(["gpu01"]), Defaults(), conf)
    assert (t.hostname, t.port, t.user, t.identities) == ("10.0.0.7", 2222, "ops", [str(key)])
    assert t.key_name == "[10.0.0.7]:2222"


def test_command_line_beats_ssh_config_and_inventory_beats_both(tmp_path):
    conf = _config(tmp_path, "Host *\n  Port 2222\n  User ops\n  IdentityFile /nonexistent/key\n")
    [t] = complete(from_names(["root@gpu01"]), Defaults(user="admin", port=2200), conf)
    assert (t.hostname, t.port, t.user, t.identities) == ("gpu01", 2200, "root", [])
    inv = Target("gpu02", "10.0.0.2", port=22, user="trainer", identities=["/k"])
    [t] = complete([inv], Defaults(user="admin", port=2200, identity="/other"), conf)
    assert (t.hostname, t.port, t.user, t.identities) == ("10.0.0.2", 22, "trainer", ["/k"])
    assert t.key_name == "10.0.0.2"


def test_no_config_defaults_to_port_22(tmp_path):
    [t] = complete(from_names(["gpu01", "gpu01"]), Defaults(), str(tmp_path / "absent"))
    assert (t.hostname, t.port, t.user) == ("gpu01", 22, None)


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "../x", "a b"])
def test_a_name_that_cannot_be_a_file_is_refused(name):
    with pytest.raises(RocetuneError):
        check_name(name, "host")
