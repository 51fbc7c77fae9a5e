"""`envcheck diff A B`: what differs between two saved snapshots or reports.

Two inputs from different machines or days (a snapshot from `envcheck collect -o`, or a
JSON report from `envcheck doctor --format json`) become one structured diff: the
differences that matter for training speed first (GPU driver, GPUs, framework builds,
storage of the data path, CPU, memory, probe rates, findings added / removed / changed),
then the rest (packages, environment variables, platform).

A report's findings are taken as recorded; a bare snapshot is evaluated with the built-in
rules (`service.diagnose`), so a snapshot and a report compare alike. Findings match by
rule id and location. `load_side` reads a file; everything else here is pure.

Rendering (text, and the JSON form that is a public contract:
envcheck/schemas/diff.schema.json) is envcheck/report/diff.py's, beside the other reporters.

Size: one small comparison function per area (driver, GPUs, frameworks, storage, CPU,
memory, probe, packages, environment, platform) and the input readers; they share the
Change type and its ordering, so they stay together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from envcheck import jsonsafe
from envcheck.errors import InputError
from envcheck.model import Severity
from envcheck.snapshot import Snapshot

SCHEMA_VERSION = 1
SPEED_AREAS = ("driver", "gpu", "frameworks", "storage", "cpu", "memory", "probe")
OTHER_AREAS = ("packages", "environment", "platform")
AREA_TITLES = {
    "driver": "GPU driver",
    "gpu": "GPUs",
    "frameworks": "Framework builds",
    "storage": "Data storage",
    "cpu": "CPU",
    "memory": "Memory",
    "probe": "Probe",
    "packages": "Packages",
    "environment": "Environment variables",
    "platform": "Platform",
}


Scalar = Any  # str | int | float | bool | None: what a change records on each side


# inputs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FindingRef:
    """A finding as the diff sees it: enough to match, rank and print it."""

    id: str
    name: str
    severity: Severity
    message: str
    location: Optional[str]  # "path:line" / "path", or None
    acknowledged: bool = False

    @property
    def key(self) -> tuple[str, Optional[str]]:
        return (self.id, self.location)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "location": self.location,
            "acknowledged": self.acknowledged,
        }


@dataclass(frozen=True)
class Side:
    """One loaded input: its facts and its findings, and where they came from."""

    source: str
    kind: str  # "snapshot" | "report"
    facts: Mapping[str, Any]
    findings: tuple[FindingRef, ...]
    findings_from: str  # "report" (as recorded) | "evaluated" (rules run on the snapshot)

    def header_json(self) -> dict[str, Any]:
        tool = self.facts.get("tool")
        return {
            "source": self.source,
            "kind": self.kind,
            "findings_from": self.findings_from,
            "created": _str_or_none(self.facts.get("created")),
            "tool_version": _str_or_none(tool.get("version")) if isinstance(tool, dict) else None,
        }


def load_side(path: Path, evaluate: Callable[[Snapshot], Sequence[Any]]) -> Side:
    """Read and validate a snapshot or report file (InputError on anything malformed).

    `evaluate` turns a bare snapshot into its findings (the CLI passes the doctor's
    pipeline with the built-in rules); a report's recorded findings are used as they are.
    """
    snapshot = Snapshot.load(path)  # validates the facts of either kind of input
    raw = jsonsafe.loads(path.read_text(encoding="utf-8"))  # Snapshot.load checked it
    if _is_report(raw):
        return side_from_report(raw, str(path))
    return side_from_snapshot(snapshot, evaluate(snapshot), str(path))


def _is_report(raw: Any) -> bool:
    return isinstance(raw, dict) and isinstance(raw.get("facts"), dict) and "findings" in raw


def side_from_report(raw: Mapping[str, Any], source: str) -> Side:
    """A saved JSON report: its facts (probe included) and its findings as recorded."""
    _validate_findings(raw.get("findings"), source)
    facts = dict(raw["facts"])
    if facts.get("probe") is None and isinstance(raw.get("probe"), dict):
        facts["probe"] = raw["probe"]
    findings = tuple(
        FindingRef(
            id=f["id"],
            name=f["name"],
            severity=Severity(f["severity"]),
            message=f["message"],
            location=_location_text(f.get("location")),
            acknowledged=bool(f.get("acknowledged")),
        )
        for f in raw["findings"]
    )
    return Side(source, "report", facts, findings, "report")


def side_from_snapshot(snapshot: Snapshot, findings: Sequence[Any], source: str) -> Side:
    """A bare snapshot with the findings the rules gave on it (model.Finding objects)."""
    refs = tuple(
        FindingRef(
            id=f.id,
            name=f.name,
            severity=f.severity,
            message=f.message,
            location=_location_text(f.location.to_json() if f.location else None),
            acknowledged=f.acknowledged is not None,
        )
        for f in findings
    )
    return Side(source, "snapshot", snapshot.data, refs, "evaluated")


def _validate_findings(findings: Any, source: str) -> None:
    import jsonschema

    from envcheck.schemas import load as load_schema

    report = load_schema("report")
    schema = {
        "$schema": report.get("$schema"),
        "$defs": report["$defs"],
        "type": "array",
        "items": {"$ref": "#/$defs/finding"},
    }
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(findings))
    if error is not None:
        where = ".".join(["findings", *(str(p) for p in error.absolute_path)])
        raise InputError(f"{source}: {where}: {error.message}")


def _location_text(location: Any) -> Optional[str]:
    if not isinstance(location, dict) or not location.get("path"):
        return None
    text = str(location["path"])
    if location.get("line"):
        text += f":{location['line']}"
    return text


def _str_or_none(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


# the diff -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One fact that differs: its area, a stable key, a label, both values."""

    area: str
    key: str
    label: str
    a: Scalar
    b: Scalar
    unit: Optional[str] = None  # "bytes" | "share" | "samples/s" | None
    ratio: Optional[float] = None  # b / a, for measured rates

    @property
    def speed(self) -> bool:
        return self.area in SPEED_AREAS

    def to_json(self) -> dict[str, Any]:
        return {
            "area": self.area,
            "speed": self.speed,
            "key": self.key,
            "label": self.label,
            "a": self.a,
            "b": self.b,
            "unit": self.unit,
            "ratio": self.ratio,
        }


