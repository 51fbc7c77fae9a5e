"""TOML parsing for Python 3.9-3.10 (tomli) and 3.11+ (tomllib), with one error type."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from envcheck.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on old Pythons only
    import tomli as tomllib


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; any problem becomes InputError naming the file and the cause."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: malformed TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
