"""Settings held by a file's config objects, read from the source: the fields of a
dataclass or of a class named like a config (`class DataConfig: num_workers: int = 4`,
or the parameters its `__init__` keeps: `def __init__(self, num_workers=4):
self.num_workers = num_workers`, unless a construction in the file passes them), and the
attributes a function sets on an object it builds and returns (minGPT's
`get_default_config()`: `C = CN(); C.num_workers = 4; return C`). values.py judges
`cfg.num_workers` at these defaults, as it judges `args.workers` at argparse's; absl
flags (`flags.DEFINE_enum('mode', 'fit', ...)`) join argparse's options.
"""

from __future__ import annotations

import ast
from typing import Optional

from envcheck.scripts.assignments import statements
from envcheck.scripts.index import module_nodes
from envcheck.scripts.tensors import dotted

# Classes whose attributes are settings: dataclasses, and classes named so.
CONFIG_CLASS_SUFFIXES = (
    "config",
    "cfg",
    "args",
    "arguments",
    "options",
    "params",
    "settings",
    "hparams",
)


def config_defaults(module: ast.Module) -> dict[str, list[tuple[str, ast.expr]]]:
    """attribute -> [(where, default expression)] from the file's config objects: the
    fields of a dataclass or a class named like a config (`class DataConfig: num_workers:
    int = 4`, `field(default=4)`), and objects a function builds, sets and returns
    (`C = CN(); C.num_workers = 4; return C` in `get_default_config()`)."""
    found: dict[str, list[tuple[str, ast.expr]]] = {}
    for node in module_nodes(module):
        if isinstance(node, ast.ClassDef) and _config_class(node):
            for statement in node.body:
                target, value = _field(statement)
                if target is not None and value is not None:
                    found.setdefault(target, []).append((f"{node.name}.{target}", value))
            for attr, (where, value) in _init_fields(module, node).items():
                found.setdefault(attr, []).append((where, value))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for attr, (obj, value) in _built_config(node).items():
                found.setdefault(attr, []).append((f"{node.name}(): {obj}.{attr}", value))
    return found


def _init_fields(module: ast.Module, cls: ast.ClassDef) -> dict[str, tuple[str, ast.expr]]:
    """attr -> (where, default) for a config class whose `__init__` keeps its parameters
    (`def __init__(self, no_cuda=True): self.no_cuda = no_cuda`): the default a
    construction without that argument gets (`conf = Config()`). An argument some
    construction in the file passes, or any `*args`/`**kwargs` there, is not a default."""
    init = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
    )
    if init is None:
        return {}
    positional = [a.arg for a in [*init.args.posonlyargs, *init.args.args]]
    with_default = positional[len(positional) - len(init.args.defaults) :]
    defaults = dict(zip(with_default, init.args.defaults, strict=True))
    keyword_only = zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True)
    defaults.update({a.arg: d for a, d in keyword_only if d is not None})
    for node in module_nodes(module):
        called = node.func if isinstance(node, ast.Call) else None
        name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", None)
        if not isinstance(node, ast.Call) or name != cls.name:
            continue
        if any(k.arg is None for k in node.keywords) or any(
            isinstance(a, ast.Starred) for a in node.args
        ):
            return {}
        for keyword in node.keywords:
            defaults.pop(keyword.arg or "", None)
        for passed in positional[1 : 1 + len(node.args)]:
            defaults.pop(passed, None)
    found: dict[str, tuple[str, ast.expr]] = {}
    for node in ast.walk(init):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in defaults:
            # reads "config default Config(..., no_cuda) = True"
            found[target.attr] = (f"{cls.name}(..., {node.value.id})", defaults[node.value.id])
        elif isinstance(node.value, ast.Constant):
            found[target.attr] = (f"{cls.name}().{target.attr}", node.value)
    return found


def _config_class(node: ast.ClassDef) -> bool:
    decorated = any("dataclass" in ast.unparse(d) for d in node.decorator_list)
    return decorated or node.name.lower().endswith(CONFIG_CLASS_SUFFIXES)


def _field(statement: ast.stmt) -> tuple[Optional[str], Optional[ast.expr]]:
    """(name, default) of a class-body field: `x: int = 4`, `x = 4`, `x: int =
    field(default=4)`; (None, None) for anything else."""
    target: Optional[ast.expr] = None
    value: Optional[ast.expr] = None
    if isinstance(statement, ast.AnnAssign):
        target, value = statement.target, statement.value
    elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target, value = statement.targets[0], statement.value
    if not isinstance(target, ast.Name) or value is None:
        return None, None
    if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("field"):
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    return target.id, value


