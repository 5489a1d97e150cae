"""NCCL_IB_HCA as NCCL applies it to a device port (src/misc/utils.cc matchIfList, net_ib.cc)."""

from __future__ import annotations

import pytest

from rocetune.nccl.syntax import ib_hca_entries, ib_hca_selects


@pytest.mark.parametrize("value,device,port,selected", [
    ("mlx5", "mlx5_10", 1, True),            # a prefix
    ("mlx5_1", "mlx5_10", 1, True),          # ... so mlx5_1 selects mlx5_10 too
    ("=mlx5_1", "mlx5_10", 1, False),        # = : whole names
    ("=mlx5_1", "mlx5_1", 1, True),
    ("mlx5_0:1", "mlx5_0", 2, False),        # a port
    ("mlx5_0:1", "mlx5_0", 1, True),
    ("mlx5_0", "mlx5_0", 2, True),           # no port: any port
    ("^mlx5_0", "mlx5_0", 1, False),         # ^ : all but
    ("^mlx5_0", "mlx5_1", 1, True),
    ("^=mlx5_0:1", "mlx5_0", 2, True),
    ("", "mlx5_0", 1, True),                 # an empty list selects everything
    ("^", "mlx5_0", 1, False),               # ... and turned around, nothing
    ("mlx5_0:1:0:1,mlx5_1", "mlx5_0", 1, True),   # rail and plane after the port are skipped
])
def test_selects(value, device, port, selected):
    assert ib_hca_selects(value, device, port) is selected


def test_entries_read_ports_like_atoi():
    assert ib_hca_entries("=mlx5_0:1,mlx5_1:,mlx5_2:x,mlx5_3") == (
        False, True, [("mlx5_0", 1), ("mlx5_1", 0), ("mlx5_2", 0), ("mlx5_3", -1)])


def test_socket_ifname_prefixes_exact_names_and_exclusion():
    from rocetune.nccl.syntax import ifname_selects

    assert ifname_selects("eth", "eth0") and ifname_selects("ib,eth", "eth12")
    assert not ifname_selects("=eth", "eth0") and ifname_selects("=eth0,bond0", "bond0")
    assert not ifname_selects("^docker,lo", "docker0") and ifname_selects("^docker,lo", "bond0")
    assert ifname_selects("^=eth", "eth0")  # excludes only an interface named exactly "eth"


def test_an_empty_port_is_port_0_before_2_30_7_and_any_port_from_it():
    # v2.30.4-1 src/misc/utils.cc:212 atoi("") = 0; v2.30.7-1 :203-204 an empty field is -1 (any port)
    from rocetune.nccl.syntax import ib_hca_entries, ib_hca_selects

    assert ib_hca_entries("mlx5_0::0")[2] == [("mlx5_0", 0)]
    assert ib_hca_entries("mlx5_0::0", empty_port_any=True)[2] == [("mlx5_0", -1)]
    assert ib_hca_entries("=mlx5_0:,mlx5_1:1:0", empty_port_any=True)[2] == [("mlx5_0", -1), ("mlx5_1", 1)]
    assert not ib_hca_selects("=mlx5_0::0", "mlx5_0", 1)
    assert ib_hca_selects("=mlx5_0::0", "mlx5_0", 1, empty_port_any=True)
