"""Real-time antivirus and endpoint agents that may scan every file the data loader opens.

On-access scanning turns each `open()` of a training sample into a round trip through the
scanner; on a folder of a million small images that is the difference between minutes and
hours. This collector says which scanners are present, whether they scan in real time, and
whether the dataset folder (--data, "DIR") is excluded from them.

Per platform, one module: `windows` (Microsoft Defender through PowerShell), `linux`
(ClamAV on-access, commercial agents, Microsoft Defender for Endpoint's `mdatp`), `macos`
(endpoint security system extensions); `findings` is what they all fill.

Nothing here raises: a command that is missing, fails or hangs becomes a reason under the
check's name in `reasons`; a check that ran is listed in `checked`.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from typing import Any, Optional

from envcheck import subprocess_runner
from envcheck.collectors.antivirus import linux, macos, windows
from envcheck.collectors.antivirus.findings import Check, Findings, Runner
from envcheck.collectors.base import CollectContext

__all__ = ["collect"]

# platform.system() -> the checks for it
CHECKS: Mapping[str, Callable[[CollectContext, Runner, float, Findings], list[Check]]] = {
    "Windows": windows.checks,
    "Linux": linux.checks,
    "Darwin": macos.checks,
}


def collect(
    ctx: CollectContext,
    run: Optional[Runner] = None,
    system: Optional[str] = None,
    timeout: float = 10.0,
) -> dict[str, Any]:
    """{"antivirus": {products, checked, reasons}}. Never raises."""
    runner: Runner = run or subprocess_runner.run
    name = system if system is not None else platform.system()
    found = Findings()
    checks: list[Check] = []
    if name in CHECKS:
        checks = CHECKS[name](ctx, runner, timeout, found)
    else:
        found.reasons["platform"] = f"no antivirus checks for {name or 'an unknown system'}"
        found.reasons["platform"] = f"no antivirus checks for {name or 'an unknown system'}"
    for check, body in checks:
        try:
            body()
        except Exception as exc:  # a parser bug must not hide the other checks
            found.fail(check, f"{type(exc).__name__}: {exc}")
    return {
        "antivirus": {
            "products": [product.to_json() for product in found.products],
            "checked": found.checked,
            "reasons": found.reasons,
        }
    }
