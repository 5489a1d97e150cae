"""Every NCCL a job may load: system libraries, ld.so.cache, wheels in venvs/conda/system
site-packages, LD_LIBRARY_PATH and PATH -- each an ELF shared object whose own 'NCCL version'
string gives its version (a name's or wheel's claim is kept beside it), replayable."""

import io
import os
import tarfile

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.capture import build_tar, record
from rocetune.probe.parsers.ld_so_cache import build as build_cache
from rocetune.probe.sources import nccl_libs
from tests.fixtures.hostspec import elf_shared_object
from tests.unit.treekit import Dir, Link, make

SYS = "usr/lib/x86_64-linux-gnu"
TORCH_SP = "opt/torch/.venv/lib/python3.12/site-packages"
WHEEL_LIB = "nvidia/nccl/lib/libnccl.so.2"


def metadata(name: str, version: str) -> str:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: NCCL\n\nVersion: 9.9.9 (body)\n"


def nccl_so(version: str, cuda: str = "12.4") -> bytes:
    """A stand-in library (tests/fixtures/hostspec.py elf_shared_object) with NCCL's version string."""
    return elf_shared_object(f"NCCL version {version}+cuda{cuda}".encode())


def wheel(site: str, version: str, cu: str = "cu12", lib: bytes = None) -> dict:
    return {f"{site}/nvidia_nccl_{cu}-{version}.dist-info/METADATA": metadata(f"nvidia-nccl-{cu}", version),
            f"{site}/{WHEEL_LIB}": nccl_so(version) if lib is None else lib}


def system(version: str, lib: bytes = None) -> dict:
    return {f"{SYS}/libnccl.so.{version}": nccl_so(version) if lib is None else lib,
            f"{SYS}/libnccl.so.2": Link(f"libnccl.so.{version}")}


def library_with_string(text: bytes, at: int = 4096) -> bytes:
    return elf_shared_object(text + b"\0%s\0/dev/shm" + bytes(2048), at=at)


def probe(root, homes=False):
    ctx = ProbeContext(HostRoot(str(root)))
    return nccl_libs.probe(ctx, homes=homes), ctx.status


def by_path(data):
    return {lib["path"]: lib for lib in data["libraries"]}


def test_torch_wheel_beside_the_system_library_plans_for_the_lowest(tmp_path):
    root = make(tmp_path, {**system("2.28.3"), **wheel(TORCH_SP, "2.19.3"), "sys": Dir("sys")})
    data, status = probe(root)
    libs = by_path(data)
    w = libs[f"/{TORCH_SP}/{WHEEL_LIB}"]
    assert (w["version"], w["how"], w["package"], w["environment"], w["via"], w["claimed"]) == (
        "2.19.3", "library-string", "nvidia-nccl-cu12 2.19.3", "/opt/torch/.venv", ["wheel"],
        {"wheel-metadata": "2.19.3"})
    s = libs[f"/{SYS}/libnccl.so.2.28.3"]
    assert (s["version"], s["how"], s["environment"], s["claimed"]) == (
        "2.28.3", "library-string", None, {"file-name": "2.28.3"})
    assert (data["version"], data["path"], data["basis"]) == ("2.19.3", f"/{TORCH_SP}/{WHEEL_LIB}", "lowest")
    assert "/opt/torch/.venv" in data["python_environments"] and not status.warnings


