"""Build a Snapshot by running every collector once, in order, each guarded."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Optional, Sequence

from envcheck import __version__
from envcheck.collectors import (
    antivirus,
    cpu,
    dataset,
    environment,
    frameworks,
    gpu,
    memory,
    packages,
    platform,
    scripts,
    storage,
    theano,
)
from envcheck.collectors.base import CollectContext, Collector, run_collector
from envcheck.snapshot import SCHEMA_VERSION, Snapshot

# (collector name, the sections it fills, the function)
COLLECTORS: Sequence[tuple[str, tuple[str, ...], Collector]] = (
    ("platform", ("platform", "interpreter"), platform.collect),
    ("cpu", ("cpu",), cpu.collect),
    ("memory", ("memory",), memory.collect),
    ("packages", ("packages", "modules"), packages.collect),
    ("environment", ("environment",), environment.collect),
    ("theano", ("theano",), theano.collect),
    ("gpu", ("gpu",), gpu.collect),
    ("frameworks", ("frameworks",), frameworks.collect),
    ("storage", ("storage",), storage.collect),
    ("dataset", ("dataset", "read_throughput"), dataset.collect),
    ("antivirus", ("antivirus",), antivirus.collect),
    ("scripts", ("scripts",), scripts.collect),
)


def collect_snapshot(ctx: CollectContext, only: Optional[Sequence[str]] = None) -> Snapshot:
    """Every collector, or only those named in `only` (the others' sections are absent,
    which the rules read as unknown)."""
    unknown = sorted(set(only or ()) - {name for name, _, _ in COLLECTORS})
    if unknown:
        raise ValueError(f"no collector named {', '.join(unknown)}")
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "envcheck", "version": __version__},
        "created": now_iso(),
        "collectors": {},
    }
    for name, sections, collector in COLLECTORS:
        if only is not None and name not in only:
            continue
        outcome = run_collector(name, collector, ctx)
        for section in sections:
            data["collectors"][section] = outcome.status_json()
            data[section] = outcome.sections.get(section)
    return Snapshot(data)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
