"""Memory: total and available RAM, the cgroup limit, and the size of /dev/shm.

PyTorch's DataLoader workers hand batches over through /dev/shm; Docker gives a
container 64 MB of it unless told otherwise (pytorch/pytorch#5040).
"""

from __future__ import annotations

import os
from typing import Any, Optional

import psutil

from envcheck.collectors.base import CollectContext, read_text


def collect(ctx: CollectContext) -> dict[str, Any]:
    reasons: dict[str, str] = {}
    vm = psutil.virtual_memory()
    shm_bytes = _shm_bytes(ctx, reasons)
    return {
        "memory": {
            "total_bytes": int(vm.total),
            "available_bytes": int(vm.available),
            "cgroup_limit_bytes": _cgroup_limit(ctx),
            "shm_bytes": shm_bytes,
            "reasons": reasons,
        }
    }


def _shm_bytes(ctx: CollectContext, reasons: dict[str, str]) -> Optional[int]:
    shm = ctx.path("/dev/shm")
    try:
        stat = os.statvfs(shm)
    except AttributeError:
        reasons["shm_bytes"] = "no /dev/shm on this platform"
        return None
    except OSError as exc:
        reasons["shm_bytes"] = f"cannot stat {shm}: {exc.strerror or exc}"
        return None
    return int(stat.f_blocks * stat.f_frsize)


def _cgroup_limit(ctx: CollectContext) -> Optional[int]:
    for rel in ("fs/cgroup/memory.max", "fs/cgroup/memory/memory.limit_in_bytes"):
        text = read_text(ctx.sys_root / rel)
        if text and text.isdigit():
            value = int(text)
            return value if value < 2**60 else None  # v1 "unlimited" is a huge number
    return None
