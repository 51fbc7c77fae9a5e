"""memory collector: /dev/shm size from statvfs under a fake root, and the cgroup limit."""

from __future__ import annotations

import pytest

from envcheck.collectors import memory


def _memory(machine) -> dict:
    return memory.collect(machine.ctx())["memory"]


def test_shm_bytes_from_statvfs(machine) -> None:
    (machine.root / "dev" / "shm").mkdir(parents=True)
    facts = _memory(machine)
    assert isinstance(facts["shm_bytes"], int)
    assert facts["shm_bytes"] > 0
    assert "shm_bytes" not in facts["reasons"]


def test_missing_shm_is_none_with_reason(machine) -> None:
    facts = _memory(machine)
    assert facts["shm_bytes"] is None
    assert str(machine.root / "dev" / "shm") in facts["reasons"]["shm_bytes"]


def test_total_and_available_are_ints(machine) -> None:
    facts = _memory(machine)
    assert isinstance(facts["total_bytes"], int)
    assert isinstance(facts["available_bytes"], int)
    assert 0 < facts["available_bytes"] <= facts["total_bytes"]


V2 = "fs/cgroup/memory.max"
V1 = "fs/cgroup/memory/memory.limit_in_bytes"


@pytest.mark.parametrize(
    ("files", "limit"),
    [
        ({V2: "8589934592\n"}, 8589934592),
        ({V2: "max\n"}, None),
        ({V1: "4294967296\n"}, 4294967296),
        ({V1: "9223372036854771712\n"}, None),  # cgroup v1 "unlimited"
        ({V2: ""}, None),
        ({}, None),
    ],
    ids=["v2-number", "v2-max", "v1-number", "v1-unlimited", "v2-empty", "no-cgroup"],
)
def test_cgroup_limit(machine, files: dict, limit) -> None:
    for rel, text in files.items():
        machine.sys_file(rel, text)
    assert _memory(machine)["cgroup_limit_bytes"] == limit