def test_wheels_in_conda_home_venvs_root_and_system_dist_packages(tmp_path):
    tree = {
        **wheel("opt/conda/envs/train/lib/python3.11/site-packages", "2.21.5"),
        **wheel("home/ann/proj/.venv/lib/python3.10/site-packages", "2.20.5"),
        **wheel("root/.local/lib/python3.12/site-packages", "2.26.2"),
        **wheel("usr/local/lib/python3.10/dist-packages", "2.18.1"),
        **wheel("workspace/job/venv/lib/python3.12/site-packages", "2.27.3", cu="cu13"),
        # a conda env's own NCCL package: lib/libnccl.so.X.Y.Z
        "opt/conda/envs/mpi/lib/libnccl.so.2.23.4": nccl_so("2.23.4"),
        "opt/conda/envs/mpi/lib/libnccl.so.2": Link("libnccl.so.2.23.4"),
        "opt/conda/envs/mpi/lib/python3.11/site-packages/numpy/__init__.py": "",
    }
    data, _ = probe(make(tmp_path, tree), homes=True)
    got = {lib["path"]: (lib["version"], lib["environment"], lib["controlled_by"]) for lib in data["libraries"]}
    assert got == {
        f"/opt/conda/envs/train/lib/python3.11/site-packages/{WHEEL_LIB}": ("2.21.5", "/opt/conda/envs/train", None),
        f"/home/ann/proj/.venv/lib/python3.10/site-packages/{WHEEL_LIB}": ("2.20.5", "/home/ann/proj/.venv",
                                                                          "user ann (under /home/ann)"),
        f"/root/.local/lib/python3.12/site-packages/{WHEEL_LIB}": ("2.26.2", "/root/.local", None),
        f"/usr/local/lib/python3.10/dist-packages/{WHEEL_LIB}": ("2.18.1", "/usr/local", None),
        f"/workspace/job/venv/lib/python3.12/site-packages/{WHEEL_LIB}": ("2.27.3", "/workspace/job/venv", None),
        "/opt/conda/envs/mpi/lib/libnccl.so.2.23.4": ("2.23.4", "/opt/conda/envs/mpi", None),
    }
    assert {lib["how"] for lib in data["libraries"]} == {"library-string"}
    assert (data["version"], data["basis"]) == ("2.18.1", "lowest")


