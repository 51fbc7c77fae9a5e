"""Endpoint security system extensions on macOS, from `systemextensionsctl list`: an
active one can inspect every file open; its settings are kept in the vendor's console."""

from __future__ import annotations

import re
from dataclasses import dataclass

from envcheck.collectors.antivirus.findings import (
    MDE,
    NO_DATA,
    Check,
    Findings,
    Product,
    Runner,
    failure,
    run_command,
)
from envcheck.collectors.base import CollectContext

CHECK_MACOS = "macos-system-extensions"

# macOS endpoint security extensions: bundle id prefix -> product name.
MACOS_VENDORS: tuple[tuple[str, str], ...] = (
    ("com.crowdstrike.", "CrowdStrike Falcon"),
    ("com.sentinelone.", "SentinelOne"),
    ("com.microsoft.wdav", MDE),
    ("com.sophos.", "Sophos"),
    ("com.eset.", "ESET"),
    ("com.mcafee.", "Trellix/McAfee Endpoint Security"),
    ("com.trellix.", "Trellix/McAfee Endpoint Security"),
    ("com.jamf.protect", "Jamf Protect"),
    ("com.vmware.carbonblack", "VMware Carbon Black"),
    ("com.carbonblack.", "VMware Carbon Black"),
    ("com.malwarebytes.", "Malwarebytes"),
)
ES_SECTION = "com.apple.system_extension.endpoint_security"


def checks(ctx: CollectContext, runner: Runner, timeout: float, found: Findings) -> list[Check]:
    """The macOS checks: the endpoint security extensions."""
    return [(CHECK_MACOS, lambda: _macos(ctx, runner, timeout, found))]


@dataclass(frozen=True)
class SystemExtension:
    section: str
    team: str
    bundle_id: str
    version: str
    name: str
    state: str


_EXTENSION_ROW = re.compile(
    r"^[\s*]*(?P<team>\S+)\s+(?P<bundle>\S+)\s+\((?P<version>[^)]*)\)\s+"
    r"(?P<name>.*?)\s*\[(?P<state>[^\]]*)\]\s*$"
)


def parse_systemextensionsctl(text: str) -> list[SystemExtension]:
    """Rows of `systemextensionsctl list`.

    "--- <category>" headers (newer macOS append " (Go to 'System Settings ...')"), a column
    header "enabled active teamID bundleID (version) name [state]", then one line per
    extension: "*" or nothing in the enabled and active columns, tab-separated.
    """
    section = ""
    found: list[SystemExtension] = []
    for line in text.splitlines():
        if line.startswith("---"):
            section = line[3:].strip().split(" ", 1)[0]
            continue
        if line.lstrip().startswith("enabled"):
            continue
        row = _EXTENSION_ROW.match(line)
        if row is None:
            continue
        found.append(
            SystemExtension(
                section,
                row["team"],
                row["bundle"],
                row["version"],
                row["name"].strip() or row["bundle"],
                row["state"],
            )
        )
    return found


def _macos(ctx: CollectContext, runner: Runner, timeout: float, found: Findings) -> None:
    proc, why = run_command(
        runner, ["systemextensionsctl", "list"], timeout, "systemextensionsctl list"
    )
    if proc is None:
        found.fail(CHECK_MACOS, why)
        return
    if proc.returncode != 0:
        found.fail(CHECK_MACOS, failure(proc, "systemextensionsctl list"))
        return
    found.checked.append(CHECK_MACOS)
    for ext in parse_systemextensionsctl(proc.stdout):
        if ext.section != ES_SECTION or "activated enabled" not in ext.state:
            continue
        name = next(
            (product for prefix, product in MACOS_VENDORS if ext.bundle_id.startswith(prefix)),
            ext.name,
        )
        detected_by = f"system extension {ext.bundle_id} (team {ext.team})"
        same = next((p for p in found.products if p.name == name), None)
        if same is not None:  # a vendor with several endpoint security extensions
            same.notes.append(f"also {detected_by}")
            continue
        product = Product(name, detected_by)
        product.notes.append(
            f"endpoint security extension {ext.name!r} is active: it can inspect every file"
            " open; its real-time settings and exclusions are kept in the vendor's console"
        )
        if ctx.data is None:
            product.notes.append(NO_DATA)
        found.products.append(product)
