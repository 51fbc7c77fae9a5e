"""Settings the shipped configs of a LightningCLI give the classes it is handed and the
Trainer it builds.

ClimaX's global_forecast/train.py builds `LightningCLI(model_class=GlobalForecastModule,
datamodule_class=GlobalForecastDataModule, ...)`: the run's settings come from the YAML
file named on its command line (`--config configs/global_forecast_climax.yaml`), whose
`data:` section gives the data module's `__init__` its arguments (`num_workers: 1`),
`model:` the model's, and `trainer:` the Trainer's (`precision: 16`). The signature's
default (`num_workers: int = 0`) is only what a config leaving the key out gets.

The config is chosen at run time: its candidates are the YAML files of the project's one
config folder beside the entry point or at its root (config_files.chosen_load: at most
MAX_CANDIDATES, never outside the project), those of them that are LightningCLI configs
(a mapping with a `trainer`, `model` or `data` section). A candidate setting the key
gives its value, one leaving it out the signature's default (for a Trainer setting: no
value, the Trainer's own defaults then decide, read as before). A value is used only
when every candidate gives the same plain value (the files named); when they disagree,
one gives an interpolation (`${...}`, `???`) or names another class in its section's
`class_path`, it is unknown; when none sets it, the source decides as without configs.

A class is handed to a LightningCLI (cli_classes) as its first or second argument or as
`model_class=` / `datamodule_class=`, the CLI being Lightning's or a class of the entry
file deriving from it.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from envcheck.scripts.config_files import computed_value
from envcheck.scripts.device import LIGHTNING_ROOTS
from envcheck.scripts.index import module_nodes, qualified_base

SECTIONS = ("trainer", "model", "data")
# LightningCLI's parameters naming the classes it builds: keyword -> (position, section)
HANDED = {"model_class": (0, "model"), "datamodule_class": (1, "data")}
MAX_NAMED = 2  # config files named in a message
Candidates = Sequence[tuple[str, Mapping[str, Any]]]


class Unsettled(Exception):
    """The candidates give a key no one value."""


def cli_calls(module: ast.Module, aliases: Mapping[str, str]) -> list[ast.Call]:
    """The module's calls of Lightning's LightningCLI or of a class of the module that
    derives from it (`class MyCLI(LightningCLI)`)."""
    derived = {
        node.name
        for node in module.body
        if isinstance(node, ast.ClassDef)
        and any(_lightning_cli(qualified_base(b, dict(aliases))) for b in node.bases)
    }
    found: list[ast.Call] = []
    for node in module_nodes(module):
        if not isinstance(node, ast.Call):
            continue
        name = _qualified(node.func, aliases)
        if _lightning_cli(name) or name in derived:
            found.append(node)
    return found


def cli_classes(call: ast.Call) -> list[tuple[ast.expr, str]]:
    """(the expression naming the class, its config section) for each class `call` (a
    LightningCLI) is handed."""
    found: list[tuple[ast.expr, str]] = []
    for keyword, (position, section) in HANDED.items():
        given = next((k.value for k in call.keywords if k.arg == keyword), None)
        if given is None and position < len(call.args):
            starred = any(isinstance(a, ast.Starred) for a in call.args[: position + 1])
            given = None if starred else call.args[position]
        if isinstance(given, (ast.Name, ast.Attribute)):
            found.append((given, section))
    return found


def cli_configs(candidates: Candidates) -> list[tuple[str, Mapping[str, Any]]]:
    """Those of the candidate files that are LightningCLI configs."""
    return [
        (shown, data)
        for shown, data in candidates
        if isinstance(data, Mapping) and any(s in data for s in SECTIONS)
    ]


def class_settings(
    configs: Candidates, section: str, class_name: str, init: ast.FunctionDef
) -> dict[str, tuple[bool, Any, str]]:
    """parameter -> (known, value, where) for each `__init__` parameter some config sets
    in `section` for `class_name`: known when every config gives one plain value (a
    config leaving it out gives the signature's default)."""
    defaults = _defaults(init)
    arguments = [(shown, _arguments(data.get(section), class_name)) for shown, data in configs]
    names = [a.arg for a in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs][1:]]
    found: dict[str, tuple[bool, Any, str]] = {}
    for name in names:
        if not any(given is not None and name in given for _, given in arguments):
            continue  # no config sets it: the source decides
        label = f"{section}.{name}"
        places: list[tuple[str, Any, bool]] = []
        unknown: Optional[str] = None
        for shown, given in arguments:
            if given is None:
                unknown = f"{shown} builds another class than {class_name} for {section}"
            elif name in given:
                places.append((shown, given[name], True))
            elif name in defaults:
                places.append((shown, defaults[name], False))
            else:
                unknown = f"{shown} leaves {label} out and it has no default"
        if unknown is None:
            try:
                found[name] = (True, *_settled(label, places))
                continue
            except Unsettled as why:
                unknown = str(why)
        found[name] = (False, None, unknown)
    return found


