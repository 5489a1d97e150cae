"""rocetune.agentpack: the node agent's archive, deterministic, with its bytecode, packed once
per set of inputs."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import marshal
import os
import subprocess
import sys
import zipfile

import pytest

from rocetune import agentpack

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _sha_in_child(seed: str) -> str:
    code = "import hashlib, sys; from rocetune import agentpack; print(hashlib.sha256(agentpack.build()).hexdigest())"
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.path.join(REPO, "src"))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


def test_the_archive_is_the_same_whatever_the_packers_hash_seed():
    assert _sha_in_child("1") == _sha_in_child("2")


def test_every_module_has_its_bytecode_stored_where_zipimport_takes_it(tmp_path):
    data = agentpack.build()
    with zipfile.ZipFile(io.BytesIO(data[data.index(b"PK\x03\x04") :])) as zf:
        names = set(zf.namelist())
        modules = [n for n in names if n.endswith(".py") and n != "__main__.py"]
        assert modules and all(agentpack.pyc_name(m) in names for m in modules)
        pyc = zf.read("rocetune/cli/main.pyc")
        assert {i.compress_type for i in zf.infolist() if i.filename.endswith(".pyc")} == {zipfile.ZIP_STORED}
    assert pyc[:4] == importlib.util.MAGIC_NUMBER
    # Hash-based, unchecked: the archive is sealed by its sha256, so a start reads no source.
    assert int.from_bytes(pyc[4:8], "little") == 0b01
    # Run as it is, the archive's modules load from that bytecode: a pyc with a marker added to
    # its code is the code that runs.
    start = data.index(b"PK\x03\x04")
    with zipfile.ZipFile(io.BytesIO(data[start:])) as zf:
        entries = [(info, zf.read(info)) for info in zf.infolist()]
    path = tmp_path / "agent.pyz"
    with zipfile.ZipFile(path, "w") as out:
        for info, body in entries:
            if info.filename == "rocetune/__init__.pyc":
                source = dict(entries_by_name(entries))["rocetune/__init__.py"].decode()
                code = compile(source + "\nFROM_BYTECODE = True\n", "rocetune/__init__.py", "exec")
                body = body[:16] + marshal.dumps(code)
            out.writestr(info, body)
    probe = f"import sys; sys.path.insert(0, {str(path)!r}); import rocetune; print(rocetune.FROM_BYTECODE)"
    out = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "True", out.stderr[-2000:]


def entries_by_name(entries):
    return [(info.filename, body) for info, body in entries]


def test_a_second_pack_of_the_same_inputs_builds_nothing(tmp_path, monkeypatch):
    first = agentpack.write(str(tmp_path), "/usr/bin/python3")
    assert first["changed"]

    def no_build(*args, **kwargs):
        raise AssertionError("built again")

    monkeypatch.setattr(agentpack, "build", no_build)
    again = agentpack.write(str(tmp_path), "/usr/bin/python3")
    assert again == dict(first, changed=False)
    # Other inputs (another shebang) are another archive.
    with pytest.raises(AssertionError, match="built again"):
        agentpack.write(str(tmp_path), "/usr/bin/python3.11")


def test_an_archive_changed_or_gone_since_is_packed_again(tmp_path):
    first = agentpack.write(str(tmp_path))
    with open(first["path"], "ab") as fh:
        fh.write(b"\0")
    again = agentpack.write(str(tmp_path))
    assert again["changed"] and again["sha256"] == first["sha256"]
    with open(first["path"], "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == first["sha256"]
    os.unlink(first["path"])
    assert agentpack.write(str(tmp_path))["changed"]
    index = [n for n in os.listdir(tmp_path) if n.startswith(".pack-")]
    assert len(index) == 1 and json.loads((tmp_path / index[0]).read_text())["sha256"] == first["sha256"]


def test_a_changed_source_changes_the_inputs(tmp_path):
    pkg = tmp_path / "rocetune"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("__version__ = '1'\n")
    before = agentpack.inputs_digest(package_dir=str(pkg))
    (pkg / "__init__.py").write_text("__version__ = '2'\n")
    assert agentpack.inputs_digest(package_dir=str(pkg)) != before
