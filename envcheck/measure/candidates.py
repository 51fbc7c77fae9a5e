"""The changes `envcheck fix` can make by injection, without editing the script, chosen
from the unchanged run's live loader settings and this machine's usable cores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

# DataLoader's prefetch_factor default with workers (torch.utils.data.DataLoader docs).
DEFAULT_PREFETCH = 2
TRIED_PREFETCH = 4
MAX_WORKER_VALUES = 3


@dataclass(frozen=True)
class Candidate:
    """One change: its name in reports ("num_workers=4"), the setting, and what the hook
    is told to inject (ENVCHECK_MEASURE's `overrides`)."""

    change: str
    knob: str
    value: Any
    overrides: dict[str, Any] = field(default_factory=dict)


def worker_values(current: int, cores: int) -> list[int]:
    """A small sweep above the current count within the usable cores: 2, 4, ... and the
    core count itself, at most MAX_WORKER_VALUES of them (the largest kept)."""
    values = {cores}
    n = 2
    while n < cores:
        values.add(n)
        n *= 2
    above = sorted(v for v in values if v > current)
    if len(above) > MAX_WORKER_VALUES:
        above = [*above[: MAX_WORKER_VALUES - 1], above[-1]]
    return above


def torch_candidates(
    loader: Mapping[str, Any], device: Optional[str], cores: int
) -> list[Candidate]:
    site = loader.get("site")
    workers = int(loader.get("num_workers") or 0)

    def loader_change(knob: str, value: Any) -> Candidate:
        return Candidate(f"{knob}={value}", knob, value, {"loader": {knob: value}, "site": site})

    found = [loader_change("num_workers", n) for n in worker_values(workers, cores)]
    if workers > 0 and not loader.get("persistent_workers"):
        found.append(loader_change("persistent_workers", True))
    if workers > 0 and (loader.get("prefetch_factor") or DEFAULT_PREFETCH) < TRIED_PREFETCH:
        found.append(loader_change("prefetch_factor", TRIED_PREFETCH))
    if device == "cuda":
        if not loader.get("pin_memory"):
            found.append(loader_change("pin_memory", True))
        found.append(
            Candidate(
                "torch.backends.cudnn.benchmark=True",
                "cudnn_benchmark",
                True,
                {"cudnn_benchmark": True},
            )
        )
    return found


def tf_candidates(loader: Mapping[str, Any], cores: int) -> list[Candidate]:
    found = []
    chain = [str(op) for op in loader.get("chain") or []]
    if "Map" in chain:
        found.append(
            Candidate(
                "map(num_parallel_calls=tf.data.AUTOTUNE)",
                "tf_data",
                "parallel_map",
                {"tf_data": {"parallel_map": True}},
            )
        )
    if chain and chain[-1] != "Prefetch":
        found.append(
            Candidate(
                "prefetch(tf.data.AUTOTUNE)",
                "tf_prefetch",
                "prefetch",
                {"tf_data": {"prefetch": True}},
            )
        )
    workers = loader.get("workers")
    if workers is not None and int(workers) < cores:
        found.append(
            Candidate(f"workers={cores}", "keras_workers", cores, {"keras": {"workers": cores}})
        )
    return found


def propose(run: Mapping[str, Any], cores: int, only: Sequence[str] = ()) -> list[Candidate]:
    """The candidates for this run; `only` keeps those named ("num_workers=2")."""
    loader = run.get("loader") or {}
    framework = loader.get("framework") or run.get("framework")
    if framework == "torch":
        found = torch_candidates(loader, run.get("device"), cores)
    elif framework in ("tensorflow", "keras"):
        found = tf_candidates(loader, cores)
    else:
        found = []
    if only:
        wanted = {o.replace(" ", "") for o in only}
        named = [c for c in found if c.change.replace(" ", "") in wanted]
        for text in sorted(wanted - {c.change for c in named}):
            parsed = parse(text, loader)
            if parsed is not None:
                named.append(parsed)
        return named
    return found


def parse(text: str, loader: Mapping[str, Any]) -> Optional[Candidate]:
    """A DataLoader change named on the command line (`--try num_workers=3`)."""
    knob, _, raw = text.partition("=")
    if knob not in ("num_workers", "prefetch_factor", "pin_memory", "persistent_workers"):
        return None
    value: Any = raw.strip()
    if value in ("True", "true", "False", "false"):
        value = value.lower() == "true"
    else:
        try:
            value = int(value)
        except ValueError:
            return None
    return Candidate(
        f"{knob}={value}", knob, value, {"loader": {knob: value}, "site": loader.get("site")}
    )
