"""strtoll and atoi as C computes them when the digits are more than a long long holds."""

from __future__ import annotations

import pytest

from rocetune.nccl.syntax import LLONG_MAX, LLONG_MIN, atoi, ib_hca_entries, strtoll


@pytest.mark.parametrize("text, value, whole", [
    ("9223372036854775807", LLONG_MAX, True),
    ("9223372036854775808", LLONG_MAX, True),
    ("-9223372036854775808", LLONG_MIN, True),
    ("-9223372036854775809", LLONG_MIN, True),
    ("9" * 5000, LLONG_MAX, True),
    ("-" + "9" * 5000, LLONG_MIN, True),
    ("9" * 5000 + "k", LLONG_MAX, False),
    ("0x" + "f" * 5000, LLONG_MAX, True),
    ("0" + "7" * 5000, LLONG_MAX, True),
    ("0" * 5000 + "12", 0o12, True),   # leading zeros: octal, and not a big number
    ("0x" + "0" * 5000 + "1f", 0x1f, True),
    ("  42", 42, True),
])
def test_strtoll_saturates(text, value, whole):
    assert strtoll(text) == (value, whole)


def test_atoi_is_glibc_strtol_cast_to_int():
    assert [atoi("1"), atoi("2147483647"), atoi("2147483648"), atoi("4294967297"), atoi("9" * 5000)] == \
        [1, 2147483647, -2147483648, 1, -1]


def test_a_port_of_thousands_of_digits_is_what_nccl_reads():
    assert ib_hca_entries("=mlx5_0:" + "9" * 5000 + ",mlx5_1:1") == (False, True, [("mlx5_0", -1), ("mlx5_1", 1)])
