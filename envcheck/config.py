"""Project configuration: envcheck.toml, or [tool.envcheck] in pyproject.toml.

Looked up from the current folder upwards (the first file found wins), or given with
--config. Holds rule selection, extra rule folders, the --fail-on default and
acknowledged findings, each with the reason a person gave:

    select = ["EC1", "EC2"]
    ignore = ["EC107"]
    fail-on = "high"
    rules = ["policy/"]          # relative to the config file
    [[acknowledge]]
    id = "EC102"
    reason = "tensorflow-gpu pinned by the legacy image until Q3"
    [target]                     # the training machine `envcheck scripts` judges against
    cpus = 16
    gpus = 4
    gpu = "A100"
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from envcheck import safefile
from envcheck.engine.selection import Selection
from envcheck.errors import InputError
from envcheck.model import Severity
from envcheck.scripts.target import Target, from_table
from envcheck.tomlread import load_toml

KEYS = {"select", "ignore", "fail-on", "rules", "acknowledge", "target"}


@dataclass(frozen=True)
class Config:
    path: Optional[Path] = None
    selection: Selection = field(default_factory=Selection)
    fail_on: Optional[Severity] = None
    rule_paths: tuple[Path, ...] = ()
    acknowledged: dict[str, str] = field(default_factory=dict)
    target: Optional[Target] = None


def find(start: Path) -> Optional[Path]:
    """The first envcheck.toml, or pyproject.toml with [tool.envcheck], from `start` up.

    An envcheck.toml that is not a regular file (a folder, a FIFO, a link to a device) is
    an error, not skipped: skipping it would drop the settings it was meant to hold
    without a word, and reading it could block."""
    for folder in (start, *start.parents):
        own = folder / "envcheck.toml"
        odd = safefile.kind(own)
        if odd:
            raise InputError(
                f"{own}: not a regular file ({odd}), found as the configuration; "
                "replace it with a file or name one with --config"
            )
        if own.is_file():
            return own
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "[tool.envcheck]" in _head(pyproject):
            return pyproject
    return None


def _head(path: Path) -> str:
    """The file's text (capped: a huge or endless pyproject.toml is not a config)."""
    try:
        return safefile.read_bytes(path).decode("utf-8", errors="replace")
    except OSError:
        return ""


def load(path: Optional[Path], explicit: bool = False) -> Config:
    if path is None:
        return Config()
    if explicit and not path.is_file():
        odd = safefile.kind(path)
        what = f"not a regular file ({odd})" if odd else "no such file"
        raise InputError(f"--config {path}: {what}")
    data = load_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        data = tool.get("envcheck", {}) if isinstance(tool, dict) else {}
        if not isinstance(data, dict):
            raise InputError(f"{path}: [tool.envcheck] must be a table")
    return _parse(data, path)


def _parse(data: dict[str, Any], path: Path) -> Config:
    extra = sorted(set(data) - KEYS)
    if extra:
        raise InputError(f"{path}: unknown envcheck setting(s) {', '.join(extra)}")
    select = _strings(data, "select", path)
    ignore = _strings(data, "ignore", path)
    fail_on = None
    if "fail-on" in data:
        try:
            fail_on = Severity.parse(str(data["fail-on"]))
        except ValueError as exc:
            raise InputError(f"{path}: fail-on: {exc}") from None
    rule_paths = tuple(path.parent / p for p in _strings(data, "rules", path))
    acknowledged = {}
    entries = data.get("acknowledge", [])
    if not isinstance(entries, list):
        raise InputError(f"{path}: 'acknowledge' must be an array of tables ([[acknowledge]])")
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) != {"id", "reason"}:
            raise InputError(f"{path}: each [[acknowledge]] needs exactly an id and a reason")
        if not isinstance(entry["id"], str) or not isinstance(entry["reason"], str):
            raise InputError(f"{path}: [[acknowledge]] id and reason must be strings")
        if not entry["reason"].strip():
            raise InputError(f"{path}: acknowledge {entry['id']}: the reason must not be empty")
        acknowledged[str(entry["id"]).upper()] = str(entry["reason"]).strip()
    target = from_table(data["target"], str(path)) if "target" in data else None
    return Config(path, Selection.of(select, ignore), fail_on, rule_paths, acknowledged, target)


def _strings(data: dict[str, Any], key: str, path: Path) -> list[str]:
    value = data.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{path}: '{key}' must be a list of strings")
    return value
