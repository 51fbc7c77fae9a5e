"""The snapshot: frozen, JSON-serialisable facts about one machine and one interpreter.

Collectors write it once; rules only read it, through `Facts.lookup`, which turns a
missing or uncollectable fact into a reason instead of an exception, so that a rule
without its facts reports *unknown* rather than a silent pass.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Union

from envcheck import jsonsafe, safefile
from envcheck.errors import InputError

SCHEMA_VERSION = 1

# Sections whose value is a mapping of facts. Each may carry `reasons{field: why}` for
# fields that are null because they could not be collected.
KNOWN_SECTIONS = (
    "interpreter",
    "platform",
    "cpu",
    "memory",
    "packages",
    "modules",
    "environment",
    "theano",
    "gpu",
    "frameworks",
    "deep",
    "storage",
    "dataset",
    "read_throughput",
    "antivirus",
    "scripts",
    "probe",
)
# Sections only some runs collect (`--deep`, the probe).
OPTIONAL_SECTIONS = ("deep", "probe")
# Sections that are null, with their collector "ok", when no `--data DIR` was given.
DATA_SECTIONS = ("storage", "dataset", "read_throughput")
# Null, with the collector "ok", when no `--script` was given.
SCRIPT_SECTIONS = ("scripts",)


@dataclass(frozen=True)
class Missing:
    """A fact that is not in the snapshot, and why."""

    reason: str


Lookup = Union[Any, Missing]


@dataclass(frozen=True)
class Snapshot:
    """One machine's facts: `schema_version`, `tool`, `created`, `collectors`, sections."""

    data: Mapping[str, Any]

    def to_json(self) -> str:
        return json.dumps(self.data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    def as_dict(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.data))

    @classmethod
    def from_json(cls, text: str, source: str = "<snapshot>") -> Snapshot:
        try:
            data = jsonsafe.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        except ValueError as exc:
            raise InputError(f"{source}: not valid JSON ({exc})") from None
        return cls.from_dict(data, source)

    @classmethod
    def from_dict(cls, data: Any, source: str = "<snapshot>") -> Snapshot:
        if isinstance(data, dict) and isinstance(data.get("facts"), dict) and "findings" in data:
            data = data["facts"]  # a saved report: re-evaluate the facts inside it
        if not isinstance(data, dict):
            raise InputError(f"{source}: a snapshot must be a JSON object")
        version = data.get("schema_version")
        if version is None:
            raise InputError(f"{source}: no schema_version; is this an envcheck snapshot?")
        if version != SCHEMA_VERSION:
            raise InputError(
                f"{source}: snapshot schema_version {version!r} is not supported "
                f"(this envcheck reads version {SCHEMA_VERSION})"
            )
        collectors = data.get("collectors", {})
        if not isinstance(collectors, dict):
            raise InputError(f"{source}: 'collectors' must be an object")
        for name in KNOWN_SECTIONS:
            value = data.get(name)
            if value is not None and not isinstance(value, dict):
                raise InputError(f"{source}: section '{name}' must be an object or null")
        packages = data.get("packages") or {}
        if not isinstance(packages, dict):
            raise InputError(f"{source}: section 'packages' must be an object or null")
        for key, value in packages.items():
            if not isinstance(value, str):
                raise InputError(f"{source}: packages['{key}'] must be a version string")
        return cls(data)

    @classmethod
    def load(cls, path: Path) -> Snapshot:
        """Read a saved snapshot (or report) and check it against the snapshot schema.

        A value of the wrong type anywhere (devices that are not a list, a count that is a
        string) is an input error: evaluating it would give wrong answers. A field that is
        simply absent is tolerated: rules that need it report unknown.
        """
        try:
            text = safefile.read_bytes(path).decode("utf-8")
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise InputError(f"{path}: cannot read ({why})") from None
        snapshot = cls.from_json(text, str(path))
        _validate(snapshot.data, str(path))
        return snapshot


class Facts:
    """Read-only access to a snapshot by dotted path, with reasons for what is missing."""

    def __init__(self, snapshot: Snapshot | Mapping[str, Any]):
        self._data: Mapping[str, Any] = (
            snapshot.data if isinstance(snapshot, Snapshot) else snapshot
        )

    @property
    def data(self) -> Mapping[str, Any]:
        return self._data

    def section(self, name: str) -> Lookup:
        """The section's mapping, or Missing with the collector's reason."""
        value = self._data.get(name)
        if isinstance(value, dict):
            return value
        status = self._data.get("collectors", {}).get(name, {})
        if isinstance(status, dict) and status.get("reason"):
            return Missing(f"{name} facts unavailable: {status['reason']}")
        return Missing(f"snapshot has no '{name}' facts")

    def lookup(self, path: str) -> Lookup:
        """Value at `section.key[.key...]`; Missing when the section or field is unknown.

        A field that is absent from a collected section is `None` (for example a package
        that is not installed); a field that is null because it could not be collected
        is Missing, with the reason the collector recorded.
        """
        section_name, _, rest = path.partition(".")
        section = self.section(section_name)
        if isinstance(section, Missing) or not rest:
            return section
        node: Any = section
        keys = rest.split(".")
        for i, key in enumerate(keys):
            if not isinstance(node, dict):
                return Missing(f"{path}: {'.'.join([section_name, *keys[:i]])} is not an object")
            if key not in node:
                return None
            value = node[key]
            if value is None:
                reasons = node.get("reasons") if isinstance(node.get("reasons"), dict) else {}
                why = reasons.get(key) if reasons else None
                return Missing(f"{path} could not be collected: {why}") if why else None
            node = value
        return node

    def package_version(self, name: str) -> Lookup:
        """Installed version of a distribution (canonical name), None if not installed."""
        packages = self.section("packages")
        if isinstance(packages, Missing):
            return packages
        return packages.get(name)


# No machine holds more GPUs than this (the largest nodes hold 16; the schema says the
# same with maxItems). Checked before the schema: validating, then judging, 50,000
# devices takes a minute, and a snapshot that claims them is not one of a real machine.
MAX_GPU_DEVICES = 1024


def _check_sizes(data: Mapping[str, Any], source: str) -> None:
    """InputError for a list too long to be a real machine's, before any slow work."""
    gpu = data.get("gpu")
    devices = gpu.get("devices") if isinstance(gpu, Mapping) else None
    if isinstance(devices, list) and len(devices) > MAX_GPU_DEVICES:
        raise InputError(
            f"{source}: gpu.devices: {len(devices):,} GPUs, more than the "
            f"{MAX_GPU_DEVICES:,} one machine can hold"
        )


def _validate(data: Mapping[str, Any], source: str) -> None:
    """Raise InputError naming the first field that breaks the shipped snapshot schema."""
    _check_sizes(data, source)
    import jsonschema  # only when reading a file: it costs ~0.1 s to import

    from envcheck.schemas import load as load_schema

    validator = jsonschema.Draft202012Validator(load_schema("snapshot"))
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise InputError(f"{source}: {where}: {error.message}")