def _built_config(function: ast.AST) -> dict[str, tuple[str, ast.expr]]:
    """attr -> (object, value) for `obj.attr = value` on an object the function builds by
    a call and returns (`C = CN()` ... `return C`); set once each."""
    body = statements(list(getattr(function, "body", []) or []))
    returned = {
        s.value.id for s in body if isinstance(s, ast.Return) and isinstance(s.value, ast.Name)
    }
    built = {
        t.id
        for s in body
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
        for t in s.targets
        if isinstance(t, ast.Name) and t.id in returned
    }
    found: dict[str, tuple[str, ast.expr]] = {}
    twice: set[str] = set()
    for statement in body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        target = statement.targets[0]
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id in built
        ):
            if target.attr in found:
                twice.add(target.attr)
            found[target.attr] = (target.value.id, statement.value)
    return {k: v for k, v in found.items() if k not in twice}


def absl_flag(node: ast.Call, found: dict[str, tuple[str, ast.expr]]) -> None:
    """`flags.DEFINE_enum('mode', 'fit', [...], '...')`: FLAGS.mode defaults to 'fit'."""
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    name = node.args[0] if node.args else keywords.get("name")
    default = node.args[1] if len(node.args) > 1 else keywords.get("default")
    if isinstance(name, ast.Constant) and isinstance(name.value, str) and default is not None:
        found.setdefault(name.value, (f"--{name.value} (absl flag)", default))


def option_defaults(module: ast.Module) -> dict[str, tuple[str, ast.expr]]:
    """dest -> (option string, default expression) for every `add_argument(...,
    default=...)` and absl `flags.DEFINE_*`: the command line a default run takes."""
    found: dict[str, tuple[str, ast.expr]] = {}
    aliases = add_argument_aliases(module)
    for node in module_nodes(module):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith("DEFINE_")
        ):
            absl_flag(node, found)
            continue
        if not (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument")
                or (isinstance(node.func, ast.Name) and node.func.id in aliases)
            )
        ):
            continue
        options = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        default = keywords.get("default")
        action = keywords.get("action")
        if default is None and isinstance(action, ast.Constant):
            if action.value == "store_true":
                default = ast.Constant(False)
            elif action.value == "store_false":
                default = ast.Constant(True)
        if not options or default is None:
            continue
        dest_node = keywords.get("dest")
        if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str):
            dest = dest_node.value
        else:
            longs = [o for o in options if o.startswith("--")]
            dest = (longs[0] if longs else options[0]).lstrip("-").replace("-", "_")
        found[dest] = (max(options, key=len), default)
    return found


def add_argument_aliases(module: ast.Module) -> set[str]:
    """Names bound to a parser's `add_argument` (`arg = parser.add_argument`, then
    `arg("--workers", default=6)`): the options they declare are the parser's."""
    return {
        target.id
        for node in module_nodes(module)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "add_argument"
        for target in node.targets
        if isinstance(target, ast.Name)
    }


# Calls whose result is a parsed command line, not a tree of defaults: `args.workers = 8`
# after them overrides an option (run_options.py reads options from the parser itself).
PARSED_COMMAND_LINE = ("parse_args", "parse_known_args", "parse_args_into_dataclasses")


def module_config_tree(module: ast.Module) -> dict[tuple[str, ...], tuple[str, ast.expr]]:
    """path -> (where, value) for the defaults a config module sets at its top level on
    an object it builds there: yacs's `_C = CN()`, `_C.TRAIN = CN()`, `_C.TRAIN.workers =
    16` gives ("TRAIN", "workers") -> ("_C.TRAIN.workers", 16); an EasyDict's the same.
    A path set twice is left out (which one a run ends with is not in sight)."""
    built = {
        target.id
        for statement in module.body
        if isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Call)
        and not ast.unparse(statement.value.func).endswith(PARSED_COMMAND_LINE)
        for target in statement.targets
        if isinstance(target, ast.Name)
    }
    found: dict[tuple[str, ...], tuple[str, ast.expr]] = {}
    twice: set[tuple[str, ...]] = set()
    for statement in module.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        path = attribute_path(statement.targets[0])
        if path is None or len(path) < 2 or path[0] not in built:
            continue
        if path[1:] in found:
            twice.add(path[1:])
        found[path[1:]] = (".".join(path), statement.value)
    return {k: v for k, v in found.items() if k not in twice}


def attribute_path(node: ast.expr) -> Optional[tuple[str, ...]]:
    """`cfg.TRAIN.workers` -> ("cfg", "TRAIN", "workers"); None for anything but names
    and attributes."""
    text = dotted(node)
    return tuple(text.split(".")) if text is not None else None


