"""Constants a config module of the run sets at its top level, read through its import.

`import config as cfg` ... `DataLoader(..., num_workers=cfg.NUM_WORKERS)` with
`NUM_WORKERS = 8` in config.py audited in the same run: the count is 8, as an argparse
default of another file of the run is its default (run_options.py looks them up).
"""

from __future__ import annotations

import ast
import re

from envcheck.scripts.assignments import simple_assignments


def module_aliases(module: ast.Module) -> dict[str, str]:
    """Name -> the module it is bound to: `import config as cfg` gives cfg -> config,
    `from pkg import settings` pkg.settings (settings may be a module), `from . import
    params` params."""
    found: dict[str, str] = {}
    for node in module.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    found[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            for alias in node.names:
                if alias.name != "*":
                    found[alias.asname or alias.name] = f"{base}.{alias.name}".strip(".")
    return found


def module_constants(module: ast.Module) -> dict[str, ast.Constant]:
    """The names the module binds once, at its top level, to a number, string or bool
    (`NUM_WORKERS = 8`); a name bound twice or to anything else is left out."""
    return {
        name: value
        for name, value in simple_assignments(module.body).items()
        if isinstance(value, ast.Constant) and isinstance(value.value, (int, float, str, bool))
    }


def file_of_module(shown: str, module: str) -> bool:
    """Whether the run's file `shown` may be `module` (`pkg.config` is .../config.py, or
    in a flattened copy `repo__pkg_config.py`): its stem ends with the module's last
    name at a name boundary. A package is its `__init__` (`dataloaders` is
    dataloaders/__init__.py, flattened `repo__dataloaders___init__.py`)."""
    path = re.sub(r"[/\\_]__init__$", "", re.sub(r"\.pyw?$", "", shown))
    stem = re.split(r"[/\\]", path)[-1]
    last = module.rsplit(".", 1)[-1]
    if stem == last:
        return True
    tail = stem.rsplit("__", 1)[-1] if "__" in stem else None
    return tail is not None and (tail == last or tail.endswith(f"_{last}"))
