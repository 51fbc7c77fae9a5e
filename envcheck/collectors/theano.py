"""Theano's configuration (THEANO_FLAGS and .theanorc), read as text, never imported.

Theano's old GPU backend prints "CNMeM is disabled" when `[lib] cnmem` is unset and then
allocates GPU memory call by call; the advice depends on which backend is configured.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path
from typing import Any, Optional

from envcheck.collectors.base import CollectContext

_KEYS = ("device", "floatX", "lib.cnmem", "gpuarray.preallocate", "dnn.enabled")


def collect(ctx: CollectContext) -> dict[str, Any]:
    files = _config_files(ctx)
    settings: dict[str, str] = {}
    read: list[str] = []
    for path in files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            if parser.read(path, encoding="utf-8"):
                read.append(str(path))
        except (configparser.Error, UnicodeDecodeError):  # malformed or not UTF-8
            continue
        for key in _KEYS:
            section, _, option = key.rpartition(".")
            value = parser.get(section or "global", option, fallback=None)
            if value is not None:
                settings[key] = value.strip()
    flags = ctx.environ.get("THEANO_FLAGS", "")
    for item in flags.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip() in _KEYS:
            settings[key.strip()] = value.strip()
    return {"theano": {"config_files": read, "flags": dict(sorted(settings.items()))}}


def _config_files(ctx: CollectContext) -> list[Path]:
    configured: Optional[str] = ctx.environ.get("THEANORC")
    if configured:
        return [Path(p).expanduser() for p in configured.split(os.pathsep) if p]
    return [ctx.home / ".theanorc", ctx.home / ".theanorc.txt"]
