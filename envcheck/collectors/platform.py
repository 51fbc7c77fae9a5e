"""Operating system, the audited Python, and whether we run in a container or under WSL."""

from __future__ import annotations

import platform as _platform
from typing import Any, Optional

from envcheck.collectors.base import CollectContext, read_text


def collect(ctx: CollectContext) -> dict[str, Any]:
    uname = _platform.uname()
    osrelease = read_text(ctx.proc_root / "sys/kernel/osrelease") or uname.release
    wsl_version = _wsl_version(osrelease, ctx)
    return {
        "platform": {
            "system": uname.system,
            "release": osrelease,
            "machine": uname.machine,
            "python": ctx.interpreter.version,
            "python_implementation": ctx.interpreter.implementation,
            "container": _container(ctx),
            "wsl": wsl_version is not None,
            "wsl_version": wsl_version,
        },
        "interpreter": ctx.interpreter.to_json(),
    }


def _container(ctx: CollectContext) -> Optional[str]:
    """docker, podman or k8s when the signs are there; None on bare metal or a VM."""
    if ctx.environ.get("KUBERNETES_SERVICE_HOST"):
        return "k8s"
    if ctx.path("/run/.containerenv").exists() or ctx.environ.get("container") == "podman":
        return "podman"
    if ctx.path("/.dockerenv").exists():
        return "docker"
    cgroup = read_text(ctx.proc_root / "1/cgroup") or ""
    if "kubepods" in cgroup:
        return "k8s"
    if "docker" in cgroup or "containerd" in cgroup:
        return "docker"
    if "libpod" in cgroup:
        return "podman"
    return None


def _wsl_version(osrelease: str, ctx: CollectContext) -> Optional[int]:
    """WSL kernels say "microsoft" in their release; WSL2's say "WSL2" (or are lowercase)."""
    lowered = osrelease.lower()
    if "microsoft" not in lowered:
        return None
    if "wsl2" in lowered or ctx.environ.get("WSL_INTEROP"):
        return 2
    # WSL1 kernels report e.g. 4.4.0-19041-Microsoft (capital M); WSL2 e.g.
    # 5.15.90.1-microsoft-standard-WSL2.
    return 1 if "Microsoft" in osrelease else 2
