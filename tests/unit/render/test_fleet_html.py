"""Host lists on the fleet page, written as Slurm writes node lists."""

from __future__ import annotations

import pytest

from rocetune.render.fleet_html import host_ranges


@pytest.mark.parametrize("names, text", [
    (["gpu0001", "gpu0002", "gpu0003", "gpu0007"], "gpu[0001-0003,0007]"),
    (["gpu0007"], "gpu0007"),
    (["n1", "n2", "n10", "n0"], "n[0-2,10]"),
    (["gpu12", "gpu0012"], "gpu12,gpu0012"),  # another width is another name
    (["login", "gpu<1001>", "a1b2"], "login,gpu<1001>,a1b2"),
    (["gpu0999", "gpu1000", "gpu1001"], "gpu[0999-1001]"),  # a padded series past its padding
    ([], ""),
])
def test_host_ranges(names, text):
    assert host_ranges(names) == text
