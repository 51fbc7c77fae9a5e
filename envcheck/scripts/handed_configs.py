"""Config objects an entry point loads from a file named on its command line and hands
to the classes of another file of the run.

donut's train.py parses `--config` (required, no default), loads it with
`config = Config(args.config)` (sconf) and calls `train(config)`, whose body builds
`DonutDataPLModule(config)`; lightning_module.py keeps it as `self.config` and builds its
loader with `num_workers=self.config.num_workers`. That read is the loaded file's only
because the object is handed in: this module finds such loads (chosen_loads: a call of a
loader of config_files.CHOSEN_LOADERS on `args.<dest>`, where the entry point's own
parser gives `--<dest>` no default), follows the loaded name into the entry point's own
functions it is handed to (positionally, MAX_ROUNDS calls deep), and names the
attribute chains it is read through in the receiving file (handed_heads): `self.<attr>`
where a class of that file, built with the object, stores its `__init__` parameter.

Precision: an attribute is a head only when every class of the receiving file that
sets `self.<attr>` is one the entry point builds with the object and sets it from that
parameter alone; a class setting it from anything else (or not handed the object) gives
no head, and the read stays unknown. Functions handed the object give no head (a
parameter's name is read in other functions of the file too).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Optional

from envcheck.scripts.config_files import CHOSEN_LOADERS, own_nodes
from envcheck.scripts.foreign_helpers import Function

MAX_ROUNDS = 4  # calls of the entry point's own functions followed with the object

Place = Function | ast.Module


def chosen_loads(module: ast.Module, aliases: Mapping[str, str]) -> list[tuple[Place, str, bool]]:
    """(place, name, interpolated) of each `name = Loader(args.dest)` in `module` (its
    top level or a function), Loader one of CHOSEN_LOADERS and `--dest` an option of the
    module's own parser with no default (a file named only on the command line)."""
    found: list[tuple[Place, str, bool]] = []
    open_options: Optional[set[str]] = None
    places: list[Place] = [module]
    places += [
        n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    for place in places:
        for node in own_nodes(place):
            if not (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
                and len(node.value.args) == 1
                and not node.value.keywords
                and isinstance(node.value.args[0], ast.Attribute)
                and isinstance(node.value.args[0].value, ast.Name)
            ):
                continue
            interpolated = CHOSEN_LOADERS.get(_qualified(node.value.func, aliases))
            if interpolated is None:
                continue
            if open_options is None:
                open_options = _options_without_default(module)
            if node.value.args[0].attr in open_options:
                found.append((place, node.targets[0].id, interpolated))
    return found


def handed_heads(
    module: ast.Module,
    load: tuple[Place, str],
    functions: Mapping[str, Function],
    aliases: Mapping[str, str],
    receiving: Callable[[str], Optional[ast.ClassDef]],
    classes: Mapping[str, ast.ClassDef],
) -> frozenset[tuple[str, ...]]:
    """The chains (`("self", "config")`) the object `load` names (place, name) is read
    through in the file whose classes are `classes`, where the entry point `module`
    builds them with it; `receiving(qualname)` is the class of that file a call of the
    entry point builds (None for any other callee)."""
    holding: dict[int, set[str]] = {id(load[0]): {load[1]}}
    places: dict[int, Place] = {id(load[0]): load[0]}
    for _ in range(MAX_ROUNDS):
        grown = False
        for key, names in list(holding.items()):
            for call, position in _handing_calls(places[key], names):
                if not isinstance(call.func, ast.Name) or call.func.id not in functions:
                    continue
                function = functions[call.func.id]
                params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
                if position >= len(params):
                    continue
                held = holding.setdefault(id(function), set())
                places[id(function)] = function
                if params[position] not in held:
                    held.add(params[position])
                    grown = True
        if not grown:
            break
    stored: dict[str, set[str]] = {}  # attribute -> the receiving classes storing it
    for key, names in holding.items():
        for call, position in _handing_calls(places[key], names):
            cls = receiving(_qualified(call.func, aliases))
            if cls is None:
                continue
            init = _method(cls, "__init__")
            params = [a.arg for a in [*init.args.posonlyargs, *init.args.args]] if init else []
            if position + 1 >= len(params):
                continue
            for attribute in _stored(init, params[position + 1]):  # type: ignore[arg-type]
                stored.setdefault(attribute, set()).add(cls.name)
    heads: set[tuple[str, ...]] = set()
    for attribute, names in stored.items():
        setters = {
            name
            for name, cls in classes.items()
            if any(_sets(node, attribute) for node in ast.walk(cls))
        }
        if setters <= names and all(
            _only_from_parameter(classes[name], attribute) for name in names
        ):
            heads.add(("self", attribute))
    return frozenset(heads)


def _handing_calls(place: Place, names: set[str]) -> list[tuple[ast.Call, int]]:
    """(call, position) of each call in `place` handed one of `names` positionally."""
    found: list[tuple[ast.Call, int]] = []
    for node in own_nodes(place):
        if isinstance(node, ast.Call):
            for position, argument in enumerate(node.args):
                if isinstance(argument, ast.Name) and argument.id in names:
                    found.append((node, position))
    return found


def _method(cls: ast.ClassDef, name: str) -> Optional[Function]:
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _stored(init: Function, param: str) -> set[str]:
    """The attributes `__init__` sets to its parameter `param` (`self.config = config`)."""
    return {
        node.targets[0].attr  # type: ignore[attr-defined]
        for node in own_nodes(init)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and _self_attribute(node.targets[0]) is not None
        and isinstance(node.value, ast.Name)
        and node.value.id == param
    }


def _sets(node: ast.AST, attribute: str) -> bool:
    """Whether `node` assigns `self.<attribute>` (in any of its targets)."""
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    else:
        return False
    flat: list[ast.expr] = []
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets.extend(target.elts)
        else:
            flat.append(target)
    return any(_self_attribute(t) == attribute for t in flat)


def _self_attribute(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == "self" else None
    return None


def _only_from_parameter(cls: ast.ClassDef, attribute: str) -> bool:
    """Whether every `self.<attribute> = ...` of `cls` is the one in its `__init__` that
    stores a parameter of it."""
    init = _method(cls, "__init__")
    if init is None:
        return False
    params = {a.arg for a in [*init.args.posonlyargs, *init.args.args]}
    for node in ast.walk(cls):
        if not _sets(node, attribute):
            continue
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.value, ast.Name)
            and node.value.id in params
            and any(node is n for n in own_nodes(init))
        ):
            return False
    return True


def _options_without_default(module: ast.Module) -> set[str]:
    """The destinations of the module's `add_argument("--dest", ...)` options that give no
    default (or `default=None`)."""
    found: set[str] = set()
    for node in ast.walk(module):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        default = keywords.get("default")
        if default is not None and not (
            isinstance(default, ast.Constant) and default.value is None
        ):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant)]
        dest = keywords.get("dest")
        if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
            found.add(dest.value)
            continue
        long = [n for n in names if isinstance(n, str) and n.startswith("--")]
        if long:
            found.add(long[0][2:].replace("-", "_"))
    return found


def _qualified(node: ast.expr, aliases: Mapping[str, str]) -> str:
    head, _, rest = ast.unparse(node).partition(".")
    return aliases.get(head, head) + (f".{rest}" if rest else "")
