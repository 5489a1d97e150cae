"""Reads of what others control cost what a real input costs: the one input reader
(rocetune.hostfs.inputs: read_input / open_input / iter_input_lines) and the readers built on it."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from rocetune.errors import HostReadError, RocetuneError
from rocetune.hostfs.inputs import iter_input_lines, read_input, trusted_owners
from rocetune.model.jsonread import JsonError, load_json


def _peak(call) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_nccl_log_of_one_endless_line_is_read_in_bounded_memory(tmp_path):
    from rocetune.nccl.log import load_log

    log = tmp_path / "nccl.log"
    with open(log, "wb") as fh:
        fh.write(b"h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")
        for _ in range(48):
            fh.write(b"x" * (1 << 20))  # 48 MB without a newline
        fh.write(b"\nh:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n")
    report = []
    peak = _peak(lambda: report.append(load_log(str(log))))
    assert peak < 8 << 20, peak  # read whole, it took three times the file
    assert report[0].lines == 3 and report[0].versions == ["2.21.5+cuda12.4"]


def test_lines_are_cut_and_their_rest_skipped(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"short\n" + b"y" * 100 + b"\n\nlast without newline")
    fd = os.open(path, os.O_RDONLY)
    try:
        got = list(iter_input_lines(fd, 10, chunk=7))
    finally:
        os.close(fd)
    assert got == [("short", False), ("y" * 10, True), ("", False), ("last witho", True)]


def test_a_document_of_too_many_values_is_refused_before_it_is_built():
    text = "[" + ",".join(["{}"] * 1_100_000) + "]"

    def parse() -> None:
        with pytest.raises(JsonError, match="more than 1000000 values"):
            load_json(text)

    assert _peak(parse) < 1 << 20  # parsed, it takes 260 MB


@pytest.mark.skipif(os.geteuid() != 0, reason="a file of another owner: needs root")
def test_results_of_another_owner_or_behind_a_link_are_not_read(tmp_path):
    theirs = tmp_path / "theirs.json"
    theirs.write_text("{}")
    os.chown(theirs, 65534, 65534)
    with pytest.raises(HostReadError, match="owned by uid 65534"):
        read_input(str(theirs), 100, follow=False, owners=trusted_owners())
    link = tmp_path / "link.json"
    os.symlink("/etc/hostname", link)
    with pytest.raises(HostReadError, match="a symbolic link, not a regular file: not followed"):
        read_input(str(link), 100, follow=False, owners=trusted_owners())
    assert read_input(str(link), 4096) == Path("/etc/hostname").read_bytes()  # an operator's link is


def test_an_input_larger_than_its_cap_is_refused_unread(tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)
    with pytest.raises(HostReadError, match="larger than 1 MiB"):
        read_input(str(big), 1 << 20)


def test_a_features_file_behind_a_device_is_an_input_error(tmp_path):
    from rocetune.model.features import load

    os.symlink("/dev/zero", tmp_path / "features.json")
    with pytest.raises(RocetuneError, match="a character device, not a regular file") as info:
        load(str(tmp_path / "features.json"))
    assert info.value.code == 3
