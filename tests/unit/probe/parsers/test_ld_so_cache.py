"""/etc/ld.so.cache in glibc's layouts (sysdeps/generic/dl-cache.h), built byte by byte here:

new format, little-endian, one entry ("libnccl.so.2" -> "/opt/n/libnccl.so.2"):

    offset  size  field
    0       20    "glibc-ld.so.cache1.1"  (magic "glibc-ld.so.cache" + version "1.1")
    20      4     nlibs = 1
    24      4     len_strings
    28      20    flags, padding, extension_offset, unused: zero
    48      24    entry: i32 flags (0x303: ELF, x86-64), u32 key, u32 value, u32 osversion, u64 hwcap
    72      ...   strings, NUL-terminated; key and value count from offset 0 (the new header)

old format: "ld.so-1.7.0" (11 bytes) + 1 pad byte, u32 nlibs at 12, then 12-byte entries
{i32 flags, u32 key, u32 value} whose offsets count from the end of the entry array.
"""

import struct

import pytest

from rocetune.errors import ParseError
from rocetune.probe.parsers import ld_so_cache

NAME, PATH = b"libnccl.so.2\0", b"/opt/n/libnccl.so.2\0"


def new_format(order="<"):
    strings = NAME + PATH
    head = b"glibc-ld.so.cache1.1" + struct.pack(order + "II", 1, len(strings)) + bytes(20)
    entry = struct.pack(order + "iIIIQ", 0x303, 72, 72 + len(NAME), 0, 0)
    return head + entry + strings


def old_format():
    strings = NAME + PATH
    return b"ld.so-1.7.0\0" + struct.pack("<I", 1) + struct.pack("<iII", 0x303, 0, len(NAME)) + strings


def test_new_format_built_by_hand():
    data = new_format()
    assert len(data) == 72 + len(NAME) + len(PATH)
    assert ld_so_cache.parse(data) == [("libnccl.so.2", "/opt/n/libnccl.so.2")]


def test_big_endian_cache_from_another_host():
    assert ld_so_cache.parse(new_format(">")) == [("libnccl.so.2", "/opt/n/libnccl.so.2")]


def test_old_format_alone():
    assert ld_so_cache.parse(old_format()) == [("libnccl.so.2", "/opt/n/libnccl.so.2")]


def test_old_format_with_new_one_after_it_reads_the_new_part():
    # glibc 2.2-2.31: the old table, padding to 8, then a whole new-format cache whose offsets
    # count from its own header. Give the old table a different path to see which is read.
    new = new_format()
    old_strings_end = 16 + 12
    pad = bytes((-old_strings_end) % 8)
    old = b"ld.so-1.7.0\0" + struct.pack("<I", 1) + struct.pack("<iII", 0x303, 0, 0)
    data = old + pad + new
    assert ld_so_cache.parse(data) == [("libnccl.so.2", "/opt/n/libnccl.so.2")]


def test_build_writes_what_glibc_and_parse_read():
    entries = [("libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2"), ("libc.so.6", "/lib/libc.so.6")]
    for old in (False, True):
        for order in ("<", ">"):
            assert ld_so_cache.parse(ld_so_cache.build(entries, order, old)) == entries


@pytest.mark.parametrize("data", [b"", b"not a cache at all", b"glibc-ld.so.cache1.1" + struct.pack("<I", 5),
                                  new_format()[:60]])
def test_not_a_cache_is_a_parse_error(data):
    with pytest.raises(ParseError):
        ld_so_cache.parse(data)


def test_an_offset_past_the_end_is_a_parse_error():
    data = bytearray(new_format())
    struct.pack_into("<I", data, 48 + 8, 10_000)  # the value's offset
    with pytest.raises(ParseError):
        ld_so_cache.parse(bytes(data))
