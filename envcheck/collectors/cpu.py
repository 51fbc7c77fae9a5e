"""CPU cores the training process may really use, and how their clocks are governed.

os.cpu_count() counts the machine's cores, not those a container or an affinity mask
allows; loader workers and OpenMP threads sized from it oversubscribe. So the usable
count is the smallest of the affinity mask and the cgroup CPU quota.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from typing import Any, Optional

import psutil

from envcheck.collectors.base import CollectContext, read_text


def collect(ctx: CollectContext) -> dict[str, Any]:
    reasons: dict[str, str] = {}
    logical = os.cpu_count()
    physical = _physical_count()
    if physical is None:
        reasons["physical"] = "psutil could not count physical cores on this platform"
    affinity = _affinity_count()
    if affinity is None:
        reasons["affinity"] = "sched_getaffinity is not available on this platform"
    quota = cgroup_cpu_quota(ctx)
    usable_candidates = [n for n in (logical, affinity) if n]
    if quota is not None:
        usable_candidates.append(max(1, math.floor(quota)))
    governors, drivers = _governors(ctx)
    if not governors:
        reasons["governor"] = "no cpufreq governor in /sys (a VM or a kernel without cpufreq)"
    if not drivers:
        reasons["scaling_driver"] = "no cpufreq driver in /sys (a VM or a kernel without cpufreq)"
    return {
        "cpu": {
            "logical": logical,
            "physical": physical,
            "affinity": affinity,
            "cgroup_quota_cpus": quota,
            "usable": min(usable_candidates) if usable_candidates else None,
            "governor": _most_common(governors),
            "governors": dict(Counter(governors)),
            "scaling_driver": _most_common(drivers),
            "model": _cpu_model(ctx),
            "reasons": reasons,
        }
    }


def _physical_count() -> Optional[int]:
    try:
        return psutil.cpu_count(logical=False)
    except Exception:
        return None


def _affinity_count() -> Optional[int]:
    getter = getattr(os, "sched_getaffinity", None)
    if getter is None:
        return None
    try:
        return len(getter(0))
    except OSError:
        return None


def cgroup_cpu_quota(ctx: CollectContext) -> Optional[float]:
    """CPUs allowed by the cgroup's CPU quota (v2 cpu.max, v1 cfs files), None if unlimited."""
    v2 = read_text(ctx.sys_root / "fs/cgroup/cpu.max")
    if v2:
        quota, _, period = v2.partition(" ")
        if quota != "max" and period:
            try:
                return int(quota) / int(period)
            except (ValueError, ZeroDivisionError):
                return None
        return None
    quota_us = read_text(ctx.sys_root / "fs/cgroup/cpu/cpu.cfs_quota_us")
    period_us = read_text(ctx.sys_root / "fs/cgroup/cpu/cpu.cfs_period_us")
    try:
        if quota_us and period_us and int(quota_us) > 0:
            return int(quota_us) / int(period_us)
    except (ValueError, ZeroDivisionError):
        return None
    return None


def _governors(ctx: CollectContext) -> tuple[list[str], list[str]]:
    governors, drivers = [], []
    cpu_root = ctx.sys_root / "devices/system/cpu"
    try:
        cpus = sorted(p for p in cpu_root.glob("cpu[0-9]*") if p.name[3:].isdigit())
    except OSError:
        return [], []
    for cpu in cpus:
        governor = read_text(cpu / "cpufreq/scaling_governor")
        if governor:
            governors.append(governor)
        driver = read_text(cpu / "cpufreq/scaling_driver")
        if driver:
            drivers.append(driver)
    return governors, drivers


def _cpu_model(ctx: CollectContext) -> Optional[str]:
    cpuinfo = read_text(ctx.proc_root / "cpuinfo") or ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model"):
            return value.strip()
    return None


def _most_common(values: list[str]) -> Optional[str]:
    return Counter(values).most_common(1)[0][0] if values else None