# Library classes whose keyword arguments become the object's attributes
# (`EasyDict(num_workers=3).num_workers`, `argparse.Namespace(...)`, `SimpleNamespace`).
KEYWORD_HOLDERS = ("EasyDict", "edict", "Namespace", "SimpleNamespace", "AttrDict")
# Methods that merge settings from elsewhere into such an object (`hparams.parse(text)`).
MERGING_METHODS = ("update", "parse", "override", "merge", "load", "set", "from_")


def keyword_classes(module: ast.Module) -> set[str]:
    """The top-level classes of the file whose objects keep the keyword arguments they are
    built with as attributes, and nothing else: `def __init__(self, **kwargs)` whose body
    only stores them (`self.data = {}` then `for k, v in kwargs.items(): self.data[k] =
    v`, read back by a `__getattr__`; `setattr(self, k, v)`; `self.__dict__.update(kwargs)`),
    or a dict subclass with a `__getattr__` and no `__init__` (dnnlib's EasyDict):
    `HParams(num_workers=16).num_workers` is 16."""
    found = set()
    for node in module.body:
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {s.name: s for s in node.body if isinstance(s, ast.FunctionDef)}
        getattr_ = "__getattr__" in methods
        init = methods.get("__init__")
        if init is None:
            bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
            if getattr_ and bases & {"dict", *KEYWORD_HOLDERS}:
                found.add(node.name)
            continue
        stored = _stores_keywords(init)
        if stored == "attributes" or (stored == "dict" and getattr_):
            found.add(node.name)
    return found


def _stores_keywords(init: ast.FunctionDef) -> Optional[str]:
    """ "attributes" when `__init__(self, **kwargs)` sets each keyword as an attribute,
    "dict" when it keeps them in a dict of its own, None when it does anything else."""
    arguments = init.args
    if (
        arguments.kwarg is None
        or [a.arg for a in [*arguments.posonlyargs, *arguments.args]] != ["self"]
        or arguments.vararg is not None
        or arguments.kwonlyargs
    ):
        return None
    kwargs = arguments.kwarg.arg
    kept: Optional[str] = None
    for statement in init.body:
        text = ast.unparse(statement)
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring
        if text in (f"self.__dict__.update({kwargs})", f"super().__init__(**{kwargs})"):
            kept = "attributes" if "__dict__" in text else kept
            continue
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            value = ast.unparse(statement.value)
            own = isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self"
            if own and value in ("{}", "dict()"):
                continue
            if own and value in (kwargs, f"dict({kwargs})", f"{{**{kwargs}}}"):
                kept = kept or "dict"
                continue
            return None
        if isinstance(statement, ast.For) and ast.unparse(statement.iter) == f"{kwargs}.items()":
            body = [ast.unparse(s) for s in statement.body]
            pair = statement.target
            if not (isinstance(pair, ast.Tuple) and len(pair.elts) == 2):
                return None
            key, value = (ast.unparse(e) for e in pair.elts)
            if body == [f"setattr(self, {key}, {value})"]:
                kept = "attributes"
                continue
            if (
                len(statement.body) == 1
                and body[0].startswith("self.")
                and (body[0].endswith(f"[{key}] = {value}"))
            ):
                kept = kept or "dict"
                continue
        return None
    return kept


def changed_keys(module: ast.Module) -> dict[str, set[str]]:
    """name -> the settings the file changes on the object bound to it, anywhere: `obj.k
    = v`, `obj["k"] = v`, `setattr(obj, "k", v)`, `obj.set_hparam("k", v)`; "*" for a
    merge whose keys are not in sight (`obj.update(d)`, `obj.parse(text)`, `obj[key] =
    v`)."""
    found: dict[str, set[str]] = {}

    def add(holder: ast.expr, key: Optional[ast.expr]) -> None:
        if not isinstance(holder, ast.Name):
            return
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.setdefault(holder.id, set()).add(key.value)
        else:
            found.setdefault(holder.id, set()).add("*")

    for node in module_nodes(module):
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute):
                add(target.value, ast.Constant(target.attr))
            elif isinstance(target, ast.Subscript):
                add(target.value, target.slice)
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "setattr" and node.args:
            add(node.args[0], node.args[1] if len(node.args) > 1 else None)
        elif isinstance(func, ast.Attribute) and (node.args or node.keywords):
            first = node.args[0] if node.args else None
            if func.attr.startswith(MERGING_METHODS) and not (
                isinstance(first, ast.Constant) and isinstance(first.value, str)
            ):
                add(func.value, None)
            elif (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and func.attr not in ("get", "__getattr__")
            ):
                add(func.value, first)
    return found
