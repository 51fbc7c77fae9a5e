"""cpu collector: cgroup quotas, cpufreq governors and the model, from fake /sys and /proc."""

from __future__ import annotations

import math
import os

import pytest

from envcheck.collectors import cpu
from envcheck.collectors.base import CollectContext
from envcheck.interpreter import current
from envcheck.snapshot import Facts, Missing, Snapshot


def _unrestricted_usable() -> int:
    """What `usable` is on this machine without a cgroup quota."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return min(n for n in (os.cpu_count(), affinity) if n)


def _cpu_facts(machine, environ=None) -> dict:
    return cpu.collect(machine.ctx(environ))["cpu"]


V2 = "fs/cgroup/cpu.max"
V1_QUOTA = "fs/cgroup/cpu/cpu.cfs_quota_us"
V1_PERIOD = "fs/cgroup/cpu/cpu.cfs_period_us"


@pytest.mark.parametrize(
    ("files", "quota"),
    [
        ({V2: "200000 100000\n"}, 2.0),
        ({V2: "150000 100000"}, 1.5),
        ({V2: "50000 100000"}, 0.5),
        ({V2: "max 100000\n"}, None),
        ({V2: "garbage 100000"}, None),
        ({V2: "100000 0"}, None),
        ({V1_QUOTA: "300000\n", V1_PERIOD: "100000\n"}, 3.0),
        ({V1_QUOTA: "-1\n", V1_PERIOD: "100000\n"}, None),
        ({V1_QUOTA: "100000", V1_PERIOD: "0"}, None),
        ({V1_QUOTA: "300000"}, None),
        ({}, None),
    ],
    ids=[
        "v2-two-cpus",
        "v2-fraction",
        "v2-half",
        "v2-max",
        "v2-garbage",
        "v2-zero-period",
        "v1-three-cpus",
        "v1-unlimited",
        "v1-zero-period",
        "v1-no-period",
        "no-cgroup",
    ],
)
def test_cgroup_cpu_quota(machine, files: dict, quota) -> None:
    for rel, text in files.items():
        machine.sys_file(rel, text)
    assert cpu.cgroup_cpu_quota(machine.ctx()) == quota
    facts = _cpu_facts(machine)
    assert facts["cgroup_quota_cpus"] == quota
    if quota is None:
        assert facts["usable"] == _unrestricted_usable()
    else:
        assert facts["usable"] == min(_unrestricted_usable(), max(1, math.floor(quota)))


def test_v2_wins_over_v1_files(machine) -> None:
    machine.sys_file(V2, "max 100000")
    machine.sys_file(V1_QUOTA, "100000")
    machine.sys_file(V1_PERIOD, "100000")
    assert cpu.cgroup_cpu_quota(machine.ctx()) is None


def test_quota_of_one_cpu_limits_usable_to_one(machine) -> None:
    machine.sys_file(V2, "100000 100000")
    facts = _cpu_facts(machine)
    assert facts["cgroup_quota_cpus"] == 1.0
    assert facts["usable"] == 1
    assert facts["logical"] == os.cpu_count()


def _cpufreq(machine, cpu_index: int, governor: str, driver: str) -> None:
    machine.sys_file(f"devices/system/cpu/cpu{cpu_index}/cpufreq/scaling_governor", governor)
    machine.sys_file(f"devices/system/cpu/cpu{cpu_index}/cpufreq/scaling_driver", driver)


def test_mixed_governors_report_the_most_common(machine) -> None:
    for index, governor in enumerate(["performance", "powersave", "performance", "performance"]):
        _cpufreq(machine, index, governor + "\n", "intel_pstate\n")
    # folders beside cpuN that are not CPUs, as on a real machine
    machine.sys_file("devices/system/cpu/cpufreq/boost", "1")
    machine.sys_file("devices/system/cpu/cpuidle/current_driver", "intel_idle")
    facts = _cpu_facts(machine)
    assert facts["governor"] == "performance"
    assert facts["governors"] == {"performance": 3, "powersave": 1}
    assert facts["scaling_driver"] == "intel_pstate"
    assert "governor" not in facts["reasons"]
    assert "scaling_driver" not in facts["reasons"]


def test_cpus_past_nine_are_counted(machine) -> None:
    for index in range(12):
        _cpufreq(machine, index, "schedutil" if index < 10 else "ondemand", "acpi-cpufreq")
    facts = _cpu_facts(machine)
    assert facts["governors"] == {"schedutil": 10, "ondemand": 2}
    assert facts["governor"] == "schedutil"
    assert facts["scaling_driver"] == "acpi-cpufreq"


@pytest.mark.parametrize("with_cpu_folders", [True, False], ids=["cpu-folders", "no-sys-at-all"])
def test_no_cpufreq_gives_reasons(machine, with_cpu_folders: bool) -> None:
    if with_cpu_folders:
        for index in range(4):
            machine.sys_file(f"devices/system/cpu/cpu{index}/online", "1")
    facts = _cpu_facts(machine)
    assert facts["governor"] is None
    assert facts["scaling_driver"] is None
    assert facts["governors"] == {}
    assert "cpufreq" in facts["reasons"]["governor"]
    assert "cpufreq" in facts["reasons"]["scaling_driver"]


def test_missing_governor_is_missing_with_reason_in_facts(machine) -> None:
    data = {"schema_version": 1, "collectors": {}, **cpu.collect(machine.ctx())}
    looked_up = Facts(Snapshot.from_dict(data)).lookup("cpu.governor")
    assert isinstance(looked_up, Missing)
    assert "cpufreq" in looked_up.reason


@pytest.mark.parametrize(
    ("cpuinfo", "model"),
    [
        (
            "processor\t: 0\nvendor_id\t: GenuineIntel\n"
            "model\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz\n"
            "\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz\n",
            "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz",
        ),
        (
            "processor\t: 0\nBogoMIPS\t: 108.00\n\nModel\t\t: Raspberry Pi 4 Model B\n",
            "Raspberry Pi 4 Model B",
        ),
        ("processor\t: 0\nmodel\t\t: 85\n", None),
        ("", None),
        (None, None),
    ],
    ids=["x86", "arm-model", "no-model-name", "empty", "no-cpuinfo"],
)
def test_cpu_model_from_cpuinfo(machine, cpuinfo, model) -> None:
    if cpuinfo is not None:
        machine.proc_file("cpuinfo", cpuinfo)
    assert _cpu_facts(machine)["model"] == model


def test_real_machine_does_not_crash() -> None:
    facts = cpu.collect(CollectContext(interpreter=current()))["cpu"]
    assert facts["logical"] == os.cpu_count()
    assert facts["usable"] is None or facts["usable"] >= 1
