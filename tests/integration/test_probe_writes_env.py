"""`rocetune probe -o FILE` is the env use case: it writes what `rocetune env -o FILE` writes and,
like it, lifts a boot-time refusal (`env --no-degrade`) for the file it wrote, so the README's
`rocetune probe -o /etc/rocetune/nccl.env` leaves no doctor-env-refused behind."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from rocetune.cli.main import main

HOST = Path(__file__).resolve().parents[1] / "fixtures" / "hosts" / "dgx-h100-rails-dmabuf"
PFC_OFF = "enp94s0np0"  # mlx5_5, GPU3's rail


def _run(capsys, *argv: str):
    code = main(["--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def _pfc_off(root: Path) -> None:
    """`mlnx_qos -i IF --pfc 0,0,0,0,0,0,0,0` on one rail: what mlnx_qos then prints."""
    path = root / f"commands/mlnx_qos_-i_{PFC_OFF}.txt"
    text = path.read_text()
    off = re.sub(r"(enabled\s+0\s+0\s+0\s+)1", r"\g<1>0", text)
    assert off != text
    path.write_text(off)


def test_probe_o_lifts_a_refusal_as_env_o_does(tmp_path, capsys):
    root = tmp_path / "root"
    shutil.copytree(HOST, root, symlinks=True)
    (root / "etc/rocetune").mkdir(parents=True)
    env_file = root / "etc/rocetune/nccl.env"
    record = root / "var/lib/rocetune/env-refused.json"
    assert _run(capsys, "--root", str(root), "env", "-o", str(env_file), "--no-degrade")[0] == 0
    _pfc_off(root)
    code, refused = _run(capsys, "--root", str(root), "env", "-o", str(env_file), "--no-degrade")
    assert code == 1 and refused["data"]["refused"]["reasons"] and record.exists()

    code, probed = _run(capsys, "--root", str(root), "probe", "-o", str(env_file))
    assert code == 0, probed["errors"]
    assert probed["data"]["env"]["path"] == str(env_file) and "NCCL_IB_TC" in probed["data"]["env"]["changes"][0]
    assert not record.exists()  # the operator accepted the node as it is
    code, doctored = _run(capsys, "--root", str(root), "doctor", "--no-counters")
    assert "doctor-env-refused" not in {f["id"] for f in doctored["data"]["findings"]}


def test_probe_o_writes_what_env_o_writes(tmp_path, capsys):
    by_probe, by_env = tmp_path / "p" / "nccl.env", tmp_path / "e" / "nccl.env"
    by_probe.parent.mkdir()
    by_env.parent.mkdir()
    assert _run(capsys, "--root", str(HOST), "probe", "-o", str(by_probe))[0] == 0
    assert _run(capsys, "--root", str(HOST), "env", "-o", str(by_env))[0] == 0
    assert by_probe.read_text() == by_env.read_text().replace(str(by_env.parent), str(by_probe.parent))
    assert sorted(p.name for p in by_probe.parent.iterdir()) == sorted(p.name for p in by_env.parent.iterdir())
