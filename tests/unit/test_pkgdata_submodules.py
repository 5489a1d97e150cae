"""The registries (NIC drivers, env dialects, switch OSes, fleet tests) list their package's
modules as pkgutil would, from a directory and from the packed agent's zip alike."""

from __future__ import annotations

import pkgutil
import sys
import zipfile

import pytest

import rocetune.envfiles.dialects as dialects
import rocetune.nics as nics
from rocetune.pkgdata import submodules


@pytest.fixture
def zipped_package(tmp_path):
    archive = tmp_path / "pkgs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zpkg/__init__.py", "")
        zf.writestr("zpkg/alpha.py", "")
        zf.writestr("zpkg/beta/__init__.py", "")
        zf.writestr("zpkg/notes.txt", "")
    sys.path.insert(0, str(archive))
    try:
        import zpkg  # type: ignore[import-not-found]

        yield zpkg
    finally:
        sys.path.remove(str(archive))
        for name in [m for m in sys.modules if m == "zpkg" or m.startswith("zpkg.")]:
            del sys.modules[name]


def test_a_directory_lists_what_pkgutil_lists():
    for package in (nics, dialects):
        assert submodules(package.__path__) == sorted(i.name for i in pkgutil.iter_modules(package.__path__))


def test_modules_and_packages_but_not_other_files(tmp_path):
    (tmp_path / "one.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "data").mkdir()  # no __init__.py: not a package
    (tmp_path / "README.md").write_text("")
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "two.py.orig").write_text("")
    assert submodules([str(tmp_path)]) == ["one", "pkg"]


def test_a_package_inside_a_zip_is_listed_through_pkgutil(zipped_package):
    assert submodules(zipped_package.__path__) == ["alpha", "beta"]