@dataclass(frozen=True)
class SeverityChange:
    a: FindingRef
    b: FindingRef


@dataclass(frozen=True)
class FindingsDiff:
    added: tuple[FindingRef, ...]  # in B, not in A
    removed: tuple[FindingRef, ...]  # in A, not in B
    changed: tuple[SeverityChange, ...]  # in both, with another severity


@dataclass(frozen=True)
class Diff:
    a: Side
    b: Side
    changes: tuple[Change, ...]  # speed-relevant areas first, in SPEED_AREAS order
    findings: FindingsDiff

    @property
    def speed_changes(self) -> list[Change]:
        return [c for c in self.changes if c.speed]

    @property
    def other_changes(self) -> list[Change]:
        return [c for c in self.changes if not c.speed]

    def new_failures(self, fail_on: Severity) -> list[FindingRef]:
        """B's unacknowledged findings at or above fail_on that A did not have at or above
        it (matched by rule id and location): new ones, and ones whose severity rose."""
        new = [f for f in self.findings.added if f.severity >= fail_on]
        new += [c.b for c in self.findings.changed if c.b.severity >= fail_on > c.a.severity]
        return [f for f in new if not f.acknowledged]

    @property
    def empty(self) -> bool:
        f = self.findings
        return not (self.changes or f.added or f.removed or f.changed)


def compare(a: Side, b: Side) -> Diff:
    """The differences between two loaded inputs, speed-relevant ones first."""
    changes: list[Change] = []
    for area in (*SPEED_AREAS, *OTHER_AREAS):
        changes.extend(_AREA_DIFFS[area](a.facts, b.facts))
    return Diff(a, b, tuple(changes), diff_findings(a.findings, b.findings))


def diff_findings(a: Iterable[FindingRef], b: Iterable[FindingRef]) -> FindingsDiff:
    """Match findings by (rule id, location); several with one key pair up by identical
    message first, then in order."""
    left = list(a)
    right = list(b)
    pairs: list[tuple[FindingRef, FindingRef]] = []
    for same_message in (True, False):
        for fa in list(left):
            for fb in right:
                if fa.key == fb.key and (not same_message or fa.message == fb.message):
                    pairs.append((fa, fb))
                    left.remove(fa)
                    right.remove(fb)
                    break
    changed = tuple(SeverityChange(fa, fb) for fa, fb in pairs if fa.severity != fb.severity)
    return FindingsDiff(
        added=tuple(sorted(right, key=_finding_order)),
        removed=tuple(sorted(left, key=_finding_order)),
        changed=tuple(sorted(changed, key=lambda c: _finding_order(c.b))),
    )


def _finding_order(f: FindingRef) -> tuple[int, str, str]:
    return (-f.severity.rank, f.id, f.location or "")