def test_ld_so_cache_names_a_library_outside_the_usual_directories(tmp_path):
    for old in (False, True):
        root = make(tmp_path / str(old), {
            "etc/ld.so.cache": build_cache([("libnccl.so.2", "/opt/hpcx/nccl/lib/libnccl.so.2"),
                                            ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")], old=old),
            "opt/hpcx/nccl/lib/libnccl.so.2.22.3": nccl_so("2.22.3"),
            "opt/hpcx/nccl/lib/libnccl.so.2": Link("libnccl.so.2.22.3")})
        data, status = probe(root)
        assert data["libraries"] == [{"path": "/opt/hpcx/nccl/lib/libnccl.so.2.22.3", "version": "2.22.3",
                                      "how": "library-string", "package": None, "environment": None,
                                      "via": ["ld.so.cache"], "claimed": {"file-name": "2.22.3"},
                                      "controlled_by": None}]
        assert not status.warnings


def test_a_broken_ld_so_cache_is_a_warning_not_a_failure(tmp_path):
    data, status = probe(make(tmp_path, {"etc/ld.so.cache": b"garbage", **system("2.21.5")}))
    assert data["version"] == "2.21.5"
    assert any("/etc/ld.so.cache" in w for w in status.warnings)


def test_version_from_the_library_string_when_name_and_metadata_do_not_tell(tmp_path):
    # A string straddling the 1 MiB chunk boundary is still found.
    lib = library_with_string(b"NCCL version 2.19.3+cuda12.3", at=(1 << 20) - 6)
    root = make(tmp_path, {f"opt/app/lib/python3.12/site-packages/{WHEEL_LIB}": lib})
    data, _ = probe(root)
    (only,) = data["libraries"]
    assert (only["version"], only["how"], only["package"]) == ("2.19.3", "library-string", None)


def test_two_nccl_wheels_in_one_site_packages_ask_the_library(tmp_path):
    sp = "opt/torch/.venv/lib/python3.12/site-packages"
    tree = {**wheel(sp, "2.19.3"), **wheel(sp, "2.28.9", cu="cu13",
                                           lib=library_with_string(b"NCCL version 2.28.9+cuda13.0"))}
    data, _ = probe(make(tmp_path, tree))
    (only,) = data["libraries"]
    assert (only["version"], only["how"]) == ("2.28.9", "library-string")
    assert only["package"] == "nvidia-nccl-cu12 2.19.3, nvidia-nccl-cu13 2.28.9"


def test_a_library_nothing_dates_makes_the_plan_version_unknown(tmp_path):
    root = make(tmp_path, {**system("2.28.3"), f"opt/x/lib/python3.12/site-packages/{WHEEL_LIB}":
                           elf_shared_object(bytes(4096))})
    data, _ = probe(root)
    assert [lib["version"] for lib in data["libraries"]] == [None, "2.28.3"]
    assert (data["version"], data["path"], data["basis"]) == (None, None, "unreadable")


def test_nothing_found(tmp_path):
    data, _ = probe(make(tmp_path, {"sys": Dir("sys")}))
    assert data == {"version": None, "path": None, "basis": "none", "libraries": [], "python_environments": [],
                    "rejected": [], "search": {"looked_at": 0, "left_out": 0, "rejected": 0, "stopped": None},
                    "plugins": [], "plugin_env": {}}


def test_path_and_ld_library_path_of_a_capture_are_replayed(tmp_path):
    root = make(tmp_path, {
        "recorded/environ/PATH": "/srv/py/bin:/usr/bin",
        "recorded/environ/LD_LIBRARY_PATH": "/srv/nccl/lib:relative/ignored",
        "srv/py/bin/python3": Link("/usr/bin/python3.12"),
        **wheel("srv/py/lib/python3.12/site-packages", "2.21.5"),
        "srv/nccl/lib/libnccl.so.2.25.1": nccl_so("2.25.1")})
    data, _ = probe(root)
    got = {lib["path"]: lib["via"] for lib in data["libraries"]}
    assert got == {f"/srv/py/lib/python3.12/site-packages/{WHEEL_LIB}": ["wheel"],
                   "/srv/nccl/lib/libnccl.so.2.25.1": ["LD_LIBRARY_PATH"]}
    assert "/srv/py" in data["python_environments"]


def test_a_wheel_library_on_ld_library_path_keeps_its_wheel_metadata(tmp_path):
    root = make(tmp_path, {"recorded/environ/LD_LIBRARY_PATH": f"/{TORCH_SP}/nvidia/nccl/lib",
                           **wheel(TORCH_SP, "2.19.3")})
    data, _ = probe(root)
    (only,) = data["libraries"]
    assert (only["how"], only["package"], only["via"]) == (
        "library-string", "nvidia-nccl-cu12 2.19.3", ["LD_LIBRARY_PATH", "wheel"])


def test_directories_with_too_many_entries_are_searched_in_part(tmp_path):
    tree = {f"home/u{i:04d}/.keep": "" for i in range(nccl_libs.MAX_CHILDREN + 3)}
    _, status = probe(make(tmp_path, tree), homes=True)
    assert any("/home has 515 entries" in w for w in status.warnings)


def test_a_capture_records_what_was_read_inside_a_library_and_never_the_library(tmp_path):
    sp = "workspace/ann/.venv/lib/python3.11/site-packages"
    tree = {**system("2.28.3"), **wheel(TORCH_SP, "2.19.3"),
            **wheel(sp, "2.19.3"), **wheel(sp, "2.28.9", cu="cu13",
                                           lib=library_with_string(b"NCCL version 2.28.9+cuda13.0")),
            "etc/ld.so.cache": build_cache([("libnccl.so.2", f"/{SYS}/libnccl.so.2")]),
            "sys/kernel/mm/memory_peers/nv_mem/version": "1.0\n"}
    root = make(tmp_path / "host", tree)
    features, rec = record(root)
    archive = build_tar(root, rec)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        recorded = tar.extractfile(f"recorded/strings/{sp}/{WHEEL_LIB}.txt").read()
        tar.extractall(tmp_path / "replay")
    assert recorded == b"NCCL version 2.28.9+cuda13.0\n"
    # the ELF header's first bytes and the string found, never the library
    assert members[f"{sp}/{WHEEL_LIB}"].size == 20 and members[f"{TORCH_SP}/{WHEEL_LIB}"].size == 20
    assert members[f"{TORCH_SP}/nvidia_nccl_cu12-2.19.3.dist-info/METADATA"].size > 0
    assert members["etc/ld.so.cache"].size == len(tree["etc/ld.so.cache"])
    replay, _ = probe(tmp_path / "replay")
    assert replay == features["kernel"]["nccl"]
    assert {lib["how"] for lib in replay["libraries"]} == {"library-string"}
    assert not os.path.exists(tmp_path / "host" / "recorded"), "recording never writes into the host"


# --- what counts as a library, what the search may cost, whose library it is ---------------------

def test_a_file_only_named_like_a_release_is_no_library(tmp_path):
    root = make(tmp_path, {**system("2.21.5"), f"{SYS}/libnccl.so.2.12.12": b"junk\n"})
    data, _ = probe(root)
    assert [lib["path"] for lib in data["libraries"]] == [f"/{SYS}/libnccl.so.2.21.5"]
    assert data["rejected"] == [{"path": f"/{SYS}/libnccl.so.2.12.12",
                                 "why": "not an ELF file (5 byte(s) read, no ELF magic)"}]
    assert (data["version"], data["basis"]) == ("2.21.5", "single")


def test_an_elf_without_nccl_s_string_has_no_version_whatever_its_name_says(tmp_path):
    root = make(tmp_path, {**system("2.21.5"), **system("2.12.12", lib=elf_shared_object(bytes(256)))})
    data, _ = probe(root)
    lib = by_path(data)[f"/{SYS}/libnccl.so.2.12.12"]
    assert (lib["version"], lib["claimed"]) == (None, {"file-name": "2.12.12"})
    assert data["basis"] == "unreadable"


def sparse(path, size):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(size)


def test_many_sparse_files_cost_a_header_read_each_and_the_search_stops(tmp_path, monkeypatch):
    # 1,536 sparse files named like libraries once cost a full scan each (80 s for one plan)
    root = make(tmp_path, {**system("2.21.5")})
    for i in range(1536):
        sparse(os.path.join(root, "usr/local/lib", f"libnccl.so.2.{i}"), 8 << 20)
    scanned = []
    real_scan = HostRoot.scan_counted
    monkeypatch.setattr(HostRoot, "scan_counted",
                        lambda self, path, *a: scanned.append(path) or real_scan(self, path, *a))
    data, status = probe(root)
    assert scanned == [f"/{SYS}/libnccl.so.2.21.5"]  # the one ELF file; the others cost a 20-byte read
    # the real library is still found and planned for; the others are counted, the first listed
    assert (data["version"], data["basis"]) == ("2.21.5", "single")
    assert data["search"] == {"looked_at": 1, "left_out": 0, "rejected": 1536, "stopped": None}
    assert len(data["rejected"]) == nccl_libs.MAX_REJECTED
    assert all(r["why"].startswith("not an ELF file") for r in data["rejected"])
    assert not status.warnings


def test_the_files_opened_are_bounded_too(tmp_path, monkeypatch):
    monkeypatch.setattr(nccl_libs, "MAX_FILES", 100)
    root = make(tmp_path, {})
    for i in range(300):
        sparse(os.path.join(root, "usr/local/lib", f"libnccl.so.2.{i}"), 1 << 20)
    data, status = probe(root)
    assert data["search"]["rejected"] == 100 and data["search"]["left_out"] == 200
    assert "more than 100 files named like libraries" in data["search"]["stopped"]
    assert any("the NCCL library search stopped" in w for w in status.warnings)


def test_elf_headed_sparse_files_stop_at_the_scan_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(nccl_libs, "SCAN_BUDGET", 6 << 20)
    root = make(tmp_path, {})
    for i in range(4):
        path = os.path.join(root, "usr/local/lib", f"libnccl.so.2.{i}")
        sparse(path, 4 << 20)
        with open(path, "r+b") as fh:
            fh.write(elf_shared_object())
    data, _ = probe(root)
    assert "6 MiB read" in data["search"]["stopped"]
    assert [lib.get("unread") is not None for lib in data["libraries"]] == [False, False, True, True]
    assert data["basis"] == "unreadable"


def test_the_search_stops_reading_versions_at_its_time_bound(tmp_path):
    ticks = iter(range(0, 1000, 10))  # every read of the clock is 10 s later
    root = make(tmp_path, {**system("2.21.5"), **wheel(TORCH_SP, "2.19.3")})
    data = nccl_libs.probe(ProbeContext(HostRoot(str(root))), clock=lambda: next(ticks))
    assert "took over 15 s" in data["search"]["stopped"] and data["basis"] == "unreadable"


def test_a_library_in_a_home_directory_is_that_user_s_not_the_system_s(tmp_path):
    alice = "home/alice/.venv/lib/python3.12/site-packages"
    data, _ = probe(make(tmp_path, {**system("2.28.3"), **wheel(alice, "2.18.1")}), homes=True)
    lib = by_path(data)[f"/{alice}/{WHEEL_LIB}"]
    assert lib["controlled_by"] == "user alice (under /home/alice)" and lib["version"] == "2.18.1"
    assert (data["version"], data["basis"]) == ("2.28.3", "single")  # alice's 2.18.1 does not lower it
    only, _ = probe(make(tmp_path / "only", wheel(alice, "2.18.1")), homes=True)
    assert (only["version"], only["basis"]) == ("2.18.1", "other-user")


def test_a_library_below_a_directory_everyone_may_write_is_not_the_system_s(tmp_path):
    root = make(tmp_path, {**system("2.28.3"), "opt/shared/nccl/lib/libnccl.so.2.18.1": nccl_so("2.18.1"),
                           "recorded/environ/LD_LIBRARY_PATH": "/opt/shared/nccl/lib"})
    os.chmod(os.path.join(root, "opt/shared"), 0o777)
    data, _ = probe(root)
    lib = by_path(data)["/opt/shared/nccl/lib/libnccl.so.2.18.1"]
    assert lib["controlled_by"] == "every user (/opt/shared is writable by all)"
    assert data["version"] == "2.28.3"
    os.chmod(os.path.join(root, "opt/shared"), 0o1777)  # sticky: others cannot replace what is in it
    assert by_path(probe(root)[0])["/opt/shared/nccl/lib/libnccl.so.2.18.1"]["controlled_by"] is None


def test_owners_recorded_by_a_capture_are_replayed(tmp_path):
    root = make(tmp_path, {**system("2.28.3"), "opt/bob/lib/libnccl.so.2.18.1": nccl_so("2.18.1"),
                           "recorded/environ/LD_LIBRARY_PATH": "/opt/bob/lib",
                           "recorded/owners/opt/bob.txt": "1001 1001 0o40755\n"})
    lib = by_path(probe(root)[0])["/opt/bob/lib/libnccl.so.2.18.1"]
    assert lib["controlled_by"] == "uid 1001 (owner of /opt/bob)"


# --- the plugins NCCL would load --------------------------------------------------------------

def test_plugins_where_nccl_finds_them_with_their_versions(tmp_path):
    root = make(tmp_path, {
        **wheel(TORCH_SP, "2.28.9"),
        # beside the wheel's libnccl (its RUNPATH is $ORIGIN)
        f"{TORCH_SP}/nvidia/nccl/lib/libnccl-env.so": elf_shared_object(),
        # on LD_LIBRARY_PATH: HPC-X's net plugin and a tuner
        "opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so.0.0.0": elf_shared_object(),
        "opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so": Link("libnccl-net.so.0.0.0"),
        "opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-tuner-example.so": elf_shared_object(),
        # in ld.so.cache only: aws-ofi-nccl
        "etc/ld.so.cache": build_cache([("libnccl-net-ofi.so", "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so.1.14.2")]),
        "opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so.1.14.2": elf_shared_object(),
        "recorded/environ/LD_LIBRARY_PATH": "/opt/hpcx/nccl_rdma_sharp_plugin/lib",
        "recorded/environ/NCCL_NET_PLUGIN": "ofi",
        # named like a plugin, no shared object
        f"{SYS}/libnccl-profiler.so": b"\n"})
    data, _ = probe(root)
    got = {p["path"]: (p["kind"], p["variant"], p["version"], p["names"], p["via"]) for p in data["plugins"]}
    assert got == {
        f"/{TORCH_SP}/nvidia/nccl/lib/libnccl-env.so": (
            "env", None, None, ["libnccl-env.so"], ["NCCL's own directory"]),
        "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so.0.0.0": (
            "net", None, "0.0.0", ["libnccl-net.so", "libnccl-net.so.0.0.0"], ["LD_LIBRARY_PATH"]),
        "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-tuner-example.so": (
            "tuner", "example", None, ["libnccl-tuner-example.so"], ["LD_LIBRARY_PATH"]),
        "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so.1.14.2": (
            "net", "ofi", "1.14.2", ["libnccl-net-ofi.so"], ["ld.so.cache"]),
    }
    assert data["plugin_env"] == {"NCCL_NET_PLUGIN": "ofi"}
    assert {"path": f"/{SYS}/libnccl-profiler.so", "why": "not an ELF file (1 byte(s) read, no ELF magic)"} in \
        data["rejected"]


# --- the places users control never cost the system's search --------------------------------------

def eve_s_home(tree, count=70):
    """The reported attack: `count` files of 84 bytes with an ELF header, ~eve/eNN/lib/libnccl.so."""
    for i in range(count):
        tree[f"home/eve/e{i:02d}/lib/libnccl.so"] = elf_shared_object()[:84].ljust(84, b"\0")
    return tree


def test_files_in_a_home_never_keep_the_system_s_nccl_from_being_read(tmp_path):
    root = make(tmp_path, eve_s_home({**system("2.28.3")}))
    data, status = probe(root)  # the root probe does not walk /home
    assert (data["version"], data["basis"]) == ("2.28.3", "single")
    assert [lib["path"] for lib in data["libraries"]] == [f"/{SYS}/libnccl.so.2.28.3"]
    assert data["search"]["stopped"] is None and "user" not in data["search"]  # nothing there was touched
    asked, status = probe(root, homes=True)  # asked to: on the users' own budget
    assert (asked["version"], asked["basis"]) == ("2.28.3", "single")
    assert asked["search"]["stopped"] is None
    assert asked["search"]["user"]["looked_at"] == nccl_libs.USER_MAX_LIBRARIES
    assert "more than 16 library files" in asked["search"]["user"]["stopped"]
    assert any("places users control stopped" in w for w in status.warnings)


def test_a_crowded_workspace_is_searched_after_the_system_and_bounded(tmp_path):
    tree = {**system("2.28.3")}
    for i in range(300):
        tree[f"workspace/j{i:03d}/lib/libnccl.so.2.0.{i}"] = elf_shared_object()
    data, _ = probe(make(tmp_path, tree))
    assert data["search"]["looked_at"] == 1 and data["search"]["stopped"] is None
    assert data["search"]["user"]["looked_at"] == nccl_libs.USER_MAX_LIBRARIES
    assert by_path(data)[f"/{SYS}/libnccl.so.2.28.3"]["version"] == "2.28.3"


def test_the_users_places_are_walked_within_their_time_bound(tmp_path, monkeypatch):
    """A slow /workspace (NFS) stops its tier at its time bound; the system's was read before."""
    tree = {**system("2.28.3")}
    for i in range(50):
        tree[f"workspace/j{i:03d}/lib/python3.12/site-packages/x.py"] = ""
    root = make(tmp_path, tree)
    listed = []
    real_listdir = HostRoot.listdir
    now = [0.0]

    def slow(self, path):
        if path.startswith("/workspace/"):
            listed.append(path)
            now[0] += 1.0  # each listing costs a second
        return real_listdir(self, path)

    monkeypatch.setattr(HostRoot, "listdir", slow)
    data = nccl_libs.probe(ProbeContext(HostRoot(str(root))), clock=lambda: now[0])
    assert data["version"] == "2.28.3" and data["search"]["stopped"] is None
    assert "took over 3 s" in data["search"]["user"]["stopped"]
    assert len(listed) <= 2 * nccl_libs.USER_SECONDS + 4
