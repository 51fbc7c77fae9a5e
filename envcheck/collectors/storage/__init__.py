"""What kind of storage the dataset (`--data DIR`) sits on: HDD, SSD, NVMe, USB, a network
or FUSE file system, tmpfs, an overlay, or a Windows drive seen from WSL.

One module per platform (`linux`, `windows`, `macos`), each answering the same section
(`facts`); `mounts` reads the mount tables, `bounded` keeps a hung file system or command
from hanging the doctor.

- `--data` naming a file rather than a folder is not an error: the storage reported is
  the file's mount (the same answer the file's folder would give), with a note saying so.
- A path that does not exist or cannot be stat-ed gives kind "unknown" with the reason,
  and everything else null.
"""

from __future__ import annotations

import platform
from typing import Any, Optional

from envcheck import subprocess_runner
from envcheck.collectors.base import CollectContext
from envcheck.collectors.storage import linux, macos, windows
from envcheck.collectors.storage.bounded import Runner
from envcheck.collectors.storage.facts import KINDS, blank_facts, mark_unknown

__all__ = ["KINDS", "collect"]


def collect(
    ctx: CollectContext,
    run: Optional[Runner] = None,
    system: Optional[str] = None,
    timeout: float = 5.0,
) -> dict[str, Any]:
    """{"storage": facts} for ctx.data, {"storage": None} without --data. Never raises."""
    if ctx.data is None:
        return {"storage": None}
    runner: Runner = run or subprocess_runner.run
    system = system or platform.system()
    try:
        if system == "Windows":
            facts = windows.probe(ctx.data, runner, timeout)
        elif system == "Darwin":
            facts = macos.probe(ctx, runner, timeout)
        elif system == "Linux":
            facts = linux.probe(ctx, timeout)
        else:
            facts = blank_facts(str(ctx.data), None)
            facts["reasons"]["method"] = f"no storage probe for {system or 'this system'}"
            mark_unknown(facts, f"no storage probe for {system or 'this system'}")
    except Exception as exc:  # a bug here must not lose the section, nor the doctor
        facts = blank_facts(str(ctx.data), None)
        mark_unknown(facts, f"storage probe failed: {type(exc).__name__}: {exc}")
    return {"storage": facts}