# per area -----------------------------------------------------------------------------


def _get(facts: Mapping[str, Any], path: str) -> Any:
    node: Any = facts
    for key in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _scalar(value: Any) -> Scalar:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.dumps(value, sort_keys=True)


def _fields(
    area: str,
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    fields: Sequence[tuple[str, str, Optional[str]]],
    ratio: bool = False,
) -> list[Change]:
    out = []
    for path, label, unit in fields:
        va, vb = _scalar(_get(a, path)), _scalar(_get(b, path))
        if va != vb:
            out.append(Change(area, path, label, va, vb, unit, _ratio(va, vb) if ratio else None))
    return out


def _ratio(a: Any, b: Any) -> Optional[float]:
    if isinstance(a, bool) or isinstance(b, bool):
        return None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > 0:
        return round(b / a, 3)
    return None


def _driver(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    return _fields(
        "driver",
        a,
        b,
        [
            ("gpu.status", "NVML", None),
            ("gpu.driver_version", "driver version", None),
            ("gpu.cuda_driver_version", "CUDA driver version", None),
        ],
    )


def _devices(facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    devices = _get(facts, "gpu.devices")
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _models(devices: Sequence[Mapping[str, Any]]) -> Optional[str]:
    if not devices:
        return None
    counts: dict[str, int] = {}
    for d in devices:
        name = str(d.get("name") or "unknown")
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{n}x {name}" for name, n in counts.items())


def _pcie_max(device: Mapping[str, Any]) -> Optional[str]:
    pcie = device.get("pcie")
    if not isinstance(pcie, dict) or pcie.get("max_gen") is None:
        return None
    return f"Gen{pcie.get('max_gen')} x{pcie.get('max_width')}"


def _pcie_width(device: Mapping[str, Any]) -> Optional[str]:
    pcie = device.get("pcie")
    if not isinstance(pcie, dict) or pcie.get("width") is None:
        return None
    return f"x{pcie.get('width')}"


def _mig(device: Mapping[str, Any]) -> Optional[str]:
    mig = device.get("mig_mode")
    if not isinstance(mig, dict):
        return None
    return "on" if mig.get("current") else "off"


def _gpus(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    da, db = _devices(a), _devices(b)
    out = _fields("gpu", a, b, [("gpu.pci_nvidia_devices", "NVIDIA devices on the PCI bus", None)])
    if len(da) != len(db):
        out.append(Change("gpu", "gpu.count", "GPUs visible to NVML", len(da), len(db)))
    if _models(da) != _models(db):
        out.append(Change("gpu", "gpu.models", "models", _models(da), _models(db)))
    per_gpu: list[tuple[str, str, Callable[[Mapping[str, Any]], Any], Optional[str]]] = [
        ("name", "model", lambda d: d.get("name"), None),
        ("compute_capability", "compute capability", lambda d: d.get("compute_capability"), None),
        ("memory_total_bytes", "memory", lambda d: d.get("memory_total_bytes"), "bytes"),
        ("pcie.max", "PCIe link (max)", _pcie_max, None),
        ("pcie.width", "PCIe width (current)", _pcie_width, None),
        ("mig_mode", "MIG mode", _mig, None),
        ("persistence_mode", "persistence mode", lambda d: d.get("persistence_mode"), None),
    ]
    common = min(len(da), len(db))  # beyond it, the count and models lines say it
    for key, label, read, unit in per_gpu:
        pairs = [(_scalar(read(da[i])), _scalar(read(db[i]))) for i in range(common)]
        if common > 1 and len(set(pairs)) == 1 and pairs[0][0] != pairs[0][1]:
            va, vb = pairs[0]  # the same change on every GPU: one line
            every = "every GPU" if len(da) == len(db) else f"GPUs 0-{common - 1}"
            out.append(Change("gpu", f"gpu.*.{key}", f"{every}: {label}", va, vb, unit))
            continue
        for index, (va, vb) in enumerate(pairs):
            if va != vb:
                label_i = f"GPU {index} {label}"
                out.append(Change("gpu", f"gpu.{index}.{key}", label_i, va, vb, unit))
    return out


def _frameworks(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    return _fields(
        "frameworks",
        a,
        b,
        [
            ("frameworks.torch.version", "torch", None),
            ("frameworks.torch.cuda", "torch CUDA", None),
            ("frameworks.torch.cudnn_version", "torch cuDNN", None),
            ("frameworks.torch.hip", "torch HIP", None),
            ("frameworks.torch.cpu_only", "torch CPU-only build", None),
            ("frameworks.tensorflow.distribution", "tensorflow distribution", None),
            ("frameworks.tensorflow.version", "tensorflow", None),
            ("frameworks.tensorflow.is_cuda_build", "tensorflow CUDA build", None),
            ("frameworks.tensorflow.cuda_version", "tensorflow CUDA", None),
            ("frameworks.tensorflow.cudnn_version", "tensorflow cuDNN", None),
            ("frameworks.jax.version", "jax", None),
            ("frameworks.jax.jaxlib_version", "jaxlib", None),
        ],
    )


def _storage(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    return _fields(
        "storage",
        a,
        b,
        [
            ("storage.path", "data path", None),
            ("storage.kind", "storage kind", None),
            ("storage.fs_type", "file system", None),
            ("read_throughput.cold.files_per_s", "cold read files/s", "files/s"),
            ("read_throughput.cold.bytes_per_s", "cold read bytes/s", "bytes/s"),
        ],
        ratio=True,
    )


def _cpu(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    return _fields(
        "cpu",
        a,
        b,
        [
            ("cpu.usable", "usable CPUs", None),
            ("cpu.logical", "logical CPUs", None),
            ("cpu.physical", "physical cores", None),
            ("cpu.cgroup_quota_cpus", "cgroup CPU quota", None),
            ("cpu.governor", "governor", None),
            ("cpu.model", "model", None),
        ],
    )


def _memory(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    return _fields(
        "memory",
        a,
        b,
        [
            ("memory.total_bytes", "total", "bytes"),
            ("memory.cgroup_limit_bytes", "cgroup limit", "bytes"),
            ("memory.shm_bytes", "/dev/shm", "bytes"),
        ],
    )


def _probe(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    if not isinstance(a.get("probe"), dict) and not isinstance(b.get("probe"), dict):
        return []
    setup = _fields(
        "probe",
        a,
        b,
        [
            ("probe.status", "status", None),
            ("probe.device", "device", None),
            ("probe.framework", "framework", None),
            ("probe.model", "model", None),
            ("probe.batch_size", "batch size", None),
            ("probe.image_size", "image size", None),
        ],
    )
    rates = _fields(
        "probe",
        a,
        b,
        [
            ("probe.rates.compute", "compute ceiling", "samples/s"),
            ("probe.rates.input", "input pipeline", "samples/s"),
            ("probe.rates.end_to_end", "end to end", "samples/s"),
            ("probe.input_share", "input share of step time", "share"),
            ("probe.verdict", "verdict", None),
            ("probe.workers.used", "loader workers used", None),
            ("probe.workers.recommended", "recommended workers", None),
            ("probe.workers.recommended_rate", "rate at recommended workers", "samples/s"),
        ],
        ratio=True,
    )
    for i, change in enumerate(rates):
        if change.unit != "samples/s":  # a ratio only for rates
            rates[i] = Change(
                change.area, change.key, change.label, change.a, change.b, change.unit
            )
    both = isinstance(a.get("probe"), dict) and isinstance(b.get("probe"), dict)
    return rates + setup if both else rates  # the setup matters when both were measured


def _mapping_diff(area: str, a: Any, b: Any, label: str) -> list[Change]:
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    out = []
    for key in sorted(set(a) | set(b)):
        if key == "reasons":
            continue
        va, vb = _scalar(a.get(key)), _scalar(b.get(key))
        if va != vb:
            out.append(Change(area, f"{label}.{key}", key, va, vb))
    return out


def _packages(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    return _mapping_diff("packages", a.get("packages"), b.get("packages"), "packages")


def _environment(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    return _mapping_diff("environment", a.get("environment"), b.get("environment"), "environment")


def _platform(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    return _fields(
        "platform",
        a,
        b,
        [
            ("platform.system", "system", None),
            ("platform.release", "kernel release", None),
            ("platform.machine", "machine", None),
            ("platform.python", "Python", None),
            ("platform.python_implementation", "Python implementation", None),
            ("platform.container", "container", None),
            ("platform.wsl", "WSL", None),
            ("platform.wsl_version", "WSL version", None),
            ("interpreter.executable", "interpreter", None),
        ],
    )


_AREA_DIFFS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[Change]]] = {
    "driver": _driver,
    "gpu": _gpus,
    "frameworks": _frameworks,
    "storage": _storage,
    "cpu": _cpu,
    "memory": _memory,
    "probe": _probe,
    "packages": _packages,
    "environment": _environment,
    "platform": _platform,
}
