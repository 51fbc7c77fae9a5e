"""TOML parsing for Python 3.9-3.10 (tomli) and 3.11+ (tomllib), with one error type.

The parser recurses into nested arrays and inline tables (a deep file exhausts the stack)
and turns integers of thousands of digits into ValueError; both are input errors too.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from envcheck import safefile
from envcheck.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on old Pythons only
    import tomli as tomllib


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; any problem becomes InputError naming the file and the cause."""
    try:
        return tomllib.loads(safefile.read_bytes(path).decode("utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: malformed TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputError(f"{path}: cannot read ({why})") from None
    except RecursionError:
        raise InputError(f"{path}: malformed TOML: nested too deeply") from None
    except ValueError as exc:  # an integer too long to convert, for one
        raise InputError(f"{path}: malformed TOML: {exc}") from None