def trainer_setting(configs: Candidates, key: str) -> Optional[tuple[bool, Any, str]]:
    """(known, value, where) of the Trainer setting `key` the configs give; None when no
    config sets it."""
    label = f"trainer.{key}"
    places: list[tuple[str, Any, bool]] = []
    left_out: list[str] = []
    for shown, data in configs:
        trainer = data.get("trainer")
        if isinstance(trainer, Mapping) and key in trainer:
            places.append((shown, trainer[key], True))
        else:
            left_out.append(shown)
    if not places:
        return None
    if left_out:
        return (
            False,
            None,
            f"{label} is set in some of the LightningCLI configs, not in {left_out[0]}",
        )
    try:
        return (True, *_settled(label, places))
    except Unsettled as why:
        return False, None, str(why)


def _settled(label: str, places: list[tuple[str, Any, bool]]) -> tuple[Any, str]:
    """(value, where) when every place (file, value, whether it sets it) gives one plain
    value; Unsettled otherwise."""
    values = [value for _, value, _ in places]
    if any(computed_value(v) for v in values):
        computed = next(f"{label} = {v!r} in {s}" for s, v, _ in places if computed_value(v))
        raise Unsettled(f"{computed}: computed by OmegaConf or left to the command line")
    if not all(isinstance(v, (bool, int, float, str, type(None))) for v in values):
        odd = next(
            s for s, v, _ in places if not isinstance(v, (bool, int, float, str, type(None)))
        )
        raise Unsettled(f"{label} in {odd} is not a plain value")
    if len({repr(v) for v in values}) > 1:
        named = "; ".join(
            f"{label} = {v!r} in {s}" if set_ else f"the default {v!r} ({s} leaves it out)"
            for s, v, set_ in places[:MAX_NAMED]
        )
        more = f" and {len(places) - MAX_NAMED} more" if len(places) > MAX_NAMED else ""
        raise Unsettled(f"the project's LightningCLI configs disagree: {named}{more}")
    setting = [s for s, _, set_ in places if set_]
    files = ", ".join(setting[:MAX_NAMED]) + (
        f" and {len(setting) - MAX_NAMED} more" if len(setting) > MAX_NAMED else ""
    )
    where = f"{label} = {values[0]!r} in the project's LightningCLI configs ({files})"
    if len(setting) < len(places):
        where += ", the default in the others"
    return values[0], where


def _arguments(section: Any, class_name: str) -> Optional[Mapping[str, Any]]:
    """The init arguments a config's section gives: its `init_args` under a `class_path`
    naming `class_name` (None for another class), else the section itself ({} when
    absent)."""
    if not isinstance(section, Mapping):
        return {}
    if "class_path" in section:
        path = section.get("class_path")
        if not isinstance(path, str) or path.rpartition(".")[2] != class_name:
            return None
        given = section.get("init_args") or {}
        return given if isinstance(given, Mapping) else None
    return section


def _defaults(init: ast.FunctionDef) -> dict[str, Any]:
    """The `__init__` parameters whose default is a literal, with it."""
    arguments = init.args
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = [
        *zip(
            positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True
        ),
        *((a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d),
    ]
    found: dict[str, Any] = {}
    for arg, default in pairs:
        try:
            found[arg.arg] = ast.literal_eval(default)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return found


def _lightning_cli(name: str) -> bool:
    return name.startswith(LIGHTNING_ROOTS) and name.rpartition(".")[2] == "LightningCLI"


def _qualified(node: ast.expr, aliases: Mapping[str, str]) -> str:
    head, _, rest = ast.unparse(node).partition(".")
    return aliases.get(head, head) + (f".{rest}" if rest else "")
