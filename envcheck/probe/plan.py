"""Decide what the probe measures from the snapshot: which framework, which loader
settings (the script audit's, when it found them), which worker counts to sweep.

Flags always win over what the script audit found; what came from where is recorded in
`settings_from`, so the report can say "workers=0 (train.py:42)".
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Mapping, Optional

from envcheck.errors import UsageError
from envcheck.probe.node import node_shape, per_process_candidates
from envcheck.probe.settings import MAX_PROCESSES, ProbeSettings


def installed_frameworks(facts: Mapping[str, Any]) -> list[str]:
    frameworks = facts.get("frameworks") or {}
    return [name for name in ("torch", "tensorflow") if frameworks.get(name)]


def framework_from_scripts(facts: Mapping[str, Any]) -> Optional[str]:
    scripts = facts.get("scripts") or {}
    if scripts.get("loaders"):
        return "torch"
    if scripts.get("tf_pipelines") or scripts.get("keras_calls"):
        return "tensorflow"
    return None


def choose_framework(facts: Mapping[str, Any], requested: Optional[str]) -> tuple[str, str]:
    """(framework, why). Raises UsageError when none can be used."""
    installed = installed_frameworks(facts)
    python = (facts.get("interpreter") or {}).get("executable") or "the audited interpreter"
    if requested and requested != "auto":
        if installed and requested not in installed:
            raise UsageError(
                f"--framework {requested}: not installed in {python} (found: "
                f"{', '.join(installed) or 'none'})"
            )
        return requested, "--framework"
    from_scripts = framework_from_scripts(facts)
    if from_scripts and from_scripts in installed:
        return from_scripts, "the training script"
    if installed:
        return installed[0], f"installed in {python}"
    raise UsageError(
        f"no framework to probe with: neither torch nor tensorflow is installed in {python} "
        "(install one, or point --python at the training environment)"
    )


def _known(arg: Any) -> Any:
    if isinstance(arg, Mapping) and arg.get("known"):
        return arg.get("value")
    return None


def _where(item: Mapping[str, Any]) -> str:
    return f"{item.get('path')}:{item.get('line')}"


def loader_from_scripts(
    facts: Mapping[str, Any], framework: str, cores: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """Loader settings the script audit found, and where each came from."""
    scripts = facts.get("scripts") or {}
    found: dict[str, Any] = {}
    origin: dict[str, str] = {}
    if framework == "torch":
        for loader in scripts.get("loaders") or []:
            args = loader.get("args") or {}
            for key, name in (
                ("workers", "num_workers"),
                ("pin_memory", "pin_memory"),
                ("prefetch", "prefetch_factor"),
                ("batch_size", "batch_size"),
            ):
                if key in found:
                    continue
                if name not in args and key == "workers" and not loader.get("opaque_kwargs"):
                    found[key], origin[key] = 0, _where(loader) + " (default)"
                    continue
                value = _known(args.get(name))
                if value is not None:
                    found[key], origin[key] = value, _where(loader)
            if "workers" in found:
                break
        return found, origin
    for pipeline in scripts.get("tf_pipelines") or []:
        maps = [op for op in pipeline.get("operations") or [] if op.get("op") == "map"]
        if not maps:
            continue
        calls = maps[0].get("num_parallel_calls")
        if calls is None:
            found["workers"] = 0
        elif "AUTOTUNE" in str(calls.get("text", "")):
            found["workers"] = cores  # AUTOTUNE scales the map up to the available cores
        elif _known(calls) is not None:
            found["workers"] = int(_known(calls))
        if "workers" in found:
            origin["workers"] = f"{pipeline.get('path')}:{maps[0].get('line')}"
            found["prefetch"] = -1 if pipeline.get("ends_with_prefetch") else None
            origin["prefetch"] = _where(pipeline)
            break
    return found, origin


def plan(
    facts: Mapping[str, Any],
    base: ProbeSettings,
    framework: Optional[str],
    flags: Mapping[str, Any],
    cores: int,
    environ: Optional[Mapping[str, str]] = None,
) -> ProbeSettings:
    """The settings one probe run uses: flags > the script audit > framework defaults.

    `flags["procs_per_node"]` (--procs-per-node) overrides the processes per node learned
    from the node; the worker counts swept are then one process's share of the cores."""
    flags = dict(flags)
    requested = flags.pop("procs_per_node", None)
    if requested is not None and not 1 <= requested <= MAX_PROCESSES:
        raise UsageError(f"--procs-per-node must be between 1 and {MAX_PROCESSES}")
    shape = node_shape(facts, os.environ if environ is None else environ, cores, requested)
    chosen, why = choose_framework(facts, framework)
    found, origin = loader_from_scripts(facts, chosen, shape.cores_per_process)
    origin = {k: v for k, v in origin.items() if flags.get(k) is None}
    values = {**found, **{k: v for k, v in flags.items() if v is not None}}
    origin.update({k: "flag" for k, v in flags.items() if v is not None})
    origin["framework"] = why
    origin["processes"] = shape.source
    settings = base.with_overrides(framework=chosen, **values)
    settings = replace(
        settings,
        settings_from=origin,
        processes=shape.processes,
        processes_source=shape.source,
        node_cores=cores,
        worker_candidates=per_process_candidates(shape),
    )
    return settings.validated()
